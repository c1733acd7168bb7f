"""Avro / JSON Schema records -> Flink ``Row`` with a ``RowTypeInfo`` derived from the schema.

Rows travel with PyFlink's native ``RowCoder`` (field by field, no pickling) and can be turned
into a Table with ``t_env.from_data_stream(stream)``::

    rows = decoded.map(sf.avro_row_converter(schema), output_type=sf.avro_row_type_info(schema))
    table = t_env.from_data_stream(rows)
"""

from __future__ import annotations

import datetime
import json
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, Union, cast

from pyflink.common import Row, Types
from pyflink.common.typeinfo import LocalTimeTypeInfo, RowTypeInfo, TypeInformation

from .._errors import MalformedEnvelopeError
from ._column_checks import declare_decimal
from ._records import bytes_type, row_named

#: an Avro schema: JSON text, a primitive type name, or parsed JSON
Schema = Union[str, Dict[str, Any], List[Any]]

_BASIC: Dict[str, Callable[[], TypeInformation]] = {
    "boolean": Types.BOOLEAN,
    "int": Types.INT,
    "long": Types.LONG,
    "float": Types.FLOAT,
    "double": Types.DOUBLE,
    "string": Types.STRING,
}


def _parse(schema: Schema) -> Any:
    if isinstance(schema, str):
        s = schema.strip()
        if s.startswith("{") or s.startswith("["):
            return json.loads(s)
        return s  # a primitive type name
    return schema


def _non_null(schema: Any) -> Any:
    """``["null", X]`` -> X; other unions are not representable as one Flink type."""
    if isinstance(schema, list):
        rest = [s for s in schema if s != "null"]
        if len(rest) != 1:
            raise ValueError(f"Avro union {schema!r} has no single Flink type (only [\"null\", T] is supported)")
        return rest[0]
    return schema


def avro_type_info(schema: Schema, named: Optional[Dict[str, Any]] = None) -> TypeInformation:
    """Flink ``TypeInformation`` for an Avro (sub)schema."""
    named = {} if named is None else named
    s = _non_null(_parse(schema))
    if isinstance(s, str):
        if s in _BASIC:
            return _BASIC[s]()
        if s == "bytes":
            return bytes_type()
        if s in named:
            return avro_type_info(named[s], named)
        raise ValueError(f"unsupported Avro type {s!r}")
    t = s.get("type")
    logical = s.get("logicalType")
    # PyFlink's SQL_TIMESTAMP and SQL_TIME coders keep milliseconds; the micros logical types get
    # the java.time types, whose coders keep every microsecond (never a value cut unseen)
    if logical in ("timestamp-millis", "local-timestamp-millis"):
        return Types.SQL_TIMESTAMP()
    if logical in ("timestamp-micros", "local-timestamp-micros"):
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE_TIME)
    if logical == "date":
        return Types.SQL_DATE()
    if logical == "time-millis":
        return Types.SQL_TIME()
    if logical == "time-micros":
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_TIME)
    if logical == "decimal":
        precision, scale = s.get("precision"), s.get("scale", 0)
        if type(precision) is int and type(scale) is int and 0 <= scale <= precision:
            # the column's value check refuses more digits than declared (read_debezium)
            return declare_decimal(Types.BIG_DEC(), precision, scale)
        return Types.BIG_DEC()
    if logical == "uuid":
        return Types.STRING()
    if t == "record":
        named[s["name"]] = s
        if s.get("namespace"):
            named[f"{s['namespace']}.{s['name']}"] = s
        return row_named(
            [f["name"] for f in s["fields"]], [avro_type_info(f["type"], named) for f in s["fields"]]
        )
    if t == "enum":
        named[s["name"]] = s
        return Types.STRING()
    if t == "fixed":
        named[s["name"]] = s
        return bytes_type()
    if t == "array":
        elem = avro_type_info(s["items"], named)
        return Types.LIST(elem)
    if t == "map":
        return Types.MAP(Types.STRING(), avro_type_info(s["values"], named))
    return avro_type_info(t, named)


def avro_row_type_info(schema: Schema) -> RowTypeInfo:
    """``RowTypeInfo`` of an Avro record schema (JSON string or dict)."""
    s = _non_null(_parse(schema))
    if not (isinstance(s, dict) and s.get("type") == "record"):
        raise ValueError("avro_row_type_info needs a record schema")
    return cast(RowTypeInfo, avro_type_info(s))


