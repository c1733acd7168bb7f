//! No Rust panic reaches Python as `pyo3_runtime.PanicException` (a `BaseException` that
//! `except Exception` does not catch, so it would end a consumer loop or a Flink task).
//!
//! Every entry point of the extension runs its body under [`catch`]. A panic is a bug in serdes,
//! never the input's fault (decode.rs and avro_encode keep every input-derived value away from
//! `unwrap`, indexing and overflow), so each entry point takes the way out that still gives the
//! pure-Python result: the decoder and the encoder hand the record to their pure-Python fallback,
//! the dispatchers to the Python slow path; where there is no fallback (building a program, a
//! decoder built without one) [`error`] raises a serdes error class. Python exceptions --
//! `MemoryError` included -- are values, not panics: they pass through untouched. The panic's
//! message is still printed to stderr by Rust's panic hook, for the bug report.
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Entry calls left before the one that panics on purpose (0: none), set by `_arm_panic`, the
/// tests' only way to reach a panic (tests/unit/test_native_guards.py). Not public API.
static ARMED: AtomicU32 = AtomicU32::new(0);

/// Run `f`, returning the panic's message instead of unwinding into PyO3.
#[inline(always)]
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(|| {
        if ARMED.load(Ordering::Relaxed) != 0 {
            injected();
        }
        f()
    }))
    .map_err(|p| message(p.as_ref()))
}

#[cold]
#[inline(never)]
fn injected() {
    if ARMED.fetch_sub(1, Ordering::Relaxed) == 1 {
        panic!("serdes test hook: injected panic");
    }
}

fn message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// The serdes error of class `class` (a name in serdes._errors) for a panic in `what`.
pub fn error(py: Python<'_>, class: &str, what: &str, msg: &str) -> PyErr {
    // a panic may have left an exception set half-way: it is not this error's cause
    let _ = PyErr::take(py);
    let text = format!("serdes' native {what} failed: {msg} (a bug in serdes: please report it)");
    match py.import("serdes._errors").and_then(|m| m.getattr(class)).and_then(|c| c.call1((text.clone(),))) {
        Ok(e) => PyErr::from_value(e),
        Err(_) => PyRuntimeError::new_err(text),
    }
}

/// Forget a pending exception a panic may have left set, before a fallback runs Python code.
pub fn clear(py: Python<'_>) {
    let _ = PyErr::take(py);
}

/// `_arm_panic(n)`: the n-th native entry call from now panics inside its guard (tests only).
#[pyfunction]
#[pyo3(name = "_arm_panic")]
fn arm_panic(n: u32) {
    ARMED.store(n, Ordering::Relaxed);
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(arm_panic, m)?)
}
