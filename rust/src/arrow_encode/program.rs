//! The columnar encoder's program: the serializer's Avro schema as the Arrow columns it is written
//! from, a flat vector of nodes that refer to their children by index.
//!
//! `serdes/arrow/_native_encoder.py` takes every decision -- which schema node becomes which node
//! here, the branch bytes of a `["null", T]` union, the index of each enum symbol, which logical
//! types are converted here (only those whose fastavro prepare function gives bytes fixed by the
//! Arrow value) -- and hands over a list of `(kind, args...)` tuples, children before their
//! parents. This module only checks that list (kinds known, every child index below its
//! parent's, numbers in range) and builds [`Program`] from it; nothing here depends on the data.
use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// One node: what Arrow type its column must have, and how a value of it is written.
#[derive(Debug)]
pub(crate) enum Node {
    /// Avro `null` (an Arrow null column): no bytes
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    String,
    Bytes,
    Fixed(usize),
    /// a `dictionary<int32, utf8>` column: symbol -> the index written for it
    Enum(HashMap<String, i64>),
    Array(usize),
    Map(usize),
    /// `["null", T]`: the index byte of each branch and T's node (the same column, nulls allowed)
    Nullable {
        null_byte: u8,
        other_byte: u8,
        other: usize,
    },
    /// a record (an Arrow struct): each field's node, in the schema's (and the struct's) order
    Record(Vec<usize>),
    /// the logical types whose prepare function's result the Arrow value fixes (`logical.rs`)
    Logical(Logical),
}

/// A logical type written from its Arrow column (each the result of fastavro's prepare function
/// on the Python value pyarrow gives for the Arrow value, then the base type's encoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Logical {
    /// `date` from `date32`: days since the epoch, an `int`
    Date,
    /// `time-millis` from `time32[ms]`, an `int`
    TimeMillis,
    /// `time-micros` from `time64[us]`, a `long`
    TimeMicros,
    /// `timestamp-millis` / `local-timestamp-millis` from `timestamp[ms]` (with a zone: UTC)
    TimestampMillis { utc: bool },
    /// `timestamp-micros` / `local-timestamp-micros` from `timestamp[us]`
    TimestampMicros { utc: bool },
    /// `decimal` on `bytes` (`size` None) or on `fixed` of `size` bytes, from `decimal128(p, s)`
    Decimal { precision: u8, scale: i8, size: Option<usize> },
    /// `uuid` on `string`, from `fixed_size_binary(16)`: the UUID's text
    Uuid,
    /// `duration` (`fixed(12)`) from `month_day_nano_interval`
    Duration,
}

#[derive(Debug)]
pub(crate) struct Program {
    pub nodes: Vec<Node>,
    pub root: usize,
    /// the schema is not a record: the batch's one column `value` holds the value, and a null
    /// there is a row the serializer writes as `None` (a tombstone)
    pub wrapped: bool,
    /// the deepest nesting of nodes below the root (the stack a row needs)
    pub depth: usize,
}

fn bad(msg: &str) -> PyErr {
    PyValueError::new_err(format!("invalid serdes Arrow encoder program: {msg}"))
}

fn item<'py>(t: &Bound<'py, PyTuple>, i: usize) -> PyResult<Bound<'py, PyAny>> {
    t.get_item(i).map_err(|_| bad("node tuple too short"))
}

fn int(t: &Bound<'_, PyTuple>, i: usize, what: &str) -> PyResult<i64> {
    item(t, i)?.extract().map_err(|_| bad(&format!("{what} is not an int of 64 bits")))
}

/// A child index: below `limit` (the parent's own index), so the nodes form a tree.
fn child(t: &Bound<'_, PyTuple>, i: usize, limit: usize) -> PyResult<usize> {
    let v = int(t, i, "a node index")?;
    usize::try_from(v).ok().filter(|&c| c < limit).ok_or_else(|| bad("a child index not below its parent's"))
}

