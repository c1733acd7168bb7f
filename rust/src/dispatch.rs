//! The native hot path of serdes' `FastDeserializer.__call__` / `FastSerializer.__call__`
//! (serdes/_serde.py), for a cache hit.
//!
//! The Python class' `__call__` is `property(attrgetter("_dispatch"))`, and `_dispatch` is one of
//! these objects, so `deser(data, ctx)` goes from the interpreter's call slot straight into Rust:
//! the Confluent frame is read here, the cache is looked up here (in the Python dicts the serde
//! owns, so the Python miss path, `clear_cache` and the async engines share one cache with no
//! synchronisation), and the entry is executed here -- a declared step of the fast-path hook
//! (`ParseStep` / `EncodeStep`: C-level callables such as `orjson.loads`, a jsonschema-rs
//! `is_valid`, `Message.FromString`) or any decoder / encoder callable. Everything else -- misses,
//! schema-id headers, GUID frames, subject-keyed readers, custom `schema.id.deserializer`,
//! data-contract rules -- is the Python slow path (`slow`), called with the user's arguments.
//!
//! Errors are the Python implementation's: a step that fails is re-done by its Python fallback,
//! which raises the typed error; an exception of a decoder is mapped by the same Python function
//! (`_payload_error`), chained with `__cause__` as `raise ... from e` does.
//!
//! Entries are classified per lookup into [`DecodeEntry`] / [`EncodeEntry`]. The native Avro
//! programs (`AvroDecoder`, `AvroEncoder`) have direct arms there, matched by type before the
//! generic callable, so a cache hit on an Avro topic runs without any Python-level call.

use pyo3::exceptions::PyException;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use crate::avro::AvroDecoder;
use crate::avro_encode::AvroEncoder;

/// Magic byte of a Confluent frame carrying a 4-byte big-endian schema id.
const MAGIC_ID: u8 = 0;
/// Length of that frame head (magic + id); decoders get the payload offset 5.
const ID_FRAME: usize = 5;

