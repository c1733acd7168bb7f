//! The encoder program: the writer schema as a flat vector of nodes that refer to each other by
//! index (a named type is one node however often it is referenced, and a recursive type is a cycle
//! of indexes, not a recursive Rust value).
//!
//! `serdes/avro/_native_encoder.py` takes every decision (named types, logical types and which of
//! them the loop converts itself, fixed sizes, enum indexes, which unions are `[null, X]` and
//! which general unions the loop can choose a branch in, field defaults, whether the schema is
//! recursive) and hands over a list of node tuples; this module checks that list (every index in
//! range, every opcode known, every number in the range the loop takes) and turns it into
//! [`Program`], which `mod.rs` runs. Nothing here depends on a value being encoded.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};

// node opcodes (a general union's branch kinds are these too) and the logical conversions the
// loop does itself: serdes/_native_opcodes.py has the same table (checked when the extension loads)
opcodes!(
    NODE_OPCODES:
    E_NULL, E_BOOLEAN, E_INT, E_LONG, E_FLOAT, E_DOUBLE, E_STRING, E_BYTES, E_FIXED, E_ENUM, E_ARRAY, E_MAP,
    E_NULLABLE, E_UNION, E_RECORD, E_LOGICAL
);
opcodes!(FAST_OPCODES: F_NONE, F_UUID, F_TS_MS, F_TS_US, F_DATE, F_DECIMAL);

/// One record field: its name as an interned Python string (so the dict lookup hashes nothing and
/// usually matches by identity), its node and its default as given in the schema.
pub(crate) struct Field {
    pub key: Py<PyString>,
    pub node: usize,
    pub default: Option<Py<PyAny>>,
}

pub(crate) enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    String,
    Bytes,
    Fixed(usize),
    /// symbol (str) -> index (int), a Python dict so the lookup uses the str's cached hash
    Enum(Py<PyDict>),
    Array(usize),
    Map(usize),
    /// a two-branch union with "null": the index byte of each branch and the other branch's node
    Nullable {
        null_byte: u8,
        other_byte: u8,
        other: usize,
    },
    /// any other union: each branch's kind (what fastavro's branch choice looks at) and node
    Union(Vec<(Kind, usize)>),
    /// a record's fields; with `class` (a typed record, serdes.avro._typed) the value is an
    /// instance of exactly that plain dataclass, read through its `__dict__` (keys: attributes)
    Record {
        fields: Vec<Field>,
        class: Option<Py<PyType>>,
    },
    /// fastavro's prepare function for this logical type, called as `prepare(value, schema)`
    /// unless `fast` converts the value natively the way that function does
    Logical {
        prepare: Py<PyAny>,
        schema: Py<PyAny>,
        inner: usize,
        fast: Fast,
    },
}

/// What a general union's branch choice needs to know of a branch (fastavro's `write_union`).
pub(crate) enum Kind {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    String,
    Bytes,
    Fixed(usize),
    Enum(Py<PyDict>),
    Array,
    Map,
    Record,
}

/// Logical types whose fastavro prepare function the loop reproduces for the exact types it
/// converts (`uuid.UUID`; `datetime` with `tzinfo=timezone.utc`; `date`; an `int` passes as is).
/// Only when the registered prepare function is fastavro's own (serdes/avro/_native_encoder.py).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fast {
    None,
    Uuid,
    TimestampMillis,
    TimestampMicros,
    Date,
    /// bytes-decimal with the schema's precision and scale (both plain ints)
    Decimal {
        precision: i64,
        scale: i64,
    },
}

pub(crate) struct Program {
    pub nodes: Vec<Node>,
    pub root: usize,
    /// a named type refers to itself (directly or not): values can nest without bound
    pub recursive: bool,
    /// a union other than ["null", X]: the pure encoder for the schema is fastavro's general path
    pub general_union: bool,
}

fn bad(msg: &str) -> PyErr {
    PyValueError::new_err(format!("invalid serdes Avro encoder program: {msg}"))
}

fn item<'py>(t: &Bound<'py, PyTuple>, i: usize) -> PyResult<Bound<'py, PyAny>> {
    t.get_item(i).map_err(|_| bad("node tuple too short"))
}

fn tuple<'a, 'py>(v: &'a Bound<'py, PyAny>, what: &str) -> PyResult<&'a Bound<'py, PyTuple>> {
    v.cast::<PyTuple>().map_err(|_| bad(&format!("{what} is not a tuple")))
}

fn int(v: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    v.extract().map_err(|_| bad(&format!("{what} is not an int of 64 bits")))
}

/// An opcode, a branch kind or a fast code: a u8 (the match on it says whether it is known).
fn code(v: &Bound<'_, PyAny>, what: &str) -> PyResult<u8> {
    u8::try_from(int(v, what)?).map_err(|_| bad(&format!("unknown {what}")))
}

fn index(v: &Bound<'_, PyAny>, n: usize) -> PyResult<usize> {
    let i = int(v, "a node index")?;
    if i < 0 || i as u64 >= n as u64 {
        return Err(bad("node index out of range"));
    }
    Ok(i as usize)
}

fn size(v: &Bound<'_, PyAny>) -> PyResult<usize> {
    usize::try_from(int(v, "a fixed size")?).map_err(|_| bad("negative fixed size"))
}

fn table(v: &Bound<'_, PyAny>) -> PyResult<Py<PyDict>> {
    Ok(v.cast::<PyDict>().map_err(|_| bad("enum table is not a dict"))?.clone().unbind())
}

