"""Avro schemas as Arrow columns, and the per-record decoders of one reader schema.

The mapping is arrow-avro's (apache/arrow-rs), so that the native columnar decoder, which uses
that crate, and this pure path give the same Arrow types (docs/arrow.md has the table).
"""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any, Dict, Optional, Set, Tuple

import pyarrow as pa

from .._errors import SchemaMismatchError
from ._shapes import AvroDuration, Enum, ListOf, MapOf, Plain, Shape, Struct, Union, Uuid

__all__ = ["avro_shape", "self_contained", "named_types", "NoColumnarShape"]


class NoColumnarShape(SchemaMismatchError):
    """A schema whose values have no Arrow column type: a recursive record (Arrow types are
    finite trees), a JSON Schema without types, a Protobuf ``Any``/``Struct``, ..."""


_INT32 = (-(1 << 31), (1 << 31) - 1)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_PRIMITIVES: Dict[str, Shape] = {
    "null": Plain(pa.null(), check=lambda v: v is None),
    "boolean": Plain(pa.bool_(), (bool,)),
    "int": Plain(pa.int32(), check=lambda v: _is_int(v) and _INT32[0] <= v <= _INT32[1]),
    "long": Plain(pa.int64(), check=_is_int),
    "float": Plain(pa.float32(), (float,)),
    "double": Plain(pa.float64(), (float,)),
    "bytes": Plain(pa.binary(), (bytes,)),
    "string": Plain(pa.utf8(), (str,)),
}

_UTC = "+00:00"


def _is_aware(v: Any) -> bool:
    return isinstance(v, datetime.datetime) and v.tzinfo is not None


def _is_naive(v: Any) -> bool:
    return isinstance(v, datetime.datetime) and v.tzinfo is None


def _is_date(v: Any) -> bool:
    return isinstance(v, datetime.date) and not isinstance(v, datetime.datetime)


_TIMESTAMPS = {
    "timestamp-millis": ("ms", True), "timestamp-micros": ("us", True), "timestamp-nanos": ("ns", True),
    "local-timestamp-millis": ("ms", False), "local-timestamp-micros": ("us", False),
    "local-timestamp-nanos": ("ns", False),
}


def _logical(s: Dict[str, Any], base: str) -> Optional[Shape]:
    """The shape of a logical type on ``base``, or ``None`` where fastavro reads the base type
    (an unknown logical type, or one on the wrong base type)."""
    lt = s.get("logicalType")
    if lt == "decimal" and base in ("bytes", "fixed"):
        precision: Any = s.get("precision")
        scale: Any = s.get("scale", 0)
        if not _is_int(precision) or not _is_int(scale) or not 0 < precision <= 76 or not 0 <= scale <= precision:
            return None
        typ = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
        return Plain(typ, (decimal.Decimal,))
    if lt == "uuid" and base == "string":
        return Uuid()
    if lt == "date" and base == "int":
        return Plain(pa.date32(), check=_is_date)
    if lt == "time-millis" and base == "int":
        return Plain(pa.time32("ms"), (datetime.time,))
    if lt == "time-micros" and base == "long":
        return Plain(pa.time64("us"), (datetime.time,))
    if lt in _TIMESTAMPS and base == "long":
        unit, utc = _TIMESTAMPS[lt]
        return Plain(pa.timestamp(unit, _UTC if utc else None), check=_is_aware if utc else _is_naive)
    if lt == "duration" and base == "fixed" and s.get("size") == 12:
        return AvroDuration()
    return None


def _branch_name(s: Any) -> str:
    if isinstance(s, str):
        return s
    if isinstance(s, dict):
        t = s.get("type")
        return str(s.get("name") if t in ("record", "error", "enum", "fixed") else t)
    return "union"


def named_types(parsed: Any) -> Dict[str, Any]:
    """The named types of a parsed (fastavro) schema by full name: a copy of its bookkeeping."""
    return dict(parsed.get("__named_schemas", {})) if isinstance(parsed, dict) else {}


