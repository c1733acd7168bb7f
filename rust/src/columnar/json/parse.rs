//! One JSON document into the columns of a program, validated as it is read.
//!
//! Strict RFC 8259 JSON, and stricter than the per-record path (orjson, then jsonschema-rs, then
//! pyarrow) wherever the two could differ: this parser answers "decoded, with the values the
//! per-record path gives" or "not decoded here" (the call then goes to the per-record path, which
//! decides), never a third thing. So it refuses, besides invalid JSON and invalid UTF-8:
//! * a duplicated key (orjson keeps the last value, and a map its first position);
//! * a lone surrogate escape (orjson refuses it; pyarrow could not hold it);
//! * in an `integer` column, any literal with a fraction or exponent (`1.0` is an integer to
//!   jsonschema-rs, and pyarrow truncates `1.5`) and integers beyond int64;
//! * in a `number` column, an integer literal beyond 2^53 (pyarrow refuses to round it) and a
//!   literal beyond the double range (orjson refuses it);
//! * a property the schema does not declare (the per-record path's ColumnValueError, or its
//!   ValidationError under `additionalProperties: false`), a missing required property, a null
//!   the column or the schema does not admit, a value of another JSON type, a failed keyword.
//!
//! Every read is bounds-checked (`get`, slices through `get`), nothing is allocated from a count in
//! the input, and the recursion follows the program's nodes, never the input's nesting: an input
//! deeper than the program fails at the first container the program does not expect.
use std::collections::HashSet;

use super::columns::{offset, Columns, Data};
use super::program::{Kind, Num, Program};
use crate::columnar::pool;

/// Spare bytes a string column keeps ahead of a string (a longer one grows the column itself).
const STRING_ROOM: usize = 64;

pub type Fail = &'static str;

/// 2^53: the integers a double holds exactly
const EXACT_IN_DOUBLE: u64 = 1 << 53;

/// Maps with more keys than this are checked for duplicates through a hash set, fewer pairwise.
const PAIRWISE_KEYS: usize = 16;

pub struct Parser<'a, 'p> {
    buf: &'a [u8],
    at: usize,
    program: &'p Program,
    cols: &'p mut Columns,
    /// an escaped key, unescaped
    scratch: Vec<u8>,
}

/// A number literal as read: its text, whether it has only digits (and a sign), its sign, and
/// (when they fit a u64) its digits as one integer and the power of ten that scales them.
struct Literal<'a> {
    text: &'a [u8],
    integer: bool,
    negative: bool,
    digits: Option<u64>,
    exp10: i64,
}

impl Literal<'_> {
    /// The integer of a literal without fraction or exponent, when it fits a u64.
    fn magnitude(&self) -> Option<u64> {
        if self.integer {
            self.digits
        } else {
            None
        }
    }

    /// The double nearest the literal, as `str::parse` (and orjson) round it. The common short
    /// literal is one exact operation (digits and power of ten both exact: Clinger's fast path).
    fn to_f64(&self) -> Option<f64> {
        const POW10: [f64; 23] = [
            1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
            1e19, 1e20, 1e21, 1e22,
        ];
        if let Some(d) = self.digits.filter(|&d| d <= EXACT_IN_DOUBLE) {
            if (-22..=22).contains(&self.exp10) {
                let m = d as f64;
                let p = POW10[self.exp10.unsigned_abs() as usize];
                let v = if self.exp10 < 0 { m / p } else { m * p };
                return Some(if self.negative { -v } else { v });
            }
        }
        std::str::from_utf8(self.text).ok()?.parse().ok()
    }
}

impl<'a, 'p> Parser<'a, 'p> {
    pub fn new(program: &'p Program, cols: &'p mut Columns) -> Parser<'a, 'p> {
        Parser { buf: &[], at: 0, program, cols, scratch: Vec::new() }
    }

    /// Decode one document (a frame's body) as one row of the root object.
    pub fn record(&mut self, body: &'a [u8]) -> Result<(), Fail> {
        self.buf = body;
        self.at = 0;
        self.ws();
        if self.peek() != Some(b'{') {
            return Err("the document is not an object");
        }
        self.object(0)?;
        self.ws();
        if self.at != self.buf.len() {
            return Err("content after the document");
        }
        Ok(())
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.buf.get(self.at).copied()
    }

