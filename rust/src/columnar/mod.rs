//! Confluent-framed Avro records straight into Arrow columns: flat records read as written by
//! serdes' own loop (`flat.rs`), every other schema by `arrow-avro` (apache/arrow-rs).
//!
//! `serdes/arrow/_native.py` is the only caller. It hands over a reader schema and, per writer
//! schema id, the writer schema -- both already fetched, checked against serdes' limits and made
//! self-contained by Python -- and then whole lists of frames. A call either decodes every frame
//! or decodes none: `arrow-avro` has no way to take back a half-decoded row, so on the first frame
//! that does not decode (or that this path cannot hold to serdes' rules) the call returns its index
//! and Python decodes the whole list again on the per-record path, which reports each bad record
//! with its own typed error. The result is therefore always the per-record path's.
//!
//! What keeps hostile input bounded here:
//! * a frame longer than `max_frame` bytes (serdes' `max_items`) is not decoded here: every array
//!   or map item of the schemas this path takes costs at least one payload byte (Python refuses
//!   writers with zero-size array items), so no record decoded here holds more items than
//!   per-record decoding allows, and items cost no work beyond their bytes;
//! * every writer's nesting depth is bounded by Python (`max_depth`), and a decode starts only
//!   when the thread has stack for that depth (`stack::Guard`);
//! * the decoders kept are bounded by Python (one per writer schema id, at most `cache_size`);
//! * a panic is caught (`panics::catch`) and answered like a bad frame: the per-record path runs.
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use arrow_array::ffi::{to_ffi, FFI_ArrowSchema};
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_avro::reader::{Decoder, DecoderMode, ReaderBuilder};
use arrow_avro::schema::{AvroSchema, Fingerprint, FingerprintAlgorithm, SchemaStore};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyList, PyTuple};

use crate::{panics, stack};

mod flat;
mod json;
mod pool;
mod protobuf;

/// Stack one level of `arrow-avro`'s recursive record decoders may use, with room to spare (a
/// release build uses a few hundred bytes per level).
const STACK_PER_LEVEL: usize = 4 * 1024;

/// A writer schema added by Python.
struct Writer {
    json: String,
    /// nesting depth of the writer and reader schemas together (Python's count)
    depth: usize,
    /// the flat-record plan (`flat.rs`), when Python found the schema flat and unresolved
    flat: Option<Vec<flat::FieldPlan>>,
}

/// The schema id of a frame with a 4-byte id (magic byte 0) at input index `i`, or why a columnar
/// decoder does not take it: another framing, or more than `max_frame` bytes (serdes'
/// `max_items`: each item costs at least one byte, so no record decoded holds more items).
#[inline]
pub(crate) fn frame_schema_id(frame: &[u8], max_frame: usize, i: usize) -> Result<u32, Refusal> {
    let id = schema_id(frame).ok_or_else(|| (Some(i), "not a Confluent frame with a 4-byte schema id".to_string()))?;
    if frame.len() > max_frame {
        return Err((Some(i), format!("a frame of {} bytes (more than max_items)", frame.len())));
    }
    Ok(id)
}

/// The schema id of a frame with a 4-byte id (magic byte 0), or `None`.
#[inline]
fn schema_id(frame: &[u8]) -> Option<u32> {
    match *frame {
        [0, a, b, c, d, ..] => Some(u32::from_be_bytes([a, b, c, d])),
        _ => None,
    }
}

/// The frames of one `decode` call, read in one pass over the Python list: each bytes object is
/// touched once before the decode (a list of 20,000 is larger than the cache, so a second pass
/// would miss on every frame again).
pub(crate) struct FrameList<'py> {
    /// keeps each frame's bytes object alive while `slices` points into it
    _items: Vec<Bound<'py, PyBytes>>,
    slices: Vec<Option<&'py [u8]>>,
    missing: Vec<u32>,
}