def avro_shape(parsed: Any, max_depth: int = 64) -> Struct:
    """The columns of a parsed (fastavro) Avro schema: a record's fields, or for any other schema
    one column ``value``. Raises :class:`NoColumnarShape` for a recursive schema."""
    named = named_types(parsed)

    def shape(s: Any, path: Tuple[str, ...]) -> Tuple[Shape, bool]:
        """(shape, nullable) of schema node ``s``; ``path``: the named types being defined."""
        if len(path) > max_depth:
            raise NoColumnarShape(f"the schema nests more than {max_depth} levels")
        if isinstance(s, list):
            branches = [b for b in s if b != "null"]
            nullable = len(branches) < len(s)
            if len(branches) == 1:
                return shape(branches[0], path)[0], nullable
            if not branches:
                return _PRIMITIVES["null"], True
            # a general union: every branch, null included, as a child of a dense union (a
            # nullable column when null is a branch, as arrow-avro types it)
            return Union([(_branch_name(b), None if b == "null" else shape(b, path)[0]) for b in s]), nullable
        if isinstance(s, str):
            if s in _PRIMITIVES:
                return _PRIMITIVES[s], s == "null"
            if s in path:
                raise NoColumnarShape(f"record {s} contains itself: a recursive schema has no columnar shape")
            if s not in named:
                raise NoColumnarShape(f"the schema names an undefined type {s!r}")
            return shape(named[s], path)
        if not isinstance(s, dict):
            raise NoColumnarShape(f"not an Avro schema node: {type(s).__name__}")
        t = s.get("type")
        if isinstance(t, (dict, list)):
            return shape(t, path)
        if t in _PRIMITIVES:
            logical = _logical(s, t)
            return (logical or _PRIMITIVES[t]), t == "null"
        if t in ("record", "error"):
            name = str(s.get("name"))
            if name in path:
                raise NoColumnarShape(f"record {name} contains itself: a recursive schema has no columnar shape")
            named.setdefault(name, s)
            inner = path + (name,)
            fields = []
            for f in s.get("fields", ()):
                sh, nullable = shape(f.get("type"), inner)
                fields.append((str(f.get("name")), sh, nullable))
            return Struct(fields), False
        if t == "enum":
            named.setdefault(str(s.get("name")), s)
            return Enum([str(x) for x in s.get("symbols", ())]), False
        if t == "fixed":
            named.setdefault(str(s.get("name")), s)
            logical = _logical(s, "fixed")
            size = int(s.get("size", 0))

            def fixed_size(v: Any, n: int = size) -> bool:
                return isinstance(v, bytes) and len(v) == n

            return logical or Plain(pa.binary(size), check=fixed_size), False
        if t == "array":
            item, item_nullable = shape(s.get("items"), path)
            return ListOf(item, item_nullable), False
        if t == "map":
            value, value_nullable = shape(s.get("values"), path)
            return MapOf(_PRIMITIVES["string"], value, value_nullable), False
        raise NoColumnarShape(f"unknown Avro type {t!r}")

    top, nullable = shape(parsed, ())
    if isinstance(top, Struct):
        return top
    return Struct([("value", top, nullable)], wrapped=True)


def self_contained(parsed: Any) -> str:
    """A parsed schema as one JSON document that defines every named type it uses (at its first
    use), without fastavro's bookkeeping keys: what the native decoder is given."""
    named = named_types(parsed)
    defined: Set[str] = set()

    def walk(s: Any) -> Any:
        if isinstance(s, list):
            return [walk(b) for b in s]
        if isinstance(s, str):
            if s in named and s not in defined:
                return walk(named[s])
            return s
        if not isinstance(s, dict):
            return s
        out = {k: v for k, v in s.items() if not k.startswith("__")}
        t = s.get("type")
        if t in ("record", "error", "enum", "fixed"):
            name = str(s.get("name"))
            defined.add(name)
            # a definition names its type by its short name and namespace: arrow-avro registers a
            # dotted name as written, then looks references up split at the last dot
            namespace, _, short = name.rpartition(".")
            out["name"] = short
            out.pop("namespace", None)
            if namespace:
                out["namespace"] = namespace
        if isinstance(t, (dict, list)) or (isinstance(t, str) and t in named):
            out["type"] = walk(t)
        if t in ("record", "error"):
            out["fields"] = [dict(f, type=walk(f.get("type"))) for f in s.get("fields", ())]
        elif t == "array":
            out["items"] = walk(s.get("items"))
        elif t == "map":
            out["values"] = walk(s.get("values"))
        return out

    return json.dumps(walk(parsed), separators=(",", ":"))

