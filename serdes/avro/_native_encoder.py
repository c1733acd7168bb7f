"""The native Avro encoder (``rust/src/avro_encode``), with the pure-Python encoder as its fallback.

:func:`compile_native_encoder` takes the arguments of :func:`serdes.avro._codegen.compile_encoder`
and returns an encoder with the same contract (``encode(obj, ctx) -> prefix + payload``), the same
accepted values, the same bytes and the same errors. When the extension is active
(:func:`serdes._native.active`, asked once per encoder built) and compiles the schema, the result
is the extension's ``AvroEncoder``; it runs on every value of the exact built-in types the pure
encoder's fast path takes (and on ``str`` subclass instances as strings, map keys and enum symbols)
and hands anything else to the pure encoder for the same schema, which
then decides (its bytes, or its :class:`serdes.ValidationError`). Otherwise -- pure Python forced or
not built, a ``"bytes"`` schema (written raw), a union with a logical-type branch, a type the
generator does not know -- the result is the pure encoder itself. See docs/native.md ("Avro encoding").

The schema reaches the extension as a program (:func:`lower`): a flat list of node tuples that
refer to each other by index, so a named type is one node however often it is used and a recursive
type is a cycle of indexes. Every decision is taken here, through the functions the pure generator
takes it with (:mod:`serdes.avro._encgen`: named references, logical types, fixed sizes, enum
indexes, ``[null, X]`` unions, field defaults), plus the native encoder's own: which logical
types it converts itself (``_FAST_LOGICAL``) and which general unions it can choose a branch in
(``_Lowering.union``). ``rust/src/avro_encode/program.rs`` only checks the list (indexes in range,
opcodes known: :mod:`serdes._native_opcodes`) and builds its nodes from it.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

from fastavro import parse_schema
from fastavro.write import LOGICAL_WRITERS

from .. import _native
from .._errors import SchemaMismatchError, ValidationError
from .._limits import DEFAULT_LIMITS, Limits
from .._native_opcodes import (
    E_ARRAY, E_BOOLEAN, E_BYTES, E_DOUBLE, E_ENUM, E_FIXED, E_FLOAT, E_INT, E_LOGICAL, E_LONG, E_MAP, E_NULL,
    E_NULLABLE, E_RECORD, E_STRING, E_UNION, F_DATE, F_DECIMAL, F_NONE, F_TS_MS, F_TS_US, F_UUID,
)
from ._codegen import compile_encoder, encoder_builder
from ._exec import CompiledOnFirstCall
from ._encgen import (
    DECIMAL_KEYS, enum_indexes, fixed_size, has_default, is_reference, logical_writer, named_definition, null_branch,
)
from ._generator import Unsupported, is_raw_bytes, named_types, type_of
from ._runtime import checked_decimal_writer
from ._typed import RecordMaker, record_makers
from ..typed import ToDict

__all__ = ["compile_native_encoder", "is_native_encoder", "lower"]

_Encode = Callable[[Any, Any], bytes]

# logical types the native loop converts itself for the exact types it knows, as fastavro's own
# prepare function (by name) does; a prepare function registered in its place is always called
_FAST_LOGICAL = {
    "string-uuid": ("prepare_uuid", F_UUID),
    "long-timestamp-millis": ("prepare_timestamp_millis", F_TS_MS),
    "long-timestamp-micros": ("prepare_timestamp_micros", F_TS_US),
    "int-date": ("prepare_date", F_DATE),
    "bytes-decimal": ("prepare_bytes_decimal", F_DECIMAL),
}
_CLASSES = (uuid.UUID, datetime.datetime, datetime.date, datetime.timezone.utc, decimal.Decimal)
# the native loop counts a recursive schema's nesting in a u32; deeper than the thread's stack
# allows it never goes (it hands the value to the pure encoder: docs/native.md, "Guards")
_MAX_COUNT = 2**32 - 1
_I64 = (-(2**63), 2**63 - 1)
_PRIMITIVE = {
    "null": E_NULL, "boolean": E_BOOLEAN, "int": E_INT, "long": E_LONG, "float": E_FLOAT, "double": E_DOUBLE,
    "string": E_STRING, "bytes": E_BYTES,
}
# the branch kinds a general union's branch choice tells apart (fastavro's write_union): a branch
# of any other node (a logical type, a nested union) is left to the pure encoder
_BRANCH_KINDS = {E_NULL, E_BOOLEAN, E_INT, E_LONG, E_FLOAT, E_DOUBLE, E_STRING, E_BYTES, E_FIXED, E_ENUM, E_ARRAY,
                 E_MAP, E_RECORD}


def _fast_logical() -> Dict[str, int]:
    out: Dict[str, int] = {}
    for key, (name, code) in _FAST_LOGICAL.items():
        fn = LOGICAL_WRITERS.get(key)
        if getattr(fn, "__name__", None) == name and str(getattr(fn, "__module__", "")).startswith("fastavro."):
            out[key] = code
    return out


def _plain_i64(v: Any) -> bool:
    return type(v) is int and _I64[0] <= v <= _I64[1]


class _Lowering:
    """One schema's program: ``nodes`` (node 0 the map-key string), and what the program says of
    the schema: ``recursive`` (a named record refers to itself, directly or not: its values nest
    without bound) and ``general_union`` (a union other than ``[null, X]``: the pure reference is
    fastavro's general path, whose record rules the native encoder then follows)."""

    def __init__(self, schema: Any, fast: Dict[str, int], classes: Optional[Mapping[str, RecordMaker]] = None) -> None:
        # typed records (serdes.avro._typed): each named record's plain dataclass, read through
        # its instances' __dict__ (the record's keys are the attribute names)
        self.classes = classes or {}
        self.named: Dict[str, Any] = {}
        named_types(schema, self.named, {})
        self.fast = fast
        # node 0 is the string node map keys are written with (program.rs: STRING_KEY); None: a
        # named type's node while its body is lowered
        self.nodes: List[Optional[Tuple[Any, ...]]] = [(E_STRING,)]
        self.slots: Dict[str, int] = {}  # named type -> its node
        self.building: Set[str] = set()  # the named records being lowered
        self.recursive = False
        self.general_union = False

    def add(self, node: Optional[Tuple[Any, ...]]) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def lower(self, s: Any) -> int:
        t = type_of(s)
        if isinstance(s, list):
            return self.union(s)
        if not isinstance(t, str):
            raise Unsupported("a nested type")
        if isinstance(s, str) and t in _PRIMITIVE:
            return self.add((_PRIMITIVE[t],))
        if is_reference(t) or isinstance(s, str):
            return self.reference(t)
        named = t in ("record", "error", "enum", "fixed")
        if not named and t not in _PRIMITIVE and t not in ("array", "map"):
            return self.reference(t)
        slot = None
        if named:
            name = s["name"]
            if not isinstance(name, str):
                raise Unsupported("a non-string name")
            if name in self.slots:  # lowered already (reached through a reference first)
                return self.slots[name]
            slot = self.slots[name] = self.add(None)  # its body may refer to it
        if t in ("record", "error"):
            self.building.add(s["name"])
            try:
                base = self.record(s)
            finally:
                self.building.discard(s["name"])
        elif t == "enum":
            base = (E_ENUM, enum_indexes(s["symbols"]))
        elif t == "fixed":
            base = (E_FIXED, fixed_size(s))
        elif t == "array":
            base = (E_ARRAY, self.lower(s["items"]))
        elif t == "map":
            base = (E_MAP, self.lower(s["values"]))
        else:
            base = (_PRIMITIVE[t],)
        node = self.logical(s, base)
        if slot is None:
            return self.add(node)
        self.nodes[slot] = node
        return slot

    def reference(self, t: str) -> int:
        definition = named_definition(t, self.named)
        if t in self.building:
            self.recursive = True
        slot = self.slots.get(t)
        return slot if slot is not None else self.lower(definition)

    def logical(self, s: Any, base: Tuple[Any, ...]) -> Tuple[Any, ...]:
        """``base``, or the logical node converting a value before ``base`` writes it."""
        found = logical_writer(s)
        if found is None:
            return base
        key, prepare = found
        if key in DECIMAL_KEYS:
            # a value with more digits than the precision is refused (ValueError): the native loop
            # then leaves it to the pure encoder, whose ValidationError says why
            prepare = checked_decimal_writer(prepare)
        fast = self.fast.get(key, F_NONE)
        precision, scale = 0, 0
        if fast == F_DECIMAL:
            # fastavro reads s["precision"] and s.get("scale", 0): converted natively only for plain ints
            precision, scale = s.get("precision"), s.get("scale", 0)
            if not (_plain_i64(precision) and _plain_i64(scale)):
                fast, precision, scale = F_NONE, 0, 0
        return (E_LOGICAL, prepare, s, self.add(base), fast, precision, scale)

    def union(self, s: List[Any]) -> int:
        null_idx = null_branch(s)
        if null_idx is not None:
            other = self.lower(s[1 - null_idx])
            return self.add((E_NULLABLE, null_idx * 2, (1 - null_idx) * 2, other))
        # any other union: the pure encoder is fastavro's for the whole schema, whose branch choice
        # the native loop reproduces for branches it can tell apart by the value's exact type
        self.general_union = True
        if not s:
            raise Unsupported("an empty union")
        branches: List[Tuple[int, int, Any]] = []
        for b in s:
            node = self.lower(b)
            lowered = self.nodes[node]
            # None: a record still being lowered (a recursive reference; only records have bodies)
            kind = E_RECORD if lowered is None else lowered[0]
            if kind not in _BRANCH_KINDS:
                raise Unsupported("this union branch (logical or nested)")
            extra = lowered[1] if lowered is not None and kind in (E_FIXED, E_ENUM) else None
            branches.append((kind, node, extra))
        kinds = [k for k, _, _ in branches]
        if kinds.count(E_ARRAY) > 1 or kinds.count(E_MAP) > 1:
            raise Unsupported("a union with two arrays or two maps")
        return self.add((E_UNION, branches))

    def record(self, s: Any) -> Tuple[Any, ...]:
        fields: List[Tuple[str, int, bool, Any]] = []
        maker = self.classes.get(s.get("name"))
        for f in s["fields"]:
            if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                raise Unsupported("a field that is not a dict with a string name")
            default = has_default(f)
            key = f["name"] if maker is None else maker.attribute_of.get(f["name"], f["name"])
            fields.append((key, self.lower(f["type"]), default, f["default"] if default else None))
        return (E_RECORD, fields, None if maker is None else maker.cls)


def lower(
    parsed: Any, fast: Optional[Dict[str, int]] = None, classes: Optional[Mapping[str, RecordMaker]] = None,
) -> Tuple[List[Tuple[Any, ...]], int, bool, bool]:
    """The program of a schema parsed by fastavro and checked by serdes: ``(nodes, root,
    recursive, general_union)`` (:class:`_Lowering`). ``fast``: the logical types converted
    natively (default: :func:`_fast_logical`'s); ``classes``: typed records' classes by record
    name. Raises :class:`Unsupported` for a schema the native encoder leaves to the pure one."""
    low = _Lowering(parsed, _fast_logical() if fast is None else fast, classes)
    root = low.lower(parsed)
    nodes: List[Tuple[Any, ...]] = []
    for n in low.nodes:
        if n is None:  # pragma: no cover -- every slot is filled once its body is lowered
            raise Unsupported("this schema (a named type left unfinished)")
        nodes.append(n)
    return nodes, root, low.recursive, low.general_union


def compile_native_encoder(
    schema: Any,
    prefix: bytes = b"",
    strict: bool = False,
    strict_allow_default: bool = False,
    to_dict: Optional[Callable[[Any, Any], Any]] = None,
    limits: Limits = DEFAULT_LIMITS,
    role: str = "serializer's",
) -> _Encode:
    """``encode(obj, ctx) -> prefix + payload`` for ``schema``: native when it can be, else pure.

    Raises what :func:`compile_encoder` raises for a bad schema (:class:`SchemaMismatchError`),
    before anything native is built."""
    native = _native.active()
    if native is None:
        return compile_encoder(schema, prefix, strict, strict_allow_default, to_dict, limits, role)
    # the pure encoder checks and parses the schema first (its errors are the errors) and is the
    # native encoder's fallback, so it is built without to_dict: the native side calls to_dict once.
    # It is compiled at the native encoder's first fallback to it (most never fall back)
    fallback = CompiledOnFirstCall(encoder_builder(schema, prefix, strict, strict_allow_default, None, limits, role))
    parsed = parse_schema(schema)
    if is_raw_bytes(parsed):
        return compile_encoder(parsed, prefix, strict, strict_allow_default, to_dict, limits, role)
    classes = _typed_classes(parsed, to_dict)
    if classes is not None:
        # typed records read natively from their instances: no to_dict call; the fallback (for a
        # value the loop leaves, an object of another class included) converts with to_dict
        fallback = CompiledOnFirstCall(
            encoder_builder(schema, prefix, strict, strict_allow_default, to_dict, limits, role))
    try:
        nodes, root, recursive, general_union = lower(parsed, classes=classes)
        encoder: _Encode = native.AvroEncoder(
            nodes, root, recursive, general_union, prefix, fallback, None if classes is not None else to_dict,
            strict, strict_allow_default, min(limits.max_depth, _MAX_COUNT), ValidationError, _CLASSES,
        )
    # Unsupported: a schema the native encoder leaves to the pure one; KeyError / TypeError /
    # ValueError: a schema shape the lowering does not expect (the pure encoder is still right for
    # it); RecursionError: a schema nesting deeper than this thread's stack lets the lowering go;
    # SchemaMismatchError: the program compiler failed (a panic: a serdes bug, reported on stderr)
    except (Unsupported, KeyError, TypeError, ValueError, RecursionError, SchemaMismatchError):
        if to_dict is None:
            return fallback.built()  # the encoder: its build errors are raised now
        return compile_encoder(parsed, prefix, strict, strict_allow_default, to_dict, limits, role)
    return encoder


def _typed_classes(parsed: Any, to_dict: Any) -> Optional[Dict[str, RecordMaker]]:
    """For ``to_dict=serdes.typed.to_dict(cls)``: each record's class when every class of the
    schema is a plain dataclass that agrees with it (its instances' ``__dict__`` is the record),
    else None (to_dict converts, then the program encodes the dict)."""
    if not isinstance(to_dict, ToDict):
        return None
    makers = record_makers(parsed, to_dict.record_type)
    if makers is None:
        return None
    records = {name: m for name, m in makers.items() if isinstance(m, RecordMaker)}
    if not all(m.set_dict for m in records.values()):
        return None
    return records


def is_native_encoder(encode: object) -> bool:
    """Whether ``encode`` (from :func:`compile_native_encoder`) runs in the native extension."""
    native = _native.native
    return native is not None and isinstance(encode, native.AvroEncoder)
