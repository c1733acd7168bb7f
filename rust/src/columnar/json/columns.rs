//! The column builders of one JSON program (one per node, in the program's order) and the Arrow
//! arrays they become.
//!
//! A call that fails is dropped whole (the per-record path decodes the list again), so the
//! builders never take back a half-written row; they only need to stay well-formed while rows
//! are added. The offsets of strings, lists and maps are `i32`: a call that would pass 2^31
//! bytes or items in one column fails instead (the per-record path, which pyarrow chunks, takes it).
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, MapArray, StringArray, StructArray,
};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields};

use super::program::{Kind, Program};
use crate::columnar::pool;

pub enum Data {
    I64(Vec<i64>),
    F64(Vec<f64>),
    /// a byte per value while rows are added (a plain store), packed into bits at the end
    Bool(Vec<bool>),
    /// offsets (the first 0) and the UTF-8 bytes
    Str(Vec<i32>, Vec<u8>),
    /// rows; and per property, the serial of the last object that set it (duplicates, absences)
    Struct(usize, Vec<u64>),
    /// offsets into the child column
    List(Vec<i32>),
    /// offsets into the entries; the keys' offsets and bytes (the values are the child column)
    Map(Vec<i32>, Vec<i32>, Vec<u8>),
}

pub struct Col {
    /// validity: a null where the value is null or a struct above it is (a tombstone is a null
    /// root); `None` until the column's first null (then every row before it is valid); a byte
    /// per row, packed at the end
    pub valid: Option<Vec<bool>>,
    pub data: Data,
}

pub struct Columns {
    pub cols: Vec<Col>,
    /// a number no object decoded before has: how an object's properties are told from the last one's
    pub serial: u64,
}

/// A column grew past what `i32` offsets address.
pub const TOO_LARGE: &str = "more than 2^31 bytes or items in one column of one call";

pub fn offset(n: usize) -> Result<i32, &'static str> {
    i32::try_from(n).map_err(|_| TOO_LARGE)
}

impl Data {
    /// Rows written so far.
    fn len(&self) -> usize {
        match self {
            Data::I64(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::Bool(b) => b.len(),
            Data::Str(offsets, _) | Data::List(offsets) | Data::Map(offsets, _, _) => offsets.len() - 1,
            Data::Struct(rows, _) => *rows,
        }
    }
}

impl Columns {
    /// Empty columns of `program`; those of the root's own properties sized for `rows` rows
    /// (deeper ones grow as the values come: their count is not known).
    pub fn new(program: &Program, rows: usize) -> Columns {
        let mut top = vec![false; program.nodes.len()];
        if let Kind::Struct(props) = &program.nodes[0].kind {
            for p in props {
                top[p.child] = true;
            }
        }
        let cols = program
            .nodes
            .iter()
            .zip(top)
            .map(|(node, top)| {
                let n = if top { rows } else { 0 };
                let data = match &node.kind {
                    Kind::Int => Data::I64(pool::with_capacity(n)),
                    Kind::Float => Data::F64(pool::with_capacity(n)),
                    Kind::Bool => Data::Bool(Vec::with_capacity(n)),
                    Kind::Str => {
                        let mut offsets = pool::with_capacity(n + 1);
                        offsets.push(0);
                        Data::Str(offsets, Vec::new())
                    }
                    Kind::Struct(props) => Data::Struct(0, vec![0; props.len()]),
                    Kind::List(_) => Data::List(vec![0]),
                    Kind::Map(_) => Data::Map(vec![0], vec![0], Vec::new()),
                };
                Col { valid: None, data }
            })
            .collect();
        Columns { cols, serial: 0 }
    }

