//! The decoder program: the node arena a (writer, reader) schema pair compiles to, once.
//!
//! `serdes/avro/_native_decoder.py` takes every resolution decision (fastavro's matching rules,
//! promotions, reader defaults, enum defaults, union branch choice, `return_record_name`, which
//! records are depth-checked) and hands over a list of node tuples; this module checks that list
//! (every index in range, every tag known) and turns it into [`Program`], which `decode.rs` runs.
//! Nodes refer to each other by index, so recursive named types are cycles in the arena, not in
//! the Rust data structure. Nothing here depends on payload bytes.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple, PyType};

use crate::stack::Guard;

// node opcodes and post-processing kinds: serdes/_native_opcodes.py has the same table (checked
// when the extension loads)
opcodes!(
    NODE_OPCODES:
    NULL, BOOL, LONG, FLOAT, DOUBLE, STRING, BYTES, FIXED, ENUM, ARRAY, MAP, UNION, RECORD, MISMATCH
);
opcodes!(
    POST_OPCODES:
    P_NONE, P_FLOAT, P_ENCODE, P_DECODE, P_TS_MS, P_TS_US, P_LTS_MS, P_LTS_US, P_DATE, P_UUID, P_DECIMAL, P_CALL,
    P_NEW
);

/// What is done to a value after it is read: a logical type of the writer schema, or a promotion
/// to the reader's type.
pub enum Post {
    None,
    ToFloat,
    Encode,
    Decode,
    TimestampMillis,
    TimestampMicros,
    LocalTimestampMillis,
    LocalTimestampMicros,
    Date,
    /// `cls(value)` (uuid.UUID); a canonical string is built natively as `cls(int=...)` with
    /// `is_safe` set as the constructor sets it
    Uuid {
        cls: Py<PyType>,
        is_safe: Py<PyAny>,
    },
    /// `create_decimal(int.from_bytes(v, "big", signed=True)).scaleb(neg_scale, ctx)`, built as
    /// `Decimal("<unscaled>E<neg_scale>")` when that is the same value. A value longer than
    /// `max_len` bytes (`bytes` decimals; `None`: fixed) or with more than `prec` digits is the
    /// error `spec` (serdes.avro._runtime.DecimalSpec) builds: `too_long(n)`, `too_many_digits()`,
    /// `check(int)`.
    Decimal {
        create: Py<PyAny>,
        neg_scale: Py<PyAny>,
        ctx: Py<PyAny>,
        dtype: Py<PyAny>,
        prec: u32,
        neg_scale_i: i64,
        max_len: Option<usize>,
        spec: Py<PyAny>,
    },
    /// a logical reader that is not fastavro's built-in one: `fn(value, writer, reader)`
    Call3(Py<PyAny>, Py<PyAny>, Py<PyAny>),
    /// a typed record (serdes.avro._typed) from the record's dict: a new `cls` object with the
    /// dict as its `__dict__` (`set_dict`: a plain dataclass), else `cls(**dict)`
    New {
        cls: Py<PyType>,
        set_dict: bool,
    },
}

pub struct Branch {
    /// the node decoding this branch, or `None`: the branch never resolves (`mismatch` says why)
    pub node: Option<usize>,
    /// `return_record_name`: the value becomes `(name, value)`
    pub name: Option<Py<PyString>>,
    pub mismatch: Option<String>,
}

pub enum Action {
    /// decode node into the record's dict under `keys[slot]`
    Read(usize, usize),
    /// a writer field the reader does not have
    Skip(usize),
}

pub struct Default {
    pub slot: usize,
    pub value: Py<PyAny>,
    /// dict/list defaults: the function returning a fresh copy per record (as the generated
    /// decoder does; serdes.avro._runtime.default_copier); `None`: an immutable value, shared
    pub copier: Option<Py<PyAny>>,
}

pub enum Kind {
    Null,
    Bool,
    Long,
    Float,
    Double,
    Str,
    Bytes,
    Fixed(usize),
    Enum {
        symbols: Vec<Option<Py<PyAny>>>,
        missing: Vec<Option<String>>,
    },
    Array {
        item: usize,
        item_min: bool,
        item_empty: bool,
    },
    Map {
        value: usize,
    },
    Union(Vec<Branch>),
    Record {
        keys: Vec<Py<PyString>>,
        actions: Vec<Action>,
        defaults: Vec<Default>,
        /// the items all copies of `defaults` create, charged to the items budget per record
        default_items: i128,
        mismatch: Option<String>,
        depth_check: bool,
    },
    Mismatch(String),
}

