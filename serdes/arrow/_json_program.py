"""JSON Schemas as programs of serdes' native columnar JSON decoder (``rust/src/columnar/json/``),
and the calls into it. (The program format: rust/build.rs hashes this module into the
extension's ABI version, so a build from other sources is refused at import.)

**The subset** (:func:`compile_program`): a schema compiles only when every keyword it applies is
one whose jsonschema-rs semantics ``rust/src/columnar/json/`` implements exactly: ``type``,
``properties``, ``required``, ``additionalProperties``, ``items`` (one schema), ``enum``/``const``
of strings, integers, booleans and null, ``minimum``/``maximum``/``exclusiveMinimum``/
``exclusiveMaximum``, integer ``multipleOf`` of integers, ``minLength``/``maxLength``,
``minItems``/``maxItems``, ``uniqueItems: false``, ``oneOf``/``anyOf`` of one schema and
``{"type": "null"}``, local ``$ref`` (``#/...``, without sibling keywords), annotations
(``title``, ``description``, ``format`` -- not asserted by the per-record path either --,
``default``, ...), and keywords no draft defines (every validator ignores them). Drafts 6, 7,
2019-09 and 2020-12 (draft 4 reads ``exclusiveMinimum`` otherwise). Everything else -- ``pattern``,
``patternProperties``, ``if``/``then``/``else``, ``allOf``, ``not``, ``dependencies``,
``unevaluated*``, ``contains``, ``uniqueItems: true``, ``propertyNames``, ``min/maxProperties``,
``content*``, remote or registry references, ``$id`` below the root, numbers beyond int64 in a
keyword, ``enum`` of floats or containers -- keeps the schema on the per-record path. Without
validation (``validate: False``) only the columns matter.

The program's structure follows :func:`serdes.arrow._json.json_shape` rule for rule, and its Arrow
type (:func:`program_type`) is compared with the reader's before it is used.
"""


from __future__ import annotations

import math
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import pyarrow as pa

from .._limits import Limits

__all__ = ["Refused", "compile_program", "program_type", "JsonColumnsDecoder", "Decoded"]

#: keywords that never change a verdict: annotations, and containers of definitions
_ANNOTATIONS = frozenset({
    "title", "description", "$comment", "examples", "default", "format", "readOnly", "writeOnly",
    "deprecated", "definitions", "$defs",
})
#: every keyword some draft defines (and jsonschema-rs implements); a key outside this set is an
#: unknown keyword, which validators ignore
_KEYWORDS = frozenset({
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "items", "additionalItems", "prefixItems", "maxItems", "minItems",
    "uniqueItems", "contains", "maxContains", "minContains", "maxProperties", "minProperties", "required",
    "properties", "patternProperties", "additionalProperties", "dependencies", "dependentRequired",
    "dependentSchemas", "propertyNames", "if", "then", "else", "allOf", "anyOf", "oneOf", "not",
    "contentEncoding", "contentMediaType", "contentSchema", "$ref", "$dynamicRef", "$recursiveRef", "$id",
    "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$schema", "$vocabulary",
    "unevaluatedItems", "unevaluatedProperties",
}) | _ANNOTATIONS
#: the keywords the native decoder implements
_SUPPORTED = frozenset({
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "items", "maxItems", "minItems", "uniqueItems", "required", "properties",
    "additionalProperties", "oneOf", "anyOf", "$ref",
})
_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_INT64 = (-(1 << 63), (1 << 63) - 1)


class Refused(Exception):
    """The schema (or this deserializer's decoder for it) is not one the native decoder takes;
    the message says why."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any, what: str) -> Tuple[str, Any]:
    """A keyword's number as the program carries it: ``("int", v)`` or ``("float", v)``."""
    if _is_int(v):
        if not _INT64[0] <= v <= _INT64[1]:
            raise Refused(f"{what} {v} is beyond int64")
        return ("int", v)
    if isinstance(v, float) and math.isfinite(v):
        return ("float", v)
    raise Refused(f"{what} {v!r} is not a finite number")


