//! The native Avro encoder: `AvroEncoder(obj, ctx) -> prefix + payload`, the serdes `Encoder`
//! contract (serdes/_serde.py). serdes/avro/_native_encoder.py builds it; the pure-Python encoder
//! (serdes/avro/_encgen.py) is the reference and the fallback.
//!
//! One rule keeps the two identical: the native loop only *accepts* values of the exact built-in
//! types the pure encoder takes on its fast path (dict, list/tuple, str, bytes/bytearray, int
//! within range, float, True/False/None, and whatever fastavro's logical-type prepare functions
//! return), writing the same bytes -- plus, off the fast path, str subclass instances as strings,
//! map keys and enum symbols, written as the pure encoder writes them. Anything else -- a value of
//! the wrong type, an int out of range, a memoryview, a str subclass as a general union's value, a
//! Mapping that is not a dict, a missing field, a tuple-notation union value --
//! "bails": the buffer is dropped and the pure encoder runs on the same value from the start, so it
//! decides (its bytes, or its ValidationError with its path message). Errors cost a second pass;
//! valid records never do, and nothing is half-written.
mod program;

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::{PyException, PyMemoryError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDate, PyDateTime, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
    PyTzInfoAccess,
};
// the datetime C accessors: outside the limited API (there the fields are read as attributes)
#[cfg(not(Py_LIMITED_API))]
use pyo3::types::{PyDateAccess, PyTimeAccess};

use crate::avro_out::{AvroOut, OutOfMemory};
use crate::stack::Guard;
use program::{Fast, Field, Kind, Node, Program};
pub(crate) use program::{FAST_OPCODES, NODE_OPCODES};

/// Why the native loop stopped.
enum Stop {
    /// leave this value to the pure encoder
    Bail,
    /// a typed error of the native encoder's own (the depth bound, a failed allocation)
    Raise(PyErr),
}

type Step = Result<(), Stop>;

/// The output of one encoding call: the buffer (its writes are [`AvroOut`]'s), and the call's
/// stack limit.
struct Out {
    w: AvroOut<Stop>,
    guard: Guard,
}

impl std::ops::Deref for Out {
    type Target = AvroOut<Stop>;
    fn deref(&self) -> &AvroOut<Stop> {
        &self.w
    }
}

impl std::ops::DerefMut for Out {
    fn deref_mut(&mut self) -> &mut AvroOut<Stop> {
        &mut self.w
    }
}

/// A value too large to allocate: the `MemoryError` the pure encoder's `bytearray` raises.
impl From<OutOfMemory> for Stop {
    fn from(e: OutOfMemory) -> Stop {
        Stop::Raise(PyMemoryError::new_err(format!(
            "cannot allocate {} more bytes for an Avro record of {} bytes",
            e.wanted, e.len
        )))
    }
}

/// The value of an exact `int` that fits an i64, else None (no Python code runs: an exact int).
#[inline(always)]
fn exact_i64(o: &Bound<'_, PyAny>) -> Option<i64> {
    if !o.is_exact_instance_of::<PyInt>() {
        return None;
    }
    let mut overflow: std::os::raw::c_int = 0;
    // SAFETY: `o` is a live exact int and the GIL is held (it is a `Bound`); the call reports a
    // value out of range in `overflow` and writes nothing else
    let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(o.as_ptr(), &mut overflow) };
    if overflow != 0 {
        return None;
    }
    if v == -1 && PyErr::occurred(o.py()) {
        let _ = PyErr::take(o.py());
        return None;
    }
    Some(v)
}

/// The int attributes `names` of `o` (the fields of an exact date/datetime, which the limited API
/// has no C accessors for); None when one is missing or not an int.
#[cfg(Py_LIMITED_API)]
fn int_attrs<const N: usize>(o: &Bound<'_, PyAny>, names: [&Bound<'_, PyString>; N]) -> Option<[i64; N]> {
    let mut out = [0i64; N];
    for (v, name) in out.iter_mut().zip(names) {
        *v = o.getattr(name).ok()?.extract().ok()?;
    }
    Some(out)
}