def _converter(schema: Schema, named: Dict[str, Any]) -> Callable[[Any], Any]:
    s = _non_null(_parse(schema))
    if isinstance(s, str):
        if s in named:
            return _converter(named[s], named)
        return _identity
    t = s.get("type")
    logical = s.get("logicalType")
    if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"):
        return _naive_datetime
    if t == "record":
        named[s["name"]] = s
        if s.get("namespace"):
            named[f"{s['namespace']}.{s['name']}"] = s
        names = [f["name"] for f in s["fields"]]
        convs = [_converter(f["type"], named) for f in s["fields"]]
        if all(c is _identity for c in convs):
            return _RecordToRow(names, None)
        return _RecordToRow(names, convs)
    if t == "array":
        inner = _converter(s["items"], named)
        return _identity if inner is _identity else _ListOf(inner)
    if t == "map":
        inner = _converter(s["values"], named)
        return _identity if inner is _identity else _MapOf(inner)
    if t in ("enum", "fixed"):
        named[s["name"]] = s
    return _identity


def _identity(v: Any) -> Any:
    return v


def _naive_datetime(v: Any) -> Any:
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return v


class _RecordToRow:
    __slots__ = ("names", "convs")

    def __init__(self, names: List[str], convs: Optional[List[Callable[[Any], Any]]]) -> None:
        self.names, self.convs = names, convs

    def __getstate__(self) -> Tuple[List[str], Optional[List[Callable[[Any], Any]]]]:
        return (self.names, self.convs)

    def __setstate__(self, state: Tuple[List[str], Optional[List[Callable[[Any], Any]]]]) -> None:
        self.names, self.convs = state

    def __call__(self, rec: Optional[Dict[str, Any]]) -> Optional[Row]:
        if rec is None:
            return None
        if self.convs is None:
            row = Row(*[rec.get(n) for n in self.names])
        else:
            row = Row(*[c(rec.get(n)) for n, c in zip(self.names, self.convs, strict=True)])
        row.set_field_names(self.names)
        return row


class _ListOf:
    def __init__(self, inner: Callable[[Any], Any]) -> None:
        self.inner = inner

    def __call__(self, v: Any) -> Any:
        return None if v is None else [self.inner(x) for x in v]


class _MapOf:
    def __init__(self, inner: Callable[[Any], Any]) -> None:
        self.inner = inner

    def __call__(self, v: Any) -> Any:
        return None if v is None else {k: self.inner(x) for k, x in v.items()}


def avro_row_converter(schema: Schema) -> Callable[[Dict[str, Any]], Optional[Row]]:
    """dict (as decoded by an Avro deserializer) -> ``Row`` matching :func:`avro_row_type_info`."""
    return _converter(schema, {})


# -- JSON Schema ----------------------------------------------------------------------------------

_JSON_BASIC: Dict[str, Callable[[], TypeInformation]] = {"string": Types.STRING, "integer": Types.LONG, "number": Types.DOUBLE, "boolean": Types.BOOLEAN}


def _json_type(s: Dict[str, Any]) -> Any:
    t = s.get("type")
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        if len(rest) != 1:
            raise ValueError(f"JSON Schema type {t!r} has no single Flink type")
        t = rest[0]
    return t


def json_schema_type_info(schema: Union[str, Dict[str, Any]]) -> TypeInformation:
    s = json.loads(schema) if isinstance(schema, str) else schema
    t = _json_type(s)
    if t in _JSON_BASIC:
        return _JSON_BASIC[t]()
    if t == "array":
        return Types.LIST(json_schema_type_info(s.get("items", {"type": "string"})))
    if t == "object":
        props = s.get("properties") or {}
        if not props:
            raise ValueError("JSON Schema object without properties has no Row type")
        return row_named(list(props), [json_schema_type_info(p) for p in props.values()])
    raise ValueError(f"unsupported JSON Schema type {t!r}")


def json_schema_row_type_info(schema: Union[str, Dict[str, Any]]) -> RowTypeInfo:
    """``RowTypeInfo`` of a JSON Schema ``object`` (properties in declaration order)."""
    t = json_schema_type_info(schema)
    if not isinstance(t, RowTypeInfo):
        raise ValueError("json_schema_row_type_info needs an object schema")
    return t


