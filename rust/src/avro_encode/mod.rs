//! The native Avro encoder: `AvroEncoder(obj, ctx) -> prefix + payload`, the serdes `Encoder`
//! contract (serdes/_serde.py). serdes/avro/_native_encoder.py builds it; the pure-Python encoder
//! (serdes/avro/_encgen.py) is the reference and the fallback.
//!
//! One rule keeps the two identical: the native loop only *accepts* values of the exact built-in
//! types the pure encoder takes on its fast path (dict, list/tuple, str, bytes/bytearray, int
//! within range, float, True/False/None, and whatever fastavro's logical-type prepare functions
//! return), writing the same bytes. Anything else -- a value of the wrong type, an int out of range,
//! a str subclass, a Mapping that is not a dict, a missing field, a tuple-notation union value --
//! "bails": the buffer is dropped and the pure encoder runs on the same value from the start, so it
//! decides (its bytes, or its ValidationError with its path message). Errors cost a second pass;
//! valid records never do, and nothing is half-written.
mod program;

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDate, PyDateAccess, PyDateTime, PyDict, PyString, PyTimeAccess, PyTzInfoAccess};

use program::{Fast, Kind, Node, Program};

/// Why the native loop stopped.
enum Stop {
    /// leave this value to the pure encoder
    Bail,
    /// a typed error of the native encoder's own (the depth bound)
    Raise(PyErr),
}

type Step = Result<(), Stop>;

#[inline(always)]
fn put_long(buf: &mut Vec<u8>, v: i64) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        buf.push((n as u8) | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
}

#[inline(always)]
fn put_len(buf: &mut Vec<u8>, n: ffi::Py_ssize_t) {
    put_long(buf, n as i64);
}

/// The value of an exact `int` that fits an i64, else None (an error indicator is cleared).
#[inline(always)]
unsafe fn exact_i64(o: *mut ffi::PyObject) -> Option<i64> {
    if ffi::PyLong_CheckExact(o) == 0 {
        return None;
    }
    let mut overflow: std::os::raw::c_int = 0;
    let v = ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow);
    if overflow != 0 {
        return None;
    }
    if v == -1 && !ffi::PyErr_Occurred().is_null() {
        ffi::PyErr_Clear();
        return None;
    }
    Some(v)
}

/// float(o) for the values the pure encoder converts without a Python call of its own
#[inline(always)]
unsafe fn exact_f64(o: *mut ffi::PyObject) -> Option<f64> {
    if ffi::PyFloat_CheckExact(o) != 0 {
        return Some(ffi::PyFloat_AS_DOUBLE(o));
    }
    // an int: Rust's i64 -> f64 rounds to nearest, ties to even, as Python's float(int) does
    exact_i64(o).map(|v| v as f64)
}

#[pyclass(frozen, module = "serdes._serdes_native", name = "AvroEncoder")]
pub struct AvroEncoder {
    prog: Program,
    prefix: Vec<u8>,
    /// the pure encoder for the same schema and options, without to_dict: `fallback(value, ctx)`
    fallback: Py<PyAny>,
    to_dict: Option<Py<PyAny>>,
    /// follow fastavro's record rules (the pure reference for strict modes and recursive schemas)
    fastavro_rules: bool,
    strict: bool,
    strict_allow_default: bool,
    /// nesting bound on values: serdes.max.depth for a recursive schema (others nest no deeper
    /// than their schema), never above STACK_GUARD_DEPTH
    max_depth: u32,
    validation_error: Py<PyAny>,
    type_key: Py<PyString>,
    types: Types,
    /// capacity of the next record's buffer: the largest record so far, up to CAPACITY_HINT_MAX
    /// (one allocation per call for usual records; one huge record does not make every later
    /// call allocate its size)
    capacity: AtomicUsize,
}

impl AvroEncoder {
    #[cold]
    #[inline(never)]
    fn depth_error(&self, py: Python<'_>) -> Stop {
        let msg = format!(
            "the value nests deeper than serdes.max.depth={} (a cyclic or hostile value?)",
            self.max_depth
        );
        match self.validation_error.bind(py).call1((msg,)) {
            Ok(e) => Stop::Raise(PyErr::from_value(e)),
            Err(e) => Stop::Raise(e),
        }
    }

