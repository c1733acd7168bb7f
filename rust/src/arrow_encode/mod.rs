//! serdes.arrow's native columnar Avro encoder: the rows of Arrow record batches, imported through
//! the Arrow C data interface, written as Confluent-framed Avro values -- one per row, the bytes
//! the serializer's per-record call writes for that row -- with the GIL released.
//!
//! `serdes/arrow/_native_encoder.py` is the only caller. It lowers the serializer's own schema to
//! a program (`program.rs`: every decision is Python's), takes the frame prefix from the
//! serializer's per-record encoder for the (topic, field), and hands over whole lists of record
//! batches (`__arrow_c_array__` capsules) whose columns have the types the program was lowered
//! for. A call either writes every row or writes none: on the first row whose bytes the Arrow
//! value does not fix (`write.rs` says which those are), it returns that row's index and Python
//! encodes the whole call again on the per-record path, which gives each bad row its typed error.
//!
//! What keeps hostile input bounded here:
//! * every imported column is validated in full before it is read (`ArrayData::validate_full`:
//!   `from_ffi` trusts the producer's offsets and UTF-8, so serdes does not), and every read in
//!   the row loop is still a checked index;
//! * the output is allocated with `try_reserve` (a refusal, never an abort), and its size is what
//!   the rows' values take: offsets are non-decreasing, so no value's bytes are written twice
//!   except a fixed-size one;
//! * the nesting depth is the program's, whose schema serdes' limits bounded; a call starts only
//!   when the thread has stack for it, and each level checks again (`stack::Guard`);
//! * a panic is caught (`panics::catch`) and answered like a refused row: the per-record path runs.
mod bind;
mod program;
mod write;

use std::ffi::CStr;
use std::sync::Mutex;

use arrow_array::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{make_array, Array, ArrayRef};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyList, PyTuple};

use crate::{panics, stack};
use program::Program;
use write::{Out, Writer};

/// Stack one nesting level of the row writer may use, with ample room to spare (a release build
/// uses a few hundred bytes per level; the columnar decoder asks the same).
const STACK_PER_LEVEL: usize = 4 * 1024;

/// Why a call wrote nothing: the row (or `None`: the whole call) and a message.
type Refusal = (Option<usize>, String);

/// `AvroArrowEncoder(nodes, root, wrapped)`: writes rows of record batches whose columns are the
/// program's.
#[pyclass(module = "serdes._serdes_native", frozen)]
pub struct AvroArrowEncoder {
    prog: Program,
    /// the last call's output buffer, kept for the next (its pages already mapped: a fresh one
    /// costs a page fault per 4 KiB), up to `SCRATCH_MAX` bytes
    scratch: Mutex<Vec<u8>>,
}

/// The largest output buffer kept between calls (a call of about 100,000 ten-field records; a
/// larger call allocates its own, which costs it a few percent).
const SCRATCH_MAX: usize = 16 * 1024 * 1024;

/// One batch imported: its struct array (the record batch as one column).
fn import(item: &Bound<'_, PyAny>) -> Result<ArrayRef, String> {
    let pair = item.cast::<PyTuple>().map_err(|_| "a batch is not a (schema, array) capsule pair".to_string())?;
    let capsule = |i: usize, name: &CStr| -> Result<*mut std::ffi::c_void, String> {
        let c = pair.get_item(i).map_err(|e| e.to_string())?;
        let c = c.cast::<PyCapsule>().map_err(|_| format!("not a PyCapsule: {name:?}"))?;
        c.pointer_checked(Some(name)).map(|p| p.as_ptr()).map_err(|e| e.to_string())
    };
    let schema = capsule(0, c"arrow_schema")?.cast::<FFI_ArrowSchema>();
    let array = capsule(1, c"arrow_array")?.cast::<FFI_ArrowArray>();
    // SAFETY: the capsules are the Arrow PyCapsule interface's, named as it names them, and hold
    // a live FFI_ArrowSchema and FFI_ArrowArray of the same producer call. `from_raw` moves the
    // array out (the capsule is left released, as the interface's consumers do); the schema is
    // only read, and stays owned by its capsule, which `pair` keeps alive during the call.
    let data = unsafe {
        let array = FFI_ArrowArray::from_raw(array);
        from_ffi(array, &*schema)
    }
    .map_err(|e| format!("the Arrow C data interface import failed: {e}"))?;
    Ok(make_array(data))
}

impl AvroArrowEncoder {
    /// Every row of `batches` after `prefix`, or the row that stopped the call.
    fn write_all(
        &self,
        prefix: &[u8],
        batches: &[ArrayRef],
        buf: Vec<u8>,
    ) -> Result<(Vec<u8>, Vec<Option<usize>>), Refusal> {
        let guard = stack::Guard::here();
        if guard.left() < self.prog.depth.saturating_add(16).saturating_mul(STACK_PER_LEVEL) {
            return Err((None, "too little stack left on this thread".to_string()));
        }
        let rows: usize = batches.iter().map(|b| b.len()).sum();
        let mut out = Out::new(buf);
        out.buf.clear();
        // a first guess of the size (the columns' bytes and the prefixes); the writes reserve
        // what they need beyond it
        let data: usize = batches.iter().map(|b| b.get_buffer_memory_size()).sum();
        let guess = rows.saturating_mul(prefix.len() + 8).saturating_add(data);
        out.buf.try_reserve(guess).map_err(|_| (None, "cannot allocate".to_string()))?;
        let mut ends: Vec<Option<usize>> = Vec::new();
        ends.try_reserve(rows).map_err(|_| (None, "cannot allocate".to_string()))?;
        let writer = Writer { guard };
        let mut first = 0usize;
        for batch in batches {
            // the columns' buffers, offsets, UTF-8 and dictionary keys, before anything is read
            batch.to_data().validate_full().map_err(|e| (Some(first), format!("invalid Arrow data: {e}")))?;
            self.write_batch(&writer, prefix, batch.as_ref(), first, &mut out, &mut ends)?;
            first += batch.len();
        }
        Ok((out.buf, ends))
    }

