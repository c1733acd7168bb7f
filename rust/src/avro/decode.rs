//! The native loop: runs a [`Program`] over untrusted payload bytes, building Python values.
//!
//! Semantics are those of the pure-Python generated decoder (serdes/avro/_codegen.py), decision by
//! decision, so both raise the same error classes on the same bytes:
//! * every byte is read through a bounds check; a string/bytes length is checked against the bytes
//!   left before anything is sliced; a varint longer than 10 bytes is refused;
//! * each array/map block count is charged to the record's items budget (`max_items`) and, for
//!   items of at least one byte, compared with the bytes left, before the block is walked;
//! * a shared or recursive named record checks the value depth (`max_depth`) on entry;
//! * every array, map, union and record checks the thread's stack ([`crate::stack`]) before it
//!   reads what it contains: when the stack runs out first, [`Decoder::decode`] says so (`None`)
//!   and the caller decodes in pure Python, whose recursion does not use the native stack;
//! * like the generated code, skipping a boolean/float/double/fixed and reading a fixed advance
//!   the position without a check: the final "consumed exactly" check reports the overrun;
//! * all arithmetic on input-derived numbers is done in i128 or saturating, and no `unwrap`
//!   touches an input-derived value: nothing in the input can panic this code.
use std::io::Write;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDate, PyDateTime, PyDict, PyFloat, PyString, PyTuple, PyType, PyTzInfo};

use super::schema::{Action, Kind, Node, Post, Program};
use crate::stack::Guard;

/// The per-schema-pair decoder: the program plus what raising and logical types need, all
/// looked up once when it is built.
pub struct Decoder {
    pub prog: Program,
    pub max_items: i128,
    pub max_depth: i64,
    pub corrupt: Py<PyType>,
    pub mismatch: Py<PyType>,
    pub utc: Py<PyTzInfo>,
}

/// The read position in one payload and the items budget left for this record.
struct Cur<'a> {
    data: &'a [u8],
    pos: usize,
    budget: i128,
    /// this call's stack limit, and whether the recursion stopped at it (the error that unwinds
    /// the recursion then is only a marker)
    guard: Guard,
    stack_out: bool,
}

/// `int.from_bytes(b, "big", signed=True)`: what `_PyLong_FromByteArray(.., 0, 1)` builds, for
/// the limited API (a decimal's unscaled value, on the path `decimal_fast` leaves)
#[cfg(Py_LIMITED_API)]
fn int_from_signed_be<'py>(py: Python<'py>, b: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item(pyo3::intern!(py, "signed"), true)?;
    py.get_type::<pyo3::types::PyInt>().call_method(
        pyo3::intern!(py, "from_bytes"),
        (b, pyo3::intern!(py, "big")),
        Some(&kwargs),
    )
}

const DAYS_SHIFT: i64 = 719_163; // date(1970, 1, 1).toordinal()
const MAX_ORDINAL: i64 = 3_652_059; // date(9999, 12, 31).toordinal()
const US_PER_DAY: i128 = 86_400_000_000;

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u8, u8) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

impl Decoder {
    fn corrupt(&self, py: Python<'_>, msg: String) -> PyErr {
        PyErr::from_type(self.corrupt.bind(py).clone(), (msg,))
    }

    fn mismatch_err(&self, py: Python<'_>, msg: &str) -> PyErr {
        PyErr::from_type(self.mismatch.bind(py).clone(), (msg.to_string(),))
    }

    fn eof(&self, py: Python<'_>, c: &Cur) -> PyErr {
        self.corrupt(py, format!("payload ends early (reading byte {} of {})", c.pos, c.data.len()))
    }

    #[inline(always)]
    fn byte(&self, py: Python<'_>, c: &mut Cur) -> PyResult<u8> {
        match c.data.get(c.pos) {
            Some(b) => {
                c.pos += 1;
                Ok(*b)
            }
            None => Err(self.eof(py, c)),
        }
    }

