//! Unit tests of the extension through the interface Python uses (the `_serdes_native` module's
//! classes, called with Python objects), in an interpreter the test binary embeds. Pure-Rust
//! arithmetic is tested next to its code (avro/decode/tests.rs, avro_encode/tests.rs,
//! dispatch/tests.rs). Reference values come from Python's own datetime/decimal and from the
//! Avro spec's encodings written out by hand (support.py).
use std::ffi::CString;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

mod abi;
mod decoder;
mod encoder;

/// serdes, imported once for every test: test threads importing it at the same time would see
/// each other's half-imported modules.
static SERDES: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// This checkout's serdes (its program lowerings), before any installed one, as pure Python: its
/// own build of the extension is not the one under test.
fn import_serdes(py: Python<'_>) -> PyResult<Py<PyModule>> {
    py.import("sys")?.getattr("path")?.call_method1("insert", (0, concat!(env!("CARGO_MANIFEST_DIR"), "/..")))?;
    py.import("os")?.getattr("environ")?.set_item("SERDES_PURE_PYTHON", "1")?;
    Ok(py.import("serdes.avro")?.unbind())
}

/// support.py, loaded once: `PyModule::from_code` executes into the `sys.modules` entry of the same
/// name when there is one, so loading it per test would redefine `Corrupt` (and unbind `native`)
/// under a test running on another thread.
static SUPPORT: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn load_support(py: Python<'_>) -> PyResult<Py<PyModule>> {
    let native = pyo3::wrap_pymodule!(crate::_serdes_native)(py);
    let code = CString::new(include_str!("support.py")).expect("no NUL in support.py");
    let support = PyModule::from_code(py, &code, c"support.py", c"support")?;
    support.setattr("native", native.bind(py))?;
    Ok(support.unbind())
}

/// Run `f` with the GIL, the extension module (as `native`) and support.py (as `support`,
/// which has `native` bound too), this checkout first on `sys.path`.
pub(crate) fn with_support<F>(f: F)
where
    F: for<'py> FnOnce(Python<'py>, &Bound<'py, PyModule>),
{
    Python::attach(|py| {
        SERDES.get_or_init(py, || import_serdes(py).expect("this checkout's serdes imports"));
        let support = SUPPORT.get_or_init(py, || load_support(py).expect("support.py loads")).bind(py);
        f(py, support);
    });
}

/// `support.<name>(*args)` and its result, failing the test on a Python error (with its traceback).
pub(crate) fn call<'py, A>(py: Python<'py>, support: &Bound<'py, PyModule>, name: &str, args: A) -> Bound<'py, PyAny>
where
    A: pyo3::call::PyCallArgs<'py>,
{
    match support.getattr(name).and_then(|f| f.call1(args)) {
        Ok(v) => v,
        Err(e) => {
            e.print(py);
            panic!("support.{name} failed: {e}");
        }
    }
}
