//! A program bound to one record batch: each node paired with its Arrow column, its type checked
//! and its buffers taken as typed slices, once per batch -- so the row loop (`write.rs`) reads
//! values without a downcast or a type dispatch of Arrow's.
//!
//! The columns were validated in full before (`ArrayData::validate_full`: buffer sizes, offsets
//! in bounds and non-decreasing, UTF-8, dictionary keys in range); the row loop still reads every
//! slice with a checked index, so a column that validation let through with a bad offset is a
//! refusal, never a read out of bounds or a panic.
use std::collections::HashMap;

use arrow_array::types::{Int32Type, IntervalMonthDayNano};
use arrow_array::{
    Array, BinaryArray, BooleanArray, Date32Array, Decimal128Array, DictionaryArray, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int32Array, Int64Array, IntervalMonthDayNanoArray, ListArray, MapArray, StringArray,
    StructArray, Time32MillisecondArray, Time64MicrosecondArray, TimestampMicrosecondArray, TimestampMillisecondArray,
};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, IntervalUnit, TimeUnit};

use super::program::{Logical, Node, Program};

/// One node's column: its values and which of them are null.
pub(crate) struct Col<'a> {
    /// the logical nulls (a dictionary's null symbols included); `None`: no nulls
    pub nulls: Option<NullBuffer>,
    pub len: usize,
    pub kind: Kind<'a>,
}

