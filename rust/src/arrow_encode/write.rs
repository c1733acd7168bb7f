//! One row of bound columns (`bind.rs`) written as Avro: the bytes serdes' per-record encoder
//! writes for the Python value pyarrow gives for that row (`Shape.to_python`), or a refusal.
//!
//! Each value is written only where the Arrow value fixes the per-record bytes; everything else is
//! refused, and Python sends the whole call to the per-record path, which decides (its bytes, or
//! its typed error for the row). Refused: a null where the schema has no null branch; an enum
//! value that is not a symbol; a decimal with more digits than its precision, or too large for
//! its fixed; a map with a key twice (the per-record path's dict keeps the last value, at the
//! first key's place); a date, time or timestamp outside what Python's `datetime` holds (pyarrow's
//! conversion fails or wraps there); a duration field that does not fit its 4 unsigned bytes.
use arrow_array::types::IntervalMonthDayNano;

use super::bind::{Col, Kind, NOT_A_SYMBOL};
use crate::avro_out::OutOfMemory;
use crate::stack::Guard;

pub(crate) type Step = Result<(), String>;

/// The output of a call: every row's bytes end to end ([`AvroOut`]: data too large to allocate
/// is a refusal, and the per-record path then meets the same limit and raises its `MemoryError`).
pub(crate) type Out = crate::avro_out::AvroOut<String>;

impl From<OutOfMemory> for String {
    fn from(e: OutOfMemory) -> String {
        format!("cannot allocate {} more bytes after {}", e.wanted, e.len)
    }
}

/// The days of `date(1, 1, 1)` and `date(9999, 12, 31)` from the epoch: Python's date range.
const DAYS: (i64, i64) = (-719_162, 2_932_896);
/// Seconds from the epoch of `datetime.min` and of the last second of `datetime.max`.
const SECONDS: (i64, i64) = (-62_135_596_800, 253_402_300_799);
const MS_PER_DAY: i64 = 86_400_000;

/// Row `i` of `items` in an offsets buffer: the checked range `offsets[i]..offsets[i + 1]`.
#[inline(always)]
fn span(offsets: &[i32], i: usize) -> Result<(usize, usize), String> {
    match (offsets.get(i), offsets.get(i.wrapping_add(1))) {
        (Some(&a), Some(&b)) if 0 <= a && a <= b => Ok((a as usize, b as usize)),
        _ => Err("an offset out of order or out of its buffer".to_string()),
    }
}

#[inline(always)]
fn at<T: Copy>(values: &[T], i: usize) -> Result<T, String> {
    values.get(i).copied().ok_or_else(|| "a value beyond its buffer".to_string())
}

/// The bytes of row `i` of a string or bytes column.
#[inline(always)]
fn var<'a>(offsets: &[i32], data: &'a [u8], i: usize) -> Result<&'a [u8], String> {
    let (a, b) = span(offsets, i)?;
    data.get(a..b).ok_or_else(|| "a value beyond its buffer".to_string())
}

fn in_range(v: i64, lo: i64, hi: i64, what: &str) -> Step {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!("a {what} value {v} outside Python's datetime range"))
    }
}

/// Writes one column's value at a row, one call per nesting level.
pub(crate) struct Writer {
    pub guard: Guard,
}

impl Writer {
    /// Append the encoding of row `i` of `col`. Inlined into the loops over fields and items, so
    /// that a scalar value costs no call; a nested value takes one (`nested`).
    #[inline(always)]
    pub fn write(&self, col: &Col<'_>, i: usize, out: &mut Out) -> Step {
        if i >= col.len {
            return Err("a row beyond its column".to_string());
        }
        if let Some(nulls) = &col.nulls {
            if nulls.is_null(i) {
                return match &col.kind {
                    Kind::Nullable { null_byte, .. } => out.byte(*null_byte),
                    Kind::Null => Ok(()),
                    _ => Err("a null in a column the schema has no null for".to_string()),
                };
            }
        }
        // `["null", T]` with a value: the branch byte, then T's value (of the same column)
        let col = match &col.kind {
            Kind::Nullable { other_byte, other, .. } => {
                out.byte(*other_byte)?;
                if i >= other.len {
                    return Err("a row beyond its column".to_string());
                }
                &**other
            }
            _ => col,
        };
        match scalar(col, i, out) {
            Some(step) => step,
            None => self.nested(col, i, out),
        }
    }

    /// A value that holds others (or a union of a union, which serdes' programs never have).
    #[inline(never)]
    fn nested(&self, col: &Col<'_>, i: usize, out: &mut Out) -> Step {
        match &col.kind {
            Kind::Array { offsets, items } => self.array(offsets, items, i, out),
            Kind::Map { offsets, keys, values } => self.map(offsets, keys, values, i, out),
            Kind::Record(fields) => {
                self.deeper()?;
                for f in fields {
                    self.write(f, i, out)?;
                }
                Ok(())
            }
            Kind::Nullable { .. } => {
                self.deeper()?;
                self.write(col, i, out)
            }
            _ => Err("a scalar column taken for a nested one".to_string()),
        }
    }

