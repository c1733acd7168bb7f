//! Confluent-framed Protobuf records straight into Arrow columns: a loop of serdes' own over the
//! wire format, driven by a program Python computes once per reader message
//! (`serdes/arrow/_native_protobuf.py`). No message objects, no Python per record.
//!
//! As for Avro (`columnar/mod.rs`), a call decodes every frame or none: on the first frame this
//! loop cannot read exactly as the per-record path would (see `decode.rs` and `wire.rs`), it
//! returns that frame's index and Python decodes the whole list on the per-record path, which
//! gives each bad record its typed error.
//!
//! Which frames it reads: magic byte 0, a 4-byte schema id and a message-index array of one byte
//! per number (every real schema's: Python's reader decides the rest), whose (id, indexes) Python
//! has accepted -- the frames the per-record path reads into the reader's message, or a message
//! it re-reads into it with the same result -- or, for a deserializer without a registry client
//! (whose per-record path reads every frame into its class, whatever the id), any.
//!
//! What keeps hostile input bounded: every read is bounds-checked (`wire.rs`); items per frame
//! are counted against `max_items`; nesting is the program's (no recursive messages; Python
//! bounds its depth by `max_depth`), and each level checks the thread's stack (`stack::Guard`);
//! the accepted keys are bounded by Python (`cache_size`); a panic is caught and answered like a
//! bad frame.
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::Schema;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use super::{in_shares, ArrowColumns, Refusal};
use crate::{panics, stack};

mod columns;
mod decode;
mod maps;
mod program;
mod wire;

use columns::StructCols;
use program::MessageDef;

/// Stack one nesting level of the decoder may use, with room to spare.
const STACK_PER_LEVEL: usize = 2 * 1024;
/// The longest message-index array read here (one byte each): deeper paths go to Python.
const MAX_INDEXES: usize = 63;

/// `ProtobufArrowDecoder(program, depth, max_items, any_key, max_heads)`: decodes frames into the
/// columns of one reader message. `any_key`: every schema id and message-index path is read with
/// the program (a deserializer without a registry client); else only the heads `add_key` accepted
/// (at most `max_heads` kept).
#[pyclass(module = "serdes._serdes_native", frozen)]
pub struct ProtobufArrowDecoder {
    program: Arc<MessageDef>,
    depth: usize,
    max_items: usize,
    any_key: bool,
    /// the most heads Python keeps accepted (its cache size): a call with more new ones is refused
    max_heads: usize,
    /// accepted frame heads: the 4-byte schema id and the message-index bytes
    keys: Mutex<HashSet<Vec<u8>>>,
}

/// Where the message starts in a frame whose prefix this decoder reads (magic 0, 4-byte id,
/// message indexes of one byte each), or `None`.
fn body_start(frame: &[u8]) -> Option<usize> {
    if frame.len() < 6 || frame[0] != 0 {
        return None;
    }
    let count = frame[5];
    if count == 0 {
        return Some(6); // the indexes [0]: the file's first message
    }
    // zigzag varints of one byte: even, below 0x80
    if count >= 0x80 || count & 1 == 1 || usize::from(count >> 1) > MAX_INDEXES {
        return None;
    }
    let end = 6 + usize::from(count >> 1);
    let indexes = frame.get(6..end)?;
    indexes.iter().all(|&b| b < 0x80 && b & 1 == 0).then_some(end)
}

impl ProtobufArrowDecoder {
    fn decode_chunk(&self, bodies: &[Option<&[u8]>], first: usize, tombstones: bool) -> Result<RecordBatch, Refusal> {
        let guard = stack::Guard::here();
        if guard.left() < self.depth.saturating_add(16).saturating_mul(STACK_PER_LEVEL) {
            return Err((Some(first), "too little stack left on this thread".to_string()));
        }
        let mut top = StructCols::new(self.program.clone(), tombstones, bodies.len());
        let mut cx = decode::Ctx { guard, items: 0, max_items: self.max_items };
        for (j, body) in bodies.iter().enumerate() {
            match body {
                None => top.push_placeholder(), // a tombstone: a row of nulls
                Some(b) => {
                    cx.items = 0;
                    decode::message(&mut top, b, &mut cx).map_err(|m| (Some(first + j), m.to_string()))?;
                }
            }
        }
        let rows = top.rows;
        let (fields, arrays) = top.finish_children(true).map_err(|m| (Some(first), m))?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
            .map_err(|e| (Some(first), e.to_string()))
    }