    /// An unsigned varint of at most 10 bytes, masked to 64 bits (before zigzag decoding).
    #[inline(always)]
    fn varint(&self, py: Python<'_>, c: &mut Cur) -> PyResult<u64> {
        let b = self.byte(py, c)?;
        if b < 128 {
            return Ok(b as u64);
        }
        let mut n = (b & 0x7F) as u64;
        let mut shift = 7u32;
        loop {
            let b = self.byte(py, c)?;
            if shift < 64 {
                n |= ((b & 0x7F) as u64) << shift;
            }
            shift += 7;
            if shift > 70 {
                return Err(self.corrupt(py, "varint longer than 10 bytes".to_string()));
            }
            if b < 128 {
                return Ok(n);
            }
        }
    }

    #[inline(always)]
    fn long(&self, py: Python<'_>, c: &mut Cur) -> PyResult<i64> {
        let n = self.varint(py, c)?;
        Ok(((n >> 1) as i64) ^ -((n & 1) as i64))
    }

    #[inline(always)]
    fn left(c: &Cur) -> i128 {
        c.data.len() as i128 - c.pos as i128
    }

    /// A string/bytes length checked against the bytes left: the byte range, position moved past it.
    #[inline(always)]
    fn span(&self, py: Python<'_>, c: &mut Cur) -> PyResult<(usize, usize)> {
        let n = self.long(py, c)?;
        let left = Self::left(c);
        if n < 0 || (n as i128) > left {
            return Err(if n < 0 {
                self.corrupt(py, format!("negative length {n}"))
            } else {
                self.corrupt(py, format!("string/bytes of length {n} but only {left} bytes left (payload ends early)"))
            });
        }
        let start = c.pos;
        c.pos += n as usize; // n <= left, so start + n <= data.len()
        Ok((start, c.pos))
    }

    /// The next block count of an array/map (0 ends it), charged to the items budget and, when
    /// an item takes at least one byte, checked against the bytes left.
    #[inline(always)]
    fn block(&self, py: Python<'_>, c: &mut Cur, item_min: bool) -> PyResult<i128> {
        let mut n = self.long(py, c)? as i128;
        if n == 0 {
            return Ok(0);
        }
        if n < 0 {
            n = -n;
            self.long(py, c)?; // the block's byte size: items are walked anyway
        }
        c.budget -= n;
        if c.budget < 0 {
            return Err(self.too_many(py));
        }
        if item_min && n > Self::left(c) {
            return Err(self.corrupt(py, format!("block of {n} items but only {} bytes left", Self::left(c))));
        }
        Ok(n)
    }

    fn too_many(&self, py: Python<'_>) -> PyErr {
        self.corrupt(py, format!("record has more than serdes.max.items={} array/map items in total", self.max_items))
    }

    /// The thread's stack is too short for one more level: a marker error (never normalized) the
    /// recursion unwinds with; [`Decoder::decode`] turns it into `Ok(None)`.
    #[cold]
    #[inline(never)]
    fn stack_out(c: &mut Cur) -> PyErr {
        c.stack_out = true;
        PyErr::new::<pyo3::exceptions::PyRecursionError, _>("native stack exhausted")
    }

    fn too_deep(&self, py: Python<'_>) -> PyErr {
        self.corrupt(py, format!("record nests deeper than serdes.max.depth={} levels", self.max_depth))
    }

    fn bad_enum(&self, py: Python<'_>, i: i64, n: usize) -> PyErr {
        self.corrupt(py, format!("enum index {i} out of range for {n} symbols"))
    }

    #[inline(always)]
    fn branch(&self, py: Python<'_>, c: &mut Cur, n: usize) -> PyResult<usize> {
        let raw = self.varint(py, c)?;
        if raw & 1 == 0 && (raw >> 1) < n as u64 {
            return Ok((raw >> 1) as usize);
        }
        let idx = ((raw >> 1) as i64) ^ -((raw & 1) as i64);
        Err(self.corrupt(py, format!("union branch index {idx} out of range for a {n}-branch union")))
    }