fn node(t: &Bound<'_, PyTuple>, at: usize) -> PyResult<Node> {
    let kind: String = item(t, 0)?.extract().map_err(|_| bad("a node kind is not a str"))?;
    Ok(match kind.as_str() {
        "null" => Node::Null,
        "boolean" => Node::Boolean,
        "int" => Node::Int,
        "long" => Node::Long,
        "float" => Node::Float,
        "double" => Node::Double,
        "string" => Node::String,
        "bytes" => Node::Bytes,
        "fixed" => Node::Fixed(usize::try_from(int(t, 1, "a fixed size")?).map_err(|_| bad("a negative fixed size"))?),
        "enum" => {
            let list = item(t, 1)?;
            let list = list.cast::<PyList>().map_err(|_| bad("enum symbols are not a list"))?;
            let mut symbols = HashMap::with_capacity(list.len());
            for pair in list.iter() {
                let (symbol, index): (String, i64) =
                    pair.extract().map_err(|_| bad("an enum symbol is not a (str, int) pair"))?;
                if index < 0 || symbols.insert(symbol, index).is_some() {
                    return Err(bad("an enum symbol twice, or a negative index"));
                }
            }
            Node::Enum(symbols)
        }
        "array" => Node::Array(child(t, 1, at)?),
        "map" => Node::Map(child(t, 1, at)?),
        "nullable" => {
            let null_byte = int(t, 1, "a branch byte")?;
            let other_byte = int(t, 2, "a branch byte")?;
            // the index bytes of a two-branch union: 0 and 2 (zigzag 0 and 1), one each
            if !matches!((null_byte, other_byte), (0, 2) | (2, 0)) {
                return Err(bad("nullable branch bytes are not 0 and 2"));
            }
            Node::Nullable { null_byte: null_byte as u8, other_byte: other_byte as u8, other: child(t, 3, at)? }
        }
        "record" => {
            let list = item(t, 1)?;
            let list = list.cast::<PyList>().map_err(|_| bad("record fields are not a list"))?;
            let mut fields = Vec::with_capacity(list.len());
            for f in list.iter() {
                let f = f.extract::<i64>().map_err(|_| bad("a field node is not an int"))?;
                fields
                    .push(usize::try_from(f).ok().filter(|&c| c < at).ok_or_else(|| bad("a field node out of range"))?);
            }
            Node::Record(fields)
        }
        "date" => Node::Logical(Logical::Date),
        "time-millis" => Node::Logical(Logical::TimeMillis),
        "time-micros" => Node::Logical(Logical::TimeMicros),
        "timestamp-millis" => Node::Logical(Logical::TimestampMillis { utc: true }),
        "timestamp-micros" => Node::Logical(Logical::TimestampMicros { utc: true }),
        "local-timestamp-millis" => Node::Logical(Logical::TimestampMillis { utc: false }),
        "local-timestamp-micros" => Node::Logical(Logical::TimestampMicros { utc: false }),
        "decimal" => {
            let precision = int(t, 1, "a decimal precision")?;
            let scale = int(t, 2, "a decimal scale")?;
            // decimal128: 1 to 38 digits; a scale within them (Avro's scale is never negative)
            if !(1..=38).contains(&precision) || !(0..=precision).contains(&scale) {
                return Err(bad("a decimal precision or scale out of decimal128's range"));
            }
            let size = match item(t, 3)? {
                s if s.is_none() => None,
                s => Some(
                    s.extract::<usize>()
                        .ok()
                        .filter(|n| (1..=16).contains(n))
                        .ok_or_else(|| bad("a decimal's fixed size is not 1 to 16"))?,
                ),
            };
            Node::Logical(Logical::Decimal { precision: precision as u8, scale: scale as i8, size })
        }
        "uuid" => Node::Logical(Logical::Uuid),
        "duration" => Node::Logical(Logical::Duration),
        _ => return Err(bad(&format!("unknown node kind {kind:?}"))),
    })
}

/// Check and build a program lowered by serdes/arrow/_native_encoder.py.
pub(crate) fn compile(nodes: &Bound<'_, PyList>, root: usize, wrapped: bool) -> PyResult<Program> {
    let n = nodes.len();
    if root >= n {
        return Err(bad("root out of range"));
    }
    let mut out = Vec::with_capacity(n);
    let mut depth = Vec::with_capacity(n);
    for (at, t) in nodes.iter().enumerate() {
        let t = t.cast::<PyTuple>().map_err(|_| bad("a node is not a tuple"))?;
        let nd = node(t, at)?;
        // children come first: each node's depth is known when it is read
        let below = |c: &usize| depth[*c];
        let d: usize = match &nd {
            Node::Array(c) | Node::Map(c) | Node::Nullable { other: c, .. } => 1 + below(c),
            Node::Record(fields) => 1 + fields.iter().map(below).max().unwrap_or(0),
            _ => 0,
        };
        depth.push(d);
        out.push(nd);
    }
    if wrapped && matches!(out[root], Node::Record(_)) {
        return Err(bad("a wrapped value that is a record"));
    }
    if !wrapped && !matches!(out[root], Node::Record(_)) {
        return Err(bad("the root of a record schema is not a record"));
    }
    Ok(Program { depth: depth[root], nodes: out, root, wrapped })
}