    fn decode_all(
        &self,
        bodies: &[Option<&[u8]>],
        tombstones: bool,
        threads: usize,
    ) -> Result<Vec<RecordBatch>, Refusal> {
        in_shares(bodies, threads, "the Protobuf decoder", |_, chunk, first| {
            self.decode_chunk(chunk, first, tombstones)
        })
    }

    fn keys(&self) -> PyResult<std::sync::MutexGuard<'_, HashSet<Vec<u8>>>> {
        self.keys.lock().map_err(|_| PyRuntimeError::new_err("decoder state poisoned"))
    }
}

fn refused<'py>(py: Python<'py>, index: Option<usize>, reason: &str) -> PyResult<Bound<'py, PyTuple>> {
    let index = match index {
        Some(i) => i.into_pyobject(py)?.into_any(),
        None => py.None().into_bound(py),
    };
    PyTuple::new(
        py,
        [PyList::empty(py).into_any(), index, reason.into_pyobject(py)?.into_any(), py.None().into_bound(py)],
    )
}

#[pymethods]
impl ProtobufArrowDecoder {
    #[new]
    fn new(
        program: &Bound<'_, PyAny>,
        depth: usize,
        max_items: usize,
        any_key: bool,
        max_heads: usize,
    ) -> PyResult<Self> {
        let program = program::parse_message(program, 0)?;
        Ok(ProtobufArrowDecoder { program, depth, max_items, any_key, max_heads, keys: Mutex::new(HashSet::new()) })
    }

    /// `add_key(head)`: frames whose schema id and message indexes are `head` (the frame's bytes
    /// 1 to the message) are read with the program.
    fn add_key(&self, head: &[u8]) -> PyResult<()> {
        if head.len() < 5 {
            return Err(PyValueError::new_err("a frame head is a 4-byte schema id and message indexes"));
        }
        self.keys()?.insert(head.to_vec());
        Ok(())
    }

    /// `forget(head)`: no longer (Python bounds how many are kept).
    fn forget(&self, head: &[u8]) -> PyResult<()> {
        self.keys()?.remove(head);
        Ok(())
    }