def _count(v: Any, what: str) -> int:
    if not _is_int(v) or not 0 <= v <= _INT64[1]:
        raise Refused(f"{what} {v!r} is not a non-negative integer")
    return int(v)


class _Compiler:
    """One schema's program: nodes in pre-order, as ``rust/src/columnar/json/program.rs`` reads
    them. The structure follows :func:`serdes.arrow._json.json_shape` rule for rule (the caller
    compares the resulting Arrow type with the reader's)."""

    def __init__(self, root: Dict[str, Any], validate: bool, max_depth: int, max_nodes: int) -> None:
        self.root = root
        self.validate = validate
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.nodes: List[Tuple[Any, ...]] = []

    def resolve(self, s: Any, refs: Tuple[str, ...]) -> Tuple[Dict[str, Any], Tuple[str, ...]]:
        while isinstance(s, dict) and "$ref" in s:
            ref = s["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#/") or "%" in ref:
                raise Refused(f"$ref {ref!r}: only local JSON pointers (#/...) are decoded natively")
            if ref in refs:
                raise Refused(f"$ref {ref} refers to itself")
            if self.validate:
                # drafts 6 and 7 ignore a $ref's siblings, 2019-09 and later apply them: neither here
                root_only = ("$schema", "$id") if s is self.root else ()
                siblings = [k for k in s if k != "$ref" and k in _KEYWORDS and k not in _ANNOTATIONS
                            and k not in root_only]
                if siblings:
                    raise Refused(f"$ref {ref} with the keywords {sorted(siblings)} beside it")
            refs = refs + (ref,)
            node: Any = self.root
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(node, dict) or part not in node:
                    raise Refused(f"$ref {ref} names nothing in the schema")
                node = node[part]
                if isinstance(node, dict) and isinstance(node.get("$id"), str):
                    # a resource of its own: its references resolve against its $id
                    raise Refused(f"$ref {ref} passes through a schema with an $id")
            s = node
        if not isinstance(s, dict):
            raise Refused(f"a schema node that is not an object: {s!r}"[:120])
        return s, refs

    def keywords(self, s: Dict[str, Any]) -> None:
        """Refuse a node applying a keyword outside the subset."""
        for k in s:
            if k in _SUPPORTED or k in _ANNOTATIONS or k not in _KEYWORDS:
                continue
            if s is self.root and k in ("$schema", "$id"):
                continue
            raise Refused(f"the keyword {k!r} is left to the per-record path")

    def node(self, s: Any, refs: Tuple[str, ...], depth: int, name: str, column_nullable: bool) -> int:
        """Add the node of schema ``s`` (column ``name``) and its subtree; returns its index.
        ``column_nullable``: the Arrow field's nullability, which the parent decides."""
        if depth > self.max_depth:
            raise Refused(f"the schema nests more than {self.max_depth} levels (max_depth)")
        s, refs = self.resolve(s, refs)
        if self.validate:
            self.keywords(s)
        for combinator in ("oneOf", "anyOf"):
            if combinator in s:
                return self.nullable_alternative(s, combinator, refs, depth, name, column_nullable)
        t = s.get("type")
        types: List[Any] = list(t) if isinstance(t, list) else [t]
        if self.validate and t is not None and (
                not all(isinstance(x, str) and x in _TYPES for x in types) or len(set(types)) != len(types)):
            raise Refused(f"type {t!r}")
        type_null = t is None or "null" in types
        types = [x for x in types if x != "null"]
        allowed, enum_null = self.allowed(s)
        null_ok = column_nullable and (not self.validate or (type_null and enum_null))
        if "enum" in s and t is None:
            kinds = {type(x) for x in s["enum"] if x is not None} if isinstance(s["enum"], list) else set()
            if kinds != {str}:
                raise Refused(f"{name}: an enum without a type that is not of strings")
            return self.add("string", column_nullable, null_ok, name, self.checks(s, "string", allowed))
        if len(types) != 1 or types[0] is None:
            raise Refused(f"{name or 'the schema'} has no single type")
        kind = types[0]
        if kind in ("integer", "number", "string", "boolean"):
            return self.add(kind, column_nullable, null_ok, name, self.checks(s, kind, allowed))
        if kind == "array":
            items = s.get("items")
            if not isinstance(items, dict):
                raise Refused(f"{name}: an array without one items schema")
            at = self.add("list", column_nullable, null_ok, name, self.checks(s, kind, allowed), None)
            item_nullable = self.type_nullable(items, refs)
            child = self.node(items, refs, depth + 1, "item", item_nullable)
            self.nodes[at] = self.nodes[at][:5] + (child,)
            return at
        if kind == "object":
            props = s.get("properties")
            extra = s.get("additionalProperties")
            checks = self.checks(s, kind, allowed)
            if not props and isinstance(extra, dict):
                if self.validate and s.get("required"):
                    raise Refused(f"{name}: required keys of a map")
                at = self.add("map", column_nullable, null_ok, name, checks, None)
                child = self.node(extra, refs, depth + 1, "value", self.type_nullable(extra, refs))
                self.nodes[at] = self.nodes[at][:5] + (child,)
                return at
            if not isinstance(props, dict) or not props:
                raise Refused(f"{name}: an object without properties")
            required = s.get("required", [])
            if not isinstance(required, list) or self.validate and not all(
                    isinstance(r, str) and r in props for r in required):
                raise Refused(f"{name}: required {required!r} is not a list of the declared properties")
            required_set = set(required)
            at = self.add("struct", column_nullable, null_ok, name, checks, None)
            children: List[Tuple[str, int, bool]] = []
            for prop, sub in props.items():
                nullable = self.type_nullable(sub, refs) or prop not in required_set
                child = self.node(sub, refs, depth + 1, prop, nullable)
                absent_ok = nullable and not (self.validate and prop in required_set)
                children.append((prop, child, absent_ok))
            self.nodes[at] = self.nodes[at][:5] + (children,)
            return at
        raise Refused(f"{name}: type {kind!r}")

    def nullable_alternative(self, s: Dict[str, Any], combinator: str, refs: Tuple[str, ...], depth: int,
                             name: str, column_nullable: bool) -> int:
        """``oneOf``/``anyOf`` of one schema and, optionally, ``{"type": "null"}``: that schema,
        nullable. (Of the two, only a null is valid under the null branch, and the other schema
        admits no null: the verdicts of oneOf and anyOf are the same.)"""
        alts = s[combinator]
        if not isinstance(alts, list) or not 1 <= len(alts) <= 2:
            raise Refused(f"{name}: {combinator} of other than one schema and null")
        if self.validate and any(k in _KEYWORDS and k not in _ANNOTATIONS and k != combinator for k in s):
            raise Refused(f"{name}: {combinator} with other keywords beside it")
        resolved = [self.resolve(a, refs)[0] for a in alts]
        nulls = [r for r in resolved if r.get("type") == "null"]
        others = [a for a, r in zip(alts, resolved, strict=True) if r.get("type") != "null"]
        if len(others) != 1:
            raise Refused(f"{name}: {combinator} of several types")
        for r in nulls:
            if self.validate and any(k in _KEYWORDS and k not in _ANNOTATIONS and k != "type" for k in r):
                raise Refused(f"{name}: a null alternative with other keywords")
        has_null = bool(nulls)
        at = self.node(others[0], refs, depth, name, column_nullable or has_null)
        kind, nullable, null_ok, node_name, checks = self.nodes[at][:5]
        if self.validate and self.admits_null(others[0], refs) and has_null:
            raise Refused(f"{name}: {combinator} of two schemas that both admit null")
        if has_null:
            null_ok = nullable  # the null branch admits it
        self.nodes[at] = (kind, nullable, null_ok, node_name, checks) + self.nodes[at][5:]
        return at

    def type_nullable(self, s: Any, refs: Tuple[str, ...]) -> bool:
        """json_shape's nullability of a value of schema ``s``: its type (or an enum without one,
        or a oneOf/anyOf branch) allows null."""
        r, _ = self.resolve(s, refs)
        for combinator in ("oneOf", "anyOf"):
            alts = r.get(combinator)
            if isinstance(alts, list):
                return any(self.resolve(a, refs)[0].get("type") == "null" for a in alts)
        t = r.get("type")
        if "enum" in r and t is None:
            return isinstance(r["enum"], list) and None in r["enum"]
        return isinstance(t, list) and "null" in t

    def admits_null(self, s: Any, refs: Tuple[str, ...]) -> bool:
        """Whether the validator accepts a null under ``s`` (its type and enum/const allow it)."""
        r, _ = self.resolve(s, refs)
        t = r.get("type")
        if t is not None and not (t == "null" or isinstance(t, list) and "null" in t):
            return False
        return self.allowed(r)[1]

    def allowed(self, s: Dict[str, Any]) -> Tuple[Optional[Tuple[List[str], List[int], List[bool]]], bool]:
        """``enum``/``const`` as the program's ``allowed`` (strings, integers, booleans; ``None``
        when neither is given) and whether they allow null. Other values are refused (jsonschema-rs
        compares numbers across int and float, which the program does not)."""
        if not self.validate:
            return None, True
        sets = []
        for key in ("enum", "const"):
            if key not in s:
                continue
            values = s[key] if key == "enum" else [s[key]]
            if not isinstance(values, list):
                raise Refused(f"{key} {values!r}")
            typed = set()
            for v in values:
                if v is None or isinstance(v, (bool, str)) or _is_int(v) and _INT64[0] <= v <= _INT64[1]:
                    typed.add((type(v).__name__, v))  # (True and 1 are different values here)
                else:
                    raise Refused(f"{key} value {v!r} is left to the per-record path")
            sets.append(typed)
        if not sets:
            return None, True
        both = sets[0] if len(sets) == 1 else sets[0] & sets[1]
        strings = sorted(v for k, v in both if k == "str")
        ints = sorted(v for k, v in both if k == "int")
        bools = sorted(v for k, v in both if k == "bool")
        return (strings, ints, bools), ("NoneType", None) in both

    def checks(self, s: Dict[str, Any], kind: str, allowed: Any) -> Dict[str, Any]:
        """The keywords that apply to the node's non-null values, for ``kind``."""
        out: Dict[str, Any] = {}
        if not self.validate:
            return out
        if allowed is not None:
            if kind in ("array", "object"):
                raise Refused(f"enum/const on an {kind}")
            out["allowed"] = allowed
        if kind in ("integer", "number"):
            for k in _BOUNDS:
                if k in s:
                    out[k] = _number(s[k], k)
            if "multipleOf" in s:
                m = s["multipleOf"]
                if kind != "integer" or not _is_int(m) or not 1 <= m <= 1 << 53:
                    raise Refused(f"multipleOf {m!r} on a {kind} (only integer divisors of integers)")
                out["multipleOf"] = m
        elif kind == "string":
            for k in ("minLength", "maxLength"):
                if k in s:
                    out[k] = _count(s[k], k)
        elif kind == "array":
            for k in ("minItems", "maxItems"):
                if k in s:
                    out[k] = _count(s[k], k)
            if s.get("uniqueItems", False) is not False:
                raise Refused("uniqueItems")
        return out

    def add(self, kind: str, nullable: bool, null_ok: bool, name: str, checks: Dict[str, Any],
            children: Any = None) -> int:
        if len(self.nodes) >= self.max_nodes:
            # (references shared by many properties multiply: the bound keeps that linear)
            raise Refused(f"the schema has more than {self.max_nodes} columns (max_fields)")
        self.nodes.append((kind, nullable, null_ok, name, checks, children))
        return len(self.nodes) - 1


