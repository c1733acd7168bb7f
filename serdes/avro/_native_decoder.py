"""The native Avro decoder: a schema pair lowered to a flat program the Rust extension runs.

:func:`compile_native_decoder` is what :func:`serdes.avro._deserializer.compile_avro_decoder` calls
when :func:`serdes._native.active` returns the extension. It first builds the pure-Python decoder
with :func:`compile_decoder` -- so the schema checks (``_schema_check``, name and depth limits),
the eager resolution errors and the :class:`Unsupported` reader schemas behave exactly as they do
without the extension, and the pure decoder is at hand as the fallback. It then lowers the same
(writer, reader) pair into a list of node tuples, taking every resolution decision the generator
takes (fastavro's ``match_schemas``/``match_types``, promotions, reader defaults, enum defaults,
union branch choice, ``return_record_name``, the items budget and the depth checks of shared and
recursive named records) and hands the list to ``_serdes_native.AvroDecoder``, which compiles it
once into its node arena and decodes with a native loop. The program format is private to this
module and ``rust/src/avro/schema.rs``.

Falls back to the pure decoder (returns it unchanged) for: a writer schema of plain ``bytes``
(confluent-kafka's raw payload: a slice, nothing to gain), a named reference the lowering cannot
resolve, limits so large that native recursion could exhaust the C stack
(:data:`MAX_NATIVE_DEPTH`), and a schema whose lowering itself recurses too deep.
"""

from __future__ import annotations

import copy
import datetime as _dt
import uuid as _uuid
from decimal import Context, Decimal
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Tuple

from fastavro import parse_schema
from fastavro._read_common import SchemaResolutionError
from fastavro.const import AVRO_TYPES
from fastavro.read import LOGICAL_READERS

from .._errors import CorruptPayloadError, SchemaMismatchError
from .._limits import DEFAULT_LIMITS, Limits
from .._native import active
from .._serde import Decoder
from ._codegen import compile_decoder

# the resolution rules the generator uses (fastavro's pure-Python ones; untyped, hence Callable)
_fa_match_schemas: Optional[Callable[..., Any]] = None
_fa_match_types: Optional[Callable[..., Any]] = None
try:
    from fastavro._read_py import match_schemas as _ms
    from fastavro._read_py import match_types as _mt

    _fa_match_schemas, _fa_match_types = _ms, _mt
except Exception:  # pragma: no cover - fastavro layout change
    pass

__all__ = ["compile_native_decoder", "lower", "MAX_NATIVE_DEPTH"]

#: ``max_depth`` / ``max_schema_depth`` above this decode in pure Python: the native decoder
#: recurses on the C stack, which (unlike Python's) cannot raise when it runs out
MAX_NATIVE_DEPTH = 2000

# node opcodes and post-processing kinds: the program format shared with rust/src/avro/schema.rs
NULL, BOOL, LONG, FLOAT, DOUBLE, STRING, BYTES, FIXED, ENUM, ARRAY, MAP, UNION, RECORD, MISMATCH = range(14)
(P_NONE, P_FLOAT, P_ENCODE, P_DECODE, P_TS_MS, P_TS_US, P_LTS_MS, P_LTS_US, P_DATE, P_UUID, P_DECIMAL,
 P_CALL) = range(12)

_NOPOST: Tuple[Any, ...] = (P_NONE,)
# fastavro's built-in logical readers, captured at import as the generator captures them: a table
# entry still pointing at one of these is done natively, anything else is called
_BUILTIN_LOGICAL = dict(LOGICAL_READERS)
_NATIVE_LOGICAL = {
    "long-timestamp-millis": (P_TS_MS,),
    "long-timestamp-micros": (P_TS_US,),
    "long-local-timestamp-millis": (P_LTS_MS,),
    "long-local-timestamp-micros": (P_LTS_US,),
    "int-date": (P_DATE,),
    # the class and the is_safe its constructor sets: a canonical 36-character string is parsed
    # natively into UUID(int=...) exactly as uuid.UUID(str) builds it; any other form calls uuid.UUID
    "string-uuid": (P_UUID, _uuid.UUID, _uuid.SafeUUID.unknown),
}
_NUMERIC_PROMOTE = {("int", "float"), ("int", "double"), ("long", "float"), ("long", "double")}