impl<'py> FrameList<'py> {
    /// `None` when an item is neither `bytes` nor, where `tombstones` are taken, `None`. A frame
    /// without the 4-byte-id prefix is kept: the decode refuses it by its index.
    pub(crate) fn read(frames: &Bound<'py, PyList>, tombstones: bool, known: impl Fn(u32) -> bool) -> Option<Self> {
        let mut items: Vec<Bound<'py, PyBytes>> = Vec::with_capacity(frames.len());
        let mut slices = Vec::with_capacity(frames.len());
        let mut missing = Vec::new();
        let mut asked = HashSet::new();
        let mut last = None;
        for item in frames.iter() {
            if tombstones && item.is_none() {
                slices.push(None);
                continue;
            }
            let Ok(b) = item.cast_into::<PyBytes>() else { return None };
            let f = b.as_bytes();
            if let Some(id) = schema_id(f) {
                if last != Some(id) {
                    last = Some(id);
                    if !known(id) && asked.insert(id) {
                        missing.push(id);
                    }
                }
            }
            // SAFETY: the data of a bytes object that `_items` keeps alive (and bytes are
            // immutable) for as long as `slices()` lends it out, the GIL released or not
            slices.push(Some(unsafe { std::slice::from_raw_parts::<'py, u8>(f.as_ptr(), f.len()) }));
            items.push(b);
        }
        Some(FrameList { _items: items, slices, missing })
    }

    /// Each frame's data, in order (`None`: a tombstone), borrowed from this list.
    pub(crate) fn slices(&self) -> &[Option<&[u8]>] {
        &self.slices
    }

    /// The schema ids `known` did not hold, in order of first use.
    pub(crate) fn missing(&self) -> &[u32] {
        &self.missing
    }
}

/// Threads one call may decode on (Python passes fewer); each has decoders of its own.
const MAX_THREADS: usize = 16;
/// Frames each thread gets at least: below that a thread costs more than it saves.
const MIN_FRAMES_PER_THREAD: usize = 4096;

/// `items` cut into contiguous shares for up to `threads` threads (each share at least
/// `MIN_FRAMES_PER_THREAD` items), each given to `decode(k, share, index of its first item)`; the
/// results in order. One share runs on this thread; on several, a panic in one is that share's
/// refusal (`what` names the decoder), and the caller's own catch covers the single share.
pub(crate) fn in_shares<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    what: &str,
    decode: impl Fn(usize, &[T], usize) -> Result<R, Refusal> + Sync,
) -> Result<Vec<R>, Refusal> {
    let n = threads.clamp(1, MAX_THREADS).min(items.len() / MIN_FRAMES_PER_THREAD).max(1);
    if n == 1 {
        return decode(0, items, 0).map(|r| vec![r]);
    }
    let share = items.len().div_ceil(n);
    let decode = &decode;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(share)
            .enumerate()
            .map(|(k, chunk)| {
                scope.spawn(move || {
                    panics::catch(|| decode(k, chunk, k * share))
                        .unwrap_or_else(|m| Err((None, format!("{what} panicked: {m}"))))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err((None, "a decoding thread panicked".to_string()))))
            .collect()
    })
}

/// `AvroArrowDecoder(reader_json, max_frame)`: decodes frames of the writer schemas added with
/// `add_writer` into columns of the reader schema.
#[pyclass(module = "serdes._serdes_native", frozen)]
pub struct AvroArrowDecoder {
    reader: String,
    max_frame: usize,
    writers: Mutex<HashMap<u32, Arc<Writer>>>,
    /// per thread of a call: the decoder of each writer id, built at first use and dropped after
    /// a failed decode (its rows may be half-written)
    slots: Vec<Mutex<HashMap<u32, RowDecoder>>>,
}

/// Why a call decoded nothing: the index of the frame (or `None`: the whole call) and a message.
pub(crate) type Refusal = (Option<usize>, String);

/// The decoder of one writer schema: the flat-record loop where Python gave a plan, else the crate.
enum RowDecoder {
    Flat(flat::FlatDecoder),
    Crate(Box<Decoder>),
}

impl RowDecoder {
    fn decode(&mut self, body: &[u8]) -> Result<usize, String> {
        match self {
            RowDecoder::Flat(d) => d.decode(body),
            RowDecoder::Crate(d) => d.decode(body).map_err(|e| e.to_string()),
        }
    }

    /// Room for `rows` more rows, where the decoder keeps its own buffers (the flat loop).
    fn reserve(&mut self, rows: usize) {
        if let RowDecoder::Flat(d) = self {
            d.reserve(rows);
        }
    }

    fn flush(&mut self) -> Result<Option<RecordBatch>, String> {
        match self {
            RowDecoder::Flat(d) => d.flush(),
            RowDecoder::Crate(d) => d.flush().map_err(|e| e.to_string()),
        }
    }
}

fn build_row_decoder(reader: &str, id: u32, writer: &Writer) -> Result<RowDecoder, String> {
    match &writer.flat {
        Some(plan) => Ok(RowDecoder::Flat(flat::FlatDecoder::new(plan.clone()))),
        None => build(reader, id, &writer.json).map(|d| RowDecoder::Crate(Box::new(d))),
    }
}

fn build(reader: &str, id: u32, writer: &str) -> Result<Decoder, String> {
    let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
    store.set(Fingerprint::Id(id), AvroSchema::new(writer.to_string())).map_err(|e| e.to_string())?;
    let mut builder = ReaderBuilder::new().with_writer_schema_store(store).with_active_fingerprint(Fingerprint::Id(id));
    if writer != reader {
        // writer -> reader resolution; the same schema is read as written (no resolution step)
        builder = builder.with_reader_schema(AvroSchema::new(reader.to_string()));
    }
    builder
        .with_decoder_mode(DecoderMode::UnframedDatum)
        // rows per batch: a call flushes whenever the writer changes, and at its end
        .with_batch_size(usize::MAX >> 1)
        .build_decoder()
        .map_err(|e| e.to_string())
}

fn poisoned<T>(_: T) -> Refusal {
    (None, "decoder state poisoned".to_string())
}

impl AvroArrowDecoder {
    /// Decode `frames` (the input's frames from index `first` on) on thread slot `slot` into
    /// batches, one per run of frames of the same writer, or refuse them.
    fn decode_chunk(
        &self,
        slot: usize,
        frames: &[&[u8]],
        first: usize,
        writers: &HashMap<u32, Arc<Writer>>,
    ) -> Result<Vec<RecordBatch>, Refusal> {
        let mut decoders = self.slots[slot].lock().map_err(poisoned)?;
        let result = self.decode_into(&mut decoders, frames, first, writers);
        if result.is_err() {
            decoders.clear(); // a refused call leaves no rows behind for the next one
        }
        result
    }

    fn decode_into(
        &self,
        decoders: &mut HashMap<u32, RowDecoder>,
        frames: &[&[u8]],
        first: usize,
        writers: &HashMap<u32, Arc<Writer>>,
    ) -> Result<Vec<RecordBatch>, Refusal> {
        let guard = stack::Guard::here();
        let mut batches = Vec::new();
        let mut at = 0;
        // one run of frames of one writer at a time: its decoder looked up once per run, not
        // once per frame (a hash per record was a tenth of a flat record's time)
        while at < frames.len() {
            let id = frame_schema_id(frames[at], self.max_frame, first + at)?;
            let writer = writers.get(&id).ok_or_else(|| (Some(first + at), format!("no writer schema {id}")))?;
            if guard.left() < writer.depth.saturating_add(16).saturating_mul(STACK_PER_LEVEL) {
                return Err((Some(first + at), "too little stack left on this thread".to_string()));
            }
            let decoder = match decoders.entry(id) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(build_row_decoder(&self.reader, id, writer).map_err(|m| (Some(first + at), m))?)
                }
            };
            decoder.reserve(frames.len() - at);
            let mut end = at;
            while end < frames.len() {
                let i = first + end;
                let frame = frames[end];
                if end > at && frame_schema_id(frame, self.max_frame, i)? != id {
                    break;
                }
                let body = &frame[5..];
                let failure = match decoder.decode(body) {
                    Ok(n) if n == body.len() => {
                        end += 1;
                        continue;
                    }
                    Ok(n) => format!("{} bytes of {} decoded", n, body.len()),
                    Err(e) => e,
                };
                return Err((Some(i), failure));
            }
            // (the frame after the run, or the call's first frame at the end, names a failure
            // to build the run's columns, as before runs were read whole)
            let blame = if end < frames.len() { first + end } else { first };
            if let Some(batch) = decoder.flush().map_err(|m| (Some(blame), m))? {
                batches.push(batch);
            }
            at = end;
        }
        Ok(batches)
    }