    #[inline(always)]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    #[inline(always)]
    fn expect(&mut self, c: u8) -> Result<(), Fail> {
        self.ws();
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err("invalid JSON")
        }
    }

    fn word(&mut self, w: &[u8]) -> Result<(), Fail> {
        if self.buf.get(self.at..self.at + w.len()) == Some(w) {
            self.at += w.len();
            Ok(())
        } else {
            Err("invalid JSON")
        }
    }

    /// One value into column `node`.
    fn value(&mut self, node: usize) -> Result<(), Fail> {
        self.ws();
        let program = self.program;
        let n = &program.nodes[node];
        let Some(c) = self.peek() else { return Err("invalid JSON") };
        if c == b'n' {
            self.word(b"null")?;
            if !n.null_ok {
                return Err("a null the column or the schema does not admit");
            }
            return self.cols.push_null(program, node);
        }
        match &n.kind {
            Kind::Int => {
                if !matches!(c, b'-' | b'0'..=b'9') {
                    return Err("not an integer");
                }
                let lit = self.number()?;
                if !lit.integer {
                    return Err("a number with a fraction or an exponent in an integer column");
                }
                let v = int64(&lit).ok_or("an integer beyond int64")?;
                if !n.checks.none && !n.checks.number_ok(Num::Int(v)) {
                    return Err("an integer the schema does not admit");
                }
                let Data::I64(out) = &mut self.cols.cols[node].data else { return Err("column kind") };
                out.push(v);
            }
            Kind::Float => {
                if !matches!(c, b'-' | b'0'..=b'9') {
                    return Err("not a number");
                }
                let lit = self.number()?;
                let (v, f) = if lit.integer {
                    // orjson gives a Python int, which pyarrow makes a double only when exact
                    match lit.magnitude() {
                        Some(m) if m <= EXACT_IN_DOUBLE => {
                            let i = if lit.negative { -(m as i64) } else { m as i64 };
                            (Num::Int(i), i as f64)
                        }
                        _ => return Err("an integer beyond 2^53 in a number column"),
                    }
                } else {
                    // correctly rounded, like orjson
                    let f = lit.to_f64().ok_or("invalid JSON")?;
                    if !f.is_finite() {
                        return Err("a number beyond the double range");
                    }
                    (Num::Float(f), f)
                };
                if !n.checks.none && !n.checks.number_ok(v) {
                    return Err("a number the schema does not admit");
                }
                let Data::F64(out) = &mut self.cols.cols[node].data else { return Err("column kind") };
                out.push(f);
            }
            Kind::Str => {
                if c != b'"' {
                    return Err("not a string");
                }
                let Data::Str(offsets, bytes) = &mut self.cols.cols[node].data else { return Err("column kind") };
                if bytes.capacity() - bytes.len() < STRING_ROOM {
                    // (the offsets were sized for the rows expected, in the root's own columns)
                    pool::grow_bytes(bytes, STRING_ROOM, offsets.len() - 1, offsets.capacity() - 1);
                }
                let start = bytes.len();
                let count = n.checks.counts_length();
                let chars = string(self.buf, &mut self.at, bytes, count)?;
                if !n.checks.none && ((count && !n.checks.length_ok(chars)) || !n.checks.string_ok(&bytes[start..])) {
                    return Err("a string the schema does not admit");
                }
                offsets.push(offset(bytes.len())?);
            }
            Kind::Bool => {
                let b = match c {
                    b't' => self.word(b"true").map(|_| true)?,
                    b'f' => self.word(b"false").map(|_| false)?,
                    _ => return Err("not a boolean"),
                };
                if !n.checks.none && !n.checks.bool_ok(b) {
                    return Err("a boolean the schema does not admit");
                }
                let Data::Bool(out) = &mut self.cols.cols[node].data else { return Err("column kind") };
                out.push(b);
            }
            Kind::Struct(_) => {
                if c != b'{' {
                    return Err("not an object");
                }
                // object() marks the row valid
                return self.object(node);
            }
            Kind::List(child) => {
                if c != b'[' {
                    return Err("not an array");
                }
                self.array(node, *child)?;
            }
            Kind::Map(child) => {
                if c != b'{' {
                    return Err("not an object");
                }
                self.map(node, *child)?;
            }
        }
        self.cols.set_valid(node);
        Ok(())
    }

    /// An object of declared properties (at `{`).
    fn object(&mut self, node: usize) -> Result<(), Fail> {
        let program = self.program;
        let Kind::Struct(props) = &program.nodes[node].kind else { return Err("column kind") };
        let index = &program.index[node];
        // the properties given so far: a bit each in a word for up to 64 of them, else a stamp
        // each (the serial of the last object that gave it) in the column
        let small = props.len() <= 64;
        let mut seen: u64 = 0;
        let serial = if small {
            0
        } else {
            self.cols.serial += 1;
            self.cols.serial
        };
        self.at += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.at += 1;
        } else {
            let mut next = 0usize;
            loop {
                self.ws();
                // the property after the last one first, compared in place: records are usually
                // written in schema order
                let (k, colon_read) = match props.get(next) {
                    Some(p) if p.plain && self.key_is(&p.key) => (next, true),
                    _ => {
                        let key = self.key()?;
                        (*index.by_name.get(key).ok_or("a property the schema does not declare")?, false)
                    }
                };
                next = k + 1;
                let again = if small {
                    let bit = 1u64 << k;
                    let again = seen & bit != 0;
                    seen |= bit;
                    again
                } else {
                    let Data::Struct(_, stamps) = &mut self.cols.cols[node].data else { return Err("column kind") };
                    let stamp = stamps.get_mut(k).ok_or("column kind")?;
                    let again = *stamp == serial;
                    *stamp = serial;
                    again
                };
                if again {
                    return Err("a key given twice");
                }
                if !colon_read {
                    self.expect(b':')?;
                }
                self.value(props[k].child)?;
                self.ws();
                match self.peek() {
                    Some(b',') => self.at += 1,
                    Some(b'}') => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err("invalid JSON"),
                }
            }
        }
        let every = small && seen == u64::MAX >> (64 - props.len().max(1)) && !props.is_empty();
        if !every {
            for (k, p) in props.iter().enumerate() {
                let given = if small {
                    seen >> k & 1 == 1
                } else {
                    let Data::Struct(_, stamps) = &self.cols.cols[node].data else { return Err("column kind") };
                    stamps[k] == serial
                };
                if !given {
                    if !p.absent_ok {
                        return Err("a required property is missing");
                    }
                    self.cols.push_null(program, p.child)?;
                }
            }
        }
        let Data::Struct(rows, _) = &mut self.cols.cols[node].data else { return Err("column kind") };
        *rows += 1;
        self.cols.set_valid(node);
        Ok(())
    }

    /// Whether the bytes at `self.at` are `key` (a plain property's `"name":`); if so, moves past
    /// them. (A plain name has no quote, backslash or control character, so a key written without
    /// escapes is exactly its bytes, and the quote after it closes it.)
    #[inline(always)]
    fn key_is(&mut self, key: &[u8]) -> bool {
        match self.buf.get(self.at..self.at + key.len()) {
            Some(s) if same(s, key) => {
                self.at += key.len();
                true
            }
            _ => false,
        }
    }

    /// An object's key (at its `"`): the bytes between the quotes, unescaped when it has escapes.
    fn key(&mut self) -> Result<&[u8], Fail> {
        if self.peek() != Some(b'"') {
            return Err("invalid JSON");
        }
        let start = self.at + 1;
        let mut i = start;
        // the plain key: printable ASCII up to the closing quote
        while let Some(&b) = self.buf.get(i) {
            if b == b'"' {
                self.at = i + 1;
                return Ok(&self.buf[start..i]);
            }
            if b == b'\\' || !(0x20..0x80).contains(&b) {
                break;
            }
            i += 1;
        }
        self.scratch.clear();
        string(self.buf, &mut self.at, &mut self.scratch, false)?;
        Ok(&self.scratch)
    }

    /// An array (at `[`) into list column `node`, its items into column `child`.
    fn array(&mut self, node: usize, child: usize) -> Result<(), Fail> {
        self.at += 1;
        let mut items: u64 = 0;
        self.ws();
        if self.peek() == Some(b']') {
            self.at += 1;
        } else {
            loop {
                self.value(child)?;
                items += 1;
                self.ws();
                match self.peek() {
                    Some(b',') => self.at += 1,
                    Some(b']') => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err("invalid JSON"),
                }
            }
        }
        if !self.program.nodes[node].checks.items_ok(items) {
            return Err("an array the schema does not admit (minItems/maxItems)");
        }
        let Data::List(offsets) = &mut self.cols.cols[node].data else { return Err("column kind") };
        let last = *offsets.last().unwrap_or(&0) as usize;
        offsets.push(offset(last + items as usize)?);
        Ok(())
    }

    /// An object of `additionalProperties` only (at `{`) into map column `node`.
    fn map(&mut self, node: usize, child: usize) -> Result<(), Fail> {
        self.at += 1;
        let Data::Map(_, key_offsets, _) = &self.cols.cols[node].data else { return Err("column kind") };
        let first_key = key_offsets.len() - 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.at += 1;
        } else {
            loop {
                self.ws();
                if self.peek() != Some(b'"') {
                    return Err("invalid JSON");
                }
                let Data::Map(_, key_offsets, key_bytes) = &mut self.cols.cols[node].data else {
                    return Err("column kind");
                };
                string(self.buf, &mut self.at, key_bytes, false)?;
                key_offsets.push(offset(key_bytes.len())?);
                self.expect(b':')?;
                self.value(child)?;
                self.ws();
                match self.peek() {
                    Some(b',') => self.at += 1,
                    Some(b'}') => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err("invalid JSON"),
                }
            }
        }
        let Data::Map(offsets, key_offsets, key_bytes) = &mut self.cols.cols[node].data else {
            return Err("column kind");
        };
        let bounds = &key_offsets[first_key..];
        if bounds.len() > 2 && has_duplicates(bounds, key_bytes) {
            return Err("a key given twice");
        }
        let entries = key_offsets.len() - 1;
        offsets.push(offset(entries)?);
        Ok(())
    }

    /// A number literal (at `-` or a digit), by JSON's grammar. (Inlined: its literal stays in
    /// registers.)
    #[inline(always)]
    fn number(&mut self) -> Result<Literal<'a>, Fail> {
        let buf = self.buf;
        let start = self.at;
        let mut i = start;
        let negative = buf.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        // the digits of mantissa and fraction as one integer: exact up to 19 digits (< 2^64)
        let (int_digits, mut value) = digits(buf, i, 0);
        if int_digits == 0 || (buf[i] == b'0' && int_digits > 1) {
            return Err("invalid JSON");
        }
        let mut count = int_digits;
        i += int_digits;
        let mut integer = true;
        let mut exp10: i64 = 0;
        if buf.get(i) == Some(&b'.') {
            integer = false;
            let (n, v) = digits(buf, i + 1, value);
            if n == 0 {
                return Err("invalid JSON");
            }
            value = v;
            count += n;
            exp10 = -(n as i64);
            i += 1 + n;
        }
        if let Some(b'e' | b'E') = buf.get(i) {
            integer = false;
            i += 1;
            let negative_exp = match buf.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let first = i;
            let mut e: i64 = 0;
            while let Some(&d @ b'0'..=b'9') = buf.get(i) {
                // (saturating: a huge exponent only needs to stay huge)
                e = e.saturating_mul(10).saturating_add(i64::from(d - b'0'));
                i += 1;
            }
            if i == first {
                return Err("invalid JSON");
            }
            exp10 = exp10.saturating_add(if negative_exp { -e } else { e });
        }
        self.at = i;
        let digits = (count <= 19).then_some(value);
        Ok(Literal { text: &buf[start..i], integer, negative, digits, exp10 })
    }
}

