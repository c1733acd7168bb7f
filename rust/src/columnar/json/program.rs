//! A JSON Schema as the native JSON decoder runs it: one node per column, in pre-order, each with
//! the JSON Schema keywords that apply to its values.
//!
//! Python builds the program (`serdes/arrow/_native_json.py`) only for schemas whose every keyword
//! is in the subset implemented here, with jsonschema-rs' semantics (the per-record path's
//! validator): `type`, `properties`, `required`, `additionalProperties`, `items`, `enum`/`const`
//! of strings, integers, booleans and null, `minimum`/`maximum`/`exclusiveMinimum`/
//! `exclusiveMaximum` (compared exactly, as jsonschema-rs' `num_cmp` does), integer `multipleOf`,
//! `minLength`/`maxLength` (code points), `minItems`/`maxItems`. Nothing here interprets a schema:
//! the program is already the answer to "what may this column hold".
use std::collections::{HashMap, HashSet};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// A number as the schema or the record gives it: an integer (exactly) or a finite double.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

/// The exact order of `a` and `b` (both finite): no rounding of either to the other's type.
pub fn compare(a: Num, b: Num) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x.cmp(&y),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        (Num::Int(x), Num::Float(y)) => compare_int_float(x, y),
        (Num::Float(x), Num::Int(y)) => compare_int_float(y, x).reverse(),
    }
}

/// `x` against a finite double `y`, exactly.
fn compare_int_float(x: i64, y: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    // 2^63: every i64 is below it, and every double at or above it is an integer beyond i64
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if y >= TWO_63 {
        return Ordering::Less;
    }
    if y < -TWO_63 {
        return Ordering::Greater;
    }
    let whole = y.trunc();
    // exact: |whole| <= 2^63 and whole is an integer (-2^63 itself fits)
    match x.cmp(&(whole as i64)) {
        Ordering::Equal if y > whole => Ordering::Less,
        Ordering::Equal if y < whole => Ordering::Greater,
        other => other,
    }
}

/// What a column holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// `integer`: int64, from integer literals only
    Int,
    /// `number`: float64
    Float,
    /// `string`: utf8
    Str,
    /// `boolean`: bool
    Bool,
    /// an object with `properties`: a struct, strict (an undeclared property is not decoded here)
    Struct(Vec<Prop>),
    /// an array with one `items` schema: a list of the child node
    List(usize),
    /// an object with only `additionalProperties`: a map of utf8 keys to the child node
    Map(usize),
}

/// One declared property of an object node.
#[derive(Clone, Debug, PartialEq)]
pub struct Prop {
    pub name: Box<[u8]>,
    /// the name has no byte JSON must escape (quote, backslash, control): a key written without
    /// escapes has exactly its bytes
    pub plain: bool,
    /// `"name":` -- the name quoted and followed by its colon, as a plain name's key is written
    /// (orjson's and `json.dumps`' separators alike): the bytes the parser compares in place
    pub key: Box<[u8]>,
    pub child: usize,
    /// whether the property may be left out (then its column holds a null)
    pub absent_ok: bool,
}

/// The values an `enum` (with `const`: their intersection) admits, by JSON kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allowed {
    pub strings: HashSet<Box<[u8]>>,
    pub ints: HashSet<i64>,
    pub bools: Vec<bool>,
}

/// The keywords that apply to one node's non-null values (a `None`: the keyword is absent).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checks {
    pub minimum: Option<Num>,
    pub maximum: Option<Num>,
    pub exclusive_minimum: Option<Num>,
    pub exclusive_maximum: Option<Num>,
    /// a positive integer of at most 2^53 (jsonschema-rs then divides integers exactly)
    pub multiple_of: Option<i64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub allowed: Option<Allowed>,
    /// none of the above is given (the common case: nothing to check)
    pub none: bool,
}

impl Checks {
    pub fn number_ok(&self, v: Num) -> bool {
        use std::cmp::Ordering::{Greater, Less};
        if self.minimum.is_some_and(|m| compare(v, m) == Less)
            || self.maximum.is_some_and(|m| compare(v, m) == Greater)
            || self.exclusive_minimum.is_some_and(|m| compare(v, m) != Greater)
            || self.exclusive_maximum.is_some_and(|m| compare(v, m) != Less)
        {
            return false;
        }
        if let (Some(m), Num::Int(i)) = (self.multiple_of, v) {
            if i % m != 0 {
                return false;
            }
        }
        match (&self.allowed, v) {
            (None, _) => true,
            (Some(a), Num::Int(i)) => a.ints.contains(&i),
            // Python refuses an `enum` of numbers on a `number` node
            (Some(_), Num::Float(_)) => false,
        }
    }

    /// Whether `chars` code points fit `minLength`/`maxLength`.
    pub fn length_ok(&self, chars: u64) -> bool {
        self.min_length.is_none_or(|m| chars >= m) && self.max_length.is_none_or(|m| chars <= m)
    }