def compile_program(schema: Any, validate: bool, limits: Limits) -> List[Tuple[Any, ...]]:
    """The native program of JSON Schema ``schema`` (a dict, the root an object): its nodes in
    pre-order, each ``(kind, nullable, null_ok, name, checks, children)``. Raises :class:`Refused`
    for a schema outside the subset (module docstring) when ``validate``; without validation only
    the columns matter."""
    from ..json._validator import _root_draft
    import jsonschema_rs

    if not isinstance(schema, dict):
        raise Refused("a JSON Schema that is not an object")
    if validate and _root_draft(schema) == jsonschema_rs.Draft4:
        raise Refused("draft 4 (boolean exclusiveMinimum/Maximum) is left to the per-record path")
    c = _Compiler(schema, validate, min(limits.max_depth, limits.max_schema_depth), limits.max_fields)
    c.node(schema, (), 1, "", False)
    if c.nodes[0][0] != "struct":
        raise Refused("the schema is not an object of properties")
    return c.nodes


def program_type(nodes: List[Tuple[Any, ...]], at: int = 0) -> pa.DataType:
    """The Arrow type a program's node fills (the Rust side builds the same)."""
    kind, _, _, _, _, children = nodes[at]
    scalar = {"integer": pa.int64(), "number": pa.float64(), "string": pa.utf8(), "boolean": pa.bool_()}
    if kind in scalar:
        return scalar[kind]
    if kind == "list":
        return pa.list_(pa.field("item", program_type(nodes, children), nodes[children][1]))
    if kind == "map":
        return pa.map_(pa.field("key", pa.utf8(), False),
                       pa.field("value", program_type(nodes, children), nodes[children][1]))
    return pa.struct([pa.field(n, program_type(nodes, c), nodes[c][1]) for n, c, _ in children])




