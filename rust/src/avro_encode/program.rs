//! The writer schema compiled once into a flat program: a vector of nodes that refer to each other
//! by index (so a named type is one node however often it is referenced, and a recursive type is a
//! cycle of indexes, not a recursive Rust value).
//!
//! The compiler mirrors serdes/avro/_encgen.py's generator: the same schemas compile, named types
//! are registered when first seen, logical types go through fastavro's `LOGICAL_WRITERS` (the same
//! prepare functions the pure encoder calls), and what the generator declines (general unions,
//! unknown types) is declined here too (`Unsupported`), so serdes builds the pure encoder instead --
//! except general unions, which compile (`Node::Union`) when every branch is a plain type the
//! loop can choose between the way fastavro's `write_union` does.
//! Unlike the generator it compiles recursive types; it reports them (`recursive`) because the pure
//! reference for those is fastavro's writer, whose record rules the encoder then follows.
use std::collections::HashMap;

use pyo3::exceptions::PyNotImplementedError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::stack::Guard;

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
    Record(Vec<Field>),
    /// fastavro's prepare function for this logical type, called as `prepare(value, schema)`
    /// unless `fast` converts the value natively the way that function does
    Logical {
        prepare: Py<PyAny>,
        schema: Py<PyAny>,
        inner: usize,
        fast: Fast,
    },
    /// a slot reserved for a named type while its body compiles (never left in a finished program)
    Pending,
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

impl Fast {
    fn from_code(code: u8, schema: &Bound<'_, PyDict>) -> PyResult<Fast> {
        Ok(match code {
            1 => Fast::Uuid,
            2 => Fast::TimestampMillis,
            3 => Fast::TimestampMicros,
            4 => Fast::Date,
            5 => {
                // fastavro reads schema["precision"] and schema.get("scale", 0): only plain ints here
                let int = |k: &str| -> PyResult<Option<i64>> {
                    match schema.get_item(k)? {
                        Some(v) if v.is_exact_instance_of::<pyo3::types::PyInt>() => Ok(v.extract().ok()),
                        Some(_) => Ok(None),
                        None if k == "scale" => Ok(Some(0)),
                        None => Ok(None),
                    }
                };
                match (int("precision")?, int("scale")?) {
                    (Some(precision), Some(scale)) => Fast::Decimal { precision, scale },
                    _ => Fast::None,
                }
            }
            _ => Fast::None,
        })
    }
}

pub(crate) struct Program {
    pub nodes: Vec<Node>,
    pub root: usize,
    /// a named type refers to itself (directly or not): values can nest without bound
    pub recursive: bool,
    /// a union other than ["null", X]: the pure encoder for the schema is fastavro's general path
    pub general_union: bool,
}

fn unsupported(what: &str) -> PyErr {
    PyNotImplementedError::new_err(format!("the native Avro encoder does not support {what}"))
}

struct Compiler<'py> {
    py: Python<'py>,
    logical_writers: Bound<'py, PyDict>,
    fast_logical: Bound<'py, PyDict>,
    nodes: Vec<Node>,
    named: HashMap<String, usize>,
    /// names of the records being compiled (a reference to one of them is a recursion)
    stack: Vec<String>,
    recursive: bool,
    general_union: bool,
    /// the compile call's stack limit: a schema nesting deeper than the thread's stack allows
    /// is left to the pure encoder
    guard: Guard,
}

fn primitive(t: &str) -> Option<Node> {
    Some(match t {
        "null" => Node::Null,
        "boolean" => Node::Boolean,
        "int" => Node::Int,
        "long" => Node::Long,
        "float" => Node::Float,
        "double" => Node::Double,
        "string" => Node::String,
        "bytes" => Node::Bytes,
        _ => return None,
    })
}