    /// Append the encoding of `o` (a borrowed reference the caller keeps alive) per `node`.
    unsafe fn enc(&self, py: Python<'_>, o: *mut ffi::PyObject, node: usize, buf: &mut Vec<u8>, depth: u32) -> Step {
        match &self.prog.nodes[node] {
            Node::Null => {
                if o != ffi::Py_None() {
                    return Err(Stop::Bail);
                }
            }
            Node::Boolean => {
                if o == ffi::Py_True() {
                    buf.push(1);
                } else if o == ffi::Py_False() {
                    buf.push(0);
                } else {
                    return Err(Stop::Bail);
                }
            }
            Node::Int => match exact_i64(o) {
                Some(v) if (i32::MIN as i64..=i32::MAX as i64).contains(&v) => put_long(buf, v),
                _ => return Err(Stop::Bail),
            },
            Node::Long => match exact_i64(o) {
                Some(v) => put_long(buf, v),
                None => return Err(Stop::Bail),
            },
            Node::Float => {
                let x = exact_f64(o).ok_or(Stop::Bail)?;
                let y = x as f32;
                // struct.pack("<f") raises OverflowError there: the pure encoder decides
                if y.is_infinite() && x.is_finite() {
                    return Err(Stop::Bail);
                }
                buf.extend_from_slice(&y.to_le_bytes());
            }
            Node::Double => {
                let x = exact_f64(o).ok_or(Stop::Bail)?;
                buf.extend_from_slice(&x.to_le_bytes());
            }
            Node::String => {
                if ffi::PyUnicode_CheckExact(o) == 0 {
                    return Err(Stop::Bail);
                }
                let mut n: ffi::Py_ssize_t = 0;
                let p = ffi::PyUnicode_AsUTF8AndSize(o, &mut n);
                if p.is_null() {
                    // lone surrogates: str.encode() fails in the pure encoder too
                    ffi::PyErr_Clear();
                    return Err(Stop::Bail);
                }
                put_len(buf, n);
                buf.extend_from_slice(std::slice::from_raw_parts(p as *const u8, n as usize));
            }
            Node::Bytes => {
                let s = bytes_of(o).ok_or(Stop::Bail)?;
                put_len(buf, s.len() as ffi::Py_ssize_t);
                buf.extend_from_slice(s);
            }
            Node::Fixed(size) => {
                let s = bytes_of(o).ok_or(Stop::Bail)?;
                if s.len() != *size {
                    return Err(Stop::Bail);
                }
                buf.extend_from_slice(s);
            }
            Node::Enum(table) => {
                if ffi::PyUnicode_CheckExact(o) == 0 {
                    return Err(Stop::Bail);
                }
                let i = ffi::PyDict_GetItemWithError(table.as_ptr(), o);
                if i.is_null() {
                    if !ffi::PyErr_Occurred().is_null() {
                        ffi::PyErr_Clear();
                    }
                    return Err(Stop::Bail);
                }
                put_long(buf, exact_i64(i).ok_or(Stop::Bail)?);
            }
            Node::Array(items) => {
                let depth = self.deeper(py, depth)?;
                let is_list = ffi::PyList_CheckExact(o) != 0;
                if !is_list && ffi::PyTuple_CheckExact(o) == 0 {
                    return Err(Stop::Bail);
                }
                let n = if is_list { ffi::PyList_GET_SIZE(o) } else { ffi::PyTuple_GET_SIZE(o) };
                if n > 0 {
                    put_len(buf, n);
                    for i in 0..n {
                        // a logical-type prepare function (Python code) may have shrunk the list
                        let len_now = if is_list { ffi::PyList_GET_SIZE(o) } else { n };
                        if i >= len_now {
                            return Err(Stop::Bail);
                        }
                        let item = if is_list { ffi::PyList_GET_ITEM(o, i) } else { ffi::PyTuple_GET_ITEM(o, i) };
                        let item = Bound::from_borrowed_ptr(py, item); // held while it is encoded
                        self.enc(py, item.as_ptr(), *items, buf, depth)?;
                    }
                    if is_list && ffi::PyList_GET_SIZE(o) != n {
                        return Err(Stop::Bail);
                    }
                }
                buf.push(0);
            }
            Node::Map(values) => {
                let depth = self.deeper(py, depth)?;
                if ffi::PyDict_CheckExact(o) == 0 {
                    return Err(Stop::Bail);
                }
                let n = ffi::PyDict_Size(o);
                if n > 0 {
                    put_len(buf, n);
                    let mut pos: ffi::Py_ssize_t = 0;
                    let mut k: *mut ffi::PyObject = std::ptr::null_mut();
                    let mut v: *mut ffi::PyObject = std::ptr::null_mut();
                    let mut seen: ffi::Py_ssize_t = 0;
                    while ffi::PyDict_Next(o, &mut pos, &mut k, &mut v) != 0 {
                        let (k, v) = (Bound::from_borrowed_ptr(py, k), Bound::from_borrowed_ptr(py, v));
                        seen += 1;
                        if seen > n {
                            return Err(Stop::Bail);
                        }
                        self.enc(py, k.as_ptr(), STRING_KEY, buf, depth)?;
                        self.enc(py, v.as_ptr(), *values, buf, depth)?;
                    }
                    if seen != n || ffi::PyDict_Size(o) != n {
                        return Err(Stop::Bail);
                    }
                }
                buf.push(0);
            }
            Node::Nullable { null_byte, other_byte, other } => {
                if o == ffi::Py_None() {
                    buf.push(*null_byte);
                } else if ffi::PyTuple_CheckExact(o) != 0 {
                    // tuple notation ("name", value): fastavro's general path, via the pure encoder
                    return Err(Stop::Bail);
                } else {
                    let depth = self.deeper(py, depth)?;
                    buf.push(*other_byte);
                    self.enc(py, o, *other, buf, depth)?;
                }
            }
            Node::Union(branches) => {
                let depth = self.deeper(py, depth)?;
                let i = choose_branch(o, branches)?;
                put_long(buf, i as i64);
                self.enc(py, o, branches[i].1, buf, depth)?;
            }
            Node::Record(fields) => {
                let depth = self.deeper(py, depth)?;
                if ffi::PyDict_CheckExact(o) == 0 {
                    return Err(Stop::Bail);
                }
                if self.fastavro_rules && !lookup(o, self.type_key.as_ptr())?.is_null() {
                    // fastavro reads "-type" as the record's name: its rules decide
                    return Err(Stop::Bail);
                }
                let mut present: ffi::Py_ssize_t = 0;
                for f in fields {
                    let v = lookup(o, f.key.as_ptr())?;
                    let v = if !v.is_null() {
                        present += 1;
                        Bound::from_borrowed_ptr(py, v)
                    } else {
                        match &f.default {
                            // strict: every field given; otherwise the pure encoder's message
                            Some(d) if !self.strict => d.bind(py).clone(),
                            _ => return Err(Stop::Bail),
                        }
                    };
                    self.enc(py, v.as_ptr(), f.node, buf, depth)?;
                }
                // strict modes: a key that is not a field is fastavro's error
                if (self.strict || self.strict_allow_default) && present != ffi::PyDict_Size(o) {
                    return Err(Stop::Bail);
                }
            }
            Node::Logical { prepare, schema, inner, fast } => {
                if *fast != Fast::None {
                    if let Some(done) = self.fast_logical(py, o, *fast, *inner, buf, depth) {
                        return done;
                    }
                }
                let v = Bound::from_borrowed_ptr(py, o);
                let prepared = match prepare.bind(py).call1((v, schema.bind(py))) {
                    Ok(p) => p,
                    Err(_) => return Err(Stop::Bail),
                };
                self.enc(py, prepared.as_ptr(), *inner, buf, depth)?;
            }
            Node::Pending => return Err(Stop::Bail),
        }
        Ok(())
    }