    /// One level deeper into a value: only while the thread's stack has room for it.
    #[inline(always)]
    fn deeper(&self) -> Step {
        if self.guard.ok() {
            Ok(())
        } else {
            Err("too little stack left on this thread".to_string())
        }
    }

    #[inline(never)]
    fn array(&self, offsets: &[i32], items: &Col<'_>, i: usize, out: &mut Out) -> Step {
        self.deeper()?;
        let (a, b) = span(offsets, i)?;
        // one block of every item, then the empty block that ends the array (as the per-record
        // encoders write a list)
        if b > a {
            out.long((b - a) as i64)?;
            for j in a..b {
                self.write(items, j, out)?;
            }
        }
        out.byte(0)
    }

    #[inline(never)]
    fn map(&self, offsets: &[i32], keys: &Col<'_>, values: &Col<'_>, i: usize, out: &mut Out) -> Step {
        self.deeper()?;
        let (a, b) = span(offsets, i)?;
        let Kind::Var { offsets: key_offsets, data: key_data } = &keys.kind else {
            return Err("map keys that are not strings".to_string());
        };
        if b > keys.len {
            return Err("a map entry beyond its keys".to_string());
        }
        if b > a {
            if keys.nulls.as_ref().is_some_and(|n| (a..b).any(|j| n.is_null(j))) {
                return Err("a null map key".to_string());
            }
            if has_duplicates(key_offsets, key_data, a, b)? {
                return Err("a map with a key twice".to_string());
            }
            out.long((b - a) as i64)?;
            for j in a..b {
                out.blob(var(key_offsets, key_data, j)?)?;
                self.write(values, j, out)?;
            }
        }
        out.byte(0)
    }
}

/// Row `i` of a column that holds no other column (its null already checked), or `None` for
/// one that does.
#[inline(always)]
fn scalar(col: &Col<'_>, i: usize, out: &mut Out) -> Option<Step> {
    Some(match &col.kind {
        Kind::Null => Ok(()),
        Kind::Boolean(b) => out.byte(b.value(i) as u8),
        Kind::Int(v) => at(v, i).and_then(|x| out.long(x as i64)),
        Kind::Long(v) => at(v, i).and_then(|x| out.long(x)),
        Kind::Float(v) => at(v, i).and_then(|x| {
            // the per-record path writes the f32 made a Python float and back: a NaN comes back
            // quiet (the conversions set its quiet bit, keeping the sign and payload)
            let x = if x.is_nan() { f32::from_bits(x.to_bits() | 0x0040_0000) } else { x };
            out.raw(&x.to_le_bytes())
        }),
        Kind::Double(v) => at(v, i).and_then(|x| out.raw(&x.to_le_bytes())),
        Kind::Var { offsets, data } => var(offsets, data, i).and_then(|s| out.blob(s)),
        Kind::Fixed { size, data } => match i.checked_mul(*size).and_then(|a| data.get(a..a.checked_add(*size)?)) {
            Some(s) => out.raw(s),
            None => Err("a fixed value beyond its buffer".to_string()),
        },
        Kind::Enum { keys, codes } => enum_code(keys, codes, i).and_then(|code| out.long(code)),
        Kind::Date(v) => at(v, i).and_then(|d| {
            in_range(d as i64, DAYS.0, DAYS.1, "date")?;
            out.long(d as i64)
        }),
        Kind::TimeMillis(v) => at(v, i).and_then(|t| {
            // (pyarrow wraps a time past midnight to the next day's)
            in_range(t as i64, 0, MS_PER_DAY - 1, "time-millis")?;
            out.long(t as i64)
        }),
        Kind::TimeMicros(v) => at(v, i).and_then(|t| {
            in_range(t, 0, MS_PER_DAY * 1000 - 1, "time-micros")?;
            out.long(t)
        }),
        Kind::TimestampMillis(v) => at(v, i).and_then(|t| {
            in_range(t, SECONDS.0 * 1000, SECONDS.1 * 1000 + 999, "timestamp-millis")?;
            out.long(t)
        }),
        Kind::TimestampMicros(v) => at(v, i).and_then(|t| {
            in_range(t, SECONDS.0 * 1_000_000, SECONDS.1 * 1_000_000 + 999_999, "timestamp-micros")?;
            out.long(t)
        }),
        Kind::Decimal { values, precision, size } => at(values, i).and_then(|u| decimal(u, *precision, *size, out)),
        Kind::Uuid(data) => match i.checked_mul(16).and_then(|a| data.get(a..a.checked_add(16)?)) {
            Some(b) => out.blob(&uuid_text(b)),
            None => Err("a UUID beyond its buffer".to_string()),
        },
        Kind::Duration(v) => at(v, i).and_then(|d| duration(d, out)),
        Kind::Array { .. } | Kind::Map { .. } | Kind::Record(_) | Kind::Nullable { .. } => return None,
    })
}