    /// `decode(frames, threads)`: `(columns, None, None, None)` -- a list of `ArrowColumns`, one
    /// per thread, in order -- or `([], index, reason, None)` when the call decoded nothing
    /// (`index`: the frame that stopped it, or `None`), or `([], None, None, heads)` when frames
    /// have heads not accepted yet (`heads`: each once, as bytes; Python decides and calls again).
    /// `frames`: `bytes` or `None` (a tombstone: a row of nulls).
    #[pyo3(signature = (frames, threads=1))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        frames: &Bound<'py, PyList>,
        threads: usize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let mut items: Vec<Option<Bound<'py, PyBytes>>> = Vec::with_capacity(frames.len());
        for (i, item) in frames.iter().enumerate() {
            if item.is_none() {
                items.push(None);
            } else {
                match item.cast_into::<PyBytes>() {
                    Ok(b) => items.push(Some(b)),
                    Err(_) => return refused(py, Some(i), "a value that is not bytes"),
                }
            }
        }
        let mut bodies: Vec<Option<&[u8]>> = Vec::with_capacity(items.len());
        // the heads not accepted yet, each once, in order (at most `max_heads`: Python keeps no more)
        let mut missing: Vec<&[u8]> = Vec::new();
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut tombstones = false;
        {
            let keys = self.keys()?;
            let mut last_known: &[u8] = &[];
            for (i, item) in items.iter().enumerate() {
                let Some(b) = item else {
                    tombstones = true;
                    bodies.push(None);
                    continue;
                };
                let frame = b.as_bytes();
                let Some(start) = body_start(frame) else {
                    return refused(
                        py,
                        Some(i),
                        "not a Confluent frame with a 4-byte schema id and one-byte message indexes",
                    );
                };
                let head = &frame[1..start];
                if !self.any_key && head != last_known {
                    if keys.contains(head) {
                        last_known = head;
                    } else if seen.insert(head) {
                        if missing.len() == self.max_heads {
                            return refused(py, None, "more frame heads in one call than the cache keeps");
                        }
                        missing.push(head);
                    }
                }
                bodies.push(Some(&frame[start..]));
            }
        }
        if !missing.is_empty() {
            let heads = PyList::empty(py);
            for h in missing {
                heads.append(PyBytes::new(py, h))?;
            }
            let none = || py.None().into_bound(py);
            return PyTuple::new(py, [PyList::empty(py).into_any(), none(), none(), heads.into_any()]);
        }
        // the frames are immutable bytes objects kept alive by `items` while the GIL is released
        let outcome = py
            .detach(|| panics::catch(|| self.decode_all(&bodies, tombstones, threads)))
            .unwrap_or_else(|m| Err((None, format!("the Protobuf decoder panicked: {m}"))));
        match outcome {
            Ok(batches) => {
                let list = PyList::empty(py);
                for b in batches {
                    list.append(Bound::new(py, ArrowColumns::new(b))?)?;
                }
                let none = || py.None().into_bound(py);
                PyTuple::new(py, [list.into_any(), none(), none(), none()])
            }
            Err((index, reason)) => refused(py, index, &reason),
        }
    }

    /// `_decode_ns(frames, reps)`: nanoseconds of each of `reps` decodes of `frames` (bytes, all
    /// accepted) into columns, timed inside Rust without Python: the benchmarks' view of the
    /// loop alone. Not public API.
    fn _decode_ns(&self, frames: &Bound<'_, PyList>, reps: usize) -> PyResult<Vec<u64>> {
        let items: Vec<Bound<'_, PyBytes>> =
            frames.iter().map(|x| x.cast_into::<PyBytes>().map_err(PyErr::from)).collect::<PyResult<_>>()?;
        let mut bodies: Vec<Option<&[u8]>> = Vec::with_capacity(items.len());
        for b in &items {
            let frame = b.as_bytes();
            let start = body_start(frame).ok_or_else(|| PyValueError::new_err("a frame this decoder does not read"))?;
            bodies.push(Some(&frame[start..]));
        }
        let mut out = Vec::with_capacity(reps);
        for _ in 0..reps {
            let t = std::time::Instant::now();
            let batch = self.decode_chunk(&bodies, 0, false).map_err(|(_, m)| PyValueError::new_err(m))?;
            out.push(t.elapsed().as_nanos() as u64);
            drop(batch);
        }
        Ok(out)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ProtobufArrowDecoder>()
}

#[cfg(test)]
mod tests {
    use super::body_start;

    #[test]
    fn frame_prefixes() {
        assert_eq!(body_start(&[0, 0, 0, 0, 1, 0, 8, 1]), Some(6));
        assert_eq!(body_start(&[0, 0, 0, 0, 1, 4, 2, 0, 8]), Some(8)); // indexes [1, 0]
        assert_eq!(body_start(&[0, 0, 0, 0, 1]), None); // no index array
        assert_eq!(body_start(&[1, 0, 0, 0, 1, 0]), None); // another magic byte
        assert_eq!(body_start(&[0, 0, 0, 0, 1, 3, 2]), None); // a negative count
        assert_eq!(body_start(&[0, 0, 0, 0, 1, 4, 2]), None); // fewer indexes than counted
        assert_eq!(body_start(&[0, 0, 0, 0, 1, 2, 0x80, 1]), None); // a two-byte index
    }
}
