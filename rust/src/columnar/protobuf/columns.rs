//! The column builders of one decode call: one per field of every message position of the
//! program (a message type used by two fields has two sets of columns), growing by one value
//! per row, finished into Arrow arrays of exactly the per-record path's types.
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, DictionaryArray, DurationNanosecondArray, Float32Array, Float64Array,
    Int32Array, Int64Array, ListArray, MapArray, StringArray, StructArray, TimestampNanosecondArray, UInt32Array,
    UInt64Array,
};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, OffsetBuffer};
use arrow_schema::Field;

use super::maps;
use super::program::{Card, FieldDef, MessageDef, Node, Scalar};
use crate::columnar::pool;

/// Bytes of strings (or items of lists) one column may hold in one call: Arrow's 32-bit offsets.
const MAX_OFFSET: usize = i32::MAX as usize;

/// The values of one column (its nulls apart).
pub enum Values {
    Bool(BooleanBufferBuilder),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// string or bytes: offsets (the first 0) and the bytes
    Var(Vec<i32>, Vec<u8>),
    /// an enum's dictionary codes
    Codes(Vec<i32>),
    Struct(Box<StructCols>),
    /// offsets (the first 0) and the items
    List(Vec<i32>, Box<Column>),
    /// offsets (the first 0), the keys and the values
    Map(Vec<i32>, Box<Column>, Box<Column>),
}

/// One column: its values, and its validity when the column can hold nulls.
pub struct Column {
    pub values: Values,
    pub nulls: Option<BooleanBufferBuilder>,
}

impl Column {
    /// The column of a value of `node` (for a field, the card decides: see `for_field`).
    fn of_node(node: &Node, nullable: bool) -> Column {
        let values = match node {
            Node::Scalar(s) | Node::Wrapper(s) => scalar_values(*s),
            Node::Enum(_) => Values::Codes(Vec::new()),
            Node::Timestamp | Node::Duration => Values::I64(Vec::new()),
            Node::Message(m) => Values::Struct(Box::new(StructCols::new(m.clone(), false, 0))),
        };
        Column { values, nulls: nullable.then(|| BooleanBufferBuilder::new(0)) }
    }

    fn for_field(f: &FieldDef, nullable: bool) -> Column {
        let values = match &f.card {
            Card::Single | Card::Optional => return Column::of_node(&f.node, nullable),
            Card::Repeated => Values::List(vec![0], Box::new(Column::of_node(&f.node, false))),
            Card::Map { key } => Values::Map(
                vec![0],
                Box::new(Column::of_node(&Node::Scalar(*key), false)),
                Box::new(Column::of_node(&f.node, false)),
            ),
        };
        Column { values, nulls: nullable.then(|| BooleanBufferBuilder::new(0)) }
    }

    #[inline(always)]
    pub fn valid(&mut self) {
        if let Some(n) = self.nulls.as_mut() {
            n.append(true);
        }
    }

    /// A null (or, in a column without nulls, a placeholder under a null parent): its children
    /// get a row each too, so that every child has its parent's length.
    pub fn push_null(&mut self) {
        if let Some(n) = self.nulls.as_mut() {
            n.append(false);
        }
        match &mut self.values {
            Values::Bool(b) => b.append(false),
            Values::I32(v) | Values::Codes(v) => v.push(0),
            Values::I64(v) => v.push(0),
            Values::U32(v) => v.push(0),
            Values::U64(v) => v.push(0),
            Values::F32(v) => v.push(0.0),
            Values::F64(v) => v.push(0.0),
            Values::Var(offsets, bytes) => offsets.push(bytes.len() as i32),
            Values::Struct(s) => s.push_placeholder(),
            Values::List(offsets, _) | Values::Map(offsets, _, _) => {
                let end = *offsets.last().unwrap_or(&0);
                offsets.push(end);
            }
        }
    }