    /// A null in column `node` (and a slot in each child of a struct, which the parent's null covers).
    pub fn push_null(&mut self, program: &Program, node: usize) -> Result<(), &'static str> {
        let col = &mut self.cols[node];
        let rows = col.data.len();
        col.valid
            .get_or_insert_with(|| {
                let mut v = Vec::with_capacity(rows + 1);
                v.resize(rows, true);
                v
            })
            .push(false);
        match &mut col.data {
            Data::I64(v) => v.push(0),
            Data::F64(v) => v.push(0.0),
            Data::Bool(b) => b.push(false),
            Data::Str(offsets, bytes) => offsets.push(offset(bytes.len())?),
            Data::List(offsets) | Data::Map(offsets, _, _) => {
                let last = *offsets.last().unwrap_or(&0);
                offsets.push(last);
            }
            Data::Struct(rows, _) => {
                *rows += 1;
                if let Kind::Struct(props) = &program.nodes[node].kind {
                    for p in props {
                        self.push_null(program, p.child)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Marks the value just written to column `node` as present.
    #[inline]
    pub fn set_valid(&mut self, node: usize) {
        if let Some(v) = &mut self.cols[node].valid {
            v.push(true);
        }
    }

    /// The root column: one struct array of every row.
    pub fn finish(&mut self, program: &Program) -> Result<StructArray, String> {
        let root = self.array(program, 0)?;
        root.as_any().downcast_ref::<StructArray>().cloned().ok_or_else(|| "the root is not a struct".to_string())
    }

    fn array(&mut self, program: &Program, node: usize) -> Result<ArrayRef, String> {
        let col = &mut self.cols[node];
        let nulls = col.valid.take().map(|v| NullBuffer::new(bits(&v)));
        let data = std::mem::replace(&mut col.data, Data::List(Vec::new()));
        let array: ArrayRef = match (data, &program.nodes[node].kind) {
            (Data::I64(v), _) => Arc::new(Int64Array::new(pool::scalars(v), nulls)),
            (Data::F64(v), _) => Arc::new(Float64Array::new(pool::scalars(v), nulls)),
            (Data::Bool(b), _) => Arc::new(BooleanArray::new(bits(&b), nulls)),
            (Data::Str(offsets, bytes), _) => Arc::new(string_array(offsets, bytes, nulls)?),
            (Data::Struct(rows, _), Kind::Struct(props)) => {
                let mut children = Vec::with_capacity(props.len());
                for p in props {
                    children.push(self.array(program, p.child)?);
                }
                if children.is_empty() {
                    Arc::new(StructArray::new_empty_fields(rows, nulls))
                } else {
                    Arc::new(
                        StructArray::try_new(struct_fields(program, node), children, nulls)
                            .map_err(|e| e.to_string())?,
                    )
                }
            }
            (Data::List(offsets), Kind::List(child)) => {
                let values = self.array(program, *child)?;
                let field = Arc::new(field_of(program, *child));
                Arc::new(
                    ListArray::try_new(field, OffsetBuffer::new(pool::scalars(offsets)), values, nulls)
                        .map_err(|e| e.to_string())?,
                )
            }
            (Data::Map(offsets, key_offsets, key_bytes), Kind::Map(child)) => {
                let keys = string_array(key_offsets, key_bytes, None)?;
                let values = self.array(program, *child)?;
                let DataType::Map(entries_field, _) = data_type(program, node) else {
                    return Err("a map node without a map type".into());
                };
                let DataType::Struct(entry_fields) = entries_field.data_type().clone() else {
                    return Err("map entries that are not a struct".into());
                };
                let entries = StructArray::try_new(entry_fields, vec![Arc::new(keys) as ArrayRef, values], None)
                    .map_err(|e| e.to_string())?;
                Arc::new(
                    MapArray::try_new(entries_field, OffsetBuffer::new(pool::scalars(offsets)), entries, nulls, false)
                        .map_err(|e| e.to_string())?,
                )
            }
            _ => return Err("a column that does not match its node".into()),
        };
        Ok(array)
    }
}

fn bits(bytes: &[bool]) -> BooleanBuffer {
    BooleanBuffer::collect_bool(bytes.len(), |i| bytes[i])
}

fn string_array(offsets: Vec<i32>, bytes: Vec<u8>, nulls: Option<NullBuffer>) -> Result<StringArray, String> {
    // try_new checks the offsets and that the bytes are UTF-8 (the parser wrote only UTF-8: a
    // second look, at about a nanosecond per ten bytes)
    StringArray::try_new(OffsetBuffer::new(pool::scalars(offsets)), pool::buffer(bytes), nulls)
        .map_err(|e| e.to_string())
}

/// The Arrow field of column `node` (json_shape's types and names).
pub fn field_of(program: &Program, node: usize) -> Field {
    let n = &program.nodes[node];
    Field::new(n.name.clone(), data_type(program, node), n.nullable)
}

fn struct_fields(program: &Program, node: usize) -> Fields {
    match &program.nodes[node].kind {
        Kind::Struct(props) => props.iter().map(|p| Arc::new(field_of(program, p.child))).collect(),
        _ => Fields::empty(),
    }
}

/// json_shape's Arrow type of column `node`: `pa.int64()`, `pa.float64()`, `pa.utf8()`,
/// `pa.bool_()`, structs, `pa.list_` (item field `item`) and `pa.map_` (entries `key`, `value`).
pub fn data_type(program: &Program, node: usize) -> DataType {
    match &program.nodes[node].kind {
        Kind::Int => DataType::Int64,
        Kind::Float => DataType::Float64,
        Kind::Str => DataType::Utf8,
        Kind::Bool => DataType::Boolean,
        Kind::Struct(_) => DataType::Struct(struct_fields(program, node)),
        Kind::List(child) => DataType::List(Arc::new(field_of(program, *child))),
        Kind::Map(child) => {
            let entries = Fields::from(vec![Field::new("key", DataType::Utf8, false), field_of(program, *child)]);
            DataType::Map(Arc::new(Field::new("entries", DataType::Struct(entries), false)), false)
        }
    }
}