/// The run of ASCII digits at `i`: how many, and `value` followed by them as decimal digits
/// (wrapping: callers use the value only up to 19 digits in all). Eight digits at a time where
/// eight bytes are left (the SWAR check and sum of simdjson's `parse_eight_digits_unrolled`).
#[inline(always)]
fn digits(buf: &[u8], mut i: usize, mut value: u64) -> (usize, u64) {
    let start = i;
    while let Some(chunk) = buf.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        // every byte 0x30..=0x39: high nibble 3, and adding 6 keeps it 3
        if (w & 0xF0F0_F0F0_F0F0_F0F0) | ((w.wrapping_add(0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0) >> 4)
            != 0x3333_3333_3333_3333
        {
            break;
        }
        let mut v = w & 0x0F0F_0F0F_0F0F_0F0F;
        v = v.wrapping_mul(2561) >> 8;
        v = (v & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601) >> 16;
        v = (v & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001) >> 32;
        value = value.wrapping_mul(100_000_000).wrapping_add(v);
        i += 8;
    }
    while let Some(&d) = buf.get(i) {
        let x = d.wrapping_sub(b'0');
        if x > 9 {
            break;
        }
        value = value.wrapping_mul(10).wrapping_add(u64::from(x));
        i += 1;
    }
    (i - start, value)
}