/// The index written for row `i` of an enum column.
#[inline(always)]
fn enum_code(keys: &[i32], codes: &[i64], i: usize) -> Result<i64, String> {
    let key = usize::try_from(at(keys, i)?).map_err(|_| "a negative dictionary index".to_string())?;
    match codes.get(key) {
        Some(&code) if code != NOT_A_SYMBOL => Ok(code),
        Some(_) => Err("a value that is not a symbol of the enum".to_string()),
        None => Err("a dictionary index beyond the dictionary".to_string()),
    }
}

/// Whether entries `a..b` of a map have a key twice.
fn has_duplicates(offsets: &[i32], data: &[u8], a: usize, b: usize) -> Result<bool, String> {
    let n = b - a;
    if n < 2 {
        return Ok(false);
    }
    let keys = (a..b).map(|j| var(offsets, data, j)).collect::<Result<Vec<_>, _>>()?;
    if n <= 16 {
        // a few keys: comparing pairs costs less than hashing them
        return Ok((1..n).any(|x| keys[..x].contains(&keys[x])));
    }
    let mut seen = std::collections::HashSet::with_capacity(n);
    Ok(!keys.into_iter().all(|k| seen.insert(k)))
}

/// A decimal's unscaled value as the per-record path writes the `Decimal` pyarrow gives for it
/// (its exponent is minus the column's scale, which is the schema's): on `bytes`, fastavro's
/// `(abs.bit_length() + 8) // 8` bytes of big-endian two's complement; on `fixed`, the two's
/// complement in exactly `size` bytes.
fn decimal(unscaled: i128, precision: u8, size: Option<usize>, out: &mut Out) -> Step {
    let magnitude = unscaled.checked_abs().ok_or("a decimal beyond its precision")?;
    // serdes' check before fastavro's prepare: at most `precision` digits
    if magnitude >= 10i128.pow(precision as u32) {
        return Err("a decimal with more digits than its precision".to_string());
    }
    let bits = 128 - magnitude.leading_zeros() as usize;
    let be = unscaled.to_be_bytes();
    match size {
        None => out.blob(&be[16 - (bits + 8) / 8..]),
        Some(size) => {
            // fastavro's prepare_fixed_decimal: a positive value needs bit_length + 1 bits (more
            // than the fixed holds is the per-record path's error); a negative one is written as
            // its two's complement cut to `size` bytes
            if unscaled >= 0 && bits + 1 > size * 8 {
                return Err("a decimal too large for its fixed".to_string());
            }
            out.raw(&be[16 - size..])
        }
    }
}

/// `str(uuid.UUID(bytes=b))`: 32 lowercase hex digits in groups of 8-4-4-4-12.
fn uuid_text(b: &[u8]) -> [u8; 36] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = [b'-'; 36];
    let mut at = 0;
    for (k, byte) in b.iter().enumerate() {
        if matches!(k, 4 | 6 | 8 | 10) {
            at += 1;
        }
        s[at] = HEX[(byte >> 4) as usize];
        s[at + 1] = HEX[(byte & 15) as usize];
        at += 2;
    }
    s
}

/// A duration's 12 bytes as `AvroDuration.to_python` gives them: months, days and
/// `nanoseconds // 1_000_000`, each 4 little-endian unsigned bytes (a value outside that is an
/// OverflowError there).
fn duration(v: IntervalMonthDayNano, out: &mut Out) -> Step {
    let ms = v.nanoseconds.div_euclid(1_000_000);
    let (Ok(months), Ok(days), Ok(ms)) = (u32::try_from(v.months), u32::try_from(v.days), u32::try_from(ms)) else {
        return Err("a duration field outside 4 unsigned bytes".to_string());
    };
    let mut b = [0u8; 12];
    b[..4].copy_from_slice(&months.to_le_bytes());
    b[4..8].copy_from_slice(&days.to_le_bytes());
    b[8..].copy_from_slice(&ms.to_le_bytes());
    out.raw(&b)
}

#[cfg(test)]
pub(crate) fn decimal_bytes(unscaled: i128, precision: u8, size: Option<usize>) -> Result<Vec<u8>, String> {
    let mut out = Out::new(Vec::new());
    decimal(unscaled, precision, size, &mut out)?;
    Ok(out.buf)
}

#[cfg(test)]
pub(crate) fn uuid_string(b: &[u8]) -> String {
    String::from_utf8(uuid_text(b).to_vec()).expect("hex digits")
}
