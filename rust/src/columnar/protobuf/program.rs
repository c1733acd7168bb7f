//! The decoding program of one reader message: which field numbers become which columns, and how
//! each value is read. Python computes it from the message descriptor (`serdes/arrow/
//! _native_protobuf.py`, `program()`), after refusing what this decoder does not read exactly as
//! the per-record path does (groups, required fields, extensions, recursion, depth).
//!
//! The Python form, nested tuples:
//! * message: `("message", [field, ...])`
//! * field: `(number, name, card, oneof, node)`, `card` one of `single` (no presence: absent is
//!   the default), `optional` (absent is null), `repeated`, `map`; `oneof` the index of the
//!   field's oneof among the message's oneofs of several members, or -1
//! * node: `("scalar", kind)`, `("enum", symbols, numbers, codes, default_code)`,
//!   `("timestamp",)`, `("duration",)`, `("wrapper", kind)`, a message, or for a map field
//!   `("map", key_kind, value_node)`
use std::sync::Arc;

use arrow_schema::{DataType, TimeUnit};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::wire;

/// Field numbers up to this are found through a table; larger ones by a binary search.
const DENSE_NUMBERS: u32 = 1024;
/// Nesting the program may have (Python refuses deeper readers long before: `max_depth`).
const MAX_PROGRAM_DEPTH: usize = 200;

/// A Protobuf scalar type: how its wire value is read and which Arrow type holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    Double,
    Float,
    Int32,
    SInt32,
    SFixed32,
    Int64,
    SInt64,
    SFixed64,
    UInt32,
    Fixed32,
    UInt64,
    Fixed64,
    Bool,
    String,
    Bytes,
}

impl Scalar {
    fn parse(name: &str) -> Option<Scalar> {
        Some(match name {
            "double" => Scalar::Double,
            "float" => Scalar::Float,
            "int32" => Scalar::Int32,
            "sint32" => Scalar::SInt32,
            "sfixed32" => Scalar::SFixed32,
            "int64" => Scalar::Int64,
            "sint64" => Scalar::SInt64,
            "sfixed64" => Scalar::SFixed64,
            "uint32" => Scalar::UInt32,
            "fixed32" => Scalar::Fixed32,
            "uint64" => Scalar::UInt64,
            "fixed64" => Scalar::Fixed64,
            "bool" => Scalar::Bool,
            "string" => Scalar::String,
            "bytes" => Scalar::Bytes,
            _ => return None,
        })
    }

    /// The wire type a value of this type is written with (unpacked).
    pub fn wire_type(self) -> u8 {
        match self {
            Scalar::Double | Scalar::Fixed64 | Scalar::SFixed64 => wire::FIXED64,
            Scalar::Float | Scalar::Fixed32 | Scalar::SFixed32 => wire::FIXED32,
            Scalar::String | Scalar::Bytes => wire::LEN,
            _ => wire::VARINT,
        }
    }

    pub fn is_var(self) -> bool {
        matches!(self, Scalar::String | Scalar::Bytes)
    }

    pub fn data_type(self) -> DataType {
        match self {
            Scalar::Double => DataType::Float64,
            Scalar::Float => DataType::Float32,
            Scalar::Int32 | Scalar::SInt32 | Scalar::SFixed32 => DataType::Int32,
            Scalar::Int64 | Scalar::SInt64 | Scalar::SFixed64 => DataType::Int64,
            Scalar::UInt32 | Scalar::Fixed32 => DataType::UInt32,
            Scalar::UInt64 | Scalar::Fixed64 => DataType::UInt64,
            Scalar::Bool => DataType::Boolean,
            Scalar::String => DataType::Utf8,
            Scalar::Bytes => DataType::Binary,
        }
    }
}

/// An enum: the dictionary (value names in declaration order) and each number's code in it.
#[derive(Debug)]
pub struct EnumDef {
    pub symbols: Vec<String>,
    /// code by number for the numbers 0..dense.len() (-1: not a value of the enum)
    dense: Vec<i32>,
    /// (number, code) of the other numbers, sorted
    sparse: Vec<(i32, i32)>,
    /// the code of the field's default (a field without presence that is absent)
    pub default_code: i32,
}