/// What a decoder cache entry is.
enum DecodeEntry<'py> {
    /// `ParseStep(parse, validate, convert, fallback)`, executed here.
    Step(Bound<'py, PyTuple>),
    /// A native Avro program (rust/src/avro): run on the frame's bytes with no Python call.
    NativeAvro(Bound<'py, AvroDecoder>),
    /// Any `Decoder`: `decoder(data, 5, ctx)`.
    Callable(Bound<'py, PyAny>),
}

/// What an encoder cache entry is.
enum EncodeEntry<'py> {
    /// `EncodeStep(prefix, validate, dumps, null_check, fallback)`, executed here.
    Step(Bound<'py, PyTuple>),
    /// A native Avro encoder program (rust/src/avro_encode): run with no Python call.
    NativeAvro(Bound<'py, AvroEncoder>),
    /// Any `Encoder`: `encoder(obj, ctx)`.
    Callable(Bound<'py, PyAny>),
}

/// Only `Exception`s are a record's failure; `KeyboardInterrupt`, `SystemExit` (and the async
/// engine's registry request, a `BaseException`) pass through untouched, as in the Python path.
fn is_exception(py: Python<'_>, e: &PyErr) -> bool {
    e.is_instance_of::<PyException>(py)
}

/// Most message indexes a frame head may carry for the native lookup (deeper nesting is rare and
/// takes the Python path, which bounds it itself).
const MAX_INDEXES: i64 = 16;

/// One zigzag varint at `pos`: `(value, next pos)`, or `None` if truncated or over 10 bytes.
fn zigzag(b: &[u8], mut pos: usize) -> Option<(i64, usize)> {
    let mut v: u64 = 0;
    for shift in (0..70).step_by(7) {
        let byte = *b.get(pos)?;
        pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some((((v >> 1) as i64) ^ -((v & 1) as i64), pos));
        }
    }
    None
}

/// Where the payload starts in a Protobuf frame: after the 5-byte frame head and the
/// message-index array (count, then that many indexes; a count of 0 means `[0]`).
fn protobuf_head(b: &[u8]) -> Option<usize> {
    let (count, mut pos) = zigzag(b, ID_FRAME)?;
    if !(0..=MAX_INDEXES).contains(&count) {
        return None;
    }
    for _ in 0..count {
        pos = zigzag(b, pos)?.1;
    }
    Some(pos)
}

fn ctx_or_none<'py>(py: Python<'py>, ctx: &Option<Bound<'py, PyAny>>) -> Bound<'py, PyAny> {
    match ctx {
        Some(c) => c.clone(),
        None => py.None().into_bound(py),
    }
}

/// The native half of `FastDeserializer.__call__` (one per deserializer instance).
#[pyclass(frozen, module = "serdes._serdes_native")]
pub struct Dispatcher {
    /// `FastDeserializer._steps`: frame head -> ParseStep
    steps: Py<PyDict>,
    /// `FastDeserializer._decoders`: 5 frame bytes -> Decoder
    decoders: Py<PyDict>,
    /// `serdes._serde.ParseStep`
    step_type: Py<PyAny>,
    /// Protobuf frames: a step's key is the 5-byte frame plus the message-index array
    protobuf: bool,
    /// the serde's `_decode_any(data, ctx)`: every case this object does not handle
    slow: Py<PyAny>,
    /// `serdes._serde._payload_error(e, data, ctx, schema_id) -> SerdesError`
    payload_error: Py<PyAny>,
}

impl Dispatcher {
    fn classify<'py>(&self, py: Python<'py>, entry: Bound<'py, PyAny>) -> DecodeEntry<'py> {
        if entry.get_type().is(self.step_type.bind(py)) {
            if let Ok(t) = entry.cast_into::<PyTuple>() {
                return DecodeEntry::Step(t);
            }
            unreachable!("ParseStep is a tuple");
        }
        if let Ok(d) = entry.cast::<AvroDecoder>() {
            return DecodeEntry::NativeAvro(d.clone());
        }
        DecodeEntry::Callable(entry)
    }

    /// The error of a failed decoder call, mapped as the Python path maps it.
    fn payload_err<'py>(
        &self,
        py: Python<'py>,
        e: PyErr,
        data: &Bound<'py, PyAny>,
        ctx: &Bound<'py, PyAny>,
        schema_id: u32,
    ) -> PyErr {
        if !is_exception(py, &e) {
            return e;
        }
        match self.payload_error.bind(py).call1((e.value(py), data, ctx, schema_id)) {
            Ok(typed) => {
                if typed.is(e.value(py)) {
                    return e; // a typed error passes as is (its location filled in)
                }
                let out = PyErr::from_value(typed);
                out.set_cause(py, Some(e));
                out
            }
            Err(e2) => e2,
        }
    }

    /// True when `ctx` carries headers (a schema-id header may be among them: the Python path).
    fn has_headers(py: Python<'_>, ctx: &Option<Bound<'_, PyAny>>) -> PyResult<bool> {
        match ctx {
            Some(c) if !c.is_none() => c.getattr(intern!(py, "headers"))?.is_truthy(),
            _ => Ok(false),
        }
    }

    /// One record whose context has no headers; `Ok(None)` means "not a hit: take the slow path".
    fn hit<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        ctx: &Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Ok(bytes) = data.cast_exact::<PyBytes>() else {
            return Ok(None); // None, bytearray, memoryview: the Python path copes
        };
        let b = bytes.as_bytes();
        if b.len() < ID_FRAME || b[0] != MAGIC_ID {
            return Ok(None);
        }
        let schema_id = u32::from_be_bytes([b[1], b[2], b[3], b[4]]);
        let mut entry = None;
        let mut head = ID_FRAME;
        let steps = self.steps.bind(py);
        if !steps.is_empty() {
            let step_head = if self.protobuf { protobuf_head(b) } else { Some(ID_FRAME) };
            if let Some(h) = step_head {
                entry = steps.get_item(PyBytes::new(py, &b[..h]))?;
                head = h;
            }
        }
        if entry.is_none() {
            entry = self.decoders.bind(py).get_item(PyBytes::new(py, &b[..ID_FRAME]))?;
        }
        let Some(entry) = entry else {
            return Ok(None);
        };
        let ctx = ctx_or_none(py, ctx);
        let fallback = match self.classify(py, entry) {
            DecodeEntry::Step(step) => {
                let parse = step.get_item(0)?;
                let validate = step.get_item(1)?;
                let convert = step.get_item(2)?;
                let value = match parse.call1((crate::new_bytes(py, &b[head..])?,)) {
                    Ok(v) => {
                        if validate.is_none() {
                            Some(v)
                        } else {
                            match validate.call1((&v,)).and_then(|r| r.is_truthy()) {
                                Ok(true) => Some(v),
                                Ok(false) => None,
                                Err(e) if is_exception(py, &e) => None,
                                Err(e) => return Err(e),
                            }
                        }
                    }
                    Err(e) if is_exception(py, &e) => None,
                    Err(e) => return Err(e),
                };
                if let Some(v) = value {
                    if convert.is_none() {
                        return Ok(Some(v));
                    }
                    return match convert.call1((v, &ctx)) {
                        Ok(out) => Ok(Some(out)),
                        Err(e) => Err(self.payload_err(py, e, data, &ctx, schema_id)),
                    };
                }
                step.get_item(3)?
            }
            DecodeEntry::NativeAvro(dec) => {
                return match dec.get().decode_slice(py, b, ID_FRAME, Some(&ctx)) {
                    Ok(v) => Ok(Some(v)),
                    Err(e) => Err(self.payload_err(py, e, data, &ctx, schema_id)),
                };
            }
            DecodeEntry::Callable(dec) => dec,
        };
        match fallback.call1((data, ID_FRAME, &ctx)) {
            Ok(out) => Ok(Some(out)),
            Err(e) => Err(self.payload_err(py, e, data, &ctx, schema_id)),
        }
    }

    /// One record; `headers`: whether `ctx` carries headers (checked once per call or batch).
    fn call_one<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        ctx: &Option<Bound<'py, PyAny>>,
        headers: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !headers {
            // a panic here is a bug in this dispatcher: the Python path decodes the record
            match crate::panics::catch(|| self.hit(py, data, ctx)) {
                Ok(hit) => {
                    if let Some(v) = hit? {
                        return Ok(v);
                    }
                }
                Err(_) => crate::panics::clear(py),
            }
        }
        self.slow.bind(py).call1((data, ctx_or_none(py, ctx)))
    }
}