    pub fn counts_length(&self) -> bool {
        self.min_length.is_some() || self.max_length.is_some()
    }

    pub fn items_ok(&self, n: u64) -> bool {
        self.min_items.is_none_or(|m| n >= m) && self.max_items.is_none_or(|m| n <= m)
    }

    pub fn string_ok(&self, s: &[u8]) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.strings.contains(s))
    }

    pub fn bool_ok(&self, b: bool) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.bools.contains(&b))
    }
}

/// One column of the program.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub kind: Kind,
    /// the column's Arrow nullability (json_shape's rule)
    pub nullable: bool,
    /// whether a JSON `null` is accepted here: the column is nullable and, when the records are
    /// validated, the schema admits null (`type`, `enum`, `const`)
    pub null_ok: bool,
    /// the column's field name inside its parent (property name, `item`, `value`; the root: "")
    pub name: String,
    pub checks: Checks,
}

/// Property lookup of one object node: the next declared property is tried first (records are
/// usually written in schema order), then a map by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PropIndex {
    pub by_name: HashMap<Box<[u8]>, usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub nodes: Vec<Node>,
    /// per node: the property index of a struct node (empty for the others)
    pub index: Vec<PropIndex>,
    /// the deepest nesting of objects and arrays (the root object is 1)
    pub depth: usize,
}

/// Programs larger than this are not taken (a schema's size bounds it long before).
const MAX_NODES: usize = 1 << 16;

impl Program {
    /// The program of Python's node list: each node `(kind, nullable, null_ok, name, checks,
    /// children)` with `kind` one of `integer`, `number`, `string`, `boolean`, `struct`, `list`,
    /// `map`; `children` the child node index (`list`, `map`), a list of `(name, child,
    /// absent_ok)` (`struct`) or `None`; node 0 is the root, a struct.
    pub fn from_python(nodes: &Bound<'_, PyList>) -> PyResult<Program> {
        if nodes.len() > MAX_NODES || nodes.is_empty() {
            return Err(PyValueError::new_err("a JSON program of no nodes, or too many"));
        }
        let mut out = Vec::with_capacity(nodes.len());
        for item in nodes.iter() {
            let t = item.cast_into::<PyTuple>()?;
            let kind_name: String = t.get_item(0)?.extract()?;
            let nullable: bool = t.get_item(1)?.extract()?;
            let null_ok: bool = t.get_item(2)?.extract()?;
            let name: String = t.get_item(3)?.extract()?;
            let checks = checks_from(&t.get_item(4)?.cast_into::<PyDict>()?)?;
            let children = t.get_item(5)?;
            let kind = match kind_name.as_str() {
                "integer" => Kind::Int,
                "number" => Kind::Float,
                "string" => Kind::Str,
                "boolean" => Kind::Bool,
                "list" => Kind::List(children.extract()?),
                "map" => Kind::Map(children.extract()?),
                "struct" => {
                    let props: Vec<(String, usize, bool)> = children.extract()?;
                    Kind::Struct(
                        props
                            .into_iter()
                            .map(|(n, child, absent_ok)| Prop {
                                plain: n.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\'),
                                key: format!("\"{n}\":").into_bytes().into(),
                                name: n.into_bytes().into(),
                                child,
                                absent_ok,
                            })
                            .collect(),
                    )
                }
                other => return Err(PyValueError::new_err(format!("not a JSON program node kind: {other}"))),
            };
            out.push(Node { kind, nullable, null_ok: null_ok && nullable, name, checks });
        }
        // a property may be left out only where its column can hold the null
        let nullable: Vec<bool> = out.iter().map(|n| n.nullable).collect();
        for node in &mut out {
            if let Kind::Struct(props) = &mut node.kind {
                for p in props {
                    p.absent_ok = p.absent_ok && nullable.get(p.child).copied().unwrap_or(false);
                }
            }
        }
        Program::new(out).map_err(PyValueError::new_err)
    }

    /// Checks the tree: children after their parent (so no cycles), each node used once, the root
    /// a struct; computes the depth and the property indexes.
    pub fn new(nodes: Vec<Node>) -> Result<Program, String> {
        let n = nodes.len();
        if !matches!(nodes.first().map(|x| &x.kind), Some(Kind::Struct(_))) {
            return Err("the root of a JSON program is not a struct".into());
        }
        let mut parent_depth = vec![0usize; n];
        let mut used = vec![false; n];
        parent_depth[0] = 0;
        used[0] = true;
        let mut depth = 0;
        let mut index = Vec::with_capacity(n);
        for (i, node) in nodes.iter().enumerate() {
            let children: Vec<usize> = match &node.kind {
                Kind::Struct(props) => props.iter().map(|p| p.child).collect(),
                Kind::List(c) | Kind::Map(c) => vec![*c],
                _ => Vec::new(),
            };
            let here =
                parent_depth[i] + usize::from(matches!(node.kind, Kind::Struct(_) | Kind::List(_) | Kind::Map(_)));
            depth = depth.max(here);
            for c in children {
                if c <= i || c >= n || used[c] {
                    return Err(format!("JSON program node {i} has a bad child {c}"));
                }
                used[c] = true;
                parent_depth[c] = here;
            }
            let mut by_name = HashMap::new();
            if let Kind::Struct(props) = &node.kind {
                for (k, p) in props.iter().enumerate() {
                    if by_name.insert(p.name.clone(), k).is_some() {
                        return Err(format!("JSON program node {i} declares a property twice"));
                    }
                }
            }
            index.push(PropIndex { by_name });
        }
        if used.iter().any(|u| !u) {
            return Err("a JSON program node no node refers to".into());
        }
        Ok(Program { nodes, index, depth })
    }