class _Fallback(Exception):
    """The lowering meets something the native decoder does not do: use the pure decoder."""


def _rtype(schema: Any) -> Any:
    if isinstance(schema, dict):
        return schema["type"]
    if isinstance(schema, list):
        return "union"
    return schema


def _walk_names(schema: Any, names: Dict[str, Any], counts: Dict[str, int]) -> None:
    """Named types (fullname -> definition) and how often each is used: the generator's census,
    which decides which records get a depth check."""
    if isinstance(schema, list):
        for s in schema:
            _walk_names(s, names, counts)
    elif isinstance(schema, dict):
        t = schema.get("type")
        if t in ("record", "error", "enum", "fixed") and "name" in schema:
            name = schema["name"]
            counts[name] = counts.get(name, 0) + 1
            if name in names:
                return
            names[name] = schema
            if t in ("record", "error"):
                for f in schema.get("fields", ()):
                    _walk_names(f["type"], names, counts)
        elif t == "array":
            _walk_names(schema.get("items"), names, counts)
        elif t == "map":
            _walk_names(schema.get("values"), names, counts)
        elif isinstance(t, (dict, list)):
            _walk_names(t, names, counts)
    elif isinstance(schema, str) and schema not in AVRO_TYPES:
        counts[schema] = counts.get(schema, 0) + 1


def _min_size(schema: Any, named: Dict[str, Any], seen: Optional[set] = None) -> int:  # type: ignore[type-arg]
    """0 when a value of ``schema`` can take no bytes (then a block count is not bounded by the
    bytes left, only by the items budget)."""
    t = _rtype(schema)
    if t == "null":
        return 0
    if t in ("record", "error", "request"):
        seen = set() if seen is None else seen
        if id(schema) in seen:
            return 1
        seen.add(id(schema))
        return 1 if any(_min_size(f["type"], named, seen) for f in schema["fields"]) else 0
    if t == "fixed":
        return 1 if schema["size"] > 0 else 0
    if t in AVRO_TYPES:
        return 1
    if t in named:
        seen = set() if seen is None else seen
        if t in seen:
            return 1
        seen.add(t)
        return _min_size(named[t], named, seen)
    return 1


def _fixed_size(w: Any) -> int:
    size = w.get("size") if isinstance(w, dict) else None
    if type(size) is not int or size < 0:
        raise _Fallback("fixed size")
    return size