    fn write_batch(
        &self,
        writer: &Writer,
        prefix: &[u8],
        batch: &dyn Array,
        first: usize,
        out: &mut Out,
        ends: &mut Vec<Option<usize>>,
    ) -> Result<(), Refusal> {
        let prog = &self.prog;
        let whole = |m: String| (Some(first), m);
        if prog.wrapped {
            // the schema is not a record: one column `value`; a null there is a row the
            // per-record path writes as None (serializer(None) is None, whatever the schema)
            let structure = batch.as_any().downcast_ref::<arrow_array::StructArray>();
            let column = match structure {
                Some(s) if s.num_columns() == 1 && s.null_count() == 0 => s.column(0),
                _ => return Err(whole("not a batch of one column `value`".to_string())),
            };
            let col = bind::bind(prog, prog.root, column.as_ref()).map_err(whole)?;
            // the logical nulls: a null column's values, a dictionary's null values are nulls too
            let nulls = column.logical_nulls();
            for i in 0..batch.len() {
                if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                    ends.push(None);
                    continue;
                }
                out.raw(prefix).map_err(|m| (Some(first + i), m))?;
                writer.write(&col, i, out).map_err(|m| (Some(first + i), m))?;
                ends.push(Some(out.buf.len()));
            }
        } else {
            let col = bind::bind(prog, prog.root, batch).map_err(whole)?;
            for i in 0..batch.len() {
                out.raw(prefix).map_err(|m| (Some(first + i), m))?;
                writer.write(&col, i, out).map_err(|m| (Some(first + i), m))?;
                ends.push(Some(out.buf.len()));
            }
        }
        Ok(())
    }
}

#[pymethods]
impl AvroArrowEncoder {
    /// `nodes`, `root`, `wrapped`: the program serdes/arrow/_native_encoder.py lowered (ValueError:
    /// not a valid program).
    #[new]
    fn new(py: Python<'_>, nodes: &Bound<'_, PyList>, root: usize, wrapped: bool) -> PyResult<Self> {
        let prog = panics::catch(|| program::compile(nodes, root, wrapped))
            .map_err(|panic| panics::error(py, "SchemaMismatchError", "Arrow encoder compiler", &panic))??;
        Ok(AvroArrowEncoder { prog, scratch: Mutex::new(Vec::new()) })
    }

    /// `encode(prefix, batches)`: `(values, None, None)` -- one `bytes` per row, `prefix` then the
    /// row's Avro value (`None` for a null value of a schema that is not a record) -- or
    /// `(None, row, reason)` when the call wrote nothing (`row`: the row that stopped it, or
    /// `None`). `batches`: `(schema, array)` capsule pairs of record batches (`__arrow_c_array__`),
    /// each consumed.
    fn encode<'py>(
        &self,
        py: Python<'py>,
        prefix: Vec<u8>,
        batches: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let refused = |row: Option<usize>, why: String| -> PyResult<Bound<'py, PyTuple>> {
            let row = match row {
                Some(i) => i.into_pyobject(py)?.into_any(),
                None => py.None().into_bound(py),
            };
            PyTuple::new(py, [py.None().into_bound(py), row, why.into_pyobject(py)?.into_any()])
        };
        // imported with the GIL held (a producer's capsules are Python objects); the arrays keep
        // the producer's buffers alive until they are dropped, after the list is built
        let imported = panics::catch(|| batches.iter().map(|b| import(&b)).collect::<Result<Vec<_>, _>>());
        let arrays = match imported {
            Ok(Ok(a)) => a,
            Ok(Err(why)) => return refused(None, why),
            Err(panic) => {
                panics::clear(py);
                return refused(None, format!("the Arrow import panicked: {panic}"));
            }
        };
        let scratch = self.scratch.lock().map(|mut s| std::mem::take(&mut *s)).unwrap_or_default();
        let written = py.detach(|| panics::catch(|| self.write_all(&prefix, &arrays, scratch)));
        let (buf, ends) = match written {
            Ok(Ok(w)) => w,
            Ok(Err((row, why))) => return refused(row, why),
            Err(panic) => return refused(None, format!("the Arrow encoder panicked: {panic}")),
        };
        let mut values = Vec::with_capacity(ends.len());
        let mut start = 0;
        for end in ends {
            match end {
                Some(end) => {
                    values.push(crate::new_bytes(py, &buf[start..end])?.into_any());
                    start = end;
                }
                None => values.push(py.None().into_bound(py)),
            }
        }
        let list = PyList::new(py, values)?;
        drop(arrays);
        if buf.capacity() <= SCRATCH_MAX {
            if let Ok(mut s) = self.scratch.lock() {
                *s = buf;
            }
        }
        PyTuple::new(py, [list.into_any(), py.None().into_bound(py), py.None().into_bound(py)])
    }

    /// The deepest nesting of the program's nodes (tests).
    #[getter]
    fn depth(&self) -> usize {
        self.prog.depth
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AvroArrowEncoder>()
}

#[cfg(test)]
mod tests;