impl Kind {
    /// Reading a value of this kind reads values of other nodes (recurses): it checks the stack.
    #[inline(always)]
    pub fn nests(&self) -> bool {
        matches!(self, Kind::Array { .. } | Kind::Map { .. } | Kind::Union(_) | Kind::Record { .. })
    }
}

pub struct Node {
    pub kind: Kind,
    pub post: Post,
}

pub struct Program {
    pub nodes: Vec<Node>,
    pub root: usize,
}

fn bad(msg: &str) -> PyErr {
    PyValueError::new_err(format!("invalid serdes Avro decoder program: {msg}"))
}

fn item<'py>(t: &Bound<'py, PyTuple>, i: usize) -> PyResult<Bound<'py, PyAny>> {
    t.get_item(i).map_err(|_| bad("node tuple too short"))
}

fn parse_post(p: &Bound<'_, PyAny>) -> PyResult<Post> {
    let t = p.cast::<PyTuple>().map_err(|_| bad("post is not a tuple"))?;
    let tag: u8 = item(t, 0)?.extract()?;
    Ok(match tag {
        P_NONE => Post::None,
        P_FLOAT => Post::ToFloat,
        P_ENCODE => Post::Encode,
        P_DECODE => Post::Decode,
        P_TS_MS => Post::TimestampMillis,
        P_TS_US => Post::TimestampMicros,
        P_LTS_MS => Post::LocalTimestampMillis,
        P_LTS_US => Post::LocalTimestampMicros,
        P_DATE => Post::Date,
        P_UUID => Post::Uuid { cls: item(t, 1)?.cast::<PyType>()?.clone().unbind(), is_safe: item(t, 2)?.unbind() },
        P_DECIMAL => {
            let neg_scale = item(t, 2)?;
            let neg_scale_i: i64 = neg_scale.extract()?;
            let prec: i64 = item(t, 5)?.extract()?;
            let max_len: i64 = item(t, 6)?.extract()?;
            Post::Decimal {
                max_len: usize::try_from(max_len).ok(),
                spec: item(t, 7)?.unbind(),
                create: item(t, 1)?.unbind(),
                neg_scale_i,
                neg_scale: neg_scale.unbind(),
                ctx: item(t, 3)?.unbind(),
                dtype: item(t, 4)?.unbind(),
                prec: prec.clamp(0, 1 << 20) as u32,
            }
        }
        P_CALL => Post::Call3(item(t, 1)?.unbind(), item(t, 2)?.unbind(), item(t, 3)?.unbind()),
        P_NEW => Post::New {
            cls: item(t, 1)?.cast_into::<PyType>().map_err(|_| bad("typed record class is not a type"))?.unbind(),
            set_dict: item(t, 2)?.is_truthy()?,
        },
        _ => return Err(bad("unknown post tag")),
    })
}

fn index(v: &Bound<'_, PyAny>, n: usize) -> PyResult<usize> {
    let i: i64 = v.extract()?;
    if i < 0 || i as u64 >= n as u64 {
        return Err(bad("node index out of range"));
    }
    Ok(i as usize)
}

fn opt_str(v: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if v.is_none() {
        Ok(None)
    } else {
        Ok(Some(v.extract()?))
    }
}

