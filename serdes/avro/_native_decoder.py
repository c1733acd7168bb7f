"""The native Avro decoder: a schema pair lowered to a flat program the Rust extension runs.

:func:`compile_native_decoder` is what :func:`serdes.avro._deserializer.compile_avro_decoder` calls
when :func:`serdes._native.active` returns the extension. It first builds the pure-Python decoder
with :func:`compile_decoder` -- so the schema checks (``_schema_check``, name and depth limits),
the eager resolution errors and the :class:`Unsupported` reader schemas behave exactly as they do
without the extension, and the pure decoder is at hand as the fallback. It then lowers the same
(writer, reader) pair into a list of node tuples, taking every resolution decision the generator
takes through the same functions of :mod:`serdes.avro._decgen` (fastavro's ``match_schemas``/
``match_types``, promotions, logical types, reader defaults, enum defaults, union branch choice,
``return_record_name``), with the items budget and the depth checks of shared and recursive named
records the generator applies, and hands the list to ``_serdes_native.AvroDecoder``, which compiles it
once into its node arena and decodes with a native loop. The program format is private to this
module and ``rust/src/avro/schema.rs``; its opcodes are :mod:`serdes._native_opcodes`'.

Falls back to the pure decoder (returns it unchanged) for: a writer schema of plain ``bytes``
(confluent-kafka's raw payload: a slice, nothing to gain), a named reference the lowering cannot
resolve, and a schema whose lowering itself recurses too deep. The native decoder holds the pure
one too: it decodes a record nesting deeper than the thread's stack lets the native loop go
(``rust/src/stack.rs``), so any ``serdes.max.depth`` is safe on any thread (docs/native.md, "Guards").
"""

from __future__ import annotations

import datetime as _dt
import uuid as _uuid
from decimal import Context, Decimal
from types import ModuleType
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from fastavro import parse_schema
from fastavro._read_common import SchemaResolutionError
from fastavro.const import AVRO_TYPES

from .._errors import CorruptPayloadError, SchemaMismatchError
from .._limits import DEFAULT_LIMITS, Limits
from .._native import active
from .._native_opcodes import (
    ARRAY, BOOL, BYTES, DOUBLE, ENUM, FIXED, FLOAT, LONG, MAP, MISMATCH, NULL, P_CALL, P_DATE, P_NEW, P_DECIMAL, P_DECODE,
    P_ENCODE, P_FLOAT, P_LTS_MS, P_LTS_US, P_NONE, P_TS_MS, P_TS_US, P_UUID, RECORD, STRING, UNION,
)
from .._serde import Decoder
from ._codegen import decoder_builder
from ._exec import CompiledOnFirstCall
from ._decgen import (
    DecoderGenerator, decimal_spec, enum_table, is_plain_decimal, logical_reader, match_schemas, promotion,
    resolve_fields, typed_key, typed_maker, typed_symbols, union_branch_name, union_branch_reader, union_mismatch,
)
from ._generator import Unsupported, is_raw_bytes, named_types, type_of
from ._runtime import default_copier
from ._typed import RecordMaker

__all__ = ["compile_native_decoder", "lower"]

# the native decoder counts depth in an i64: a larger serdes.max.depth bounds nothing more
_MAX_COUNT = 2**62

_NOPOST: Tuple[Any, ...] = (P_NONE,)
# the logical types done natively while fastavro's built-in reader is still in its table (the
# generator's _INLINE_LOGICAL); any other entry is called
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
_PROMOTE_POST = {"float": (P_FLOAT,), "encode": (P_ENCODE,), "decode": (P_DECODE,)}
# the node of each fixed-width primitive; reading and skipping one is the same step
_PRIMITIVE = {"null": NULL, "boolean": BOOL, "int": LONG, "long": LONG, "float": FLOAT, "double": DOUBLE}


class _Fallback(Exception):
    """The lowering meets something the native decoder does not do: use the pure decoder."""