impl EnumDef {
    /// The dictionary code of wire number `number`, or `None` for a number the enum does not
    /// declare (the per-record path's `ColumnValueError`, or a closed enum's unknown field).
    #[inline]
    pub fn code(&self, number: i32) -> Option<i32> {
        if let Some(&c) = usize::try_from(number).ok().and_then(|n| self.dense.get(n)) {
            return (c >= 0).then_some(c);
        }
        self.sparse.binary_search_by_key(&number, |&(n, _)| n).ok().map(|i| self.sparse[i].1)
    }
}

/// What one value of a field is.
#[derive(Debug, Clone)]
pub enum Node {
    Scalar(Scalar),
    Enum(Arc<EnumDef>),
    /// google.protobuf.Timestamp: nanoseconds since the epoch, `timestamp[ns, UTC]`
    Timestamp,
    /// google.protobuf.Duration: nanoseconds, `duration[ns]`
    Duration,
    /// a google.protobuf.*Value wrapper: its `value` (field 1), the column nullable
    Wrapper(Scalar),
    Message(Arc<MessageDef>),
}

impl Node {
    /// Whether a value is read from a length-delimited submessage.
    pub fn is_message(&self) -> bool {
        matches!(self, Node::Timestamp | Node::Duration | Node::Wrapper(_) | Node::Message(_))
    }

    /// The wire type of one (unpacked) value.
    pub fn wire_type(&self) -> u8 {
        match self {
            Node::Scalar(s) => s.wire_type(),
            Node::Enum(_) => wire::VARINT,
            _ => wire::LEN,
        }
    }

    /// Whether a repeated field of this node may come packed (one length-delimited run).
    pub fn packable(&self) -> bool {
        match self {
            Node::Scalar(s) => !s.is_var(),
            Node::Enum(_) => true,
            _ => false,
        }
    }

    pub fn data_type(&self) -> DataType {
        match self {
            Node::Scalar(s) | Node::Wrapper(s) => s.data_type(),
            Node::Enum(_) => DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            Node::Timestamp => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            Node::Duration => DataType::Duration(TimeUnit::Nanosecond),
            Node::Message(m) => DataType::Struct(m.arrow_fields(false)),
        }
    }
}

/// How many values a field has in one message, and what an absent one is.
#[derive(Debug, Clone)]
pub enum Card {
    /// one value; absent is the default (a proto3 scalar without presence)
    Single,
    /// one value; absent is null (presence: messages, `optional`, oneof members, proto2)
    Optional,
    /// a list of values (packed or not)
    Repeated,
    /// a map: entries of key (field 1) and value (field 2)
    Map { key: Scalar },
}

/// How a field's value reaches its column when its message ends (the decoder's one match per
/// field, computed once from the card and the node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// one number (varint or fixed bits) of this type
    Number(Scalar),
    /// one string or bytes value
    Bytes,
    /// a list or map, whose items went to its column as they came
    List,
    /// anything else: an enum, a Timestamp, Duration, wrapper or message
    Other,
}

#[derive(Debug)]
pub struct FieldDef {
    pub number: u32,
    pub name: String,
    pub card: Card,
    /// the value (a map's: its value)
    pub node: Node,
    /// the other members of this field's oneof (setting one clears them, as Protobuf does)
    pub siblings: Vec<usize>,
    pub row: Row,
    /// the wire type of one value (a list's: of one unpacked item; a map's: LEN)
    pub wire: u8,
    /// absent is null (else the default)
    pub optional: bool,
}

impl FieldDef {
    pub fn new(number: u32, name: String, card: Card, node: Node, siblings: Vec<usize>) -> FieldDef {
        let row = match (&card, &node) {
            (Card::Repeated | Card::Map { .. }, _) => Row::List,
            (_, Node::Scalar(k)) if k.is_var() => Row::Bytes,
            (_, Node::Scalar(k)) => Row::Number(*k),
            _ => Row::Other,
        };
        let wire = if matches!(card, Card::Map { .. }) { wire::LEN } else { node.wire_type() };
        let optional = matches!(card, Card::Optional);
        FieldDef { number, name, card, node, siblings, row, wire, optional }
    }