    /// Append a scalar read as `raw` (a varint, or the bits of a fixed-size value) as `kind`.
    #[inline(always)]
    pub fn push_raw(&mut self, kind: Scalar, raw: u64) {
        self.valid();
        match &mut self.values {
            Values::I32(v) => v.push(match kind {
                Scalar::SInt32 => {
                    let n = raw as u32;
                    ((n >> 1) as i32) ^ -((n & 1) as i32)
                }
                _ => raw as u32 as i32, // int32 keeps the low 32 bits, as the runtime does
            }),
            Values::I64(v) => v.push(match kind {
                Scalar::SInt64 => ((raw >> 1) as i64) ^ -((raw & 1) as i64),
                _ => raw as i64,
            }),
            Values::U32(v) => v.push(raw as u32),
            Values::U64(v) => v.push(raw),
            Values::Bool(b) => b.append(raw != 0),
            Values::F32(v) => v.push(float32(raw as u32)),
            Values::F64(v) => v.push(f64::from_bits(raw)),
            _ => debug_assert!(false, "a scalar pushed to a column of another kind"),
        }
    }

    /// Append a string or bytes value (UTF-8 is checked when the column is finished).
    #[inline(always)]
    pub fn push_bytes(&mut self, data: &[u8]) -> Result<(), &'static str> {
        self.valid();
        if let Values::Var(offsets, bytes) = &mut self.values {
            if bytes.len() + data.len() > MAX_OFFSET {
                return Err("more than 2 GiB of strings in one column");
            }
            if bytes.capacity() - bytes.len() < data.len() {
                // (the offsets were sized for the values expected, in a batch's own columns)
                pool::grow_bytes(bytes, data.len(), offsets.len() - 1, offsets.capacity() - 1);
            }
            bytes.extend_from_slice(data);
            offsets.push(bytes.len() as i32);
        }
        Ok(())
    }

    #[inline]
    pub fn push_code(&mut self, code: i32) {
        self.valid();
        if let Values::Codes(v) = &mut self.values {
            v.push(code);
        }
    }

    #[inline]
    pub fn push_i64(&mut self, value: i64) {
        self.valid();
        if let Values::I64(v) = &mut self.values {
            v.push(value);
        }
    }

    /// Room for `n` more values of a fixed size (the batch's own columns: one per frame).
    fn reserve(&mut self, n: usize) {
        match &mut self.values {
            Values::I32(v) | Values::Codes(v) => pool::reserve(v, n),
            Values::I64(v) => pool::reserve(v, n),
            Values::U32(v) => pool::reserve(v, n),
            Values::U64(v) => pool::reserve(v, n),
            Values::F32(v) => pool::reserve(v, n),
            Values::F64(v) => pool::reserve(v, n),
            Values::Var(o, _) | Values::List(o, _) | Values::Map(o, _, _) => pool::reserve(o, n),
            Values::Bool(b) => b.reserve(n),
            Values::Struct(_) => {}
        }
    }

    /// Rows (values) in this column so far.
    pub fn len(&self) -> usize {
        match &self.values {
            Values::Bool(b) => b.len(),
            Values::I32(v) | Values::Codes(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::U32(v) => v.len(),
            Values::U64(v) => v.len(),
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Var(o, _) | Values::List(o, _) | Values::Map(o, _, _) => o.len() - 1,
            Values::Struct(s) => s.rows,
        }
    }

    /// The Arrow array of this column, typed as `node` (and `card`) say.
    fn finish(self, field: &FieldDef, item_only: bool) -> Result<ArrayRef, String> {
        let nulls = self.nulls.map(|mut b| NullBuffer::new(b.finish()));
        let card = if item_only { &Card::Single } else { &field.card };
        match (card, self.values) {
            (Card::Repeated, Values::List(offsets, item)) => {
                let values = item.finish(field, true)?;
                let item_field = Arc::new(Field::new("item", field.node.data_type(), false));
                let offsets = OffsetBuffer::new(pool::scalars(offsets));
                Ok(Arc::new(ListArray::try_new(item_field, offsets, values, nulls).map_err(|e| e.to_string())?))
            }
            (Card::Map { key }, Values::Map(offsets, keys, values)) => {
                let key_field = FieldDef::new(1, "key".into(), Card::Single, Node::Scalar(*key), Vec::new());
                // Protobuf maps have no order and the last entry of a key wins: the entries of
                // each map are put in key order, one per key (the per-record path's too)
                let order = maps::key_order(&keys.values, &offsets)?;
                let mut keys = keys.finish(&key_field, true)?;
                let mut values = values.finish(field, true)?;
                let offsets = match order {
                    None => offsets,
                    Some(order) => {
                        keys = maps::take(&keys, &order.take)?;
                        values = maps::take(&values, &order.take)?;
                        order.offsets
                    }
                };
                let entries_field = super::program::map_entries(key.data_type(), field.node.data_type());
                let arrow_schema::DataType::Struct(entry_fields) = entries_field.data_type().clone() else {
                    return Err("map entries are a struct".into());
                };
                let entries =
                    StructArray::try_new(entry_fields, vec![keys, values], None).map_err(|e| e.to_string())?;
                let offsets = OffsetBuffer::new(pool::scalars(offsets));
                Ok(Arc::new(
                    MapArray::try_new(entries_field, offsets, entries, nulls, false).map_err(|e| e.to_string())?,
                ))
            }
            (_, values) => finish_node(&field.node, values, nulls),
        }
    }
}

