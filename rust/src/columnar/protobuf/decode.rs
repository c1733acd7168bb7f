//! One message's wire bytes into one row of its columns, driven by the program.
//!
//! A field's value is kept in its slot while the message is read (the last one on the wire wins,
//! a oneof member clears its siblings) and written to the columns when the message ends; repeated
//! fields and map entries go to their columns as they come (their order is the wire's). Whatever
//! the per-record path might read otherwise is a failure that sends the whole list there: a wire
//! type other than the field's (the runtime keeps such a value as an unknown field), a message
//! field twice in one message (the runtime merges the two), a map entry with a field other than
//! its key and value (the runtimes disagree on it), an enum number the enum does not
//! declare, a Timestamp beyond int64 nanoseconds, more items than `max_items` in one frame, too
//! little stack for one more level.
use super::columns::{Column, StructCols, Values};
use super::program::{Card, MessageDef, Node, Row, Scalar};
use super::wire::{self, Cursor, Fail};
use crate::stack;

/// What a whole frame's decode shares.
pub struct Ctx {
    pub guard: stack::Guard,
    /// items (repeated values, map entries) of the current frame
    pub items: usize,
    pub max_items: usize,
}

impl Ctx {
    #[inline]
    fn count_item(&mut self) -> Result<(), Fail> {
        self.items += 1;
        if self.items > self.max_items {
            return Err("more array and map items than max_items in one record");
        }
        Ok(())
    }
}

const NANOS: i64 = 1_000_000_000;

/// Decode the message `buf` as one row of `s`.
pub fn message(s: &mut StructCols, buf: &[u8], cx: &mut Ctx) -> Result<(), Fail> {
    let generation = s.begin();
    let StructCols { def, columns, slots, rows, .. } = s;
    let def: &MessageDef = def;
    let mut c = Cursor::new(buf);
    let mut hint = 0usize; // fields mostly come in declaration order: try the next one first
    while !c.done() {
        let (number, wt) = c.tag()?;
        let i = match def.fields.get(hint) {
            Some(f) if f.number == number => hint,
            _ => match def.find(number) {
                Some(i) => i,
                None => {
                    c.skip(wt)?; // an unknown field, skipped as the runtime does
                    continue;
                }
            },
        };
        hint = i + 1;
        let f = &def.fields[i];
        match &f.card {
            Card::Single | Card::Optional => {
                if wt != f.wire {
                    return Err("a field with another wire type than its declared type's");
                }
                let slot = &mut slots[i];
                if wt == wire::LEN {
                    if f.row == Row::Other && slot.generation == generation {
                        return Err("a message field twice in one message (Protobuf merges them)");
                    }
                    let (start, len) = c.delimited()?;
                    slot.raw = start as u64;
                    slot.len = u32::try_from(len).map_err(|_| "a value of 4 GiB or more")?;
                } else {
                    slot.raw = c.raw(wt)?;
                }
                slot.generation = generation;
                for &j in &f.siblings {
                    slots[j].generation = 0;
                }
            }
            Card::Repeated => repeated(&f.node, &mut columns[i], wt, &mut c, buf, cx)?,
            Card::Map { key } => {
                if wt != wire::LEN {
                    return Err("a map entry with another wire type than a message's");
                }
                let (start, len) = c.delimited()?;
                map_entry(*key, &f.node, &mut columns[i], &buf[start..start + len], cx)?;
            }
        }
    }
    for ((f, col), slot) in def.fields.iter().zip(columns.iter_mut()).zip(slots.iter()) {
        let set = slot.generation == generation;
        match f.row {
            Row::Number(kind) => match (set, f.optional) {
                (true, _) => col.push_raw(kind, slot.raw),
                (false, true) => col.push_null(),
                (false, false) => col.push_raw(kind, 0),
            },
            Row::Bytes => match (set, f.optional) {
                (true, _) => {
                    let start = slot.raw as usize;
                    col.push_bytes(&buf[start..start + slot.len as usize])?;
                }
                (false, true) => col.push_null(),
                (false, false) => col.push_bytes(&[])?,
            },
            Row::List => close_list(col)?,
            Row::Other => match (set, f.optional) {
                (true, _) => {
                    let start = slot.raw as usize;
                    let data = if f.wire == wire::LEN { &buf[start..start + slot.len as usize] } else { &[] };
                    value(&f.node, col, slot.raw, data, cx)?;
                }
                (false, true) => col.push_null(),
                (false, false) => default(&f.node, col)?,
            },
        }
    }
    *rows += 1;
    Ok(())
}

/// One value of `node` into `col`: `raw` for a scalar read as a varint or fixed bits, `data` for
/// a length-delimited one.
#[inline]
fn value(node: &Node, col: &mut Column, raw: u64, data: &[u8], cx: &mut Ctx) -> Result<(), Fail> {
    match node {
        Node::Scalar(k) => {
            if k.is_var() {
                col.push_bytes(data)?;
            } else {
                col.push_raw(*k, raw);
            }
        }
        Node::Enum(e) => {
            // an enum is an int32 on the wire (the low 32 bits of the varint)
            let code = e.code(raw as u32 as i32).ok_or("an enum number the enum does not declare")?;
            col.push_code(code);
        }
        Node::Timestamp | Node::Duration => col.push_i64(nanoseconds(data)?),
        Node::Wrapper(k) => wrapper(*k, col, data)?,
        Node::Message(_) => {
            col.valid();
            let Values::Struct(s) = &mut col.values else { return Err("a message column of another kind") };
            if !cx.guard.ok() {
                return Err("too little stack left on this thread for the message's depth");
            }
            message(s, data, cx)?;
        }
    }
    Ok(())
}