    fn utf8<'py>(&self, py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: pointer and length describe a live slice; the GIL is held (we have `py`).
        let p = unsafe {
            ffi::PyUnicode_DecodeUTF8(bytes.as_ptr().cast(), bytes.len() as ffi::Py_ssize_t, std::ptr::null())
        };
        if p.is_null() {
            // the UnicodeDecodeError itself, as `bytes.decode()` in the generated decoder raises
            // it (the deserializer reports it as a CorruptPayloadError with this text)
            return Err(PyErr::fetch(py));
        }
        // SAFETY: p is a new, non-null reference
        Ok(unsafe { Bound::from_owned_ptr(py, p) })
    }

    fn timestamp<'py>(&self, py: Python<'py>, us: i128, tz: bool) -> PyResult<Bound<'py, PyAny>> {
        let days = us.div_euclid(US_PER_DAY);
        let rem = us.rem_euclid(US_PER_DAY) as i64;
        // datetime's range is years 1..9999: days from 1970 in [-719162, 2932896]
        if !(-(DAYS_SHIFT as i128) + 1..=(MAX_ORDINAL - DAYS_SHIFT) as i128).contains(&days) {
            return Err(self.corrupt(py, format!("timestamp of {us} microseconds is out of datetime's range")));
        }
        let (y, m, d) = civil_from_days(days as i64);
        let secs = rem / 1_000_000;
        let tzinfo = if tz { Some(self.utc.bind(py)) } else { None };
        Ok(PyDateTime::new(
            py,
            y as i32,
            m,
            d,
            (secs / 3600) as u8,
            (secs / 60 % 60) as u8,
            (secs % 60) as u8,
            (rem % 1_000_000) as u32,
            tzinfo,
        )?
        .into_any())
    }

    fn date<'py>(&self, py: Python<'py>, n: i64) -> PyResult<Bound<'py, PyAny>> {
        let ord = n as i128 + DAYS_SHIFT as i128;
        if !(1..=MAX_ORDINAL as i128).contains(&ord) {
            return Err(self.corrupt(py, format!("date of {n} days is out of range")));
        }
        let (y, m, d) = civil_from_days(n);
        Ok(PyDate::new(py, y as i32, m, d)?.into_any())
    }

    fn long_value<'py>(&self, py: Python<'py>, n: i64, post: &Post) -> PyResult<Bound<'py, PyAny>> {
        match post {
            Post::TimestampMillis => self.timestamp(py, n as i128 * 1000, true),
            Post::TimestampMicros => self.timestamp(py, n as i128, true),
            Post::LocalTimestampMillis => self.timestamp(py, n as i128 * 1000, false),
            Post::LocalTimestampMicros => self.timestamp(py, n as i128, false),
            Post::Date => self.date(py, n),
            Post::ToFloat => Ok(PyFloat::new(py, n as f64).into_any()),
            // SAFETY: PyLong_FromLongLong returns a new reference or NULL with an exception set
            _ => unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyLong_FromLongLong(n)) },
        }
    }

    /// Logical types and promotions on a value already built (the non-long cases).
    fn post<'py>(&self, py: Python<'py>, v: Bound<'py, PyAny>, post: &Post) -> PyResult<Bound<'py, PyAny>> {
        match post {
            Post::None => Ok(v),
            Post::ToFloat => {
                // SAFETY: v is a live object; the result is a new reference or NULL with an error set
                unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyNumber_Float(v.as_ptr())) }
            }
            Post::Encode => {
                // SAFETY: as above (v is a str read from valid UTF-8)
                unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyUnicode_AsUTF8String(v.as_ptr())) }
            }
            Post::Decode => {
                let b = v.cast::<PyBytes>().map_err(PyErr::from)?;
                self.utf8(py, b.as_bytes())
            }
            Post::Uuid { cls, .. } => cls.bind(py).call1((v,)),
            Post::Decimal { create, neg_scale, ctx, dtype, prec, neg_scale_i, max_len, spec } => {
                let b = v.cast::<PyBytes>().map_err(PyErr::from)?.as_bytes();
                // the length before converting anything: a longer value cannot have prec digits
                if max_len.is_some_and(|m| b.len() > m) {
                    let err = spec.bind(py).call_method1(pyo3::intern!(py, "too_long"), (b.len(),))?;
                    return Err(PyErr::from_value(err));
                }
                if let Some(d) = Self::decimal_fast(py, b, dtype, *prec, *neg_scale_i) {
                    return match d {
                        Some(d) => d,
                        None => {
                            let err = spec.bind(py).call_method0(pyo3::intern!(py, "too_many_digits"))?;
                            Err(PyErr::from_value(err))
                        }
                    };
                }
                // SAFETY: pointer/length of a live slice; big-endian, signed; new reference or NULL
                #[cfg(not(Py_LIMITED_API))]
                let int =
                    unsafe { Bound::from_owned_ptr_or_err(py, ffi::_PyLong_FromByteArray(b.as_ptr(), b.len(), 0, 1))? };
                // the limited API has no _PyLong_FromByteArray: the same int through Python
                #[cfg(Py_LIMITED_API)]
                let int = int_from_signed_be(py, &v)?;
                // raises unless the value has at most prec digits (then nothing rounds below)
                let int = spec.bind(py).call_method1(pyo3::intern!(py, "check"), (int,))?;
                let d = create.bind(py).call1((int,))?;
                d.call_method1(pyo3::intern!(py, "scaleb"), (neg_scale.bind(py), ctx.bind(py)))
            }
            Post::Call3(f, w, r) => f.bind(py).call1((v, w.bind(py), r.bind(py))),
            Post::New { cls, set_dict } => {
                let cls = cls.bind(py);
                if !*set_dict {
                    let kwargs = v
                        .cast::<PyDict>()
                        .map_err(|_| PyErr::new::<pyo3::exceptions::PyTypeError, _>("typed record: not a dict"))?;
                    return cls.call((), Some(kwargs));
                }
                // object.__new__(cls) without its argument checks (the lowering checked the class:
                // a plain dataclass, object's __new__, not abstract), then the dict as __dict__
                // SAFETY: cls is a live type object; tp_alloc returns a new reference or NULL with
                // an error set; PyObject_GenericSetDict checks its argument and returns -1 with an
                // error set on failure
                unsafe {
                    let tp = cls.as_ptr() as *mut ffi::PyTypeObject;
                    let slot = ffi::PyType_GetSlot(tp, ffi::Py_tp_alloc);
                    let obj = if slot.is_null() {
                        ffi::PyType_GenericAlloc(tp, 0)
                    } else {
                        let alloc: ffi::allocfunc = std::mem::transmute(slot);
                        alloc(tp, 0)
                    };
                    let obj = Bound::from_owned_ptr_or_err(py, obj)?;
                    if ffi::PyObject_GenericSetDict(obj.as_ptr(), v.as_ptr(), std::ptr::null_mut()) != 0 {
                        return Err(PyErr::fetch(py));
                    }
                    Ok(obj)
                }
            }
            // long-only logical types on a non-long value cannot be produced by the lowering
            _ => Ok(v),
        }
    }

    /// `Decimal("<unscaled>E<exponent>")`: the value `create_decimal(unscaled).scaleb(exponent, ctx)`
    /// gives when nothing rounds (the unscaled value has at most `prec` digits, the exponent is
    /// far from the context's limits); `Some(None)`: the unscaled value has more than `prec`
    /// digits; `None` when this path does not decide (the general one does).
    fn decimal_fast<'py>(
        py: Python<'py>,
        b: &[u8],
        dtype: &Py<PyAny>,
        prec: u32,
        exp: i64,
    ) -> Option<Option<PyResult<Bound<'py, PyAny>>>> {
        if b.is_empty() || b.len() > 16 || !(-100_000..=100_000).contains(&exp) {
            return None;
        }
        let mut buf = [if b[0] & 0x80 != 0 { 0xFFu8 } else { 0 }; 16];
        buf[16 - b.len()..].copy_from_slice(b);
        let v = i128::from_be_bytes(buf);
        let digits = if v == 0 { 1 } else { v.unsigned_abs().ilog10() + 1 };
        if digits > prec {
            return Some(None);
        }
        // "<v>E<exp>" written on the stack: at most 40 + 1 + 7 bytes, no allocation per value
        let mut buf = [0u8; 64];
        let n = {
            let mut w: &mut [u8] = &mut buf;
            if write!(w, "{v}E{exp}").is_err() {
                return None;
            }
            64 - w.len()
        };
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        Some(Some(dtype.bind(py).call1((PyString::new(py, text),))))
    }

    /// A UUID from a canonical 36-character string (8-4-4-4-12 hex digits), built as
    /// `uuid.UUID.__init__` builds it (the `int` and `is_safe` slots); `None` for any other form.
    fn uuid_fast<'py>(
        py: Python<'py>,
        s: &[u8],
        cls: &Py<PyType>,
        is_safe: &Py<PyAny>,
    ) -> Option<PyResult<Bound<'py, PyAny>>> {
        if s.len() != 36 {
            return None;
        }
        let mut v: u128 = 0;
        for (i, &ch) in s.iter().enumerate() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if ch != b'-' {
                    return None;
                }
                continue;
            }
            let d = match ch {
                b'0'..=b'9' => ch - b'0',
                b'a'..=b'f' => ch - b'a' + 10,
                b'A'..=b'F' => ch - b'A' + 10,
                _ => return None,
            };
            v = (v << 4) | d as u128;
        }
        Some((|| {
            let tp = cls.bind(py).as_type_ptr();
            // SAFETY: tp is a live type object; tp_alloc (or the generic one) returns a new
            // reference or NULL with an error set; the slots are then set through the generic
            // setattr, which is what object.__setattr__ (used by UUID.__init__) does. Under the
            // limited API the type's struct is opaque: PyType_GetSlot reads the same tp_alloc
            // (NULL when unset), and a non-NULL Py_tp_alloc slot is an allocfunc
            let obj = unsafe {
                #[cfg(not(Py_LIMITED_API))]
                let alloc = (*tp).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
                #[cfg(Py_LIMITED_API)]
                let alloc = match ffi::PyType_GetSlot(tp, ffi::Py_tp_alloc) {
                    slot if slot.is_null() => ffi::PyType_GenericAlloc as ffi::allocfunc,
                    slot => std::mem::transmute::<*mut std::ffi::c_void, ffi::allocfunc>(slot),
                };
                Bound::from_owned_ptr_or_err(py, alloc(tp, 0))?
            };
            let int = v.into_pyobject(py)?;
            for (name, val) in
                [(pyo3::intern!(py, "int"), int.as_any()), (pyo3::intern!(py, "is_safe"), is_safe.bind(py))]
            {
                // SAFETY: live objects; returns -1 with an error set on failure
                if unsafe { ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), val.as_ptr()) } < 0 {
                    return Err(PyErr::fetch(py));
                }
            }
            Ok(obj)
        })())
    }

    fn read<'py>(&self, py: Python<'py>, c: &mut Cur, i: usize, d: i64) -> PyResult<Bound<'py, PyAny>> {
        let node: &Node = &self.prog.nodes[i]; // indices were range-checked when compiled
        if node.kind.nests() && !c.guard.ok() {
            return Err(Self::stack_out(c));
        }
        let v = match &node.kind {
            Kind::Null => py.None().into_bound(py),
            Kind::Bool => {
                let b = self.byte(py, c)?;
                PyBool::new(py, b != 0).to_owned().into_any()
            }
            Kind::Long => {
                let n = self.long(py, c)?;
                if let Post::Uuid { .. } | Post::Call3(..) | Post::Decimal { .. } = node.post {
                    n.into_pyobject(py)?.into_any()
                } else {
                    return self.long_value(py, n, &node.post);
                }
            }
            Kind::Float => {
                let b = c.data.get(c.pos..c.pos.saturating_add(4)).ok_or_else(|| self.eof(py, c))?;
                let f = f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64;
                c.pos += 4;
                PyFloat::new(py, f).into_any()
            }
            Kind::Double => {
                let b = c.data.get(c.pos..c.pos.saturating_add(8)).ok_or_else(|| self.eof(py, c))?;
                let f = f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                c.pos += 8;
                PyFloat::new(py, f).into_any()
            }
            Kind::Str => {
                let (s, e) = self.span(py, c)?;
                if let Post::Uuid { cls, is_safe } = &node.post {
                    if let Some(u) = Self::uuid_fast(py, &c.data[s..e], cls, is_safe) {
                        return u;
                    }
                }
                self.utf8(py, &c.data[s..e])?
            }
            Kind::Bytes => {
                let (s, e) = self.span(py, c)?;
                crate::new_bytes(py, &c.data[s..e])?.into_any()
            }
            Kind::Fixed(size) => {
                // a slice, as data[pos:pos + size] is: short (or empty) when the payload ends early
                let len = c.data.len();
                let s = c.pos.min(len);
                let e = c.pos.saturating_add(*size).min(len);
                c.pos = c.pos.saturating_add(*size);
                crate::new_bytes(py, &c.data[s..e])?.into_any()
            }
            Kind::Enum { symbols, missing } => {
                let n = self.long(py, c)?;
                if n < 0 || n as u64 >= symbols.len() as u64 {
                    return Err(self.bad_enum(py, n, symbols.len()));
                }
                match &symbols[n as usize] {
                    Some(s) => s.bind(py).clone().into_any(),
                    None => {
                        let msg = missing[n as usize].as_deref().unwrap_or("enum symbol not in the reader schema");
                        return Err(self.mismatch_err(py, msg));
                    }
                }
            }
            Kind::Array { item, item_min, .. } => {
                // SAFETY: new reference or NULL with an error set
                let list = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyList_New(0))? };
                loop {
                    let n = self.block(py, c, *item_min)?;
                    if n == 0 {
                        break;
                    }
                    for _ in 0..n {
                        let x = self.read(py, c, *item, d + 1)?;
                        // SAFETY: list is a list, x a live object; Append does not steal
                        if unsafe { ffi::PyList_Append(list.as_ptr(), x.as_ptr()) } < 0 {
                            return Err(PyErr::fetch(py));
                        }
                    }
                }
                list
            }
            Kind::Map { value } => {
                // SAFETY: new reference or NULL with an error set
                let dict = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyDict_New())? };
                loop {
                    let n = self.block(py, c, true)?;
                    if n == 0 {
                        break;
                    }
                    for _ in 0..n {
                        let (s, e) = self.span(py, c)?;
                        let k = self.utf8(py, &c.data[s..e])?;
                        let x = self.read(py, c, *value, d + 1)?;
                        // SAFETY: dict is a dict, k and x live objects; SetItem does not steal
                        if unsafe { ffi::PyDict_SetItem(dict.as_ptr(), k.as_ptr(), x.as_ptr()) } < 0 {
                            return Err(PyErr::fetch(py));
                        }
                    }
                }
                dict
            }
            Kind::Union(branches) => {
                let b = &branches[self.branch(py, c, branches.len())?];
                let x = match b.node {
                    Some(j) => self.read(py, c, j, d)?,
                    None => return Err(self.mismatch_err(py, b.mismatch.as_deref().unwrap_or("schema mismatch"))),
                };
                match &b.name {
                    Some(name) => PyTuple::new(py, [name.bind(py).clone().into_any(), x])?.into_any(),
                    None => x,
                }
            }
            Kind::Record { keys, actions, defaults, default_items, mismatch, depth_check } => {
                if *depth_check && d > self.max_depth {
                    return Err(self.too_deep(py));
                }
                // SAFETY: new reference or NULL with an error set
                #[cfg(not(Py_LIMITED_API))]
                let dict = unsafe {
                    Bound::from_owned_ptr_or_err(py, ffi::_PyDict_NewPresized(keys.len() as ffi::Py_ssize_t))?
                };
                // the limited API cannot presize: the dict grows as the fields are set
                // SAFETY: as above
                #[cfg(Py_LIMITED_API)]
                let dict = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyDict_New())? };
                for a in actions {
                    match a {
                        Action::Read(j, slot) => {
                            let x = self.read(py, c, *j, d + 1)?;
                            // SAFETY: as for maps; slots were range-checked when compiled
                            if unsafe { ffi::PyDict_SetItem(dict.as_ptr(), keys[*slot].as_ptr(), x.as_ptr()) } < 0 {
                                return Err(PyErr::fetch(py));
                            }
                        }
                        Action::Skip(j) => self.skip(py, c, *j, d + 1)?,
                    }
                }
                if let Some(msg) = mismatch {
                    return Err(self.mismatch_err(py, msg));
                }
                if *default_items > 0 {
                    // the items of the defaults' copies count against the budget like decoded ones
                    c.budget -= *default_items;
                    if c.budget < 0 {
                        return Err(self.too_many(py));
                    }
                }
                for df in defaults {
                    let x = match &df.copier {
                        Some(f) => f.bind(py).call0()?,
                        None => df.value.bind(py).clone(),
                    };
                    // SAFETY: as above
                    if unsafe { ffi::PyDict_SetItem(dict.as_ptr(), keys[df.slot].as_ptr(), x.as_ptr()) } < 0 {
                        return Err(PyErr::fetch(py));
                    }
                }
                dict
            }
            Kind::Mismatch(msg) => return Err(self.mismatch_err(py, msg)),
        };
        self.post(py, v, &node.post)
    }

    /// Step over a value of a writer-only node, with every check and limit of reading it.
    fn skip(&self, py: Python<'_>, c: &mut Cur, i: usize, d: i64) -> PyResult<()> {
        let kind = &self.prog.nodes[i].kind;
        if kind.nests() && !c.guard.ok() {
            return Err(Self::stack_out(c));
        }
        match kind {
            Kind::Null => {}
            Kind::Bool => c.pos = c.pos.saturating_add(1),
            Kind::Long => {
                self.varint(py, c)?;
            }
            Kind::Float => c.pos = c.pos.saturating_add(4),
            Kind::Double => c.pos = c.pos.saturating_add(8),
            Kind::Str | Kind::Bytes => {
                self.span(py, c)?;
            }
            Kind::Fixed(size) => c.pos = c.pos.saturating_add(*size),
            Kind::Enum { symbols, .. } => {
                let n = self.long(py, c)?;
                if n < 0 || n as u64 >= symbols.len() as u64 {
                    return Err(self.bad_enum(py, n, symbols.len()));
                }
            }
            Kind::Array { item, item_min, item_empty } => loop {
                let n = self.block(py, c, *item_min)?;
                if n == 0 {
                    break;
                }
                if !*item_empty {
                    for _ in 0..n {
                        self.skip(py, c, *item, d + 1)?;
                    }
                }
            },
            Kind::Map { value } => loop {
                let n = self.block(py, c, true)?;
                if n == 0 {
                    break;
                }
                for _ in 0..n {
                    self.span(py, c)?;
                    self.skip(py, c, *value, d + 1)?;
                }
            },
            Kind::Union(branches) => {
                let b = &branches[self.branch(py, c, branches.len())?];
                match b.node {
                    Some(j) => self.skip(py, c, j, d)?,
                    None => return Err(self.mismatch_err(py, b.mismatch.as_deref().unwrap_or("schema mismatch"))),
                }
            }
            Kind::Record { actions, depth_check, .. } => {
                if *depth_check && d > self.max_depth {
                    return Err(self.too_deep(py));
                }
                for a in actions {
                    match a {
                        Action::Read(j, _) | Action::Skip(j) => self.skip(py, c, *j, d + 1)?,
                    }
                }
            }
            Kind::Mismatch(msg) => return Err(self.mismatch_err(py, msg)),
        }
        Ok(())
    }

    /// Decode `data[offset..]`, which must be exactly one value: the entry point the native
    /// dispatcher calls without a Python-level call. `Ok(None)`: the value nests deeper than this
    /// thread's stack lets the native loop go (nothing else was wrong up to there).
    pub fn decode<'py>(&self, py: Python<'py>, data: &[u8], offset: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut c = Cur { data, pos: offset, budget: self.max_items, guard: Guard::here(), stack_out: false };
        let v = match self.read(py, &mut c, self.prog.root, 0) {
            Ok(v) => v,
            Err(_) if c.stack_out => return Ok(None),
            Err(e) => return Err(e),
        };
        if c.pos != data.len() {
            return Err(if c.pos > data.len() {
                self.corrupt(py, format!("payload ends {} bytes early", c.pos - data.len()))
            } else {
                self.corrupt(py, format!("{} trailing bytes after the record", data.len() - c.pos))
            });
        }
        Ok(Some(v))
    }
}

#[cfg(test)]
mod tests;