def _fixed_size(w: Any) -> int:
    size = w.get("size") if isinstance(w, dict) else None
    if type(size) is not int or size < 0:
        raise _Fallback("fixed size")
    return size


class _Lowering:
    def __init__(self, writer: Any, reader: Any, return_record_name: bool,
                 makers: Optional[Mapping[str, Any]] = None) -> None:
        self.makers = makers or {}  # typed records: serdes.avro._typed
        self.wnamed: Dict[str, Any] = {}
        self.rnamed: Dict[str, Any] = {}
        self.wcounts: Dict[str, int] = {}
        named_types(writer, self.wnamed, self.wcounts)
        if reader is not None:
            named_types(reader, self.rnamed, {})
        self.named = {"writer": self.wnamed, "reader": self.rnamed}
        self.rrn = return_record_name
        self.nodes: List[Any] = []
        self.records: Dict[Any, int] = {}  # (name, id(reader)) -> node of a depth-checked record
        self.skips: Dict[str, int] = {}  # name -> skip node of a depth-checked record
        self.keep: List[Any] = []  # readers whose id() is part of a key in self.records
        self.building: set = set()  # type: ignore[type-arg]
        self.field_path: List[str] = []  # the record fields around the node being lowered

    def where(self) -> str:
        """The field being lowered, for messages (as the generator's ``where``)."""
        return f"field {'.'.join(self.field_path)!r}" if self.field_path else "the value"

    def field(self, name: Any, w: Any, r: Any) -> int:
        self.field_path.append(str(name))
        try:
            return self.read(w, r)
        finally:
            self.field_path.pop()

    def add(self, node: Tuple[Any, ...]) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def shared(self, name: Any) -> bool:
        """The generator decodes this record in a function of its own, which checks the depth."""
        return name is not None and (self.wcounts.get(name, 0) > 1 or name in self.building)

    # -- read -------------------------------------------------------------------------------------
    def named_node(
        self, name: Any, cache: Dict[Any, int], key: Any, build: Callable[[bool], Tuple[Any, ...]],
        keep: Any = None,
    ) -> int:
        """The node of record ``name``: built in place (``build(False)``), or, when the generator
        gives it a function of its own, the one depth-checked node (``build(True)``) kept in
        ``cache`` under ``key``, which recursion refers to while it is built (``keep``: an object
        whose ``id`` is part of ``key``, kept alive with the program)."""
        if self.shared(name):
            node = cache.get(key)
            if node is None:
                node = self.add((MISMATCH, _NOPOST, "placeholder"))  # filled below
                cache[key] = node
                if keep is not None:
                    self.keep.append(keep)
                self.building.add(name)
                # one node serves every use: messages name its fields from the record's name
                saved, self.field_path = self.field_path, [str(name)]
                try:
                    self.nodes[node] = build(True)
                finally:
                    self.building.discard(name)
                    self.field_path = saved
            return node
        if name is not None:
            self.building.add(name)
        try:
            return self.add(build(False))
        finally:
            if name is not None:
                self.building.discard(name)

    def read(self, w: Any, r: Any) -> int:
        rt = type_of(w)
        if r:
            try:
                r = match_schemas(w, r, self.named)
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
        if rt in _PRIMITIVE:
            return self.add((_PRIMITIVE[rt], post))
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
            return self.add((ARRAY, post, item, DecoderGenerator.min_size(w["items"], self.wnamed)))
        if rt == "map":
            value = self.read(w["values"], r["values"] if r else None)
            return self.add((MAP, post, value))
        if rt in ("union", "error_union"):
            return self.union(w, r)
        if rt in ("record", "error", "request"):
            return self.record_ref(w, r, post)
        raise _Fallback(f"type {rt}")  # pragma: no cover

    def post(self, w: Any, r: Any, rt: str) -> Tuple[Any, ...]:
        """What happens to the value read: a typed record's maker, a logical type (keyed on the
        writer), else a promotion."""
        maker = typed_maker(self.makers, rt, w, r)
        if isinstance(maker, RecordMaker):
            return (P_NEW, maker.cls, maker.set_dict)
        logical = logical_reader(w)
        if logical is not None:
            key, fn, builtin = logical
            if builtin and key in _NATIVE_LOGICAL:
                return _NATIVE_LOGICAL[key]
            if builtin and is_plain_decimal(key, w):
                ctx = Context(prec=w["precision"])
                spec = decimal_spec(w, self.where())
                max_len = spec.max_len if key == "bytes-decimal" else -1  # a fixed one's size is the schema's
                return (P_DECIMAL, ctx.create_decimal, -w.get("scale", 0), ctx, Decimal, w["precision"], max_len, spec)
            return (P_CALL, fn, w, r)
        return _PROMOTE_POST.get(promotion(rt, r) or "", _NOPOST)

    def enum(self, w: Any, r: Any, post: Tuple[Any, ...]) -> int:
        syms = w["symbols"]
        table = typed_symbols(typed_maker(self.makers, "enum", w, r), enum_table(syms, r))
        miss: List[Optional[str]] = [
            f"{s} not found in reader symbol list {r.get('name')}, known symbols: {list(r['symbols'])}"
            if r and v is None else None
            for s, v in zip(syms, table, strict=True)
        ]
        return self.add((ENUM, post, table, miss))

    def union(self, w: Any, r: Any) -> int:
        branches: List[Tuple[int, Optional[str], Optional[str]]] = []
        nomatch = union_mismatch(w, r) if r else ""
        for branch in w:
            idx_reader = None
            if r:
                found = union_branch_reader(branch, r, self.named)
                if found is None:
                    branches.append((-1, None, nomatch))
                    continue
                rb, idx_reader = found
                node = self.read(branch, rb)
            else:
                node = self.read(branch, None)
            name = union_branch_name(branch, idx_reader, self.wnamed, self.rnamed) if self.rrn else None
            branches.append((node, name, None))
        return self.add((UNION, _NOPOST, branches))

    def record_ref(self, w: Any, r: Any, post: Tuple[Any, ...]) -> int:
        name = w.get("name")
        return self.named_node(name, self.records, (name, id(r) if r is not None else None),
                               lambda check: self.record(w, r, post, check), keep=r)

    def record(self, w: Any, r: Any, post: Tuple[Any, ...], check: bool) -> Tuple[Any, ...]:
        keys: List[str] = []
        actions: List[Tuple[int, int]] = []  # (node, key slot) to read, (skip node, -1) to skip
        defaults: List[Tuple[int, Any, Any, int]] = []
        mismatch: Optional[str] = None
        maker = typed_maker(self.makers, "record", w, r)
        if not r:
            for f in w["fields"]:
                actions.append((self.field(f["name"], f["type"], None), len(keys)))
                keys.append(typed_key(maker, f["name"]))
        else:
            for f, rf in resolve_fields(w, r):
                if f is None:
                    if "default" in rf:
                        d = rf["default"]
                        copier, items = default_copier(d)
                        defaults.append((len(keys), d, copier, items))
                    elif mismatch is None:
                        mismatch = f"No default value for field {rf['name']} in {r.get('name')}"
                    keys.append(typed_key(maker, rf["name"]))
                elif rf is None:
                    actions.append((self.skip(f["type"]), -1))
                else:
                    actions.append((self.field(rf["name"], f["type"], rf["type"]), len(keys)))
                    keys.append(typed_key(maker, rf["name"]))
        return (RECORD, post, keys, actions, defaults, mismatch, check)

    # -- skip -------------------------------------------------------------------------------------
    def skip(self, w: Any) -> int:
        rt = type_of(w)
        if rt not in AVRO_TYPES:
            if not isinstance(rt, str) or rt not in self.wnamed:
                raise _Fallback("unknown named type")
            w = self.wnamed[rt]
            rt = type_of(w)
        if rt in _PRIMITIVE:
            return self.add((_PRIMITIVE[rt], _NOPOST))
        if rt in ("string", "bytes"):
            return self.add((BYTES, _NOPOST))
        if rt == "fixed":
            return self.add((FIXED, _NOPOST, _fixed_size(w)))
        if rt == "enum":
            return self.add((ENUM, _NOPOST, list(w["symbols"]), [None] * len(w["symbols"])))
        if rt == "array":
            item = self.skip(w["items"])
            return self.add((ARRAY, _NOPOST, item, DecoderGenerator.min_size(w["items"], self.wnamed)))
        if rt == "map":
            return self.add((MAP, _NOPOST, self.skip(w["values"])))
        if rt in ("union", "error_union"):
            return self.add((UNION, _NOPOST, [(self.skip(b), None, None) for b in w]))
        if rt in ("record", "error", "request"):
            name = w.get("name")
            return self.named_node(name, self.skips, name, lambda check: self.skip_record(w, check))
        raise _Fallback(f"type {rt}")  # pragma: no cover

    def skip_record(self, w: Any, check: bool) -> Tuple[Any, ...]:
        actions = [(self.skip(f["type"]), -1) for f in w["fields"]]
        return (RECORD, _NOPOST, [], actions, [], None, check)