    /// The value (or item) column's Arrow type, nullable flag aside.
    pub fn data_type(&self) -> DataType {
        let item = self.node.data_type();
        match &self.card {
            Card::Single | Card::Optional => item,
            Card::Repeated => DataType::List(Arc::new(arrow_schema::Field::new("item", item, false))),
            Card::Map { key } => DataType::Map(map_entries(key.data_type(), item), false),
        }
    }
}

/// The entries field of a map column: pyarrow's names (`entries`, `key`, `value`), none nullable.
pub fn map_entries(key: DataType, value: DataType) -> arrow_schema::FieldRef {
    let entries = arrow_schema::Fields::from(vec![
        arrow_schema::Field::new("key", key, false),
        arrow_schema::Field::new("value", value, false),
    ]);
    Arc::new(arrow_schema::Field::new("entries", DataType::Struct(entries), false))
}

#[derive(Debug)]
pub struct MessageDef {
    pub fields: Vec<FieldDef>,
    /// field index + 1 by number, for numbers below DENSE_NUMBERS (0: not a field)
    dense: Vec<u16>,
    /// (number, field index) of larger numbers, sorted
    sparse: Vec<(u32, usize)>,
}

impl MessageDef {
    /// The index of the field numbered `number`, or `None` (an unknown field: skipped).
    #[inline]
    pub fn find(&self, number: u32) -> Option<usize> {
        if let Some(&i) = self.dense.get(number as usize) {
            return i.checked_sub(1).map(usize::from);
        }
        self.sparse.binary_search_by_key(&number, |&(n, _)| n).ok().map(|i| self.sparse[i].1)
    }

    /// The struct fields of this message's columns; `all_nullable`: every field nullable (the
    /// top-level columns of a batch, where a tombstone is a row of nulls).
    pub fn arrow_fields(&self, all_nullable: bool) -> arrow_schema::Fields {
        self.fields
            .iter()
            .map(|f| arrow_schema::Field::new(&f.name, f.data_type(), all_nullable || matches!(f.card, Card::Optional)))
            .collect()
    }
}

fn bad(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(format!("not a Protobuf columnar program: {}", msg.into()))
}

/// The program of a message, from Python's tuples (see the module doc).
pub fn parse_message(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Arc<MessageDef>> {
    if depth > MAX_PROGRAM_DEPTH {
        return Err(bad("nested too deep"));
    }
    let t = obj.cast::<PyTuple>()?;
    let tag: String = t.get_item(0)?.extract()?;
    if tag != "message" || t.len() != 2 {
        return Err(bad(format!("expected a message, got {tag}")));
    }
    let items = t.get_item(1)?;
    let list = items.cast::<PyList>()?;
    let mut fields: Vec<FieldDef> = Vec::with_capacity(list.len());
    let mut oneofs: Vec<(i64, usize)> = Vec::new();
    for item in list.iter() {
        let f = item.cast::<PyTuple>()?;
        if f.len() != 5 {
            return Err(bad("a field is (number, name, card, oneof, node)"));
        }
        let number: u32 = f.get_item(0)?.extract()?;
        if number == 0 || number >= 1 << 29 {
            return Err(bad(format!("field number {number}")));
        }
        let name: String = f.get_item(1)?.extract()?;
        let card: String = f.get_item(2)?.extract()?;
        let oneof: i64 = f.get_item(3)?.extract()?;
        let node_obj = f.get_item(4)?;
        let (card, node) = match card.as_str() {
            "single" | "optional" | "repeated" => {
                let node = parse_node(&node_obj, depth)?;
                let card = match card.as_str() {
                    "single" => Card::Single,
                    "optional" => Card::Optional,
                    _ => Card::Repeated,
                };
                if matches!(card, Card::Single) && node.is_message() {
                    return Err(bad("a message field always has presence"));
                }
                (card, node)
            }
            "map" => {
                let t = node_obj.cast::<PyTuple>()?;
                let tag: String = t.get_item(0)?.extract()?;
                if tag != "map" || t.len() != 3 {
                    return Err(bad("a map field's node is (\"map\", key kind, value node)"));
                }
                let key_kind: String = t.get_item(1)?.extract()?;
                let key = Scalar::parse(&key_kind)
                    .filter(|k| !matches!(k, Scalar::Double | Scalar::Float | Scalar::Bytes))
                    .ok_or_else(|| bad(format!("map key kind {key_kind}")))?;
                (Card::Map { key }, parse_node(&t.get_item(2)?, depth)?)
            }
            other => return Err(bad(format!("card {other}"))),
        };
        if fields.iter().any(|g| g.number == number) {
            return Err(bad(format!("field number {number} twice")));
        }
        if oneof >= 0 {
            if !matches!(card, Card::Optional) {
                return Err(bad("a oneof member has presence"));
            }
            oneofs.push((oneof, fields.len()));
        }
        fields.push(FieldDef::new(number, name, card, node, Vec::new()));
    }
    for &(group, i) in &oneofs {
        fields[i].siblings = oneofs.iter().filter(|&&(g, j)| g == group && j != i).map(|&(_, j)| j).collect();
    }
    let mut dense = Vec::new();
    let mut sparse = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        if f.number < DENSE_NUMBERS {
            let n = f.number as usize;
            if dense.len() <= n {
                dense.resize(n + 1, 0u16);
            }
            dense[n] = u16::try_from(i + 1).map_err(|_| bad("too many fields"))?;
        } else {
            sparse.push((f.number, i));
        }
    }
    sparse.sort_unstable();
    Ok(Arc::new(MessageDef { fields, dense, sparse }))
}