/// An absent field without presence: its default (zero, empty, the enum's default).
fn default(node: &Node, col: &mut Column) -> Result<(), Fail> {
    match node {
        Node::Scalar(k) if k.is_var() => col.push_bytes(&[]),
        Node::Scalar(k) => {
            col.push_raw(*k, 0);
            Ok(())
        }
        Node::Enum(e) => {
            col.push_code(e.default_code);
            Ok(())
        }
        _ => Err("a message field without presence"),
    }
}

fn close_list(col: &mut Column) -> Result<(), Fail> {
    col.valid();
    match &mut col.values {
        Values::List(offsets, items) | Values::Map(offsets, items, _) => {
            let end = i32::try_from(items.len()).map_err(|_| "more than 2^31 items in one column")?;
            offsets.push(end);
            Ok(())
        }
        _ => Err("a list column of another kind"),
    }
}

/// One occurrence of a repeated field: a value, or (numbers) a packed run of them.
fn repeated(node: &Node, col: &mut Column, wt: u8, c: &mut Cursor<'_>, buf: &[u8], cx: &mut Ctx) -> Result<(), Fail> {
    let Values::List(_, items) = &mut col.values else { return Err("a list column of another kind") };
    let item_wt = node.wire_type();
    if wt == wire::LEN && node.packable() {
        let (start, len) = c.delimited()?;
        let mut p = Cursor::new(&buf[start..start + len]);
        while !p.done() {
            let raw = p.raw(item_wt)?;
            value(node, items, raw, &[], cx)?;
            cx.count_item()?;
        }
        return Ok(());
    }
    if wt != item_wt {
        return Err("a repeated field with another wire type than its declared type's");
    }
    if wt == wire::LEN {
        let (start, len) = c.delimited()?;
        value(node, items, 0, &buf[start..start + len], cx)?;
    } else {
        let raw = c.raw(wt)?;
        value(node, items, raw, &[], cx)?;
    }
    cx.count_item()
}

/// One map entry (a message of key = 1 and value = 2; the last of each wins, absent is the
/// default) appended to the map's keys and values.
fn map_entry(key: Scalar, node: &Node, col: &mut Column, entry: &[u8], cx: &mut Ctx) -> Result<(), Fail> {
    let Values::Map(_, keys, values) = &mut col.values else { return Err("a map column of another kind") };
    let mut c = Cursor::new(entry);
    let (mut key_raw, mut key_data): (u64, &[u8]) = (0, &[]);
    let mut val: Option<(u64, &[u8])> = None;
    while !c.done() {
        let (number, wt) = c.tag()?;
        match number {
            1 | 2 => {
                let expected = if number == 1 { key.wire_type() } else { node.wire_type() };
                if wt != expected {
                    return Err("a map key or value with another wire type than its declared type's");
                }
                let read = if wt == wire::LEN {
                    let (start, len) = c.delimited()?;
                    (0, &entry[start..start + len])
                } else {
                    (c.raw(wt)?, &[][..])
                };
                if number == 1 {
                    (key_raw, key_data) = read;
                } else {
                    if node.is_message() && val.is_some() {
                        return Err("a map value message twice in one entry (Protobuf merges them)");
                    }
                    val = Some(read);
                }
            }
            // upb keeps such an entry whole as an unknown field of the message (the map does not
            // get it), protobuf's pure-Python runtime inserts it: the per-record path decides
            _ => return Err("a map entry with a field other than its key and value"),
        }
    }
    value(&Node::Scalar(key), keys, key_raw, key_data, cx)?;
    match val {
        Some((raw, data)) => value(node, values, raw, data, cx)?,
        // an absent message value is the empty message
        None if node.is_message() => value(node, values, 0, &[], cx)?,
        None => default(node, values)?,
    }
    cx.count_item()
}

/// google.protobuf.Timestamp and Duration (seconds = 1, nanos = 2) as nanoseconds: seconds *
/// 10^9 + nanos, as the per-record path computes it; beyond int64 is that path's error.
fn nanoseconds(data: &[u8]) -> Result<i64, Fail> {
    let mut c = Cursor::new(data);
    let (mut seconds, mut nanos) = (0i64, 0i32);
    while !c.done() {
        let (number, wt) = c.tag()?;
        match number {
            1 | 2 => {
                if wt != wire::VARINT {
                    return Err("a Timestamp or Duration field with another wire type than a varint");
                }
                let raw = c.varint()?;
                if number == 1 {
                    seconds = raw as i64;
                } else {
                    nanos = raw as u32 as i32;
                }
            }
            _ => c.skip(wt)?,
        }
    }
    // in 128 bits, as Python's ints: -9223372037 s + 145224192 ns is int64's least nanosecond
    let ns = i128::from(seconds) * i128::from(NANOS) + i128::from(nanos);
    i64::try_from(ns).map_err(|_| "a Timestamp or Duration beyond int64 nanoseconds")
}

/// A google.protobuf.*Value wrapper: its `value` (field 1; absent is the default).
fn wrapper(kind: Scalar, col: &mut Column, data: &[u8]) -> Result<(), Fail> {
    let mut c = Cursor::new(data);
    let (mut raw, mut bytes): (u64, &[u8]) = (0, &[]);
    while !c.done() {
        let (number, wt) = c.tag()?;
        if number != 1 {
            c.skip(wt)?;
            continue;
        }
        if wt != kind.wire_type() {
            return Err("a wrapper's value with another wire type than its declared type's");
        }
        if wt == wire::LEN {
            let (start, len) = c.delimited()?;
            bytes = &data[start..start + len];
        } else {
            raw = c.raw(wt)?;
        }
    }
    if kind.is_var() {
        col.push_bytes(bytes)
    } else {
        col.push_raw(kind, raw);
        Ok(())
    }
}
