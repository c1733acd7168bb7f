//! serdes' compiled fast path. Python reaches it only through `serdes/_native.py`, which falls
//! back to the pure-Python implementation when this module is not built (or SERDES_PURE_PYTHON=1).
use pyo3::prelude::*;

/// Declares a program's opcodes, numbered from 0 in the order given, as serdes/_native_opcodes.py
/// numbers them (`= range(n)`): `const NAME: u8` each, and `TABLE: [(name, value)]`, which the
/// module exports in `OPCODES` (serdes/_native.py refuses a build whose table is not Python's).
macro_rules! opcodes {
    ($table:ident: $($name:ident),+ $(,)?) => {
        opcodes!(@number 0; $($name),+);
        pub(crate) const $table: &[(&str, u8)] = &[$((stringify!($name), $name)),+];
    };
    (@number $n:expr; $head:ident $(, $tail:ident)*) => {
        pub(crate) const $head: u8 = $n;
        opcodes!(@number $head + 1; $($tail),*);
    };
    (@number $n:expr;) => {};
}

mod arrow_encode;
pub mod avro;
mod avro_encode;
mod avro_out;
mod columnar;
mod dispatch;
mod panics;
mod stack;

/// `bytes(data)`, or the `MemoryError` of a failed allocation: PyO3's `PyBytes::new` panics
/// there instead, and a payload-sized copy is the allocation that can fail.
pub(crate) fn new_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    // SAFETY: pointer and length describe a live slice, the GIL is held (we have `py`); the call
    // returns a new reference, or NULL with MemoryError set
    unsafe {
        let p = pyo3::ffi::PyBytes_FromStringAndSize(data.as_ptr().cast(), data.len() as pyo3::ffi::Py_ssize_t);
        Ok(Bound::from_owned_ptr_or_err(py, p)?.cast_into_unchecked())
    }
}
#[cfg(test)]
mod tests;

/// The program format this build reads: a hash of the Python sources that build its programs and
/// call its constructors (`FORMAT_SOURCES`), computed by build.rs. `serdes/_native.py` hashes the
/// same files at import and refuses a build whose hash differs (a stale build).
#[pyfunction]
fn abi_version() -> &'static str {
    env!("SERDES_NATIVE_ABI")
}

#[pymodule]
fn _serdes_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(abi_version, m)?)?;
    // the files abi_version() hashed, relative to the serdes package
    m.add("FORMAT_SOURCES", env!("SERDES_NATIVE_FORMAT_SOURCES").split(',').collect::<Vec<_>>())?;
    let opcodes = pyo3::types::PyDict::new(m.py());
    for (program, table) in [
        ("decoder", avro::schema::NODE_OPCODES),
        ("decoder_post", avro::schema::POST_OPCODES),
        ("encoder", avro_encode::NODE_OPCODES),
        ("encoder_fast", avro_encode::FAST_OPCODES),
    ] {
        let t = pyo3::types::PyDict::new(m.py());
        for (name, value) in table {
            t.set_item(*name, *value)?;
        }
        opcodes.set_item(program, t)?;
    }
    m.add("OPCODES", opcodes)?;
    arrow_encode::register(m)?;
    avro::register(m)?;
    avro_encode::register(m)?;
    columnar::register(m)?;
    dispatch::register(m)?;
    panics::register(m)?;
    stack::register(m)?;
    Ok(())
}