    /// Every frame decoded on up to `threads` threads (contiguous shares, in order), or refused.
    fn decode_all(&self, frames: &[&[u8]], threads: usize) -> Result<Vec<RecordBatch>, Refusal> {
        let writers = self.writers.lock().map_err(poisoned)?.clone();
        let shares =
            in_shares(frames, threads, "arrow-avro", |k, chunk, first| self.decode_chunk(k, chunk, first, &writers))?;
        Ok(shares.into_iter().flatten().collect())
    }

    /// After a panic: every decoder may be half-written.
    fn drop_decoders(&self) {
        for slot in &self.slots {
            if let Ok(mut d) = slot.lock() {
                d.clear();
            }
        }
    }
}

#[pymethods]
impl AvroArrowDecoder {
    #[new]
    fn new(reader_json: String, max_frame: usize) -> Self {
        AvroArrowDecoder {
            reader: reader_json,
            max_frame,
            writers: Mutex::new(HashMap::new()),
            slots: (0..MAX_THREADS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    /// `add_writer(id, writer_json, depth)`: frames of schema id `id` were written with this
    /// schema. Raises ValueError when `arrow-avro` cannot resolve it to the reader schema.
    #[pyo3(signature = (id, writer_json, depth, flat=None))]
    fn add_writer(
        &self,
        id: u32,
        writer_json: String,
        depth: usize,
        flat: Option<Vec<(String, String, Option<u8>)>>,
    ) -> PyResult<()> {
        let flat = match flat {
            None => None,
            Some(fields) => Some(
                fields
                    .into_iter()
                    .map(|(name, kind, null_index)| {
                        let kind = flat::Kind::parse(&kind)
                            .ok_or_else(|| PyValueError::new_err(format!("not a flat field kind: {kind}")))?;
                        if null_index.is_some_and(|n| n > 1) {
                            return Err(PyValueError::new_err("a null index beyond a two-branch union"));
                        }
                        Ok(flat::FieldPlan { name, kind, null_index })
                    })
                    .collect::<PyResult<Vec<_>>>()?,
            ),
        };
        let writer = Writer { json: writer_json, depth, flat };
        let reader = &self.reader;
        let built = panics::catch(|| build_row_decoder(reader, id, &writer))
            .map_err(|m| PyRuntimeError::new_err(format!("arrow-avro panicked: {m}")))?
            .map_err(PyValueError::new_err)?;
        self.writers_mut()?.insert(id, Arc::new(writer));
        if let Ok(mut d) = self.slots[0].lock() {
            d.insert(id, built);
        }
        Ok(())
    }

    /// `forget(id)`: drop the writer of schema id `id` (Python bounds how many are kept).
    fn forget(&self, id: u32) -> PyResult<()> {
        self.writers_mut()?.remove(&id);
        for slot in &self.slots {
            if let Ok(mut d) = slot.lock() {
                d.remove(&id);
            }
        }
        Ok(())
    }

    /// `_crate_floor_ns(frames, reps)`: nanoseconds of each of `reps` decodes of `frames` (all of
    /// one added writer) by the crate alone -- its own streaming decoder over the frames laid end
    /// to end, then one flush -- without Python in between: the benchmarks' floor. Not public API.
    fn _crate_floor_ns(&self, frames: &Bound<'_, PyList>, reps: usize) -> PyResult<Vec<u64>> {
        let mut all = Vec::new();
        let mut id = None;
        for f in frames.iter() {
            let b = f.cast_into::<PyBytes>()?;
            let bytes = b.as_bytes();
            if bytes.len() < 5 {
                return Err(PyValueError::new_err("a frame shorter than its 5-byte prefix"));
            }
            id.get_or_insert(u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]));
            all.extend_from_slice(bytes);
        }
        let id = id.ok_or_else(|| PyValueError::new_err("no frames"))?;
        let writer = self.writers_mut()?.get(&id).cloned().ok_or_else(|| PyValueError::new_err("writer not added"))?;
        let mut out = Vec::with_capacity(reps);
        for _ in 0..reps {
            let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
            store
                .set(Fingerprint::Id(id), AvroSchema::new(writer.json.clone()))
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            let mut builder = ReaderBuilder::new().with_writer_schema_store(store).with_batch_size(frames.len().max(1));
            if writer.json != self.reader {
                builder = builder.with_reader_schema(AvroSchema::new(self.reader.clone()));
            }
            let mut decoder = builder.build_decoder().map_err(|e| PyValueError::new_err(e.to_string()))?;
            let t = std::time::Instant::now();
            let n = decoder.decode(&all).map_err(|e| PyValueError::new_err(e.to_string()))?;
            let batch = decoder.flush().map_err(|e| PyValueError::new_err(e.to_string()))?;
            out.push(t.elapsed().as_nanos() as u64);
            if n != all.len() || batch.map_or(0, |b| b.num_rows()) != frames.len() {
                return Err(PyValueError::new_err("the crate did not decode every frame"));
            }
        }
        Ok(out)
    }

    /// `decode(frames, threads)`: `(batches, None, None, [])` -- a list of `ArrowColumns`, one
    /// per run of frames of one writer (per thread), in order -- or `([], index, reason, missing)`
    /// when the call decoded nothing (`index`: the frame that stopped it, or `None`; `missing`:
    /// the schema ids not added yet, in order of first use, when that is why); or `None` when a
    /// frame is not `bytes` (this path does not take the list).
    /// `threads`: how many threads a large list may be decoded on.
    #[pyo3(signature = (frames, threads=1))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        frames: &Bound<'py, PyList>,
        threads: usize,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let list = {
            let writers = self.writers_mut()?;
            match FrameList::read(frames, false, |id| writers.contains_key(&id)) {
                Some(list) => list,
                None => return Ok(None),
            }
        };
        if !list.missing().is_empty() {
            let reason = "schema ids without a writer".into_pyobject(py)?.into_any();
            let parts = [
                PyList::empty(py).into_any(),
                py.None().into_bound(py),
                reason,
                list.missing().into_pyobject(py)?.into_any(),
            ];
            return PyTuple::new(py, parts).map(Some);
        }
        let slices: Vec<&[u8]> = list.slices().iter().flatten().copied().collect();
        let result = py.detach(|| panics::catch(|| self.decode_all(&slices, threads)));
        let outcome = match result {
            Ok(r) => r,
            Err(m) => Err((None, format!("arrow-avro panicked: {m}"))),
        };
        if matches!(outcome, Err((None, _))) {
            self.drop_decoders();
        }
        match outcome {
            Ok(batches) => {
                let cols: Vec<ArrowColumns> = batches.into_iter().map(ArrowColumns::new).collect();
                let list = PyList::empty(py);
                for c in cols {
                    list.append(Bound::new(py, c)?)?;
                }
                let parts =
                    [list.into_any(), py.None().into_bound(py), py.None().into_bound(py), PyList::empty(py).into_any()];
                PyTuple::new(py, parts).map(Some)
            }
            Err((index, reason)) => {
                let index = match index {
                    Some(i) => i.into_pyobject(py)?.into_any(),
                    None => py.None().into_bound(py),
                };
                let parts = [
                    PyList::empty(py).into_any(),
                    index,
                    reason.into_pyobject(py)?.into_any(),
                    PyList::empty(py).into_any(),
                ];
                PyTuple::new(py, parts).map(Some)
            }
        }
    }
}

