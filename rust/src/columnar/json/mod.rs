//! Confluent-framed JSON Schema records straight into Arrow columns, validated as they are read.
//!
//! `serdes/arrow/_native_json.py` is the only caller. Per schema id it hands over a *program*
//! (`program.rs`): the columns of the reader schema and the JSON Schema keywords of the schema
//! the per-record path validates that id's records against -- built only when every keyword is in
//! the subset implemented here. Then it hands over whole lists of frames. Like the Avro decoder
//! (`super`), a call decodes every frame or none: on the first frame this path does not decode
//! (invalid JSON, a record the schema rejects, anything `parse.rs` leaves to the per-record path)
//! the call returns its index, and Python decodes the whole list again on the per-record path,
//! which gives each bad record its own typed error. So the batch is always the per-record path's.
//!
//! What keeps hostile input bounded here:
//! * a frame longer than `max_frame` bytes (serdes' `max_items`) is not decoded here, so no record
//!   decoded here holds more items than that (each item costs at least one byte);
//! * the recursion follows the program, whose depth Python bounds by `max_depth`, and a decode
//!   starts only when the thread has stack for that depth (`stack::Guard`); the input's own
//!   nesting never drives it (`parse.rs`);
//! * work and memory are linear in the input's bytes (duplicate map keys: a keyed hash set);
//! * the programs kept are bounded by Python (one per schema id, at most `cache_size`);
//! * a panic is caught (`panics::catch`) and answered like a bad frame: the per-record path runs.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::StructArray;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use super::{frame_schema_id, ArrowColumns, FrameList, Refusal};
use crate::{panics, stack};

mod columns;
#[cfg(feature = "arrow-json-floor")]
mod floor;
mod parse;
mod program;

use columns::Columns;
use parse::Parser;
use program::Program;

/// Stack one level of the parser's recursion (value -> object/array/map -> value) may use, with
/// room to spare.
const STACK_PER_LEVEL: usize = 4 * 1024;

/// `JsonArrowDecoder(max_frame)`: decodes frames of the schema ids added with `add_program`.
#[pyclass(module = "serdes._serdes_native", frozen)]
pub struct JsonArrowDecoder {
    max_frame: usize,
    programs: Mutex<HashMap<u32, Arc<Program>>>,
}

impl JsonArrowDecoder {
    fn programs(&self) -> PyResult<std::sync::MutexGuard<'_, HashMap<u32, Arc<Program>>>> {
        self.programs.lock().map_err(|_| PyRuntimeError::new_err("decoder state poisoned"))
    }

    /// Every frame (`None`: a tombstone, a row of nulls) into one struct array, or refused.
    fn decode_all(
        &self,
        frames: &[Option<&[u8]>],
        programs: &HashMap<u32, Arc<Program>>,
    ) -> Result<StructArray, Refusal> {
        let (first_index, first) = frames
            .iter()
            .enumerate()
            .find_map(|(i, f)| f.map(|f| (i, f)))
            .ok_or_else(|| (None, "no record to decode (tombstones only)".to_string()))?;
        let first_program = program_of(frame_schema_id(first, self.max_frame, first_index)?, programs)
            .map_err(|m| (Some(first_index), m))?;
        let guard = stack::Guard::here();
        if guard.left() < first_program.depth.saturating_add(16).saturating_mul(STACK_PER_LEVEL) {
            return Err((None, "too little stack left on this thread".to_string()));
        }
        let mut cols = Columns::new(&first_program, frames.len());
        // the program of the current run of frames of one schema id (checked once per run)
        let mut current: Option<(u32, Arc<Program>)> = None;
        for (i, frame) in frames.iter().enumerate() {
            let Some(frame) = frame else {
                cols.push_null(&first_program, 0).map_err(|m| (Some(i), m.to_string()))?;
                continue;
            };
            let id = frame_schema_id(frame, self.max_frame, i)?;
            if current.as_ref().is_none_or(|(cid, _)| *cid != id) {
                let p = program_of(id, programs).map_err(|m| (Some(i), m))?;
                if !p.same_columns(&first_program) {
                    return Err((Some(i), format!("schema id {id} has other columns")));
                }
                current = Some((id, p));
            }
            let program = current.as_ref().map(|(_, p)| &**p).unwrap_or(&first_program);
            Parser::new(program, &mut cols).record(&frame[5..]).map_err(|m| (Some(i), m.to_string()))?;
        }
        cols.finish(&first_program).map_err(|m| (None, m))
    }
}

fn program_of(id: u32, programs: &HashMap<u32, Arc<Program>>) -> Result<Arc<Program>, String> {
    programs.get(&id).cloned().ok_or_else(|| format!("no program for schema id {id}"))
}

#[pymethods]
impl JsonArrowDecoder {
    #[new]
    fn new(max_frame: usize) -> Self {
        JsonArrowDecoder { max_frame, programs: Mutex::new(HashMap::new()) }
    }