def _json_optional(s: Dict[str, Any]) -> List[str]:
    """The properties of a JSON Schema object a value may omit: not ``required`` and nullable (how
    a newer schema's added column reads in older events).  The one rule for Debezium rows: the
    ``after`` columns (``parse_change(optional_columns=...)``) and the properties of the objects
    nested in them (:class:`_ObjectToRow`)."""
    required = s.get("required")
    required = set(required) if isinstance(required, list) else set()
    out = []
    for name, prop in (s.get("properties") or {}).items():
        t = prop.get("type") if isinstance(prop, dict) else None
        if name not in required and (t == "null" or (isinstance(t, list) and "null" in t)):
            out.append(name)
    return out


class MissingPropertyError(MalformedEnvelopeError):
    """An object nested in a Debezium row lacks properties it must have.  Raised by the innermost
    object; each enclosing converter adds its step to ``path`` (innermost first) on the way out,
    and the decode operator re-raises it as a :class:`MalformedEnvelopeError` naming the whole
    path (``after.addr.zip``)."""

    def __init__(self, missing: List[str]) -> None:
        self.missing = missing
        self.path: List[str] = []
        super().__init__(f"object has no property {', '.join(repr(m) for m in missing)}")

    def where(self, prefix: str) -> List[str]:
        """The missing properties' paths below ``prefix`` (``after``)."""
        base = prefix + "".join(reversed(self.path))
        return [f"{base}.{m}" for m in self.missing]


class _ObjectToRow(_RecordToRow):
    """A JSON object of a Debezium row -> ``Row``: every property must be there but the optional
    ones (:func:`_json_optional`), which read as ``None`` -- Debezium writes every column, a SQL
    ``NULL`` as a ``null`` value, so an absent one is never a NULL."""

    __slots__ = ("required",)

    def __init__(self, names: List[str], convs: List[Callable[[Any], Any]], required: FrozenSet[str]) -> None:
        super().__init__(names, convs)
        self.required = required

    def __getstate__(self) -> Any:     # (names, convs, required): one more than the base's
        return (self.names, self.convs, self.required)

    def __setstate__(self, state: Any) -> None:
        self.names, self.convs, self.required = state

    def __call__(self, rec: Optional[Dict[str, Any]]) -> Optional[Row]:
        if rec is None:
            return None
        if not rec.keys() >= self.required:
            absent = self.required - rec.keys()
            raise MissingPropertyError([n for n in self.names if n in absent])
        assert self.convs is not None
        values = []
        name = ""
        try:
            for name, conv in zip(self.names, self.convs, strict=True):
                values.append(conv(rec.get(name)))
        except MissingPropertyError as e:
            e.path.append(f".{name}")
            raise
        row = Row(*values)
        row.set_field_names(self.names)
        return row


class _ElementsOf:
    """:class:`_ListOf` for Debezium rows: a nested object's missing property names its index."""

    __slots__ = ("inner",)

    def __init__(self, inner: Callable[[Any], Any]) -> None:
        self.inner = inner

    def __getstate__(self) -> Callable[[Any], Any]:
        return self.inner

    def __setstate__(self, state: Callable[[Any], Any]) -> None:
        self.inner = state

    def __call__(self, v: Any) -> Any:
        if v is None:
            return None
        out = []
        try:
            for x in v:
                out.append(self.inner(x))
        except MissingPropertyError as e:
            e.path.append(f"[{len(out)}]")    # the element that failed
            raise
        return out


def _json_converter(s: Dict[str, Any], complete: bool = False) -> Callable[[Any], Any]:
    """``complete``: a Debezium row's, whose nested objects must have every property but the
    optional ones (:class:`_ObjectToRow`); else a missing property reads as ``None``."""
    t = _json_type(s)
    if t == "object":
        props = s.get("properties") or {}
        convs = [_json_converter(p, complete) for p in props.values()]
        if complete:
            return _ObjectToRow(list(props), convs, frozenset(props) - frozenset(_json_optional(s)))
        return _RecordToRow(list(props), convs)
    if t == "array":
        inner = _json_converter(s.get("items", {"type": "string"}), complete)
        if inner is _identity:
            return _identity
        return _ElementsOf(inner) if complete else _ListOf(inner)
    if t == "number":
        return _to_float
    return _identity


def _to_float(v: Any) -> Optional[float]:
    return None if v is None else float(v)


def json_schema_row_converter(schema: Union[str, Dict[str, Any]]) -> Callable[[Dict[str, Any]], Optional[Row]]:
    s = json.loads(schema) if isinstance(schema, str) else schema
    return _json_converter(s)


__all__ = [
    "avro_type_info",
    "avro_row_type_info",
    "avro_row_converter",
    "json_schema_row_type_info",
    "json_schema_row_converter",
]