/// One record batch as a struct array, handed to Python once through the Arrow C data interface
/// (`__arrow_c_array__`: `pyarrow.record_batch(x)`, `polars.from_arrow`, DuckDB, ...).
#[pyclass(module = "serdes._serdes_native", frozen)]
pub struct ArrowColumns {
    array: Mutex<Option<StructArray>>,
}

impl ArrowColumns {
    fn new(batch: RecordBatch) -> Self {
        ArrowColumns::from_array(StructArray::from(batch))
    }

    fn from_array(array: StructArray) -> Self {
        ArrowColumns { array: Mutex::new(Some(array)) }
    }
}

#[pymethods]
impl ArrowColumns {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema; // the columns have one type: the reader schema's
        let array = self
            .array
            .lock()
            .map_err(|_| PyRuntimeError::new_err("columns poisoned"))?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("these columns were already handed over"))?;
        let (ffi_array, ffi_schema): (_, FFI_ArrowSchema) =
            to_ffi(&array.to_data()).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let schema = PyCapsule::new(py, ffi_schema, Some(CString::new("arrow_schema").expect("no NUL")))?;
        let array = PyCapsule::new(py, ffi_array, Some(CString::new("arrow_array").expect("no NUL")))?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }
}

impl AvroArrowDecoder {
    fn writers_mut(&self) -> PyResult<std::sync::MutexGuard<'_, HashMap<u32, Arc<Writer>>>> {
        self.writers.lock().map_err(|_| PyRuntimeError::new_err("decoder state poisoned"))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AvroArrowDecoder>()?;
    m.add_class::<ArrowColumns>()?;
    protobuf::register(m)?;
    json::register(m)
}