fn int64(lit: &Literal<'_>) -> Option<i64> {
    let m = lit.magnitude()?;
    if lit.negative {
        // -2^63 fits; -0 is 0 (orjson's int)
        0i64.checked_sub_unsigned(m)
    } else {
        i64::try_from(m).ok()
    }
}

/// A JSON string at `*at` (its opening quote) appended to `out`, unescaped; `*at` moves past the
/// closing quote. Returns its length in code points when `count` (else 0).
fn string(buf: &[u8], at: &mut usize, out: &mut Vec<u8>, count: bool) -> Result<u64, Fail> {
    let mut i = *at + 1;
    let mut chars: u64 = 0;
    loop {
        // a run of plain bytes: anything but the quote, the backslash and control characters
        let start = i;
        i = ascii_run(buf, i);
        let high = buf.get(i).is_some_and(|&b| b >= 0x80);
        if high {
            while let Some(&b) = buf.get(i) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                i += 1;
            }
        }
        let run = &buf[start..i];
        if high {
            // UTF-8 as orjson reads it: no surrogates, no overlong forms
            std::str::from_utf8(run).map_err(|_| "invalid UTF-8")?;
            if count {
                chars += run.iter().filter(|&&b| (b & 0xC0) != 0x80).count() as u64;
            }
        } else if count {
            chars += run.len() as u64;
        }
        out.extend_from_slice(run);
        match buf.get(i) {
            Some(b'"') => {
                *at = i + 1;
                return Ok(chars);
            }
            Some(b'\\') => {
                i = escape(buf, i + 1, out)?;
                chars += 1;
            }
            // a control character, or the end of the input
            _ => return Err("invalid JSON string"),
        }
    }
}

