//! Native Avro decoding: `AvroDecoder`, one per (writer, reader) schema pair.
//!
//! Built by `serdes/avro/_native_decoder.py` from a lowered program ([`schema`]), run by the
//! native loop ([`decode`]). The object is a serdes `Decoder`: `decoder(data, offset, ctx)`.
pub mod decode;
pub mod schema;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyType, PyTzInfo};

use decode::Decoder;
use schema::Program;

/// A compiled Avro decoder: `decoder(data, offset=0, ctx=None) -> value`.
#[pyclass(frozen, module = "serdes._serdes_native", name = "AvroDecoder")]
pub struct AvroDecoder {
    inner: Decoder,
    from_dict: Option<Py<PyAny>>,
    /// the pure-Python decoder of the same pair and `from_dict`, `fallback(data, offset, ctx)`: it
    /// decodes a value nesting deeper than this thread's stack lets the native loop go (and a
    /// record the native loop panicked on). `None`: such a record is a `CorruptPayloadError`.
    fallback: Option<Py<PyAny>>,
}

impl AvroDecoder {
    /// Decode one payload (`data[offset..]`, consumed exactly) and apply `from_dict`: what
    /// `__call__` does, callable from Rust (the native dispatcher) on a borrowed slice.
    pub fn decode_slice<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        offset: usize,
        ctx: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ctx_obj = || ctx.map_or_else(|| py.None().into_bound(py), |c| c.clone());
        let why = match crate::panics::catch(|| self.inner.decode(py, data, offset)) {
            Ok(Ok(Some(v))) => {
                return match &self.from_dict {
                    Some(f) => f.bind(py).call1((v, ctx_obj())),
                    None => Ok(v),
                }
            }
            Ok(Err(e)) => return Err(e),
            Ok(Ok(None)) => None,
            Err(panic) => {
                crate::panics::clear(py);
                Some(panic)
            }
        };
        match (&self.fallback, why) {
            (Some(f), _) => f.bind(py).call1((crate::new_bytes(py, data)?, offset, ctx_obj())),
            (None, Some(panic)) => Err(crate::panics::error(py, "CorruptPayloadError", "Avro decoder", &panic)),
            (None, None) => Err(PyErr::from_type(
                self.inner.corrupt.bind(py).clone(),
                (format!(
                    "record nests deeper than the native decoder can go on this thread's stack \
                     (serdes.max.depth={}; a thread with a larger stack, or pure Python, decodes it)",
                    self.inner.max_depth
                ),),
            )),
        }
    }
}

#[pymethods]
impl AvroDecoder {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (nodes, root, max_items, max_depth, from_dict, corrupt, mismatch, utc, *, fallback = None))]
    fn new(
        py: Python<'_>,
        nodes: &Bound<'_, PyList>,
        root: usize,
        max_items: i64,
        max_depth: i64,
        from_dict: Option<Py<PyAny>>,
        corrupt: Py<PyType>,
        mismatch: Py<PyType>,
        utc: Py<PyTzInfo>,
        fallback: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let prog = crate::panics::catch(|| Program::compile(py, nodes, root))
            .map_err(|panic| crate::panics::error(py, "SchemaMismatchError", "Avro decoder compiler", &panic))??;
        Ok(AvroDecoder {
            inner: Decoder { prog, max_items: max_items as i128, max_depth, corrupt, mismatch, utc },
            from_dict,
            fallback,
        })
    }

    /// `decoder.decode(data, offset=0, ctx=None)`: the same as calling the decoder. A method call
    /// is a vectorcall (no argument tuple), so serdes caches this bound method as the Decoder.
    #[pyo3(signature = (data, offset = 0, ctx = None))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        offset: usize,
        ctx: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.__call__(py, data, offset, ctx)
    }

    #[pyo3(signature = (data, offset = 0, ctx = None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        offset: usize,
        ctx: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(b) = data.cast::<PyBytes>() {
            return self.decode_slice(py, b.as_bytes(), offset, ctx);
        }
        // bytearray, memoryview, ...: one copy, as the generated decoder's bytes(data)
        let b = py.get_type::<PyBytes>().call1((data,))?;
        let b = b.cast::<PyBytes>()?;
        self.decode_slice(py, b.as_bytes(), offset, ctx)
    }

    /// Number of nodes in the compiled program (for tests and debugging).
    fn __len__(&self) -> usize {
        self.inner.prog.nodes.len()
    }

    fn __repr__(&self) -> String {
        format!("<serdes native AvroDecoder: {} nodes>", self.inner.prog.nodes.len())
    }
}

/// Add the Avro decoder class to the extension module (called from lib.rs).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AvroDecoder>()
}