pub(crate) enum Kind<'a> {
    Null,
    Boolean(&'a BooleanBuffer),
    Int(&'a [i32]),
    Long(&'a [i64]),
    Float(&'a [f32]),
    Double(&'a [f64]),
    /// string or bytes: `offsets[i]..offsets[i + 1]` of `data`
    Var {
        offsets: &'a [i32],
        data: &'a [u8],
    },
    Fixed {
        size: usize,
        data: &'a [u8],
    },
    /// the dictionary's indexes, and for each dictionary value the index written for it
    /// (`NOT_A_SYMBOL` when the schema has no such symbol)
    Enum {
        keys: &'a [i32],
        codes: Vec<i64>,
    },
    Array {
        offsets: &'a [i32],
        items: Box<Col<'a>>,
    },
    Map {
        offsets: &'a [i32],
        keys: Box<Col<'a>>,
        values: Box<Col<'a>>,
    },
    Nullable {
        null_byte: u8,
        other_byte: u8,
        other: Box<Col<'a>>,
    },
    Record(Vec<Col<'a>>),
    Date(&'a [i32]),
    TimeMillis(&'a [i32]),
    TimeMicros(&'a [i64]),
    TimestampMillis(&'a [i64]),
    TimestampMicros(&'a [i64]),
    Decimal {
        values: &'a [i128],
        precision: u8,
        size: Option<usize>,
    },
    Uuid(&'a [u8]),
    Duration(&'a [IntervalMonthDayNano]),
}

/// A dictionary value that is not a symbol of the enum.
pub(crate) const NOT_A_SYMBOL: i64 = -1;

fn downcast<'a, T: 'static>(array: &'a dyn Array, what: &str) -> Result<&'a T, String> {
    array.as_any().downcast_ref::<T>().ok_or_else(|| format!("a {} column is not a {what} array", array.data_type()))
}

fn expect(array: &dyn Array, want: &DataType) -> Result<(), String> {
    if array.data_type() == want {
        Ok(())
    } else {
        Err(format!("a {} column where the schema has {want}", array.data_type()))
    }
}

/// Bind node `node` of `prog` to `array` (of the type the node was lowered for).
pub(crate) fn bind<'a>(prog: &'a Program, node: usize, array: &'a dyn Array) -> Result<Col<'a>, String> {
    let kind = match &prog.nodes[node] {
        Node::Null => {
            expect(array, &DataType::Null)?;
            Kind::Null
        }
        Node::Boolean => Kind::Boolean(downcast::<BooleanArray>(array, "boolean")?.values()),
        Node::Int => Kind::Int(downcast::<Int32Array>(array, "int32")?.values()),
        Node::Long => Kind::Long(downcast::<Int64Array>(array, "int64")?.values()),
        Node::Float => Kind::Float(downcast::<Float32Array>(array, "float32")?.values()),
        Node::Double => Kind::Double(downcast::<Float64Array>(array, "float64")?.values()),
        Node::String => {
            let a = downcast::<StringArray>(array, "utf8")?;
            Kind::Var { offsets: a.value_offsets(), data: a.value_data() }
        }
        Node::Bytes => {
            let a = downcast::<BinaryArray>(array, "binary")?;
            Kind::Var { offsets: a.value_offsets(), data: a.value_data() }
        }
        Node::Fixed(size) => Kind::Fixed { size: *size, data: fixed(array, *size)? },
        Node::Enum(symbols) => enumeration(array, symbols)?,
        Node::Array(items) => {
            let a = downcast::<ListArray>(array, "list")?;
            Kind::Array { offsets: a.value_offsets(), items: Box::new(bind(prog, *items, a.values().as_ref())?) }
        }
        Node::Map(values) => {
            let a = downcast::<MapArray>(array, "map")?;
            let keys = a.keys().as_ref();
            let string = downcast::<StringArray>(keys, "utf8")?;
            let keys = Col {
                nulls: keys.logical_nulls(),
                len: keys.len(),
                kind: Kind::Var { offsets: string.value_offsets(), data: string.value_data() },
            };
            Kind::Map {
                offsets: a.value_offsets(),
                keys: Box::new(keys),
                values: Box::new(bind(prog, *values, a.values().as_ref())?),
            }
        }
        Node::Nullable { null_byte, other_byte, other } => {
            // the same column: its nulls are this node's null branch
            Kind::Nullable {
                null_byte: *null_byte,
                other_byte: *other_byte,
                other: Box::new(bind(prog, *other, array)?),
            }
        }
        Node::Record(fields) => {
            let a = downcast::<StructArray>(array, "struct")?;
            if a.num_columns() != fields.len() {
                return Err(format!("a struct of {} fields for a record of {}", a.num_columns(), fields.len()));
            }
            // (a struct's children are sliced like the struct: row i of the struct is row i of each)
            let cols =
                fields.iter().zip(a.columns()).map(|(f, c)| bind(prog, *f, c.as_ref())).collect::<Result<_, _>>()?;
            Kind::Record(cols)
        }
        Node::Logical(logical) => self::logical(array, *logical)?,
    };
    Ok(Col { nulls: array.logical_nulls(), len: array.len(), kind })
}

/// The values of a `fixed_size_binary(size)` column (its rows' bytes end to end).
fn fixed(array: &dyn Array, size: usize) -> Result<&[u8], String> {
    let a = downcast::<FixedSizeBinaryArray>(array, "fixed_size_binary")?;
    if a.value_size() != size {
        return Err(format!("a fixed_size_binary({}) column for a fixed of {size} bytes", a.value_size()));
    }
    Ok(a.value_data())
}

fn enumeration<'a>(array: &'a dyn Array, symbols: &HashMap<String, i64>) -> Result<Kind<'a>, String> {
    let a = downcast::<DictionaryArray<Int32Type>>(array, "dictionary<int32, utf8>")?;
    let values = downcast::<StringArray>(a.values().as_ref(), "utf8 dictionary")?;
    // once per batch: the index of every dictionary value (a null value is a null row: the
    // column's logical nulls say so, and its code is never read)
    let codes = (0..values.len())
        .map(|k| if values.is_null(k) { NOT_A_SYMBOL } else { *symbols.get(values.value(k)).unwrap_or(&NOT_A_SYMBOL) })
        .collect();
    Ok(Kind::Enum { keys: a.keys().values(), codes })
}

fn logical(array: &dyn Array, logical: Logical) -> Result<Kind<'_>, String> {
    Ok(match logical {
        Logical::Date => Kind::Date(downcast::<Date32Array>(array, "date32")?.values()),
        Logical::TimeMillis => Kind::TimeMillis(downcast::<Time32MillisecondArray>(array, "time32[ms]")?.values()),
        Logical::TimeMicros => Kind::TimeMicros(downcast::<Time64MicrosecondArray>(array, "time64[us]")?.values()),
        Logical::TimestampMillis { utc } => {
            zone(array, TimeUnit::Millisecond, utc)?;
            Kind::TimestampMillis(downcast::<TimestampMillisecondArray>(array, "timestamp[ms]")?.values())
        }
        Logical::TimestampMicros { utc } => {
            zone(array, TimeUnit::Microsecond, utc)?;
            Kind::TimestampMicros(downcast::<TimestampMicrosecondArray>(array, "timestamp[us]")?.values())
        }
        Logical::Decimal { precision, scale, size } => {
            expect(array, &DataType::Decimal128(precision, scale))?;
            Kind::Decimal { values: downcast::<Decimal128Array>(array, "decimal128")?.values(), precision, size }
        }
        Logical::Uuid => Kind::Uuid(fixed(array, 16)?),
        Logical::Duration => {
            expect(array, &DataType::Interval(IntervalUnit::MonthDayNano))?;
            Kind::Duration(downcast::<IntervalMonthDayNanoArray>(array, "month_day_nano_interval")?.values())
        }
    })
}

/// A timestamp column of `unit`, in UTC (`+00:00`, the zone serdes' columns have) or without a zone.
fn zone(array: &dyn Array, unit: TimeUnit, utc: bool) -> Result<(), String> {
    match array.data_type() {
        DataType::Timestamp(u, tz) if *u == unit && tz.as_deref().map(|z| z == "+00:00") == utc.then_some(true) => {
            Ok(())
        }
        other => Err(format!("a {other} column for a {} timestamp", if utc { "UTC" } else { "local" })),
    }
}