fn scalar_values(s: Scalar) -> Values {
    match s {
        Scalar::Double => Values::F64(Vec::new()),
        Scalar::Float => Values::F32(Vec::new()),
        Scalar::Int32 | Scalar::SInt32 | Scalar::SFixed32 => Values::I32(Vec::new()),
        Scalar::Int64 | Scalar::SInt64 | Scalar::SFixed64 => Values::I64(Vec::new()),
        Scalar::UInt32 | Scalar::Fixed32 => Values::U32(Vec::new()),
        Scalar::UInt64 | Scalar::Fixed64 => Values::U64(Vec::new()),
        Scalar::Bool => Values::Bool(BooleanBufferBuilder::new(0)),
        Scalar::String | Scalar::Bytes => Values::Var(vec![0], Vec::new()),
    }
}

/// A float as the per-record path gives it: the runtime widens it to a Python float (a double)
/// and pyarrow narrows it back, which turns a signalling NaN into a quiet one.
#[inline]
fn float32(bits: u32) -> f32 {
    let f = f32::from_bits(bits);
    if f.is_nan() {
        f32::from_bits(bits | 0x0040_0000)
    } else {
        f
    }
}

fn finish_node(node: &Node, values: Values, nulls: Option<NullBuffer>) -> Result<ArrayRef, String> {
    let e = |e: arrow_schema::ArrowError| e.to_string();
    Ok(match (node, values) {
        (Node::Timestamp, Values::I64(v)) => {
            Arc::new(TimestampNanosecondArray::new(pool::scalars(v), nulls).with_timezone("UTC"))
        }
        (Node::Duration, Values::I64(v)) => Arc::new(DurationNanosecondArray::new(pool::scalars(v), nulls)),
        (Node::Enum(def), Values::Codes(v)) => {
            let keys = Int32Array::new(pool::scalars(v), nulls);
            let symbols: ArrayRef = Arc::new(StringArray::from_iter_values(def.symbols.iter()));
            Arc::new(DictionaryArray::<Int32Type>::try_new(keys, symbols).map_err(e)?)
        }
        (Node::Message(_), Values::Struct(s)) => Arc::new(s.finish(nulls)?),
        (Node::Scalar(s) | Node::Wrapper(s), values) => match values {
            Values::Bool(mut b) => Arc::new(BooleanArray::new(b.finish(), nulls)),
            Values::I32(v) => Arc::new(Int32Array::new(pool::scalars(v), nulls)),
            Values::I64(v) => Arc::new(Int64Array::new(pool::scalars(v), nulls)),
            Values::U32(v) => Arc::new(UInt32Array::new(pool::scalars(v), nulls)),
            Values::U64(v) => Arc::new(UInt64Array::new(pool::scalars(v), nulls)),
            Values::F32(v) => Arc::new(Float32Array::new(pool::scalars(v), nulls)),
            Values::F64(v) => Arc::new(Float64Array::new(pool::scalars(v), nulls)),
            Values::Var(offsets, bytes) => {
                let offsets = OffsetBuffer::new(pool::scalars(offsets));
                let data = pool::buffer(bytes);
                if *s == Scalar::String {
                    // checks the bytes are UTF-8 at every offset: invalid UTF-8 refuses the call
                    Arc::new(StringArray::try_new(offsets, data, nulls).map_err(e)?)
                } else {
                    Arc::new(BinaryArray::try_new(offsets, data, nulls).map_err(e)?)
                }
            }
            _ => return Err("a scalar column of another kind".into()),
        },
        _ => return Err("a column of another kind than its node".into()),
    })
}