fn scalar(obj: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    let name: String = obj.extract()?;
    Scalar::parse(&name).ok_or_else(|| bad(format!("scalar kind {name}")))
}

fn parse_node(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Node> {
    let t = obj.cast::<PyTuple>()?;
    let tag: String = t.get_item(0)?.extract()?;
    Ok(match (tag.as_str(), t.len()) {
        ("scalar", 2) => Node::Scalar(scalar(&t.get_item(1)?)?),
        ("wrapper", 2) => Node::Wrapper(scalar(&t.get_item(1)?)?),
        ("timestamp", 1) => Node::Timestamp,
        ("duration", 1) => Node::Duration,
        ("message", 2) => Node::Message(parse_message(obj, depth + 1)?),
        ("enum", 5) => {
            let symbols: Vec<String> = t.get_item(1)?.extract()?;
            let numbers: Vec<i32> = t.get_item(2)?.extract()?;
            let codes: Vec<i32> = t.get_item(3)?.extract()?;
            let default_code: i32 = t.get_item(4)?.extract()?;
            let in_range = |c: i32| usize::try_from(c).is_ok_and(|c| c < symbols.len());
            if numbers.len() != codes.len() || !codes.iter().all(|&c| in_range(c)) || !in_range(default_code) {
                return Err(bad("enum codes outside its symbols"));
            }
            let mut dense = Vec::new();
            let mut sparse = Vec::new();
            for (&n, &c) in numbers.iter().zip(&codes) {
                match usize::try_from(n) {
                    Ok(i) if i < 256 => {
                        if dense.len() <= i {
                            dense.resize(i + 1, -1);
                        }
                        dense[i] = c;
                    }
                    _ => sparse.push((n, c)),
                }
            }
            sparse.sort_unstable();
            sparse.dedup_by_key(|&mut (n, _)| n);
            Node::Enum(Arc::new(EnumDef { symbols, dense, sparse, default_code }))
        }
        _ => return Err(bad(format!("node {tag}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_codes_dense_and_sparse() {
        let e = EnumDef {
            symbols: vec!["A".into(), "B".into()],
            dense: vec![0, -1, 1],
            sparse: vec![(-5, 1), (1000, 0)],
            default_code: 0,
        };
        assert_eq!(e.code(0), Some(0));
        assert_eq!(e.code(1), None);
        assert_eq!(e.code(2), Some(1));
        assert_eq!(e.code(3), None);
        assert_eq!(e.code(-5), Some(1));
        assert_eq!(e.code(1000), Some(0));
        assert_eq!(e.code(i32::MIN), None);
    }
}