class _Lowering:
    def __init__(self, writer: Any, reader: Any, return_record_name: bool) -> None:
        self.wnamed: Dict[str, Any] = {}
        self.rnamed: Dict[str, Any] = {}
        self.wcounts: Dict[str, int] = {}
        _walk_names(writer, self.wnamed, self.wcounts)
        if reader is not None:
            _walk_names(reader, self.rnamed, {})
        self.named = {"writer": self.wnamed, "reader": self.rnamed}
        self.rrn = return_record_name
        self.nodes: List[Any] = []
        self.records: Dict[Any, int] = {}  # (name, id(reader)) -> node of a depth-checked record
        self.skips: Dict[str, int] = {}  # name -> skip node of a depth-checked record
        self.keep: List[Any] = []  # readers whose id() is part of a key in self.records
        self.building: set = set()  # type: ignore[type-arg]

    def add(self, node: Tuple[Any, ...]) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def shared(self, name: Any) -> bool:
        """The generator decodes this record in a function of its own, which checks the depth."""
        return name is not None and (self.wcounts.get(name, 0) > 1 or name in self.building)

    # -- read -------------------------------------------------------------------------------------
    def read(self, w: Any, r: Any) -> int:
        rt = _rtype(w)
        if r:
            if _fa_match_schemas is None:  # pragma: no cover - fastavro layout change
                raise _Fallback("fastavro resolution rules unavailable")
            try:
                r = _fa_match_schemas(w, r, self.named)
            except SchemaResolutionError as e:
                return self.add((MISMATCH, _NOPOST, str(e)))
        if rt not in AVRO_TYPES:
            if not isinstance(rt, str) or rt not in self.wnamed:
                raise _Fallback("unknown named type")
            rnext = None
            if r:
                if not isinstance(r, str):
                    raise _Fallback("reader of a named reference is not a name")
                rnext = self.rnamed.get(r)
            return self.read(self.wnamed[rt], rnext)
        post = self.post(w, r, rt)
        if rt == "null":
            return self.add((NULL, post))
        if rt == "boolean":
            return self.add((BOOL, post))
        if rt in ("int", "long"):
            return self.add((LONG, post))
        if rt == "float":
            return self.add((FLOAT, post))
        if rt == "double":
            return self.add((DOUBLE, post))
        if rt == "string":
            return self.add((STRING, post))
        if rt == "bytes":
            return self.add((BYTES, post))
        if rt == "fixed":
            return self.add((FIXED, post, _fixed_size(w)))
        if rt == "enum":
            return self.enum(w, r, post)
        if rt == "array":
            item = self.read(w["items"], r["items"] if r else None)
            return self.add((ARRAY, post, item, _min_size(w["items"], self.wnamed)))
        if rt == "map":
            value = self.read(w["values"], r["values"] if r else None)
            return self.add((MAP, post, value))
        if rt in ("union", "error_union"):
            return self.union(w, r)
        if rt in ("record", "error", "request"):
            return self.record_ref(w, r, post)
        raise _Fallback(f"type {rt}")  # pragma: no cover

    def post(self, w: Any, r: Any, rt: str) -> Tuple[Any, ...]:
        """What happens to the value read: a logical type (keyed on the writer), else a promotion."""
        if isinstance(w, dict) and w.get("logicalType"):
            key = f"{w['type']}-{w['logicalType']}"
            fn = LOGICAL_READERS.get(key)
            if fn is not None:
                builtin = fn is _BUILTIN_LOGICAL.get(key)
                if builtin and key in _NATIVE_LOGICAL:
                    return _NATIVE_LOGICAL[key]
                if builtin and key in ("bytes-decimal", "fixed-decimal") and type(w.get("precision")) is int \
                        and type(w.get("scale", 0)) is int and w["precision"] > 0:
                    ctx = Context(prec=w["precision"])
                    return (P_DECIMAL, ctx.create_decimal, -w.get("scale", 0), ctx, Decimal, w["precision"])
                return (P_CALL, fn, w, r)
        if r is not None:
            rr = _rtype(r)
            if (rt, rr) in _NUMERIC_PROMOTE:
                return (P_FLOAT,)
            if rt == "string" and rr == "bytes":
                return (P_ENCODE,)
            if rt == "bytes" and rr == "string":
                return (P_DECODE,)
        return _NOPOST

    def enum(self, w: Any, r: Any, post: Tuple[Any, ...]) -> int:
        syms = w["symbols"]
        table: List[Optional[str]] = list(syms)
        miss: List[Optional[str]] = [None] * len(syms)
        if r:
            if not isinstance(r, dict) or "symbols" not in r:
                raise _Fallback("enum reader")
            rsyms = r["symbols"]
            default = r.get("default")
            for i, s in enumerate(syms):
                if s in rsyms:
                    table[i] = s
                elif default:
                    table[i] = default
                else:
                    table[i] = None
                    miss[i] = f"{s} not found in reader symbol list {r.get('name')}, known symbols: {list(rsyms)}"
        return self.add((ENUM, post, table, miss))

    def union(self, w: Any, r: Any) -> int:
        branches: List[Tuple[int, Optional[str], Optional[str]]] = []
        nomatch = f"schema mismatch: {w} not found in {r}"
        for branch in w:
            idx_reader = None
            if r:
                if _fa_match_types is None:  # pragma: no cover
                    raise _Fallback("fastavro resolution rules unavailable")
                if not isinstance(r, list):
                    if not _fa_match_types(branch, r, self.named):
                        branches.append((-1, None, nomatch))
                        continue
                    node = self.read(branch, r)
                else:
                    for rb in r:
                        if _fa_match_types(branch, rb, self.named):
                            idx_reader = rb
                            node = self.read(branch, rb)
                            break
                    else:
                        branches.append((-1, None, nomatch))
                        continue
            else:
                node = self.read(branch, None)
            name = None
            if self.rrn:
                brt = _rtype(branch)
                try:
                    if brt == "record":
                        name = idx_reader["name"] if idx_reader else branch["name"]
                    elif brt not in AVRO_TYPES:
                        name = self.rnamed[idx_reader]["name"] if idx_reader else self.wnamed[branch]["name"]
                except Exception as e:
                    raise _Fallback(f"return_record_name lookup: {e}") from None
            branches.append((node, name, None))
        return self.add((UNION, _NOPOST, branches))

    def record_ref(self, w: Any, r: Any, post: Tuple[Any, ...]) -> int:
        name = w.get("name")
        if self.shared(name):
            key = (name, id(r) if r is not None else None)
            node = self.records.get(key)
            if node is None:
                node = self.add((MISMATCH, _NOPOST, "placeholder"))  # filled below; recursion refers to it
                self.records[key] = node
                self.keep.append(r)
                self.building.add(name)
                try:
                    self.nodes[node] = self.record(w, r, post, True)
                finally:
                    self.building.discard(name)
            return node
        if name is not None:
            self.building.add(name)
        try:
            return self.add(self.record(w, r, post, False))
        finally:
            if name is not None:
                self.building.discard(name)

    def record(self, w: Any, r: Any, post: Tuple[Any, ...], check: bool) -> Tuple[Any, ...]:
        keys: List[str] = []
        actions: List[Tuple[int, int]] = []  # (node, key slot) to read, (skip node, -1) to skip
        defaults: List[Tuple[int, Any, bool]] = []
        mismatch: Optional[str] = None
        if not r:
            for f in w["fields"]:
                actions.append((self.read(f["type"], None), len(keys)))
                keys.append(f["name"])
        else:
            if not isinstance(r, dict) or "fields" not in r:
                raise _Fallback("record reader")
            readers: Dict[str, Any] = {}
            aliases: Dict[str, Any] = {}
            for f in r["fields"]:
                readers[f["name"]] = f
                for a in f.get("aliases", []):
                    aliases[a] = f
            for f in w["fields"]:
                rf = readers.get(f["name"], aliases.get(f["name"]))
                if rf:
                    if rf["name"] not in readers:
                        raise _Fallback("reader field matched twice")
                    actions.append((self.read(f["type"], rf["type"]), len(keys)))
                    keys.append(rf["name"])
                    del readers[rf["name"]]
                else:
                    actions.append((self.skip(f["type"]), -1))
            for f in readers.values():
                if "default" in f:
                    d = f["default"]
                    defaults.append((len(keys), d, isinstance(d, (dict, list))))
                elif mismatch is None:
                    mismatch = f"No default value for field {f['name']} in {r.get('name')}"
                keys.append(f["name"])
        return (RECORD, post, keys, actions, defaults, mismatch, check)

    # -- skip -------------------------------------------------------------------------------------
    def skip(self, w: Any) -> int:
        rt = _rtype(w)
        if rt not in AVRO_TYPES:
            if not isinstance(rt, str) or rt not in self.wnamed:
                raise _Fallback("unknown named type")
            w = self.wnamed[rt]
            rt = _rtype(w)
        if rt == "null":
            return self.add((NULL, _NOPOST))
        if rt == "boolean":
            return self.add((BOOL, _NOPOST))
        if rt in ("int", "long"):
            return self.add((LONG, _NOPOST))
        if rt == "float":
            return self.add((FLOAT, _NOPOST))
        if rt == "double":
            return self.add((DOUBLE, _NOPOST))
        if rt in ("string", "bytes"):
            return self.add((BYTES, _NOPOST))
        if rt == "fixed":
            return self.add((FIXED, _NOPOST, _fixed_size(w)))
        if rt == "enum":
            return self.add((ENUM, _NOPOST, list(w["symbols"]), [None] * len(w["symbols"])))
        if rt == "array":
            item = self.skip(w["items"])
            return self.add((ARRAY, _NOPOST, item, _min_size(w["items"], self.wnamed)))
        if rt == "map":
            return self.add((MAP, _NOPOST, self.skip(w["values"])))
        if rt in ("union", "error_union"):
            return self.add((UNION, _NOPOST, [(self.skip(b), None, None) for b in w]))
        if rt in ("record", "error", "request"):
            name = w.get("name")
            if self.shared(name):
                node = self.skips.get(name)
                if node is None:
                    node = self.add((MISMATCH, _NOPOST, "placeholder"))
                    self.skips[name] = node
                    self.building.add(name)
                    try:
                        self.nodes[node] = self.skip_record(w, True)
                    finally:
                        self.building.discard(name)
                return node
            if name is not None:
                self.building.add(name)
            try:
                return self.add(self.skip_record(w, False))
            finally:
                if name is not None:
                    self.building.discard(name)
        raise _Fallback(f"type {rt}")  # pragma: no cover

    def skip_record(self, w: Any, check: bool) -> Tuple[Any, ...]:
        actions = [(self.skip(f["type"]), -1) for f in w["fields"]]
        return (RECORD, _NOPOST, [], actions, [], None, check)