/// One slot per field: the field's value in the message being decoded (the last one on the wire
/// wins, as in Protobuf), written to the columns when the message ends.
#[derive(Clone, Copy, Default)]
pub struct Slot {
    /// the message (`StructCols::generation`) whose value this is; another: not set
    pub generation: u32,
    /// a scalar's raw bits, or where a length-delimited value starts in the message
    pub raw: u64,
    /// a length-delimited value's length
    pub len: u32,
}

/// The columns of one message position: a struct column's children and their scratch slots.
pub struct StructCols {
    pub def: Arc<MessageDef>,
    pub columns: Vec<Column>,
    pub slots: Vec<Slot>,
    /// the message being decoded; slots of earlier messages are stale
    pub generation: u32,
    pub rows: usize,
}

impl StructCols {
    /// `top`: the batch's own columns, every one nullable (a tombstone is a row of nulls);
    /// `rows`: how many rows to make room for.
    pub fn new(def: Arc<MessageDef>, top: bool, rows: usize) -> StructCols {
        let mut columns: Vec<Column> =
            def.fields.iter().map(|f| Column::for_field(f, top || matches!(f.card, Card::Optional))).collect();
        for c in &mut columns {
            c.reserve(rows);
        }
        let slots = vec![Slot::default(); def.fields.len()];
        StructCols { def, columns, slots, generation: 0, rows: 0 }
    }

    /// Start a message: every slot unset (a new generation; slots reset when it wraps).
    #[inline]
    pub fn begin(&mut self) -> u32 {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.fill(Slot::default());
            self.generation = 1;
        }
        self.generation
    }

    /// A row under a null parent, or a tombstone: every child gets a null or a placeholder.
    pub fn push_placeholder(&mut self) {
        for c in &mut self.columns {
            c.push_null();
        }
        self.rows += 1;
    }

    /// The struct array of the rows so far (`nulls`: the struct's own validity).
    pub fn finish(self, nulls: Option<NullBuffer>) -> Result<StructArray, String> {
        let rows = self.rows;
        let (fields, arrays) = self.finish_children(false)?;
        if arrays.is_empty() {
            return Ok(StructArray::new_empty_fields(rows, nulls));
        }
        StructArray::try_new(fields, arrays, nulls).map_err(|e| e.to_string())
    }

    /// The fields and arrays of the children; `all_nullable` for a batch's top-level columns.
    pub fn finish_children(self, all_nullable: bool) -> Result<(arrow_schema::Fields, Vec<ArrayRef>), String> {
        let fields = self.def.arrow_fields(all_nullable);
        let mut arrays = Vec::with_capacity(self.columns.len());
        for (col, f) in self.columns.into_iter().zip(&self.def.fields) {
            let array = col.finish(f, false)?;
            if array.len() != self.rows {
                return Err(format!("column {} has {} rows of {}", f.name, array.len(), self.rows));
            }
            arrays.push(array);
        }
        Ok((fields, arrays))
    }
}
