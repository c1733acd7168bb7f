//! The columns of a *flat* record -- every field a primitive (`boolean`, `int`, `long`, `float`,
//! `double`, `string`, `bytes`) or a union of `null` and one of them -- read as written (the
//! writer schema is the reader schema). `arrow-avro` decodes these too; this loop is about 2x as
//! fast on them (one match per field, no per-row dispatch through nested decoders), and they are
//! the commonest Kafka record. Python decides which schemas are flat (`arrow/_native.py`,
//! `_flat_plan`) and hands over the plan; anything else goes to `arrow-avro`.
//!
//! It is stricter than the Avro spec requires, never looser than serdes' per-record decoders: an
//! `int` varint longer than 5 bytes or out of range, a `long` varint longer than 10 bytes, a
//! boolean byte other than 0 or 1, a union index other than the two branches, a length that is
//! negative or longer than the bytes left -- each is an error, so the call goes to the per-record
//! path, which decides. Strings are checked as UTF-8 when the columns are built.
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray,
};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Schema};

use super::pool;

/// The kind of one field, as Python names it in the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    String,
    Bytes,
}

impl Kind {
    pub fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "boolean" => Kind::Boolean,
            "int" => Kind::Int,
            "long" => Kind::Long,
            "float" => Kind::Float,
            "double" => Kind::Double,
            "string" => Kind::String,
            "bytes" => Kind::Bytes,
            _ => return None,
        })
    }

    fn data_type(self) -> DataType {
        match self {
            Kind::Boolean => DataType::Boolean,
            Kind::Int => DataType::Int32,
            Kind::Long => DataType::Int64,
            Kind::Float => DataType::Float32,
            Kind::Double => DataType::Float64,
            Kind::String => DataType::Utf8,
            Kind::Bytes => DataType::Binary,
        }
    }
}

/// One field of the plan: its name, kind, and the union index of `null` (`None`: not a union).
#[derive(Clone, Debug)]
pub struct FieldPlan {
    pub name: String,
    pub kind: Kind,
    pub null_index: Option<u8>,
}

enum Values {
    Bool(BooleanBufferBuilder),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// string or bytes: offsets (the first 0) and the bytes
    Var(Vec<i32>, Vec<u8>),
}

struct Column {
    plan: FieldPlan,
    values: Values,
    valid: Option<BooleanBufferBuilder>,
}

impl Column {
    fn new(plan: FieldPlan) -> Column {
        let values = match plan.kind {
            Kind::Boolean => Values::Bool(BooleanBufferBuilder::new(0)),
            Kind::Int => Values::I32(Vec::new()),
            Kind::Long => Values::I64(Vec::new()),
            Kind::Float => Values::F32(Vec::new()),
            Kind::Double => Values::F64(Vec::new()),
            Kind::String | Kind::Bytes => Values::Var(vec![0], Vec::new()),
        };
        let valid = plan.null_index.map(|_| BooleanBufferBuilder::new(0));
        Column { plan, values, valid }
    }

    fn push_null(&mut self) {
        match &mut self.values {
            Values::Bool(b) => b.append(false),
            Values::I32(v) => v.push(0),
            Values::I64(v) => v.push(0),
            Values::F32(v) => v.push(0.0),
            Values::F64(v) => v.push(0.0),
            Values::Var(offsets, bytes) => offsets.push(bytes.len() as i32),
        }
    }
}

/// A cursor over one record's bytes; every read is bounds-checked.
struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    #[inline]
    fn varint(&mut self, max_bytes: usize) -> Result<u64, &'static str> {
        let mut out: u64 = 0;
        for i in 0..max_bytes {
            let Some(&b) = self.buf.get(self.at) else { return Err("the record ends inside a varint") };
            self.at += 1;
            if i == 9 && b > 1 {
                return Err("a varint beyond 64 bits");
            }
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err("a varint longer than its type allows")
    }

    #[inline]
    fn long(&mut self) -> Result<i64, &'static str> {
        let z = self.varint(10)?;
        Ok((z >> 1) as i64 ^ -((z & 1) as i64))
    }

    #[inline]
    fn int(&mut self) -> Result<i32, &'static str> {
        let v = {
            let z = self.varint(5)?;
            (z >> 1) as i64 ^ -((z & 1) as i64)
        };
        i32::try_from(v).map_err(|_| "an int out of range")
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&[u8], &'static str> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or("the record ends early")?;
        let out = &self.buf[self.at..end];
        self.at = end;
        Ok(out)
    }
}

/// The decoder of one flat schema: columns grow by one row per record.
pub struct FlatDecoder {
    columns: Vec<Column>,
    rows: usize,
    /// the rows the caller said are coming (`reserve`): what a string column's bytes are sized for
    expect: usize,
}

impl FlatDecoder {
    pub fn new(plan: Vec<FieldPlan>) -> FlatDecoder {
        FlatDecoder { columns: plan.into_iter().map(Column::new).collect(), rows: 0, expect: 0 }
    }