    /// Whether `other` writes the same columns (kinds, names, nullability, in the same order):
    /// programs of several schema ids then fill one set of columns.
    pub fn same_columns(&self, other: &Program) -> bool {
        self.nodes.len() == other.nodes.len()
            && self.nodes.iter().zip(&other.nodes).all(|(a, b)| {
                let kinds = match (&a.kind, &b.kind) {
                    (Kind::Struct(x), Kind::Struct(y)) => {
                        x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.name == q.name && p.child == q.child)
                    }
                    (x, y) => x == y,
                };
                kinds && a.nullable == b.nullable && a.name == b.name
            })
    }
}

fn num_from(v: &Bound<'_, PyAny>) -> PyResult<Num> {
    // ("int", value) or ("float", value): Python says which, so a bool or a float never passes
    // for the other
    let (tag, value): (String, Bound<'_, PyAny>) = v.extract()?;
    match tag.as_str() {
        "int" => Ok(Num::Int(value.extract()?)),
        "float" => {
            let f: f64 = value.extract()?;
            if f.is_finite() {
                Ok(Num::Float(f))
            } else {
                Err(PyValueError::new_err("a JSON program limit that is not finite"))
            }
        }
        _ => Err(PyValueError::new_err(format!("not a JSON program number tag: {tag}"))),
    }
}

fn checks_from(d: &Bound<'_, PyDict>) -> PyResult<Checks> {
    let mut c = Checks::default();
    for (k, v) in d.iter() {
        let key: String = k.extract()?;
        match key.as_str() {
            "minimum" => c.minimum = Some(num_from(&v)?),
            "maximum" => c.maximum = Some(num_from(&v)?),
            "exclusiveMinimum" => c.exclusive_minimum = Some(num_from(&v)?),
            "exclusiveMaximum" => c.exclusive_maximum = Some(num_from(&v)?),
            "multipleOf" => {
                let m: i64 = v.extract()?;
                if !(1..=(1i64 << 53)).contains(&m) {
                    return Err(PyValueError::new_err("a JSON program multipleOf outside 1..=2^53"));
                }
                c.multiple_of = Some(m);
            }
            "minLength" => c.min_length = Some(v.extract()?),
            "maxLength" => c.max_length = Some(v.extract()?),
            "minItems" => c.min_items = Some(v.extract()?),
            "maxItems" => c.max_items = Some(v.extract()?),
            "allowed" => {
                let (strings, ints, bools): (Vec<String>, Vec<i64>, Vec<bool>) = v.extract()?;
                c.allowed = Some(Allowed {
                    strings: strings.into_iter().map(|s| s.into_bytes().into()).collect(),
                    ints: ints.into_iter().collect(),
                    bools,
                });
            }
            other => return Err(PyValueError::new_err(format!("not a JSON program check: {other}"))),
        }
    }
    c.none = c == Checks { none: c.none, ..Checks::default() };
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::*;

    #[test]
    fn mixed_comparisons_are_exact() {
        assert_eq!(compare(Num::Int(0), Num::Float(0.5)), Less);
        assert_eq!(compare(Num::Int(1), Num::Float(0.5)), Greater);
        assert_eq!(compare(Num::Int(-1), Num::Float(-0.5)), Less);
        assert_eq!(compare(Num::Int(-1), Num::Float(-1.5)), Greater);
        assert_eq!(compare(Num::Int(3), Num::Float(3.0)), Equal);
        // 2^53 + 1 is not the double 2^53, which it rounds to
        assert_eq!(compare(Num::Int((1 << 53) + 1), Num::Float(9_007_199_254_740_992.0)), Greater);
        assert_eq!(compare(Num::Int(i64::MAX), Num::Float(9_223_372_036_854_775_808.0)), Less);
        assert_eq!(compare(Num::Int(i64::MIN), Num::Float(-9_223_372_036_854_775_808.0)), Equal);
        assert_eq!(compare(Num::Int(i64::MIN), Num::Float(-1e300)), Greater);
        assert_eq!(compare(Num::Float(0.5), Num::Int(0)), Greater);
        assert_eq!(compare(Num::Float(-0.0), Num::Float(0.0)), Equal);
    }
}