/// The end of the run of printable ASCII from `i` other than the quote and the backslash: the
/// position of the first byte that is `"`, `\\`, a control character or not ASCII (or the end).
/// Eight bytes at a time: the lowest flagged byte of a word is exact (a borrow only runs upward).
#[inline]
fn ascii_run(buf: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    while let Some(chunk) = buf.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let flagged = zero_byte(w ^ (ONES * u64::from(b'"')))
            | zero_byte(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH)
            | (w & HIGH);
        if flagged != 0 {
            return i + (flagged.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = buf.get(i) {
        if b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b) {
            break;
        }
        i += 1;
    }
    i
}

/// The escape after a backslash at `i`, appended to `out` as UTF-8; the position after it.
fn escape(buf: &[u8], i: usize, out: &mut Vec<u8>) -> Result<usize, Fail> {
    let simple = match buf.get(i) {
        Some(b'"') => b'"',
        Some(b'\\') => b'\\',
        Some(b'/') => b'/',
        Some(b'b') => 0x08,
        Some(b'f') => 0x0c,
        Some(b'n') => b'\n',
        Some(b'r') => b'\r',
        Some(b't') => b'\t',
        Some(b'u') => {
            let (code, mut next) = (hex4(buf, i + 1)?, i + 5);
            let c = match code {
                0xD800..=0xDBFF => {
                    // a high surrogate: only with a low one after it
                    if buf.get(next..next + 2) != Some(b"\\u") {
                        return Err("a lone surrogate escape");
                    }
                    let low = hex4(buf, next + 2)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return Err("a lone surrogate escape");
                    }
                    next += 6;
                    0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                0xDC00..=0xDFFF => return Err("a lone surrogate escape"),
                c => c,
            };
            let ch = char::from_u32(c).ok_or("a lone surrogate escape")?;
            let mut tmp = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
            return Ok(next);
        }
        _ => return Err("invalid JSON escape"),
    };
    out.push(simple);
    Ok(i + 1)
}

fn hex4(buf: &[u8], i: usize) -> Result<u32, Fail> {
    let digits = buf.get(i..i + 4).ok_or("invalid JSON escape")?;
    let mut v = 0u32;
    for &d in digits {
        let x = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            b'A'..=b'F' => d - b'A' + 10,
            _ => return Err("invalid JSON escape"),
        };
        v = v * 16 + u32::from(x);
    }
    Ok(v)
}

/// `a == b`, for the short slices property keys are (inlined compares, not a call).
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    // a word (or two overlapping ones) at a time: keys are short, and a call of `memcmp` or a byte
    // loop costs more than the compare
    fn word(s: &[u8], at: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(w)
    }
    fn half(s: &[u8], at: usize) -> u32 {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[at..at + 4]);
        u32::from_le_bytes(w)
    }
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let mut i = 0;
        while i + 8 <= n {
            if word(a, i) != word(b, i) {
                return false;
            }
            i += 8;
        }
        i == n || word(a, n - 8) == word(b, n - 8)
    } else if n >= 4 {
        half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4)
    } else {
        a.iter().zip(b).all(|(x, y)| x == y)
    }
}