/// float(o) for the values the pure encoder converts without a Python call of its own
#[inline(always)]
fn exact_f64(o: &Bound<'_, PyAny>) -> Option<f64> {
    if let Ok(f) = o.cast_exact::<PyFloat>() {
        return Some(f.value());
    }
    // an int: Rust's i64 -> f64 rounds to nearest, ties to even, as Python's float(int) does
    exact_i64(o).map(|v| v as f64)
}

/// The UTF-8 of an exact `str` (None for a subclass, or lone surrogates: str.encode() fails in
/// the pure encoder too).
#[inline(always)]
fn exact_str<'a>(o: &'a Bound<'_, PyAny>) -> Option<&'a str> {
    o.cast_exact::<PyString>().ok()?.to_str().ok()
}

/// Run `f` on the contents of an exact bytes or bytearray (bail for anything else).
#[inline(always)]
fn with_bytes<R>(o: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> Result<R, Stop>) -> Result<R, Stop> {
    if let Ok(b) = o.cast_exact::<PyBytes>() {
        return f(b.as_bytes());
    }
    if let Ok(b) = o.cast_exact::<PyByteArray>() {
        // SAFETY: only Python code resizes a bytearray, and none runs while the slice lives: `f`
        // copies it into the output buffer (or compares its length) and returns
        return f(unsafe { b.as_bytes() });
    }
    Err(Stop::Bail)
}

/// The length of an exact bytes or bytearray.
fn bytes_len(o: &Bound<'_, PyAny>) -> Option<usize> {
    if let Ok(b) = o.cast_exact::<PyBytes>() {
        return Some(b.as_bytes().len());
    }
    o.cast_exact::<PyByteArray>().ok().map(|b| b.len())
}

/// `d.get(key)` for an exact dict, as a strong reference; a failing key comparison bails.
/// (PyO3's `get_item` is the same call behind a function that is not inlined: this lookup runs
/// once per record field, the hottest call of the loop.)
#[inline(always)]
fn lookup<'py>(d: &Bound<'py, PyDict>, key: &Bound<'py, PyString>) -> Result<Option<Bound<'py, PyAny>>, Stop> {
    // SAFETY: `d` and `key` are live objects and the GIL is held; PyDict_GetItemWithError returns
    // a borrowed reference (or NULL, with an error set only when a key comparison raised), made a
    // strong reference at once: the key comparison is the only Python code that can run, and it
    // has returned
    unsafe {
        let v = ffi::PyDict_GetItemWithError(d.as_ptr(), key.as_ptr());
        if v.is_null() {
            if PyErr::occurred(d.py()) {
                let _ = PyErr::take(d.py());
                return Err(Stop::Bail);
            }
            return Ok(None);
        }
        Ok(Some(Bound::from_borrowed_ptr(d.py(), v)))
    }
}