fn branch(b: &Bound<'_, PyAny>, n: usize) -> PyResult<(Kind, usize)> {
    let b = tuple(b, "a union branch")?;
    let node = index(&item(b, 1)?, n)?;
    let kind = match code(&item(b, 0)?, "branch kind")? {
        E_NULL => Kind::Null,
        E_BOOLEAN => Kind::Boolean,
        E_INT => Kind::Int,
        E_LONG => Kind::Long,
        E_FLOAT => Kind::Float,
        E_DOUBLE => Kind::Double,
        E_STRING => Kind::String,
        E_BYTES => Kind::Bytes,
        E_FIXED => Kind::Fixed(size(&item(b, 2)?)?),
        E_ENUM => Kind::Enum(table(&item(b, 2)?)?),
        E_ARRAY => Kind::Array,
        E_MAP => Kind::Map,
        E_RECORD => Kind::Record,
        _ => return Err(bad("unknown branch kind")),
    };
    Ok((kind, node))
}

fn fast(t: &Bound<'_, PyTuple>) -> PyResult<Fast> {
    Ok(match code(&item(t, 4)?, "fast code")? {
        F_NONE => Fast::None,
        F_UUID => Fast::Uuid,
        F_TS_MS => Fast::TimestampMillis,
        F_TS_US => Fast::TimestampMicros,
        F_DATE => Fast::Date,
        F_DECIMAL => Fast::Decimal {
            precision: int(&item(t, 5)?, "a decimal precision")?,
            scale: int(&item(t, 6)?, "a decimal scale")?,
        },
        _ => return Err(bad("unknown fast code")),
    })
}

fn node(py: Python<'_>, t: &Bound<'_, PyTuple>, n: usize) -> PyResult<Node> {
    Ok(match code(&item(t, 0)?, "opcode")? {
        E_NULL => Node::Null,
        E_BOOLEAN => Node::Boolean,
        E_INT => Node::Int,
        E_LONG => Node::Long,
        E_FLOAT => Node::Float,
        E_DOUBLE => Node::Double,
        E_STRING => Node::String,
        E_BYTES => Node::Bytes,
        E_FIXED => Node::Fixed(size(&item(t, 1)?)?),
        E_ENUM => Node::Enum(table(&item(t, 1)?)?),
        E_ARRAY => Node::Array(index(&item(t, 1)?, n)?),
        E_MAP => Node::Map(index(&item(t, 1)?, n)?),
        E_NULLABLE => {
            let null_byte = int(&item(t, 1)?, "a branch byte")?;
            let other_byte = int(&item(t, 2)?, "a branch byte")?;
            // the index bytes of a two-branch union: 0 and 2 (zigzag 0 and 1), one each
            if !matches!((null_byte, other_byte), (0, 2) | (2, 0)) {
                return Err(bad("nullable branch bytes are not 0 and 2"));
            }
            Node::Nullable { null_byte: null_byte as u8, other_byte: other_byte as u8, other: index(&item(t, 3)?, n)? }
        }
        E_UNION => {
            let list = item(t, 1)?;
            let list = list.cast::<PyList>().map_err(|_| bad("union branches are not a list"))?;
            if list.is_empty() {
                return Err(bad("a union without branches"));
            }
            let mut branches = Vec::with_capacity(list.len());
            for b in list.iter() {
                branches.push(branch(&b, n)?);
            }
            Node::Union(branches)
        }
        E_RECORD => {
            let list = item(t, 1)?;
            let list = list.cast::<PyList>().map_err(|_| bad("record fields are not a list"))?;
            let mut fields = Vec::with_capacity(list.len());
            for f in list.iter() {
                let f = tuple(&f, "a field")?;
                let name = item(f, 0)?;
                let name = name.cast::<PyString>().map_err(|_| bad("a field name is not a str"))?;
                let node = index(&item(f, 1)?, n)?;
                let default = if item(f, 2)?.is_truthy()? { Some(item(f, 3)?.unbind()) } else { None };
                fields.push(Field { key: PyString::intern(py, name.to_str()?).unbind(), node, default });
            }
            let class = if t.len() > 2 && !item(t, 2)?.is_none() {
                Some(item(t, 2)?.cast_into::<PyType>().map_err(|_| bad("a record class is not a type"))?.unbind())
            } else {
                None
            };
            Node::Record { fields, class }
        }
        E_LOGICAL => {
            let prepare = item(t, 1)?;
            if !prepare.is_callable() {
                return Err(bad("a prepare function is not callable"));
            }
            let fast = fast(t)?;
            Node::Logical {
                prepare: prepare.unbind(),
                schema: item(t, 2)?.unbind(),
                inner: index(&item(t, 3)?, n)?,
                fast,
            }
        }
        _ => return Err(bad("unknown opcode")),
    })
}

/// Check and build a program lowered by serdes/avro/_native_encoder.py.
pub(crate) fn compile(
    py: Python<'_>,
    nodes: &Bound<'_, PyList>,
    root: usize,
    recursive: bool,
    general_union: bool,
) -> PyResult<Program> {
    let n = nodes.len();
    if root >= n {
        return Err(bad("root out of range"));
    }
    let mut out = Vec::with_capacity(n);
    for t in nodes.iter() {
        out.push(node(py, tuple(&t, "a node")?, n)?);
    }
    // map keys are written with node 0 (mod.rs: STRING_KEY)
    if !matches!(out[0], Node::String) {
        return Err(bad("node 0 is not the string node"));
    }
    // a logical node converts and then writes with its inner node without going a level deeper:
    // a chain of them must end, so an inner node is never logical itself
    for nd in &out {
        if let Node::Logical { inner, .. } = nd {
            if matches!(out[*inner], Node::Logical { .. }) {
                return Err(bad("a logical node's inner node is logical"));
            }
        }
    }
    Ok(Program { nodes: out, root, recursive, general_union })
}