#[pymethods]
impl Dispatcher {
    #[new]
    fn new(
        steps: Py<PyDict>,
        decoders: Py<PyDict>,
        step_type: Py<PyAny>,
        step_tail: Vec<u8>,
        slow: Py<PyAny>,
        payload_error: Py<PyAny>,
    ) -> Self {
        Dispatcher { steps, decoders, step_type, protobuf: !step_tail.is_empty(), slow, payload_error }
    }

    // The cached decoders and the slow path reference the serde that owns this object: let the
    // garbage collector see the cycle (the serde's __dict__ is what it clears).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.steps)?;
        visit.call(&self.decoders)?;
        visit.call(&self.step_type)?;
        visit.call(&self.slow)?;
        visit.call(&self.payload_error)?;
        Ok(())
    }

    /// Decode one framed record (the serde's `__call__`).
    #[pyo3(signature = (data, ctx=None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        ctx: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let headers = Self::has_headers(py, &ctx)?;
        self.call_one(py, data, &ctx, headers)
    }

    /// Decode a list of records sharing `ctx`: `(values, [(index, error), ...])`. A record that
    /// fails with an `Exception` leaves `None` at its index and its error in the list; every
    /// record is attempted. One crossing into native code for the batch; misses call the Python
    /// slow path for that record only.
    #[pyo3(signature = (payloads, ctx=None))]
    fn batch<'py>(
        &self,
        py: Python<'py>,
        payloads: &Bound<'py, PyAny>,
        ctx: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let headers = Self::has_headers(py, &ctx)?; // one context for the whole batch
        run_batch(py, payloads, |item| self.call_one(py, item, &ctx, headers))
    }
}