impl<'py> Compiler<'py> {
    fn push(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    fn reference(&mut self, name: &str) -> PyResult<usize> {
        match self.named.get(name) {
            Some(&i) => {
                if self.stack.iter().any(|s| s == name) {
                    self.recursive = true;
                }
                Ok(i)
            }
            None => Err(unsupported(&format!("the unknown type {name:?}"))),
        }
    }

    fn compile(&mut self, s: &Bound<'py, PyAny>) -> PyResult<usize> {
        if !self.guard.ok() {
            return Err(unsupported("a schema nesting deeper than this thread's stack lets the native compiler go"));
        }
        if let Ok(name) = s.cast::<PyString>() {
            let t = name.to_str()?;
            return match primitive(t) {
                Some(n) => Ok(self.push(n)),
                None => self.reference(t),
            };
        }
        if let Ok(branches) = s.cast::<PyList>() {
            return self.union(branches);
        }
        let d = s.cast::<PyDict>().map_err(|_| unsupported("a schema that is not a str, list or dict"))?;
        let t_obj = d.get_item("type")?.ok_or_else(|| unsupported("a schema without \"type\""))?;
        let t_str = t_obj.cast::<PyString>().map_err(|_| unsupported("a nested \"type\""))?;
        let t = t_str.to_str()?.to_owned();
        let named = matches!(t.as_str(), "record" | "error" | "enum" | "fixed");
        if !named && primitive(&t).is_none() && !matches!(t.as_str(), "array" | "map") {
            return self.reference(&t);
        }
        let (prepare, fast) = match d.get_item("logicalType")? {
            Some(lt) if lt.is_truthy()? => {
                let key = format!("{}-{}", t, lt.str()?.to_str()?);
                let fast = match self.fast_logical.get_item(&key)? {
                    Some(code) => Fast::from_code(code.extract()?, d)?,
                    None => Fast::None,
                };
                (self.logical_writers.get_item(key)?, fast)
            }
            _ => (None, Fast::None),
        };
        // a named type's slot exists before its body compiles, so the body may refer to it
        let slot = if named {
            let name: String = d
                .get_item("name")?
                .ok_or_else(|| unsupported("a named type without a name"))?
                .extract()
                .map_err(|_| unsupported("a non-string name"))?;
            let slot = self.push(Node::Pending);
            self.named.entry(name.clone()).or_insert(slot);
            Some((slot, name))
        } else {
            None
        };
        let base = match t.as_str() {
            "record" | "error" => {
                let name = slot.as_ref().map(|(_, n)| n.clone()).unwrap_or_default();
                self.stack.push(name);
                let r = self.record(d);
                self.stack.pop();
                r?
            }
            "enum" => {
                let table = PyDict::new(self.py);
                let symbols = d.get_item("symbols")?.ok_or_else(|| unsupported("an enum without symbols"))?;
                for (i, sym) in symbols.try_iter()?.enumerate() {
                    table.set_item(sym?, i)?;
                }
                Node::Enum(table.unbind())
            }
            "fixed" => {
                let size = d.get_item("size")?.ok_or_else(|| unsupported("a fixed without size"))?;
                // exactly the generator's rule: an int (not a bool), not negative
                if !size.is_exact_instance_of::<pyo3::types::PyInt>() {
                    return Err(unsupported("a fixed size that is not an int"));
                }
                let n: i64 = size.extract()?;
                let n = usize::try_from(n).map_err(|_| unsupported("a negative fixed size"))?;
                Node::Fixed(n)
            }
            "array" => {
                let items = d.get_item("items")?.ok_or_else(|| unsupported("an array without items"))?;
                Node::Array(self.compile(&items)?)
            }
            "map" => {
                let values = d.get_item("values")?.ok_or_else(|| unsupported("a map without values"))?;
                Node::Map(self.compile(&values)?)
            }
            other => primitive(other).ok_or_else(|| unsupported(other))?,
        };
        let node = match prepare {
            Some(prepare) => {
                let inner = self.push(base);
                Node::Logical { prepare: prepare.unbind(), schema: d.clone().into_any().unbind(), inner, fast }
            }
            None => base,
        };
        Ok(match slot {
            Some((i, _)) => {
                self.nodes[i] = node;
                i
            }
            None => self.push(node),
        })
    }

    fn union(&mut self, branches: &Bound<'py, PyList>) -> PyResult<usize> {
        // the generator's own case: two branches, one of them "null"
        let is_null =
            |b: &Bound<'py, PyAny>| b.cast::<PyString>().map(|s| s.to_str().ok() == Some("null")).unwrap_or(false);
        if branches.len() == 2 {
            let (a, b) = (branches.get_item(0)?, branches.get_item(1)?);
            let nullable = match (is_null(&a), is_null(&b)) {
                (true, false) => Some((0u8, b)),
                (false, true) => Some((1u8, a)),
                _ => None,
            };
            if let Some((null_idx, other)) = nullable {
                let other = self.compile(&other)?;
                return Ok(self.push(Node::Nullable {
                    null_byte: null_idx * 2,
                    other_byte: (1 - null_idx) * 2,
                    other,
                }));
            }
        }
        // any other union: the pure encoder is fastavro's for the whole schema, whose branch choice
        // the loop reproduces for branches it can tell apart by the value's exact type
        self.general_union = true;
        if branches.is_empty() {
            return Err(unsupported("an empty union"));
        }
        let mut out = Vec::new();
        let (mut arrays, mut maps) = (0, 0);
        for b in branches.iter() {
            let node = self.compile(&b)?;
            let kind = match &self.nodes[node] {
                Node::Null => Kind::Null,
                Node::Boolean => Kind::Boolean,
                Node::Int => Kind::Int,
                Node::Long => Kind::Long,
                Node::Float => Kind::Float,
                Node::Double => Kind::Double,
                Node::String => Kind::String,
                Node::Bytes => Kind::Bytes,
                Node::Fixed(n) => Kind::Fixed(*n),
                Node::Enum(t) => Kind::Enum(t.clone_ref(self.py)),
                Node::Array(_) => {
                    arrays += 1;
                    Kind::Array
                }
                Node::Map(_) => {
                    maps += 1;
                    Kind::Map
                }
                // Pending: a recursive reference to a record still being compiled (only records
                // have bodies that can refer back)
                Node::Record(_) | Node::Pending => Kind::Record,
                // logical branches (fastavro validates them after its prepare function), nested unions
                _ => return Err(unsupported("this union branch (logical or nested)")),
            };
            out.push((kind, node));
        }
        if arrays > 1 || maps > 1 {
            return Err(unsupported("a union with two arrays or two maps"));
        }
        Ok(self.push(Node::Union(out)))
    }

    fn record(&mut self, d: &Bound<'py, PyDict>) -> PyResult<Node> {
        let fields = d.get_item("fields")?.ok_or_else(|| unsupported("a record without fields"))?;
        let mut out = Vec::new();
        for f in fields.try_iter()? {
            let f = f?;
            let f = f.cast::<PyDict>().map_err(|_| unsupported("a field that is not a dict"))?;
            let name: String = f
                .get_item("name")?
                .ok_or_else(|| unsupported("a field without a name"))?
                .extract()
                .map_err(|_| unsupported("a non-string field name"))?;
            let ftype = f.get_item("type")?.ok_or_else(|| unsupported("a field without a type"))?;
            let node = self.compile(&ftype)?;
            let default = f.get_item("default")?.map(Bound::unbind);
            out.push(Field { key: PyString::intern(self.py, &name).unbind(), node, default });
        }
        Ok(Node::Record(out))
    }
}

/// Compile a schema parsed by fastavro's `parse_schema` (and checked by serdes' schema check).
/// Raises NotImplementedError for what the native encoder leaves to the pure one.
pub(crate) fn compile<'py>(
    py: Python<'py>,
    schema: &Bound<'py, PyAny>,
    logical_writers: &Bound<'py, PyDict>,
    fast_logical: &Bound<'py, PyDict>,
) -> PyResult<Program> {
    // node 0 is the string node map keys are encoded with (mod.rs: STRING_KEY)
    let mut c = Compiler {
        py,
        logical_writers: logical_writers.clone(),
        fast_logical: fast_logical.clone(),
        nodes: vec![Node::String],
        named: HashMap::new(),
        stack: Vec::new(),
        recursive: false,
        general_union: false,
        guard: Guard::here(),
    };
    let root = c.compile(schema)?;
    if c.nodes.iter().any(|n| matches!(n, Node::Pending)) {
        return Err(unsupported("this schema (a named type left unfinished)"));
    }
    Ok(Program { nodes: c.nodes, root, recursive: c.recursive, general_union: c.general_union })
}