    /// `add_program(id, nodes)`: frames of schema id `id` decode with this program (see
    /// `Program::from_python`). Raises ValueError for a malformed program.
    fn add_program(&self, id: u32, nodes: &Bound<'_, PyList>) -> PyResult<()> {
        // (a panic here is a bug: refused like a malformed program, so that id stays per-record)
        let program = panics::catch(|| Program::from_python(nodes))
            .map_err(|m| PyValueError::new_err(format!("building the JSON program panicked: {m}")))??;
        self.programs()?.insert(id, Arc::new(program));
        Ok(())
    }

    /// `forget(id)`: drop the program of schema id `id` (Python bounds how many are kept).
    fn forget(&self, id: u32) -> PyResult<()> {
        self.programs()?.remove(&id);
        Ok(())
    }

    /// `decode(frames)`: `(columns, None, None, [])` -- one `ArrowColumns`, the rows in order --
    /// or `(None, index, reason, missing)` when the call decoded nothing (`index`: the frame that
    /// stopped it, or `None`; `missing`: the schema ids without a program, in order of first use,
    /// when that is why); or `None` when an item is neither `bytes` nor `None` (a tombstone). The
    /// GIL is released while the frames are decoded.
    fn decode<'py>(&self, py: Python<'py>, frames: &Bound<'py, PyList>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        // One pass over the frames reads each one's type, length, schema id and data address (each
        // bytes object is touched once before the decode: a list of 20,000 is larger than the
        // cache, so a second pass would miss on every frame again).
        let programs = self.programs()?.clone();
        let Some(list) = FrameList::read(frames, true, |id| programs.contains_key(&id)) else { return Ok(None) };
        let slices = list.slices();
        let none = || py.None().into_bound(py);
        if !list.missing().is_empty() {
            let reason = "schema ids without a program".into_pyobject(py)?.into_any();
            return PyTuple::new(py, [none(), none(), reason, list.missing().into_pyobject(py)?.into_any()]).map(Some);
        }
        // the frames are immutable bytes objects kept alive by `items` while the GIL is released
        let result = py.detach(|| panics::catch(|| self.decode_all(slices, &programs)));
        let outcome = result.unwrap_or_else(|m| Err((None, format!("the JSON decoder panicked: {m}"))));
        let nothing = PyList::empty(py).into_any();
        match outcome {
            Ok(array) => {
                let cols = Bound::new(py, ArrowColumns::from_array(array))?;
                PyTuple::new(py, [cols.into_any(), none(), none(), nothing]).map(Some)
            }
            Err((index, reason)) => {
                let index = match index {
                    Some(i) => i.into_pyobject(py)?.into_any(),
                    None => none(),
                };
                PyTuple::new(py, [none(), index, reason.into_pyobject(py)?.into_any(), nothing]).map(Some)
            }
        }
    }

    /// `_parse_floor_ns(frames, reps)`: nanoseconds of each of `reps` decodes of `frames` (all
    /// with a program) into columns, timed inside Rust: the benchmarks' view of this decoder
    /// without Python around it. Not public API.
    fn _parse_floor_ns(&self, frames: &Bound<'_, PyList>, reps: usize) -> PyResult<Vec<u64>> {
        let items: Vec<Bound<'_, PyBytes>> =
            frames.iter().map(|x| x.cast_into::<PyBytes>().map_err(PyErr::from)).collect::<PyResult<_>>()?;
        let slices: Vec<Option<&[u8]>> = items.iter().map(|b| Some(b.as_bytes())).collect();
        let programs = self.programs()?.clone();
        let mut out = Vec::with_capacity(reps);
        for _ in 0..reps {
            let t = std::time::Instant::now();
            let array = self.decode_all(&slices, &programs).map_err(|(_, m)| PyValueError::new_err(m))?;
            out.push(t.elapsed().as_nanos() as u64);
            drop(array);
        }
        Ok(out)
    }

    /// `_arrow_json_floor_ns(frames, reps)`: nanoseconds of each of `reps` decodes of `frames`'
    /// bodies by arrow-json alone into the same columns (`floor.rs`; feature `arrow-json-floor`,
    /// benchmarks only). The first frame's schema id must have a program.
    #[cfg(feature = "arrow-json-floor")]
    fn _arrow_json_floor_ns(&self, frames: &Bound<'_, PyList>, reps: usize) -> PyResult<Vec<u64>> {
        let items: Vec<Bound<'_, PyBytes>> =
            frames.iter().map(|x| x.cast_into::<PyBytes>().map_err(PyErr::from)).collect::<PyResult<_>>()?;
        let bodies: Vec<&[u8]> = items.iter().map(|b| b.as_bytes().get(5..).unwrap_or_default()).collect();
        let first = items.first().ok_or_else(|| PyValueError::new_err("no frames"))?;
        let id = frame_schema_id(first.as_bytes(), usize::MAX, 0).map_err(|(_, m)| PyValueError::new_err(m))?;
        let program = program_of(id, &self.programs()?.clone()).map_err(PyValueError::new_err)?;
        floor::arrow_json_ns(&program, &bodies, reps).map_err(PyValueError::new_err)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<JsonArrowDecoder>()
}