fn run_batch<'py, F>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    mut one: F,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)>
where
    F: FnMut(&Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>>,
{
    let values = PyList::empty(py);
    let errors = PyList::empty(py);
    for (i, item) in items.try_iter()?.enumerate() {
        let item = item?;
        match one(&item) {
            Ok(v) => values.append(v)?,
            Err(e) if is_exception(py, &e) => {
                values.append(py.None())?;
                errors.append((i, e.value(py)))?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok((values, errors))
}

/// The native half of `FastSerializer.__call__` (one per serializer instance).
#[pyclass(frozen, module = "serdes._serdes_native")]
pub struct EncodeDispatcher {
    /// `FastSerializer._value_encoders` / `_key_encoders`: topic -> Encoder or EncodeStep
    value_encoders: Py<PyDict>,
    key_encoders: Py<PyDict>,
    /// `MessageField.VALUE` / `MessageField.KEY` (compared by identity, as in Python)
    value_field: Py<PyAny>,
    key_field: Py<PyAny>,
    /// `serdes._serde.EncodeStep`
    step_type: Py<PyAny>,
    /// the serde's `_encode_any(obj, ctx)`: every case this object does not handle
    slow: Py<PyAny>,
    /// `serdes.SerdesError` and `serdes._serde._located(e, ctx)` (fills in the topic and field)
    serdes_error: Py<PyAny>,
    located: Py<PyAny>,
}

impl EncodeDispatcher {
    fn classify<'py>(&self, py: Python<'py>, entry: Bound<'py, PyAny>) -> EncodeEntry<'py> {
        if entry.get_type().is(self.step_type.bind(py)) {
            if let Ok(t) = entry.cast_into::<PyTuple>() {
                return EncodeEntry::Step(t);
            }
            unreachable!("EncodeStep is a tuple");
        }
        if let Ok(e) = entry.cast::<AvroEncoder>() {
            return EncodeEntry::NativeAvro(e.clone());
        }
        EncodeEntry::Callable(entry)
    }

    /// `prefix + payload` when the step accepts `obj`, else `None` (the fallback decides).
    fn run_step<'py>(
        &self,
        py: Python<'py>,
        step: &Bound<'py, PyTuple>,
        obj: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let validate = step.get_item(1)?;
        if !validate.is_none() {
            match validate.call1((obj,)).and_then(|r| r.is_truthy()) {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(e) if is_exception(py, &e) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        let payload = match step.get_item(2)?.call1((obj,)) {
            Ok(p) => p,
            Err(e) if is_exception(py, &e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let Ok(payload) = payload.cast_into_exact::<PyBytes>() else {
            return Ok(None);
        };
        let pb = payload.as_bytes();
        let null_check = step.get_item(3)?;
        if !null_check.is_none() && pb.windows(4).any(|w| w == b"null") {
            match null_check.call1((obj,)).and_then(|r| r.is_truthy()) {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(e) if is_exception(py, &e) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        let prefix_obj = step.get_item(0)?;
        let prefix = prefix_obj.cast::<PyBytes>()?.as_bytes();
        let out = PyBytes::new_with(py, prefix.len() + pb.len(), |buf| {
            buf[..prefix.len()].copy_from_slice(prefix);
            buf[prefix.len()..].copy_from_slice(pb);
            Ok(())
        })?;
        Ok(Some(out.into_any()))
    }

    fn call_one<'py>(
        &self,
        py: Python<'py>,
        obj: &Bound<'py, PyAny>,
        ctx: &Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if obj.is_none() {
            return Ok(py.None().into_bound(py));
        }
        let c = match ctx {
            Some(c) if !c.is_none() => c,
            _ => return self.slow.bind(py).call1((obj, ctx_or_none(py, ctx))),
        };
        match self.by_topic(py, c)? {
            Some((by_topic, topic)) => self.call_cached(py, obj, c, &by_topic, &topic),
            None => self.slow.bind(py).call1((obj, c)),
        }
    }

    /// The per-field dict and the topic of a context, or `None` for a field other than key/value.
    fn by_topic<'py>(
        &self,
        py: Python<'py>,
        c: &Bound<'py, PyAny>,
    ) -> PyResult<Option<(Bound<'py, PyDict>, Bound<'py, PyAny>)>> {
        let field = c.getattr(intern!(py, "field"))?;
        let dict = if field.is(self.value_field.bind(py)) {
            self.value_encoders.bind(py)
        } else if field.is(self.key_field.bind(py)) {
            self.key_encoders.bind(py)
        } else {
            return Ok(None);
        };
        Ok(Some((dict.clone(), c.getattr(intern!(py, "topic"))?)))
    }

    /// One non-`None` value with a key/value context.
    fn call_cached<'py>(
        &self,
        py: Python<'py>,
        obj: &Bound<'py, PyAny>,
        c: &Bound<'py, PyAny>,
        by_topic: &Bound<'py, PyDict>,
        topic: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        // a panic here is a bug in this dispatcher: the Python path encodes the value
        crate::panics::catch(|| self.cached(py, obj, c, by_topic, topic)).unwrap_or_else(|_| {
            crate::panics::clear(py);
            self.slow.bind(py).call1((obj, c))
        })
    }

    fn cached<'py>(
        &self,
        py: Python<'py>,
        obj: &Bound<'py, PyAny>,
        c: &Bound<'py, PyAny>,
        by_topic: &Bound<'py, PyDict>,
        topic: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let entry = match by_topic.get_item(topic) {
            Ok(Some(e)) => e,
            Ok(None) => return self.slow.bind(py).call1((obj, c)),
            Err(e) if is_exception(py, &e) => return self.slow.bind(py).call1((obj, c)), // unhashable
            Err(e) => return Err(e),
        };
        let enc = match self.classify(py, entry) {
            EncodeEntry::Step(step) => {
                if let Some(out) = self.run_step(py, &step, obj)? {
                    return Ok(out);
                }
                step.get_item(4)?
            }
            EncodeEntry::NativeAvro(enc) => {
                return match enc.get().encode_value(py, obj.clone(), Some(c.clone())) {
                    Ok(out) => Ok(out),
                    Err(e) => {
                        if e.is_instance(py, self.serdes_error.bind(py)) {
                            self.located.bind(py).call1((e.value(py), c))?;
                        }
                        Err(e)
                    }
                };
            }
            EncodeEntry::Callable(enc) => enc,
        };
        match enc.call1((obj, c)) {
            Ok(out) => Ok(out),
            Err(e) => {
                if e.is_instance(py, self.serdes_error.bind(py)) {
                    self.located.bind(py).call1((e.value(py), c))?;
                }
                Err(e)
            }
        }
    }
}

#[pymethods]
impl EncodeDispatcher {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        value_encoders: Py<PyDict>,
        key_encoders: Py<PyDict>,
        value_field: Py<PyAny>,
        key_field: Py<PyAny>,
        step_type: Py<PyAny>,
        slow: Py<PyAny>,
        serdes_error: Py<PyAny>,
        located: Py<PyAny>,
    ) -> Self {
        EncodeDispatcher {
            value_encoders,
            key_encoders,
            value_field,
            key_field,
            step_type,
            slow,
            serdes_error,
            located,
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.value_encoders)?;
        visit.call(&self.key_encoders)?;
        visit.call(&self.value_field)?;
        visit.call(&self.key_field)?;
        visit.call(&self.step_type)?;
        visit.call(&self.slow)?;
        visit.call(&self.serdes_error)?;
        visit.call(&self.located)?;
        Ok(())
    }

    /// Encode one value (the serde's `__call__`).
    #[pyo3(signature = (obj, ctx=None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        obj: &Bound<'py, PyAny>,
        ctx: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.call_one(py, obj, &ctx)
    }

    /// Encode a list of values sharing `ctx`: `(values, [(index, error), ...])`, as
    /// `Dispatcher.batch`.
    #[pyo3(signature = (objs, ctx=None))]
    fn batch<'py>(
        &self,
        py: Python<'py>,
        objs: &Bound<'py, PyAny>,
        ctx: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        // one context for the whole batch: its field and topic are read once
        let c = match &ctx {
            Some(c) if !c.is_none() => c.clone(),
            _ => return run_batch(py, objs, |item| self.call_one(py, item, &ctx)),
        };
        match self.by_topic(py, &c)? {
            Some((by_topic, topic)) => run_batch(py, objs, |item| {
                if item.is_none() {
                    Ok(py.None().into_bound(py))
                } else {
                    self.call_cached(py, item, &c, &by_topic, &topic)
                }
            }),
            None => run_batch(py, objs, |item| self.call_one(py, item, &ctx)),
        }
    }
}

/// Registration in `_serdes_native` (lib.rs calls this).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Dispatcher>()?;
    m.add_class::<EncodeDispatcher>()?;
    Ok(())
}

#[cfg(test)]
mod tests;