/// The entry of an exact dict at iteration position `pos` (moved past it), as strong references.
///
/// Not PyO3's dict iterator: that one panics when the dict changes size, and Python code (a
/// prepare function encoding a value) may change it; here the caller's counts bail instead.
fn dict_next<'py>(d: &Bound<'py, PyDict>, pos: &mut ffi::Py_ssize_t) -> Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let mut k: *mut ffi::PyObject = std::ptr::null_mut();
    let mut v: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: `d` is a live dict held by the caller and the GIL is held. PyDict_Next re-reads the
    // dict's entry table and bounds `pos` by it on every call, so a dict mutated between two
    // calls is walked without reading freed memory (entries may be skipped or seen twice: the
    // caller's counts bail then). The borrowed key and value become strong references here,
    // before any Python code can run.
    unsafe {
        if ffi::PyDict_Next(d.as_ptr(), pos, &mut k, &mut v) == 0 {
            return None;
        }
        Some((Bound::from_borrowed_ptr(d.py(), k), Bound::from_borrowed_ptr(d.py(), v)))
    }
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
    /// nesting bound on values: serdes.max.depth for a recursive schema; none for the others
    /// (they nest no deeper than their schema). The thread's stack bounds every schema's values.
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
        let msg =
            format!("the value nests deeper than serdes.max.depth={} (a cyclic or hostile value?)", self.max_depth);
        match self.validation_error.bind(py).call1((msg,)) {
            Ok(e) => Stop::Raise(PyErr::from_value(e)),
            Err(e) => Stop::Raise(e),
        }
    }

    /// One level deeper into a container: the depth bound, then the stack (when the thread's
    /// stack is too short for the value, the pure encoder, which recurses on Python's stack and
    /// runs fastavro on a thread with a stack of known size, decides).
    #[inline(always)]
    fn deeper(&self, py: Python<'_>, depth: u32, out: &Out) -> Result<u32, Stop> {
        if depth >= self.max_depth {
            return Err(self.depth_error(py));
        }
        if !out.guard.ok() {
            return Err(Stop::Bail);
        }
        Ok(depth + 1)
    }

    /// Append the encoding of `o` per `node`. Arrays, maps and logical types have functions of
    /// their own (not inlined), so this frame -- the one every level of a nested value adds --
    /// stays small; records are inlined (measured: faster, and a smaller frame per level).
    fn enc<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>, node: usize, out: &mut Out, depth: u32) -> Step {
        match &self.prog.nodes[node] {
            Node::Null => {
                if o.is_none() {
                    Ok(())
                } else {
                    Err(Stop::Bail)
                }
            }
            Node::Boolean => match o.cast_exact::<PyBool>() {
                Ok(b) => out.byte(b.is_true() as u8),
                Err(_) => Err(Stop::Bail),
            },
            Node::Int => match exact_i64(o) {
                Some(v) if (i32::MIN as i64..=i32::MAX as i64).contains(&v) => out.long(v),
                _ => Err(Stop::Bail),
            },
            Node::Long => out.long(exact_i64(o).ok_or(Stop::Bail)?),
            Node::Float => {
                let x = exact_f64(o).ok_or(Stop::Bail)?;
                let y = x as f32;
                // struct.pack("<f") raises OverflowError there: the pure encoder decides
                if y.is_infinite() && x.is_finite() {
                    return Err(Stop::Bail);
                }
                out.raw(&y.to_le_bytes())
            }
            Node::Double => out.raw(&exact_f64(o).ok_or(Stop::Bail)?.to_le_bytes()),
            Node::String => match exact_str(o) {
                Some(s) => out.blob(s.as_bytes()),
                None => self.sub_string(py, o, out),
            },
            Node::Bytes => with_bytes(o, |s| out.blob(s)),
            Node::Fixed(size) => with_bytes(o, |s| if s.len() == *size { out.raw(s) } else { Err(Stop::Bail) }),
            Node::Enum(table) => {
                if !o.is_exact_instance_of::<PyString>() {
                    return self.sub_enum(py, o, table, out);
                }
                match table.bind(py).get_item(o) {
                    Ok(Some(i)) => out.long(exact_i64(&i).ok_or(Stop::Bail)?),
                    _ => Err(Stop::Bail),
                }
            }
            Node::Array(items) => self.array(py, o, *items, out, depth),
            Node::Map(values) => self.map(py, o, *values, out, depth),
            Node::Nullable { null_byte, other_byte, other } => {
                if o.is_none() {
                    return out.byte(*null_byte);
                }
                if o.is_exact_instance_of::<PyTuple>() {
                    // tuple notation ("name", value): fastavro's general path, via the pure encoder
                    return Err(Stop::Bail);
                }
                let depth = self.deeper(py, depth, out)?;
                out.byte(*other_byte)?;
                self.enc(py, o, *other, out, depth)
            }
            Node::Union(branches) => {
                let depth = self.deeper(py, depth, out)?;
                let i = choose_branch(py, o, branches)?;
                out.long(i as i64)?;
                self.enc(py, o, branches[i].1, out, depth)
            }
            Node::Record { fields, class } => self.record(py, o, fields, class.as_ref(), out, depth),
            Node::Logical { prepare, schema, inner, fast } => {
                self.logical(py, o, prepare, schema, *inner, *fast, out, depth)
            }
        }
    }

    /// A string (or map key) that is an instance of a str subclass (an `enum.StrEnum` member,
    /// say): written as the pure encoder writes it, `o.encode()` (a subclass may override it, and
    /// fastavro calls it too); an exception or a result that is not bytes bails.
    #[cold]
    #[inline(never)]
    fn sub_string<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>, out: &mut Out) -> Step {
        if !o.is_instance_of::<PyString>() {
            return Err(Stop::Bail);
        }
        // Python code: it may change any container holding `o`; `o` and its result are held
        let encoded = match o.call_method0(self.types.encode.bind(py)) {
            Ok(b) => b,
            // KeyboardInterrupt, SystemExit: not a value's failure
            Err(e) if !e.is_instance_of::<PyException>(py) => return Err(Stop::Raise(e)),
            Err(_) => return Err(Stop::Bail),
        };
        let b = encoded.cast_exact::<PyBytes>().map_err(|_| Stop::Bail)?;
        out.blob(b.as_bytes())
    }

    /// An enum symbol that is an instance of a str subclass: looked up by its string contents
    /// (`str.__str__(o)`), as the pure encoder does -- not by the subclass's own hash (an
    /// `enum.StrEnum` member hashes as its name).
    #[cold]
    #[inline(never)]
    fn sub_enum<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>, table: &Py<PyDict>, out: &mut Out) -> Step {
        let s = o.cast::<PyString>().map_err(|_| Stop::Bail)?;
        // lone surrogates: no UTF-8 (the pure encoder finds no symbol either, and decides)
        let contents = PyString::new(py, s.to_str().map_err(|_| Stop::Bail)?);
        match table.bind(py).get_item(contents) {
            Ok(Some(i)) => out.long(exact_i64(&i).ok_or(Stop::Bail)?),
            _ => Err(Stop::Bail),
        }
    }

    #[inline(never)]
    fn array<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>, items: usize, out: &mut Out, depth: u32) -> Step {
        let depth = self.deeper(py, depth, out)?;
        if let Ok(list) = o.cast_exact::<PyList>() {
            let n = list.len();
            if n > 0 {
                out.long(n as i64)?;
                for i in 0..n {
                    // Python code run for an earlier item (a prepare function) may have shrunk
                    // the list: get_item checks the index; the item is held while it is encoded
                    let item = list.get_item(i).map_err(|_| Stop::Bail)?;
                    self.enc(py, &item, items, out, depth)?;
                }
                if list.len() != n {
                    return Err(Stop::Bail);
                }
            }
        } else if let Ok(t) = o.cast_exact::<PyTuple>() {
            if !t.is_empty() {
                out.long(t.len() as i64)?;
                for item in t.iter() {
                    self.enc(py, &item, items, out, depth)?;
                }
            }
        } else {
            return Err(Stop::Bail);
        }
        out.byte(0)
    }

    #[inline(never)]
    fn map<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>, values: usize, out: &mut Out, depth: u32) -> Step {
        let depth = self.deeper(py, depth, out)?;
        let dict = o.cast_exact::<PyDict>().map_err(|_| Stop::Bail)?;
        let n = dict.len();
        if n > 0 {
            out.long(n as i64)?;
            let mut pos: ffi::Py_ssize_t = 0;
            let mut seen = 0usize;
            while let Some((k, v)) = dict_next(dict, &mut pos) {
                seen += 1;
                if seen > n {
                    return Err(Stop::Bail);
                }
                self.enc(py, &k, STRING_KEY, out, depth)?;
                self.enc(py, &v, values, out, depth)?;
            }
            if seen != n || dict.len() != n {
                return Err(Stop::Bail);
            }
        }
        out.byte(0)
    }

    #[inline]
    fn record<'py>(
        &self,
        py: Python<'py>,
        o: &Bound<'py, PyAny>,
        fields: &[Field],
        class: Option<&Py<PyType>>,
        out: &mut Out,
        depth: u32,
    ) -> Step {
        let depth = self.deeper(py, depth, out)?;
        let instance_dict;
        let dict = match class {
            None => o.cast_exact::<PyDict>().map_err(|_| Stop::Bail)?,
            // a typed record: an instance of exactly its class (anything else, a dict included,
            // is the pure encoder's, whose to_dict reports it)
            Some(cls) if o.get_type().is(cls.bind(py)) => {
                // SAFETY: o is a live object; a new reference to its __dict__, or NULL with an error set
                let d = unsafe {
                    Bound::from_owned_ptr_or_err(py, ffi::PyObject_GenericGetDict(o.as_ptr(), std::ptr::null_mut()))
                };
                instance_dict = match d {
                    Ok(d) => d,
                    Err(e) if !e.is_instance_of::<PyException>(py) => return Err(Stop::Raise(e)),
                    Err(_) => return Err(Stop::Bail),
                };
                instance_dict.cast_exact::<PyDict>().map_err(|_| Stop::Bail)?
            }
            Some(_) => return Err(Stop::Bail),
        };
        if self.fastavro_rules && lookup(dict, self.type_key.bind(py))?.is_some() {
            // fastavro reads "-type" as the record's name: its rules decide
            return Err(Stop::Bail);
        }
        let mut present = 0usize;
        for f in fields {
            let v = match lookup(dict, f.key.bind(py))? {
                Some(v) => {
                    present += 1;
                    v
                }
                // strict: every field given; otherwise the pure encoder's message
                None => match &f.default {
                    Some(d) if !self.strict => d.bind(py).clone(),
                    _ => return Err(Stop::Bail),
                },
            };
            self.enc(py, &v, f.node, out, depth)?;
        }
        // strict modes: a key that is not a field is fastavro's error
        if (self.strict || self.strict_allow_default) && present != dict.len() {
            return Err(Stop::Bail);
        }
        Ok(())
    }

    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn logical<'py>(
        &self,
        py: Python<'py>,
        o: &Bound<'py, PyAny>,
        prepare: &Py<PyAny>,
        schema: &Py<PyAny>,
        inner: usize,
        fast: Fast,
        out: &mut Out,
        depth: u32,
    ) -> Step {
        if fast != Fast::None {
            if let Some(done) = self.fast_logical(py, o, fast, inner, out, depth) {
                return done;
            }
        }
        // Python code: it may change any container holding `o`; `o` and its result are held
        let prepared = match prepare.bind(py).call1((o, schema.bind(py))) {
            Ok(p) => p,
            // KeyboardInterrupt, SystemExit: not a value's failure
            Err(e) if !e.is_instance_of::<PyException>(py) => return Err(Stop::Raise(e)),
            Err(_) => return Err(Stop::Bail),
        };
        self.enc(py, &prepared, inner, out, depth)
    }

    /// The loop's own conversion for the exact types `fast` knows (None: call the prepare function).
    #[inline(never)]
    fn fast_logical<'py>(
        &self,
        py: Python<'py>,
        o: &Bound<'py, PyAny>,
        fast: Fast,
        inner: usize,
        out: &mut Out,
        depth: u32,
    ) -> Option<Step> {
        let ty = o.get_type_ptr() as *mut ffi::PyObject;
        if o.is_exact_instance_of::<PyInt>() && fast != Fast::Uuid {
            // fastavro's prepare returns an int unchanged
            return Some(self.enc(py, o, inner, out, depth));
        }
        match fast {
            Fast::Uuid if ty == self.types.uuid.as_ptr() => {
                let n: u128 = o.getattr(self.types.int_attr.bind(py)).ok()?.extract().ok()?;
                // str(UUID): 32 lowercase hex digits in groups of 8-4-4-4-12
                let h = format!("{n:032x}");
                let s = format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32]);
                Some(out.blob(s.as_bytes()))
            }
            Fast::TimestampMillis | Fast::TimestampMicros if ty == self.types.datetime.as_ptr() => {
                let dt = o.cast::<PyDateTime>().ok()?;
                // only UTC: other zones (and naive datetimes, local time) are fastavro's to convert
                match dt.get_tzinfo() {
                    Some(tz) if tz.as_ptr() == self.types.utc.as_ptr() => {}
                    _ => return None,
                }
                #[cfg(not(Py_LIMITED_API))]
                let (secs, us) = {
                    let days = days_from_civil(dt.get_year() as i64, dt.get_month() as i64, dt.get_day() as i64);
                    let secs = days * 86_400
                        + dt.get_hour() as i64 * 3600
                        + dt.get_minute() as i64 * 60
                        + dt.get_second() as i64;
                    (secs, dt.get_microsecond() as i64)
                };
                #[cfg(Py_LIMITED_API)]
                let (secs, us) = {
                    let [y, mo, d, h, mi, s, us] = int_attrs(
                        dt.as_any(),
                        [
                            pyo3::intern!(py, "year"),
                            pyo3::intern!(py, "month"),
                            pyo3::intern!(py, "day"),
                            pyo3::intern!(py, "hour"),
                            pyo3::intern!(py, "minute"),
                            pyo3::intern!(py, "second"),
                            pyo3::intern!(py, "microsecond"),
                        ],
                    )?;
                    (days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s, us)
                };
                let ts = if fast == Fast::TimestampMillis { secs * 1000 + us / 1000 } else { secs * 1_000_000 + us };
                if !matches!(self.prog.nodes[inner], Node::Long) {
                    return None;
                }
                Some(out.long(ts))
            }
            Fast::Date if ty == self.types.date.as_ptr() => {
                let d = o.cast::<PyDate>().ok()?;
                #[cfg(not(Py_LIMITED_API))]
                let days = days_from_civil(d.get_year() as i64, d.get_month() as i64, d.get_day() as i64);
                #[cfg(Py_LIMITED_API)]
                let days = {
                    let [y, m, d] = int_attrs(
                        d.as_any(),
                        [pyo3::intern!(py, "year"), pyo3::intern!(py, "month"), pyo3::intern!(py, "day")],
                    )?;
                    days_from_civil(y, m, d)
                };
                if !matches!(self.prog.nodes[inner], Node::Int) {
                    return None;
                }
                Some(out.long(days))
            }
            Fast::Decimal { precision, scale } if ty == self.types.decimal.as_ptr() => {
                if !matches!(self.prog.nodes[inner], Node::Bytes) {
                    return None;
                }
                let t = o.call_method0(self.types.as_tuple.bind(py)).ok()?;
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
                // more digits than the precision once scaled: the pure encoder's ValidationError
                if m != 0 && n + delta > precision {
                    return Some(Err(Stop::Bail));
                }
                if m >= 1u128 << 126 {
                    return None;
                }
                // (m.bit_length() + 8) // 8 bytes of big-endian two's complement, as fastavro
                let bits = 128 - m.leading_zeros() as usize;
                let n_bytes = (bits + 8) / 8;
                let signed = if sign != 0 { -(m as i128) } else { m as i128 };
                let be = signed.to_be_bytes();
                Some(out.blob(&be[16 - n_bytes..]))
            }
            _ => None,
        }
    }
}