def _is_raw_bytes(schema: Any) -> bool:
    return schema == "bytes" or (isinstance(schema, dict) and schema.get("type") == "bytes")


def lower(writer: Any, reader: Any = None, return_record_name: bool = False) -> Tuple[List[Any], int]:
    """The program for a (writer, reader) pair: ``(nodes, root)``. The schemas must already have
    passed :func:`compile_decoder` (the checks and eager errors run there). Raises ``_Fallback``."""
    writer = parse_schema(writer)
    if reader is not None:
        reader = parse_schema(reader)
        if writer == reader:
            reader = None
    if _is_raw_bytes(writer):
        raise _Fallback("raw bytes writer")
    low = _Lowering(writer, reader, return_record_name)
    root = low.read(writer, reader)
    return low.nodes, root


def compile_native_decoder(
    writer: Any,
    reader: Any = None,
    return_record_name: bool = False,
    from_dict: Optional[Callable[[Any, Any], Any]] = None,
    limits: Limits = DEFAULT_LIMITS,
    native: Optional[ModuleType] = None,
) -> Decoder:
    """``decode(data, offset, ctx)`` for one schema pair: the native decoder when the extension is
    active and supports the pair, else the pure generated one (same errors, same values).

    Raises what :func:`compile_decoder` raises (``SchemaMismatchError``, ``Unsupported``)."""
    pure: Decoder = compile_decoder(writer, reader, return_record_name, from_dict, limits=limits)
    mod = native if native is not None else active()
    if mod is None or not hasattr(mod, "AvroDecoder"):
        return pure
    if limits.max_depth > MAX_NATIVE_DEPTH or limits.max_schema_depth > MAX_NATIVE_DEPTH:
        return pure
    try:
        nodes, root = lower(writer, reader, return_record_name)
    except (_Fallback, RecursionError):
        return pure
    dec: Decoder = mod.AvroDecoder(
        nodes, root, min(limits.max_items, 2**62), limits.max_depth, from_dict,
        CorruptPayloadError, SchemaMismatchError, _dt.timezone.utc, copy.deepcopy,
    )
    return dec
