//! serdes' compiled fast path. Python reaches it only through `serdes/_native.py`, which falls
//! back to the pure-Python implementation when this module is not built (or SERDES_PURE_PYTHON=1).
use pyo3::prelude::*;

pub mod avro;
mod avro_encode;
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

/// The version of the crate, checked by `serdes/_native.py` against the Python package's.
#[pyfunction]
fn abi_version() -> u32 {
    1
}

#[pymodule]
fn _serdes_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(abi_version, m)?)?;
    avro::register(m)?;
    avro_encode::register(m)?;
    dispatch::register(m)?;
    panics::register(m)?;
    stack::register(m)?;
    Ok(())
}