/// The branch fastavro's `write_union` picks for `o` -- the first branch whose `validate` accepts
/// it, except that a "float" gives way to a later "double" -- for the values where the exact type
/// decides which branches can accept it. Anything else bails: a tuple (tuple notation), a dict
/// when a record branch exists (fastavro counts matching fields), bytes when an array branch exists
/// (fastavro takes bytes as a sequence of ints), any other type.
fn choose_branch(py: Python<'_>, o: &Bound<'_, PyAny>, branches: &[(Kind, usize)]) -> Result<usize, Stop> {
    let first = |accepts: &dyn Fn(&Kind) -> bool| branches.iter().position(|(k, _)| accepts(k)).ok_or(Stop::Bail);
    if o.is_none() {
        return first(&|k| matches!(k, Kind::Null));
    }
    if o.is_exact_instance_of::<PyBool>() {
        return first(&|k| matches!(k, Kind::Boolean));
    }
    let numeric = if o.is_exact_instance_of::<PyInt>() {
        let v = exact_i64(o).ok_or(Stop::Bail)?;
        Some(Some(v))
    } else if o.is_exact_instance_of::<PyFloat>() {
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
    if o.is_exact_instance_of::<PyString>() {
        for (i, (k, _)) in branches.iter().enumerate() {
            match k {
                Kind::String => return Ok(i),
                Kind::Enum(table) => match table.bind(py).get_item(o) {
                    Ok(Some(_)) => return Ok(i),
                    Ok(None) => {}
                    Err(_) => return Err(Stop::Bail),
                },
                _ => {}
            }
        }
        return Err(Stop::Bail);
    }
    if let Some(n) = bytes_len(o) {
        if branches.iter().any(|(k, _)| matches!(k, Kind::Array)) {
            return Err(Stop::Bail);
        }
        return first(&|k| matches!(k, Kind::Bytes) || matches!(k, Kind::Fixed(size) if *size == n));
    }
    if o.is_exact_instance_of::<PyList>() {
        return first(&|k| matches!(k, Kind::Array));
    }
    if o.is_exact_instance_of::<PyDict>() {
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
    encode: Py<PyString>,
}

/// The largest buffer capacity reserved up front for a record.
const CAPACITY_HINT_MAX: usize = 64 * 1024;

/// Map keys are strings: the index of the program's string node.
const STRING_KEY: usize = 0;

impl AvroEncoder {
    /// `prefix + payload` of one value: what `__call__` does, callable from Rust (the native
    /// dispatcher) without a Python-level call.
    pub fn encode_value<'py>(
        &self,
        py: Python<'py>,
        obj: Bound<'py, PyAny>,
        ctx: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let value = match &self.to_dict {
            Some(f) => f.bind(py).call1((obj, ctx.as_ref()))?,
            None => obj,
        };
        let mut out = Out { w: AvroOut::new(Vec::new()), guard: Guard::here() };
        // a panic is a bug in this loop, not the value's fault: the pure encoder decides
        let step = crate::panics::catch(|| self.run(py, &value, &mut out)).unwrap_or_else(|_| {
            crate::panics::clear(py);
            Err(Stop::Bail)
        });
        match step {
            Ok(()) => {
                if out.buf.len() > self.capacity.load(Ordering::Relaxed) {
                    self.capacity.store(out.buf.len().min(CAPACITY_HINT_MAX), Ordering::Relaxed);
                }
                Ok(crate::new_bytes(py, &out.buf)?.into_any())
            }
            Err(Stop::Bail) => self.fallback.bind(py).call1((value, ctx)),
            Err(Stop::Raise(e)) => Err(e),
        }
    }

    fn run<'py>(&self, py: Python<'py>, value: &Bound<'py, PyAny>, out: &mut Out) -> Step {
        out.room(self.capacity.load(Ordering::Relaxed).max(self.prefix.len()))?;
        out.raw(&self.prefix)?;
        self.enc(py, value, self.prog.root, out, 0)
    }
}