    /// Room for `rows` more rows in every fixed-width column and offsets buffer (the run of
    /// frames of this writer ahead, at most the call's frames: no reallocation while they decode).
    pub fn reserve(&mut self, rows: usize) {
        self.expect = self.rows + rows;
        for col in &mut self.columns {
            match &mut col.values {
                Values::Bool(b) => b.reserve(rows),
                Values::I32(v) => pool::reserve(v, rows),
                Values::I64(v) => pool::reserve(v, rows),
                Values::F32(v) => pool::reserve(v, rows),
                Values::F64(v) => pool::reserve(v, rows),
                Values::Var(offsets, _) => pool::reserve(offsets, rows),
            }
            if let Some(valid) = col.valid.as_mut() {
                valid.reserve(rows);
            }
        }
    }

    /// Decode one record body, returning the bytes it used. After an error the decoder is
    /// dropped (a field of the failed row may already hold its value).
    pub fn decode(&mut self, body: &[u8]) -> Result<usize, String> {
        let mut c = Cursor { buf: body, at: 0 };
        let (rows, expect) = (self.rows, self.expect);
        for col in &mut self.columns {
            if let Some(null_index) = col.plan.null_index {
                let branch = c.long()?;
                let is_null = match branch {
                    0 | 1 => branch as u8 == null_index,
                    _ => return Err(format!("union index {branch} of field {}", col.plan.name)),
                };
                if let Some(valid) = col.valid.as_mut() {
                    valid.append(!is_null);
                }
                if is_null {
                    col.push_null();
                    continue;
                }
            }
            match &mut col.values {
                Values::Bool(b) => match c.take(1)?[0] {
                    0 => b.append(false),
                    1 => b.append(true),
                    x => return Err(format!("boolean byte {x} in field {}", col.plan.name)),
                },
                Values::I32(v) => v.push(c.int()?),
                Values::I64(v) => v.push(c.long()?),
                Values::F32(v) => v.push(f32::from_le_bytes(c.take(4)?.try_into().map_err(|_| "float")?)),
                Values::F64(v) => v.push(f64::from_le_bytes(c.take(8)?.try_into().map_err(|_| "double")?)),
                Values::Var(offsets, bytes) => {
                    let n = c.long()?;
                    let n = usize::try_from(n).map_err(|_| format!("negative length in field {}", col.plan.name))?;
                    let data = c.take(n)?;
                    if bytes.len() + n > i32::MAX as usize {
                        return Err("more than 2 GiB of strings in one batch".to_string());
                    }
                    if bytes.capacity() - bytes.len() < n {
                        pool::grow_bytes(bytes, n, rows, expect);
                    }
                    bytes.extend_from_slice(data);
                    offsets.push(bytes.len() as i32);
                }
            }
        }
        self.rows += 1;
        Ok(c.at)
    }

    /// The rows decoded since the last flush as a batch (`None`: no rows).
    pub fn flush(&mut self) -> Result<Option<RecordBatch>, String> {
        if self.rows == 0 {
            return Ok(None);
        }
        let rows = std::mem::take(&mut self.rows);
        let mut fields = Vec::with_capacity(self.columns.len());
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for col in &mut self.columns {
            let fresh = Column::new(col.plan.clone());
            let done = std::mem::replace(col, fresh);
            let nulls = done.valid.map(|mut v| NullBuffer::new(v.finish()));
            let array: ArrayRef = match done.values {
                Values::Bool(mut b) => Arc::new(BooleanArray::new(b.finish(), nulls)),
                Values::I32(v) => Arc::new(Int32Array::new(pool::scalars(v), nulls)),
                Values::I64(v) => Arc::new(Int64Array::new(pool::scalars(v), nulls)),
                Values::F32(v) => Arc::new(Float32Array::new(pool::scalars(v), nulls)),
                Values::F64(v) => Arc::new(Float64Array::new(pool::scalars(v), nulls)),
                Values::Var(offsets, bytes) => {
                    let offsets = OffsetBuffer::new(pool::scalars(offsets));
                    let values = pool::buffer(bytes);
                    if done.plan.kind == Kind::String {
                        // checks the bytes are UTF-8, at every offset
                        Arc::new(StringArray::try_new(offsets, values, nulls).map_err(|e| e.to_string())?)
                    } else {
                        Arc::new(BinaryArray::try_new(offsets, values, nulls).map_err(|e| e.to_string())?)
                    }
                }
            };
            if array.len() != rows {
                return Err(format!("column {} has {} rows of {rows}", done.plan.name, array.len()));
            }
            fields.push(Field::new(done.plan.name.clone(), done.plan.kind.data_type(), done.plan.null_index.is_some()));
            arrays.push(array);
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map(Some).map_err(|e| e.to_string())
    }
}