impl Program {
    pub fn compile(py: Python<'_>, nodes: &Bound<'_, PyList>, root: usize) -> PyResult<Program> {
        let n = nodes.len();
        if root >= n {
            return Err(bad("root out of range"));
        }
        let mut out = Vec::with_capacity(n);
        for node in nodes.iter() {
            let t = node.cast::<PyTuple>().map_err(|_| bad("node is not a tuple"))?;
            let op: u8 = item(t, 0)?.extract()?;
            let post = parse_post(&item(t, 1)?)?;
            let kind = match op {
                NULL => Kind::Null,
                BOOL => Kind::Bool,
                LONG => Kind::Long,
                FLOAT => Kind::Float,
                DOUBLE => Kind::Double,
                STRING => Kind::Str,
                BYTES => Kind::Bytes,
                FIXED => Kind::Fixed(item(t, 2)?.extract()?),
                ENUM => {
                    let syms = item(t, 2)?;
                    let miss = item(t, 3)?;
                    let mut symbols = Vec::new();
                    for s in syms.try_iter()? {
                        let s = s?;
                        // a symbol (interned), or the member of a typed record's enum class
                        symbols.push(if s.is_none() {
                            None
                        } else if s.is_exact_instance_of::<PyString>() {
                            Some(PyString::intern(py, &s.extract::<String>()?).into_any().unbind())
                        } else {
                            Some(s.unbind())
                        });
                    }
                    let mut missing = Vec::new();
                    for m in miss.try_iter()? {
                        missing.push(opt_str(&m?)?);
                    }
                    if missing.len() != symbols.len() {
                        return Err(bad("enum tables differ in length"));
                    }
                    Kind::Enum { symbols, missing }
                }
                ARRAY => {
                    let item_node = index(&item(t, 2)?, n)?;
                    let item_min: i64 = item(t, 3)?.extract()?;
                    Kind::Array { item: item_node, item_min: item_min != 0, item_empty: false }
                }
                MAP => Kind::Map { value: index(&item(t, 2)?, n)? },
                UNION => {
                    let mut branches = Vec::new();
                    for b in item(t, 2)?.try_iter()? {
                        let b = b?;
                        let b = b.cast::<PyTuple>().map_err(|_| bad("branch is not a tuple"))?;
                        let node_i: i64 = item(b, 0)?.extract()?;
                        let node = if node_i < 0 { None } else { Some(index(&item(b, 0)?, n)?) };
                        let name = item(b, 1)?;
                        let name = if name.is_none() {
                            None
                        } else {
                            Some(PyString::intern(py, &name.extract::<String>()?).unbind())
                        };
                        let mismatch = opt_str(&item(b, 2)?)?;
                        if node.is_none() && mismatch.is_none() {
                            return Err(bad("branch without node or mismatch"));
                        }
                        branches.push(Branch { node, name, mismatch });
                    }
                    Kind::Union(branches)
                }
                RECORD => {
                    let mut keys = Vec::new();
                    for k in item(t, 2)?.try_iter()? {
                        keys.push(PyString::intern(py, &k?.extract::<String>()?).unbind());
                    }
                    let mut actions = Vec::new();
                    for a in item(t, 3)?.try_iter()? {
                        let a = a?;
                        let a = a.cast::<PyTuple>().map_err(|_| bad("action is not a tuple"))?;
                        let node = index(&item(a, 0)?, n)?;
                        let slot: i64 = item(a, 1)?.extract()?;
                        if slot < 0 {
                            actions.push(Action::Skip(node));
                        } else if (slot as u64) < keys.len() as u64 {
                            actions.push(Action::Read(node, slot as usize));
                        } else {
                            return Err(bad("record slot out of range"));
                        }
                    }
                    let mut defaults = Vec::new();
                    let mut default_items: i128 = 0;
                    for d in item(t, 4)?.try_iter()? {
                        let d = d?;
                        let d = d.cast::<PyTuple>().map_err(|_| bad("default is not a tuple"))?;
                        let slot = index(&item(d, 0)?, keys.len())?;
                        let copier = item(d, 2)?;
                        let items: i64 = item(d, 3)?.extract()?;
                        if items < 0 {
                            return Err(bad("negative default items"));
                        }
                        default_items += items as i128;
                        let copier = if copier.is_none() { None } else { Some(copier.unbind()) };
                        defaults.push(Default { slot, value: item(d, 1)?.unbind(), copier });
                    }
                    let mismatch = opt_str(&item(t, 5)?)?;
                    let depth_check = item(t, 6)?.is_truthy()?;
                    Kind::Record { keys, actions, defaults, default_items, mismatch, depth_check }
                }
                MISMATCH => Kind::Mismatch(item(t, 2)?.extract()?),
                _ => return Err(bad("unknown opcode")),
            };
            out.push(Node { kind, post });
        }
        let mut prog = Program { nodes: out, root };
        prog.mark_empty();
        Ok(prog)
    }

    /// Skipping a value of this node reads no bytes and checks nothing (null, a record of such
    /// fields without a depth check): an array of them needs no per-item loop when skipped (the
    /// count was charged to the items budget), as in the generated skip code. `false` is always
    /// correct (the items are walked): the answer when the stack is too short to look further.
    fn skip_is_empty(&self, i: usize, seen: &mut Vec<bool>, guard: &Guard) -> bool {
        if seen[i] || !guard.ok() {
            return false;
        }
        seen[i] = true;
        let r = match &self.nodes[i].kind {
            Kind::Null => true,
            Kind::Record { actions, depth_check: false, .. } => actions.iter().all(|a| match a {
                Action::Skip(j) | Action::Read(j, _) => self.skip_is_empty(*j, seen, guard),
            }),
            _ => false,
        };
        seen[i] = false;
        r
    }

    fn mark_empty(&mut self) {
        let n = self.nodes.len();
        let mut seen = vec![false; n];
        let guard = Guard::here();
        for i in 0..n {
            let e = match &self.nodes[i].kind {
                Kind::Array { item, .. } => self.skip_is_empty(*item, &mut seen, &guard),
                _ => continue,
            };
            if let Kind::Array { item_empty, .. } = &mut self.nodes[i].kind {
                *item_empty = e;
            }
        }
    }
}
