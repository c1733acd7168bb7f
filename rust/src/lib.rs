//! serdes' compiled fast path. Python reaches it only through `serdes/_native.py`, which falls
//! back to the pure-Python implementation when this module is not built (or SERDES_PURE_PYTHON=1).
use pyo3::prelude::*;

pub mod avro;
mod avro_encode;
mod dispatch;
mod panics;
mod stack;

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