class Decoded(NamedTuple):
    """One call of the native decoder: ``array`` (every frame's row), or ``None`` and why: the
    frame that stopped it (``at``, or ``None``) and ``why``; ``missing``: the schema ids that
    had no program (then nothing was decoded)."""

    array: Optional[pa.StructArray]
    at: Optional[int]
    why: str
    missing: List[int]


class JsonColumnsDecoder:
    """The extension's ``JsonArrowDecoder``: a program per schema id, lists of frames into one
    struct array (``rust/src/columnar/json/mod.rs``)."""

    def __init__(self, mod: Any, max_frame: int) -> None:
        self._dec = mod.JsonArrowDecoder(max_frame)

    def add(self, sid: int, nodes: List[Tuple[Any, ...]]) -> None:
        """Frames of schema id ``sid`` decode with ``nodes`` (:func:`compile_program`)."""
        self._dec.add_program(sid, nodes)

    def forget(self, sid: int) -> None:
        self._dec.forget(sid)

    def decode(self, payloads: List[Any]) -> Optional[Decoded]:
        """The list decoded, or why not; ``None`` when a payload is neither ``bytes`` nor ``None``."""
        found = self._dec.decode(payloads)
        if found is None:
            return None
        cols, index, why, missing = found
        return Decoded(pa.array(cols) if cols is not None else None, index, why or "", list(missing))

    def parse_floor_ns(self, frames: List[bytes], reps: int) -> List[int]:
        """Nanoseconds of each of ``reps`` decodes of ``frames`` inside Rust (benchmarks)."""
        return list(self._dec._parse_floor_ns(frames, reps))

    def has_arrow_json(self) -> bool:
        """Whether this build has arrow-json to measure against (``--features arrow-json-floor``)."""
        return hasattr(self._dec, "_arrow_json_floor_ns")

    def arrow_json_floor_ns(self, frames: List[bytes], reps: int) -> List[int]:
        """Nanoseconds of each of ``reps`` decodes of ``frames``' bodies by arrow-json alone into
        the same columns, inside Rust, without validation (benchmarks)."""
        return list(self._dec._arrow_json_floor_ns(frames, reps))