    /// The loop's own conversion for the exact types `fast` knows (None: call the prepare function).
    /// Not inlined: its locals would otherwise widen every recursive frame of enc().
    #[inline(never)]
    unsafe fn fast_logical(&self, py: Python<'_>, o: *mut ffi::PyObject, fast: Fast, inner: usize, buf: &mut Vec<u8>, depth: u32) -> Option<Step> {
        let ty = ffi::Py_TYPE(o) as *mut ffi::PyObject;
        if ffi::PyLong_CheckExact(o) != 0 && fast != Fast::Uuid {
            // fastavro's prepare returns an int unchanged
            return Some(self.enc(py, o, inner, buf, depth));
        }
        match fast {
            Fast::Uuid if ty == self.types.uuid.as_ptr() => {
                let v = Bound::from_borrowed_ptr(py, o);
                let n: u128 = v.getattr(self.types.int_attr.bind(py)).ok()?.extract().ok()?;
                // str(UUID): 32 lowercase hex digits in groups of 8-4-4-4-12
                let h = format!("{n:032x}");
                let s = format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32]);
                put_len(buf, s.len() as ffi::Py_ssize_t);
                buf.extend_from_slice(s.as_bytes());
                Some(Ok(()))
            }
            Fast::TimestampMillis | Fast::TimestampMicros if ty == self.types.datetime.as_ptr() => {
                let v = Bound::from_borrowed_ptr(py, o);
                let dt = v.cast_unchecked::<PyDateTime>();
                // only UTC: other zones (and naive datetimes, local time) are fastavro's to convert
                match dt.get_tzinfo() {
                    Some(tz) if tz.as_ptr() == self.types.utc.as_ptr() => {}
                    _ => return None,
                }
                let days = days_from_civil(dt.get_year() as i64, dt.get_month() as i64, dt.get_day() as i64);
                let secs = days * 86_400 + dt.get_hour() as i64 * 3600 + dt.get_minute() as i64 * 60 + dt.get_second() as i64;
                let us = dt.get_microsecond() as i64;
                let ts = if fast == Fast::TimestampMillis { secs * 1000 + us / 1000 } else { secs * 1_000_000 + us };
                if !matches!(self.prog.nodes[inner], Node::Long) {
                    return None;
                }
                put_long(buf, ts);
                Some(Ok(()))
            }
            Fast::Date if ty == self.types.date.as_ptr() => {
                let v = Bound::from_borrowed_ptr(py, o);
                let d = v.cast_unchecked::<PyDate>();
                let days = days_from_civil(d.get_year() as i64, d.get_month() as i64, d.get_day() as i64);
                if !matches!(self.prog.nodes[inner], Node::Int) {
                    return None;
                }
                put_long(buf, days);
                Some(Ok(()))
            }
            Fast::Decimal { precision, scale } if ty == self.types.decimal.as_ptr() => {
                if !matches!(self.prog.nodes[inner], Node::Bytes) {
                    return None;
                }
                let v = Bound::from_borrowed_ptr(py, o);
                let t = v.call_method0(self.types.as_tuple.bind(py)).ok()?;
                let (sign, digits, exp): (i64, Bound<'_, pyo3::types::PyTuple>, Bound<'_, PyAny>) = t.extract().ok()?;
                // NaN / infinities have a str exponent; too many digits or a finer scale than the
                // schema's are fastavro's errors: all left to the prepare function
                let exp: i64 = exp.extract().ok()?;
                let n = digits.len() as i64;
                if n > precision {
                    return None;
                }
                let delta = exp.checked_add(scale)?;
                if delta < 0 {
                    return None;
                }
                let mut m: u128 = 0;
                for d in digits.iter() {
                    let d: u32 = d.extract().ok()?;
                    if d > 9 {
                        return None;
                    }
                    m = m.checked_mul(10)?.checked_add(d as u128)?;
                }
                m = m.checked_mul(10u128.checked_pow(u32::try_from(delta).ok()?)?)?;
                if m >= 1u128 << 126 {
                    return None;
                }
                // (m.bit_length() + 8) // 8 bytes of big-endian two's complement, as fastavro
                let bits = 128 - m.leading_zeros() as usize;
                let n_bytes = (bits + 8) / 8;
                let signed = if sign != 0 { -(m as i128) } else { m as i128 };
                let be = signed.to_be_bytes();
                put_len(buf, n_bytes as ffi::Py_ssize_t);
                buf.extend_from_slice(&be[16 - n_bytes..]);
                Some(Ok(()))
            }
            _ => None,
        }
    }

    #[inline(always)]
    fn deeper(&self, py: Python<'_>, depth: u32) -> Result<u32, Stop> {
        if depth >= self.max_depth {
            return Err(self.depth_error(py));
        }
        Ok(depth + 1)
    }
}