/// Whether two of the keys `bytes[bounds[k]..bounds[k + 1]]` are equal.
fn has_duplicates(bounds: &[i32], bytes: &[u8]) -> bool {
    let key = |k: usize| &bytes[bounds[k] as usize..bounds[k + 1] as usize];
    let n = bounds.len() - 1;
    if n <= PAIRWISE_KEYS {
        return (0..n).any(|a| (a + 1..n).any(|b| key(a) == key(b)));
    }
    // std's hasher is keyed per process: no input can make these lookups collide on purpose
    let mut seen = HashSet::with_capacity(n);
    (0..n).any(|k| !seen.insert(key(k)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_run(buf: &[u8], mut i: usize) -> usize {
        while i < buf.len() && buf[i] != b'"' && buf[i] != b'\\' && (0x20..0x80).contains(&buf[i]) {
            i += 1;
        }
        i
    }

    #[test]
    fn keys_compare_word_by_word_as_byte_by_byte() {
        // every length up to three words, a difference at every position, and unequal lengths
        for n in 0..26usize {
            let a: Vec<u8> = (0..n as u8).map(|i| b'a' + i).collect();
            assert!(same(&a, &a.clone()));
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!same(&a, &b), "{n} bytes, differing at {at}");
            }
            assert!(!same(&a, &a[..n.saturating_sub(1)]) || n == 0);
        }
    }

    #[test]
    fn ascii_runs_end_where_the_byte_loop_ends() {
        // every special byte at every position of a 20-byte run, after every other byte value
        for special in [b'"', b'\\', 0x00, 0x1f, 0x80, 0xff, 0xc3] {
            for before in 0u8..=255 {
                for at in 0..20 {
                    let mut buf = vec![b'a'; 20];
                    if at > 0 {
                        buf[at - 1] = before;
                    }
                    buf[at] = special;
                    for start in 0..buf.len() {
                        assert_eq!(ascii_run(&buf, start), naive_run(&buf, start), "{buf:?} from {start}");
                    }
                }
            }
        }
    }

    #[test]
    fn digit_runs_are_read_eight_at_a_time_as_one_at_a_time() {
        for text in ["", "0", "12345678", "123456789", "1234567890123456789x", "9999999999999999999", "12a45678901"] {
            for start in 0..text.len() {
                let buf = text.as_bytes();
                let n = buf[start..].iter().take_while(|b| b.is_ascii_digit()).count();
                let want = buf[start..start + n]
                    .iter()
                    .fold(7u64, |v, &d| v.wrapping_mul(10).wrapping_add(u64::from(d - b'0')));
                assert_eq!(digits(buf, start, 7), (n, want), "{text} from {start}");
            }
        }
    }

    #[test]
    fn number_literals_read_as_str_parse_reads_them() {
        let texts = [
            "0",
            "-0",
            "1",
            "-1",
            "0.5",
            "-0.0",
            "1e2",
            "1E-2",
            "1e-400",
            "1e400",
            "123456789012345678",
            "1234567890123456789",
            "12345678901234567890",
            "9007199254740993",
            "0.1",
            "0.30000000000000004",
            "4.9e-324",
            "2.2250738585072011e-308",
            "1.7976931348623157e308",
            "9.999999999999999e22",
            "1e22",
            "1e23",
            "0.000001",
            "123.456e-7",
            "8.98846567431158e307",
        ];
        for text in texts {
            let program = Program { nodes: Vec::new(), index: Vec::new(), depth: 0 };
            let mut cols = Columns { cols: Vec::new(), serial: 0 };
            let mut p = Parser::new(&program, &mut cols);
            p.buf = text.as_bytes();
            let lit = p.number().expect(text);
            assert_eq!(p.at, text.len(), "{text}");
            let want: f64 = text.parse().expect(text);
            let got = lit.to_f64().expect(text);
            assert_eq!(got.to_bits(), want.to_bits(), "{text}");
        }
    }

    #[test]
    fn numbers_outside_json_grammar_are_refused() {
        for text in ["01", "-", "1.", ".5", "1e", "1e+", "+1", "-a"] {
            let program = Program { nodes: Vec::new(), index: Vec::new(), depth: 0 };
            let mut cols = Columns { cols: Vec::new(), serial: 0 };
            let mut p = Parser::new(&program, &mut cols);
            p.buf = text.as_bytes();
            let ok = p.number().is_ok() && p.at == text.len();
            assert!(!ok, "{text}");
        }
    }
}