#[pymethods]
impl AvroEncoder {
    /// `nodes`, `root`, `recursive`, `general_union`: the schema's program, as
    /// serdes/avro/_native_encoder.py's `lower` returns it (ValueError: not a valid program);
    /// `fallback(value, ctx)`: the pure encoder built with the same prefix and options but no
    /// `to_dict`; `classes`: `(uuid.UUID, datetime.datetime, datetime.date,
    /// datetime.timezone.utc, decimal.Decimal)`.
    #[new]
    #[pyo3(signature = (nodes, root, recursive, general_union, prefix, fallback, to_dict, strict, strict_allow_default, max_depth, validation_error, classes))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn new(
        py: Python<'_>,
        nodes: &Bound<'_, PyList>,
        root: usize,
        recursive: bool,
        general_union: bool,
        prefix: Vec<u8>,
        fallback: Py<PyAny>,
        to_dict: Option<Py<PyAny>>,
        strict: bool,
        strict_allow_default: bool,
        max_depth: u32,
        validation_error: Py<PyAny>,
        classes: (Py<PyAny>, Py<PyAny>, Py<PyAny>, Py<PyAny>, Py<PyAny>),
    ) -> PyResult<Self> {
        let prog = crate::panics::catch(|| program::compile(py, nodes, root, recursive, general_union))
            .map_err(|panic| crate::panics::error(py, "SchemaMismatchError", "Avro encoder compiler", &panic))??;
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
            encode: PyString::intern(py, "encode").unbind(),
        };
        let capacity = AtomicUsize::new(prefix.len() + 64);
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
            max_depth: if prog_recursive { max_depth } else { u32::MAX },
            validation_error,
            type_key: PyString::intern(py, "-type").unbind(),
            types,
            capacity,
        })
    }

    #[pyo3(signature = (obj, ctx=None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        obj: Bound<'py, PyAny>,
        ctx: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
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

    /// The frame prefix every value starts with (serdes.arrow's columnar encoder writes the same).
    #[getter]
    fn prefix<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        crate::new_bytes(py, &self.prefix)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AvroEncoder>()
}

#[cfg(test)]
mod tests;