/// The branch fastavro's `write_union` picks for `o` -- the first branch whose `validate` accepts
/// it, except that a "float" gives way to a later "double" -- for the values where the exact type
/// decides which branches can accept it. Anything else bails: a tuple (tuple notation), a dict
/// when a record branch exists (fastavro counts matching fields), bytes when an array branch exists
/// (fastavro takes bytes as a sequence of ints), any other type.
unsafe fn choose_branch(o: *mut ffi::PyObject, branches: &[(Kind, usize)]) -> Result<usize, Stop> {
    let first = |accepts: &dyn Fn(&Kind) -> bool| branches.iter().position(|(k, _)| accepts(k)).ok_or(Stop::Bail);
    if o == ffi::Py_None() {
        return first(&|k| matches!(k, Kind::Null));
    }
    if o == ffi::Py_True() || o == ffi::Py_False() {
        return first(&|k| matches!(k, Kind::Boolean));
    }
    let numeric = if ffi::PyLong_CheckExact(o) != 0 {
        let v = exact_i64(o).ok_or(Stop::Bail)?;
        Some(Some(v))
    } else if ffi::PyFloat_CheckExact(o) != 0 {
        Some(None)
    } else {
        None
    };
    if let Some(int) = numeric {
        let mut float_at = None;
        for (i, (k, _)) in branches.iter().enumerate() {
            if float_at.is_some() {
                if matches!(k, Kind::Double) {
                    return Ok(i);
                }
                continue;
            }
            match (k, int) {
                (Kind::Int, Some(v)) if (i32::MIN as i64..=i32::MAX as i64).contains(&v) => return Ok(i),
                (Kind::Long, Some(_)) | (Kind::Double, _) => return Ok(i),
                (Kind::Float, _) => float_at = Some(i),
                _ => {}
            }
        }
        return float_at.ok_or(Stop::Bail);
    }
    if ffi::PyUnicode_CheckExact(o) != 0 {
        for (i, (k, _)) in branches.iter().enumerate() {
            match k {
                Kind::String => return Ok(i),
                Kind::Enum(table) => {
                    let hit = ffi::PyDict_GetItemWithError(table.as_ptr(), o);
                    if !hit.is_null() {
                        return Ok(i);
                    }
                    if !ffi::PyErr_Occurred().is_null() {
                        ffi::PyErr_Clear();
                        return Err(Stop::Bail);
                    }
                }
                _ => {}
            }
        }
        return Err(Stop::Bail);
    }
    if let Some(b) = bytes_of(o) {
        if branches.iter().any(|(k, _)| matches!(k, Kind::Array)) {
            return Err(Stop::Bail);
        }
        return first(&|k| matches!(k, Kind::Bytes) || matches!(k, Kind::Fixed(n) if *n == b.len()));
    }
    if ffi::PyList_CheckExact(o) != 0 {
        return first(&|k| matches!(k, Kind::Array));
    }
    if ffi::PyDict_CheckExact(o) != 0 {
        if branches.iter().any(|(k, _)| matches!(k, Kind::Record)) {
            return Err(Stop::Bail);
        }
        return first(&|k| matches!(k, Kind::Map));
    }
    Err(Stop::Bail)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (`date.toordinal() - 719163`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The exact classes and objects the logical fast paths compare with.
struct Types {
    uuid: Py<PyAny>,
    datetime: Py<PyAny>,
    date: Py<PyAny>,
    utc: Py<PyAny>,
    decimal: Py<PyAny>,
    int_attr: Py<PyString>,
    as_tuple: Py<PyString>,
}

/// The nesting any value may reach natively (fits a 512 KiB thread stack in a release build; tests/
/// unit/test_avro_native_encoder.py); fastavro cannot parse a schema nesting deeper than this
/// anyway. A debug build's frames are several times larger: it stops much earlier rather than
/// overflow the stack (serdes/avro/_native_encoder.py reads the value as AVRO_ENCODE_MAX_DEPTH).
const STACK_GUARD_DEPTH: u32 = if cfg!(debug_assertions) { 25 } else { 1000 };

/// The largest buffer capacity reserved up front for a record.
const CAPACITY_HINT_MAX: usize = 64 * 1024;

/// Map keys are strings: the index of the program's string node.
const STRING_KEY: usize = 0;

/// `d.get(key)` for an exact dict (borrowed, null when absent); a failing key comparison bails.
#[inline(always)]
unsafe fn lookup(d: *mut ffi::PyObject, key: *mut ffi::PyObject) -> Result<*mut ffi::PyObject, Stop> {
    let v = ffi::PyDict_GetItemWithError(d, key);
    if v.is_null() && !ffi::PyErr_Occurred().is_null() {
        ffi::PyErr_Clear();
        return Err(Stop::Bail);
    }
    Ok(v)
}

/// The contents of an exact bytes or bytearray.
#[inline(always)]
unsafe fn bytes_of<'a>(o: *mut ffi::PyObject) -> Option<&'a [u8]> {
    let (p, n) = if ffi::PyBytes_CheckExact(o) != 0 {
        (ffi::PyBytes_AsString(o), ffi::PyBytes_Size(o))
    } else if ffi::PyByteArray_CheckExact(o) != 0 {
        (ffi::PyByteArray_AsString(o), ffi::PyByteArray_Size(o))
    } else {
        return None;
    };
    if p.is_null() || n < 0 {
        return None;
    }
    Some(std::slice::from_raw_parts(p as *const u8, n as usize))
}

impl AvroEncoder {
    /// `prefix + payload` of one value: what `__call__` does, callable from Rust (the native
    /// dispatcher) without a Python-level call.
    pub fn encode_value<'py>(&self, py: Python<'py>, obj: Bound<'py, PyAny>, ctx: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let value = match &self.to_dict {
            Some(f) => f.bind(py).call1((obj, ctx.as_ref()))?,
            None => obj,
        };
        let mut buf: Vec<u8> = Vec::with_capacity(self.capacity.load(Ordering::Relaxed));
        buf.extend_from_slice(&self.prefix);
        // SAFETY: `value` is held for the whole call; enc() takes a strong reference to every
        // item it reads from a container before encoding it, and holds the GIL throughout.
        match unsafe { self.enc(py, value.as_ptr(), self.prog.root, &mut buf, 0) } {
            Ok(()) => {
                if buf.len() > self.capacity.load(Ordering::Relaxed) {
                    self.capacity.store(buf.len().min(CAPACITY_HINT_MAX), Ordering::Relaxed);
                }
                Ok(PyBytes::new(py, &buf).into_any())
            }
            Err(Stop::Bail) => self.fallback.bind(py).call1((value, ctx)),
            Err(Stop::Raise(e)) => Err(e),
        }
    }
}