def lower(
    writer: Any, reader: Any = None, return_record_name: bool = False, makers: Optional[Mapping[str, Any]] = None,
) -> Tuple[List[Any], int]:
    """The program for a (writer, reader) pair: ``(nodes, root)``. The schemas must already have
    passed :func:`compile_decoder` (the checks and eager errors run there). Raises ``_Fallback``."""
    writer = parse_schema(writer)
    if reader is not None:
        reader = parse_schema(reader)
        if writer == reader:
            reader = None
    if is_raw_bytes(writer):
        raise _Fallback("raw bytes writer")
    low = _Lowering(writer, reader, return_record_name, makers)
    try:
        root = low.read(writer, reader)
    except Unsupported as e:  # the shared resolution helpers' word for a path not reproduced
        raise _Fallback(str(e)) from None
    return low.nodes, root


def compile_native_decoder(
    writer: Any,
    reader: Any = None,
    return_record_name: bool = False,
    from_dict: Optional[Callable[[Any, Any], Any]] = None,
    limits: Limits = DEFAULT_LIMITS,
    native: Optional[ModuleType] = None,
    makers: Optional[Mapping[str, Any]] = None,
) -> Decoder:
    """``decode(data, offset, ctx)`` for one schema pair: the native decoder when the extension is
    active and supports the pair, else the pure generated one (same errors, same values).

    Raises what :func:`compile_decoder` raises (``SchemaMismatchError``, ``Unsupported``)."""
    # the schema checks and eager resolution errors run here, for both implementations; the pure
    # decoder is compiled only when it is the decoder, or when the native one first falls back to it
    build_pure = decoder_builder(writer, reader, return_record_name, from_dict, limits=limits, makers=makers)
    mod = native if native is not None else active()
    if mod is None or not hasattr(mod, "AvroDecoder"):
        return build_pure()
    try:
        nodes, root = lower(writer, reader, return_record_name, makers)
    except (_Fallback, RecursionError):
        return build_pure()
    try:
        dec: Decoder = mod.AvroDecoder(
            nodes, root, min(limits.max_items, _MAX_COUNT), min(limits.max_depth, _MAX_COUNT), from_dict,
            CorruptPayloadError, SchemaMismatchError, _dt.timezone.utc, fallback=CompiledOnFirstCall(build_pure),
        )
    except SchemaMismatchError:  # the native program compiler failed (a panic: a serdes bug, reported on stderr)
        return build_pure()
    return dec