#[pymethods]
impl AvroEncoder {
    /// `schema`: fastavro's parsed (and serdes-checked) schema; `fallback(value, ctx)`: the pure
    /// encoder built with the same prefix and options but no `to_dict`. Raises NotImplementedError
    /// for a schema the native encoder leaves to the pure one.
    #[new]
    /// `fast_logical`: `{"long-timestamp-millis": code, ...}` for the logical types whose registered
    /// prepare function is fastavro's own; `classes`: `(uuid.UUID, datetime.datetime, datetime.date,
    /// datetime.timezone.utc, decimal.Decimal)`.
    #[pyo3(signature = (schema, prefix, fallback, to_dict, strict, strict_allow_default, max_depth, logical_writers, validation_error, fast_logical, classes))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn new(
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        prefix: Vec<u8>,
        fallback: Py<PyAny>,
        to_dict: Option<Py<PyAny>>,
        strict: bool,
        strict_allow_default: bool,
        max_depth: u32,
        logical_writers: &Bound<'_, PyDict>,
        validation_error: Py<PyAny>,
        fast_logical: &Bound<'_, PyDict>,
        classes: (Py<PyAny>, Py<PyAny>, Py<PyAny>, Py<PyAny>, Py<PyAny>),
    ) -> PyResult<Self> {
        let prog = program::compile(py, schema, logical_writers, fast_logical)?;
        let prog_recursive = prog.recursive;
        let (uuid, datetime, date, utc, decimal) = classes;
        let types = Types {
            uuid,
            datetime,
            date,
            utc,
            decimal,
            int_attr: PyString::intern(py, "int").unbind(),
            as_tuple: PyString::intern(py, "as_tuple").unbind(),
        };
        let capacity = AtomicUsize::new(prefix.len() + 64);
        let max_depth = max_depth.min(STACK_GUARD_DEPTH);
        Ok(AvroEncoder {
            fastavro_rules: strict || strict_allow_default || prog.recursive || prog.general_union,
            prog,
            prefix,
            fallback,
            to_dict,
            strict,
            strict_allow_default,
            // a value of a non-recursive schema nests no deeper than the schema (whose depth
            // serdes.max.schema.depth bounds): only the stack guard applies to it
            max_depth: if prog_recursive { max_depth } else { STACK_GUARD_DEPTH },
            validation_error,
            type_key: PyString::intern(py, "-type").unbind(),
            types,
            capacity,
        })
    }

    #[pyo3(signature = (obj, ctx=None))]
    fn __call__<'py>(&self, py: Python<'py>, obj: Bound<'py, PyAny>, ctx: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        self.encode_value(py, obj, ctx)
    }

    /// The schema has a recursive named type (its values are bounded by ``max_depth``).
    #[getter]
    fn recursive(&self) -> bool {
        self.prog.recursive
    }

    /// The encoder follows fastavro's record rules (strict modes, recursive schemas), as the pure
    /// reference for those does.
    #[getter]
    fn fastavro_rules(&self) -> bool {
        self.fastavro_rules
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AvroEncoder>()?;
    m.add("AVRO_ENCODE_MAX_DEPTH", STACK_GUARD_DEPTH)?;
    Ok(())
}

#[cfg(test)]
mod tests;
