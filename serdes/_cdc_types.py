"""Debezium / Kafka Connect semantic types -> Python values (``serdes.cdc.SemanticTypes``).

A Debezium converter writes a column's *semantic* type into the schema next to its physical type
(Avro: ``"connect.name": "io.debezium.time.MicroTimestamp"`` on a ``long``).  The decoders give the
physical value (an ``int`` of microseconds); this module builds, once per writer schema, a
converter per column that turns it into the value the semantic type means (a ``datetime``).

One rule per semantic type lives in ``_RULES``; a name in a Debezium or Connect namespace that is
not there is a :class:`~serdes.ColumnValueError` when a value of it arrives, never a value passed
on as if it were understood.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import uuid
from decimal import Decimal
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ._errors import ColumnValueError, RecordLocation

__all__ = ["UNAVAILABLE", "PLACEHOLDER", "RowConverter", "placeholder_columns", "row_converters", "SEMANTIC_TYPES",
           "SEMANTIC_PREFIXES", "SemanticValueError", "is_semantic_name", "unscaled_digits"]

#: Debezium's default ``unavailable.value.placeholder``
PLACEHOLDER = "__debezium_unavailable_value"

#: bound on the schema nesting this module walks (schemas come from the registry: untrusted)
MAX_SCHEMA_DEPTH = 32


class _Unavailable:
    """The value of a column Debezium did not send (an unchanged TOASTed column of an update under
    ``REPLICA IDENTITY DEFAULT``): the column kept its previous value."""

    _instance: Optional["_Unavailable"] = None

    def __new__(cls) -> "_Unavailable":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNAVAILABLE"

    def __reduce__(self) -> str:
        return "UNAVAILABLE"

    def __bool__(self) -> bool:
        return False


UNAVAILABLE = _Unavailable()

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_DAY_MICROS = 86_400_000_000

Conv = Callable[[Any], Any]


class _Bad(Exception):
    """A value its semantic type cannot be; the caller adds the column and the location."""


#: what a converter of :data:`SEMANTIC_TYPES` raises for a value its type cannot be (the message
#: names the type and the value, not the column: the caller adds that, and the record's location)
SemanticValueError = _Bad


def _int(v: Any, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise _Bad(f"{what} must be an integer, got a {type(v).__name__}")
    return v


def _date(v: Any) -> Any:
    if isinstance(v, _dt.date):
        return v
    try:
        return _EPOCH_DATE + _dt.timedelta(days=_int(v, "io.debezium.time.Date (days since 1970-01-01)"))
    except OverflowError:
        raise _Bad(f"date {v} days from 1970-01-01 is outside Python's date range (years 1..9999)") from None


def _time_of(micros: int, what: str) -> _dt.time:
    if not 0 <= micros < _DAY_MICROS:
        # PostgreSQL's time allows 24:00:00, which datetime.time cannot hold
        raise _Bad(f"{what} {micros} us is not a time of day in [00:00, 24:00)")
    s, us = divmod(micros, 1_000_000)
    return _dt.time(s // 3600, s // 60 % 60, s % 60, us)


def _micros(per_micro: int, name: str) -> Callable[[Any], int]:
    """value -> microseconds, for a count of units: milliseconds (``per_micro=-1000``: 1000 us
    each), microseconds (1) or nanoseconds (1000 to a microsecond; a remainder is an error)."""
    def micros(v: Any) -> int:
        n = _int(v, name)
        if per_micro < 0:
            return n * -per_micro
        q, r = divmod(n, per_micro)
        if r:
            raise _Bad(f"{name} {n} has sub-microsecond digits, which Python's datetime cannot hold")
        return q
    return micros


_MS, _US, _NS = -1000, 1, 1000


def _time(unit: int, name: str) -> Conv:
    to_micros = _micros(unit, name)

    def conv(v: Any) -> Any:
        if isinstance(v, _dt.time):
            return v
        return _time_of(to_micros(v), name)
    return conv


def _timestamp(unit: int, name: str) -> Conv:
    to_micros = _micros(unit, name)

    def conv(v: Any) -> Any:
        if isinstance(v, _dt.datetime):
            return v
        try:
            return _EPOCH + _dt.timedelta(microseconds=to_micros(v))
        except OverflowError:
            raise _Bad(f"{name} {v} is outside Python's datetime range (years 1..9999)") from None
    return conv


# ISO-8601 as Debezium's ZonedTimestamp / ZonedTime write it: up to 9 fraction digits, Z or an offset
_ZONED_TS = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d(?::\d\d)?)\Z")
_ZONED_T = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d(?::\d\d)?)\Z")


def _fraction(text: Optional[str], name: str, value: str) -> int:
    if not text:
        return 0
    if len(text) > 6 and text[6:].strip("0"):
        raise _Bad(f"{name} {value[:64]!r} has sub-microsecond digits, which Python's datetime cannot hold")
    return int(text[:6].ljust(6, "0"))


def _tz(text: str) -> _dt.tzinfo:
    if text == "Z":
        return _dt.timezone.utc
    sign = -1 if text[0] == "-" else 1
    parts = [int(p) for p in text[1:].split(":")]
    delta = _dt.timedelta(hours=parts[0], minutes=parts[1], seconds=parts[2] if len(parts) > 2 else 0)
    return _dt.timezone(sign * delta)


def _zoned_timestamp(v: Any) -> Any:
    name = "io.debezium.time.ZonedTimestamp"
    if isinstance(v, _dt.datetime):
        return v
    if not isinstance(v, str):
        raise _Bad(f"{name} must be an ISO-8601 string, got a {type(v).__name__}")
    m = _ZONED_TS.match(v)
    if m is None:
        raise _Bad(f"{name} {v[:64]!r} is not an ISO-8601 timestamp with a zone")
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    try:
        return _dt.datetime(y, mo, d, h, mi, s, _fraction(m.group(7), name, v), _tz(m.group(8)))
    except ValueError as exc:
        raise _Bad(f"{name} {v[:64]!r}: {exc}") from None


def _zoned_time(v: Any) -> Any:
    name = "io.debezium.time.ZonedTime"
    if isinstance(v, _dt.time):
        return v
    if not isinstance(v, str):
        raise _Bad(f"{name} must be an ISO-8601 string, got a {type(v).__name__}")
    m = _ZONED_T.match(v)
    if m is None:
        raise _Bad(f"{name} {v[:64]!r} is not an ISO-8601 time with a zone")
    try:
        return _dt.time(int(m.group(1)), int(m.group(2)), int(m.group(3)), _fraction(m.group(4), name, v),
                        _tz(m.group(5)))
    except ValueError as exc:
        raise _Bad(f"{name} {v[:64]!r}: {exc}") from None


def _unscaled(raw: Any, scale: int, name: str) -> Decimal:
    if not isinstance(raw, (bytes, bytearray)):
        raise _Bad(f"{name} unscaled value must be bytes, got a {type(raw).__name__}")
    n = int.from_bytes(raw, "big", signed=True)
    try:
        digits = tuple(int(c) for c in str(abs(n)))
    except ValueError:  # beyond Python's int -> str digit limit
        raise _Bad(f"{name} has more digits than this Python converts ({len(raw)} bytes)") from None
    return Decimal((1 if n < 0 else 0, digits, -scale))


def _variable_scale_decimal(v: Any) -> Any:
    name = "io.debezium.data.VariableScaleDecimal"
    if isinstance(v, Decimal):
        return v
    if not isinstance(v, Mapping) or "scale" not in v or "value" not in v:
        raise _Bad(f"{name} must be a record {{scale, value}}, got a {type(v).__name__}")
    return _unscaled(v["value"], _int(v["scale"], f"{name} scale"), name)


def _connect_decimal(params: Mapping[str, Any]) -> Conv:
    name = "org.apache.kafka.connect.data.Decimal"
    try:
        scale = int(params.get("scale", 0))
        precision = int(params["connect.decimal.precision"]) if "connect.decimal.precision" in params else None
    except (TypeError, ValueError):
        raise _Bad(f"{name} parameters {dict(params)!r} are not integers") from None

    def conv(v: Any) -> Any:
        d = v if isinstance(v, Decimal) else _unscaled(v, scale, name)
        if precision is not None and d.is_finite() and unscaled_digits(d, scale) > precision:
            raise _Bad(f"{name} {d} does not fit its declared decimal({precision}, {scale})")
        return d
    return conv


def unscaled_digits(d: Decimal, scale: int) -> int:
    """Digits of ``d``'s unscaled value at ``scale`` (``12.3400`` at scale 2: 1234, 4 digits);
    a nonzero digit beyond the scale counts as too many.  Exact: no decimal context involved (a
    Flink DECIMAL(38, 18) column hands back ``12.340000000000000000`` for a ``numeric(10,2)``)."""
    _, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    n = len(digits)
    while n > 1 and digits[n - 1] == 0 and exp + scale < 0:  # trailing zeros below the scale
        n -= 1
        exp += 1
    if exp + scale < 0:
        return 1 << 30  # a nonzero digit the scale cannot hold
    if n == 1 and digits[0] == 0:
        return 0
    return n + exp + scale


def _uuid(v: Any) -> Any:
    if isinstance(v, uuid.UUID):
        return v
    if not isinstance(v, str):
        raise _Bad(f"io.debezium.data.Uuid must be a string, got a {type(v).__name__}")
    try:
        return uuid.UUID(v)
    except ValueError:
        raise _Bad(f"io.debezium.data.Uuid {v[:64]!r} is not a UUID") from None


def _json(v: Any) -> Any:
    if not isinstance(v, str):
        raise _Bad(f"io.debezium.data.Json must be a string, got a {type(v).__name__}")
    try:
        return json.loads(v)
    except RecursionError:
        raise _Bad("io.debezium.data.Json is nested too deeply to parse") from None
    except ValueError as exc:
        raise _Bad(f"io.debezium.data.Json is not JSON: {exc}") from None


def _micro_duration(v: Any) -> Any:
    if isinstance(v, _dt.timedelta):
        return v
    try:
        return _dt.timedelta(microseconds=_int(v, "io.debezium.time.MicroDuration"))
    except OverflowError:
        raise _Bad(f"io.debezium.time.MicroDuration {v} is outside Python's timedelta range") from None


def _same(v: Any) -> Any:
    return v


def _kind(t: type, name: str) -> Conv:
    def conv(v: Any) -> Any:
        if not isinstance(v, t) or isinstance(v, bool) and t is int:
            raise _Bad(f"{name} must be a {t.__name__}, got a {type(v).__name__}")
        return v
    return conv


#: semantic type -> (converter factory taking the schema's connect.parameters, Python type for docs)
SEMANTIC_TYPES: Dict[str, Tuple[Callable[[Mapping[str, Any]], Conv], str]] = {
    "io.debezium.time.Date": (lambda p: _date, "datetime.date"),
    "io.debezium.time.Time": (lambda p: _time(_MS, "io.debezium.time.Time"), "datetime.time"),
    "io.debezium.time.MicroTime": (lambda p: _time(_US, "io.debezium.time.MicroTime"), "datetime.time"),
    "io.debezium.time.NanoTime": (lambda p: _time(_NS, "io.debezium.time.NanoTime"), "datetime.time"),
    "io.debezium.time.ZonedTime": (lambda p: _zoned_time, "datetime.time with tzinfo"),
    "io.debezium.time.Timestamp": (lambda p: _timestamp(_MS, "io.debezium.time.Timestamp"),
                                   "datetime.datetime (naive)"),
    "io.debezium.time.MicroTimestamp": (lambda p: _timestamp(_US, "io.debezium.time.MicroTimestamp"),
                                        "datetime.datetime (naive)"),
    "io.debezium.time.NanoTimestamp": (lambda p: _timestamp(_NS, "io.debezium.time.NanoTimestamp"),
                                       "datetime.datetime (naive)"),
    "io.debezium.time.ZonedTimestamp": (lambda p: _zoned_timestamp, "datetime.datetime with tzinfo"),
    "io.debezium.time.MicroDuration": (lambda p: _micro_duration, "datetime.timedelta"),
    "io.debezium.time.Year": (lambda p: _kind(int, "io.debezium.time.Year"), "int"),
    "io.debezium.time.Interval": (lambda p: _kind(str, "io.debezium.time.Interval"), "str (ISO-8601 duration)"),
    "io.debezium.data.VariableScaleDecimal": (lambda p: _variable_scale_decimal, "decimal.Decimal"),
    "org.apache.kafka.connect.data.Decimal": (_connect_decimal, "decimal.Decimal"),
    "io.debezium.data.Uuid": (lambda p: _uuid, "uuid.UUID"),
    "io.debezium.data.Json": (lambda p: _json, "dict / list / str / int / float / bool / None (json.loads)"),
    "io.debezium.data.Enum": (lambda p: _kind(str, "io.debezium.data.Enum"), "str"),
    "io.debezium.data.EnumSet": (lambda p: _kind(str, "io.debezium.data.EnumSet"), "str (comma-separated)"),
    "io.debezium.data.Xml": (lambda p: _kind(str, "io.debezium.data.Xml"), "str"),
    "io.debezium.data.Ltree": (lambda p: _kind(str, "io.debezium.data.Ltree"), "str"),
    "io.debezium.data.Bits": (lambda p: _kind(bytes, "io.debezium.data.Bits"), "bytes"),
    # Connect's own logical types: the Avro decoder already made them date/time/datetime
    "org.apache.kafka.connect.data.Date": (lambda p: _date, "datetime.date"),
    "org.apache.kafka.connect.data.Time": (lambda p: _time(_MS, "org.apache.kafka.connect.data.Time"),
                                           "datetime.time"),
    "org.apache.kafka.connect.data.Timestamp": (lambda p: _same, "datetime.datetime (UTC)"),
}

#: connect.name namespaces that mean a semantic type (other connect.name values name records)
SEMANTIC_PREFIXES = ("io.debezium.time.", "io.debezium.data.", "org.apache.kafka.connect.data.")


def is_semantic_name(name: Any) -> bool:
    """Whether a ``connect.name`` (or a JSON Schema ``title``) names a semantic type -- one of
    :data:`SEMANTIC_TYPES` or an unknown one in a Debezium / Connect namespace."""
    return isinstance(name, str) and name.startswith(SEMANTIC_PREFIXES)

_NULL_TYPES = ("null",)


class _Walker:
    """Builds converters from an Avro schema (parsed JSON), resolving named-type references."""

    def __init__(self) -> None:
        self.names: Dict[str, Any] = {}
        self.found: List[str] = []  # the semantic types met so far, in walk order

    def _register(self, schema: Mapping[str, Any], namespace: str) -> str:
        name = str(schema.get("name", ""))
        ns = str(schema.get("namespace", namespace) or "")
        full = name if "." in name or not ns else f"{ns}.{name}"
        self.names[full] = schema
        return ns

    def conv(self, schema: Any, namespace: str, depth: int) -> Optional[Conv]:
        """A converter for values of ``schema``, or ``None`` when they pass unchanged."""
        if depth > MAX_SCHEMA_DEPTH:
            raise _Bad(f"schema nested deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(schema, str):
            ref = self.names.get(schema) or self.names.get(f"{namespace}.{schema}")
            return None if ref is None else self._named(ref, namespace, depth)
        if isinstance(schema, list):
            branches = [b for b in schema if b not in _NULL_TYPES]
            if len(branches) == 1:
                inner = self.conv(branches[0], namespace, depth + 1)
                return None if inner is None else _nullable(inner)
            for b in branches:  # other unions: no semantic type can be told apart by value
                self.conv(b, namespace, depth + 1)
            return None
        if not isinstance(schema, Mapping):
            return None
        t = schema.get("type")
        if t in ("record", "error", "enum", "fixed"):
            namespace = self._register(schema, namespace)
        semantic = self._semantic(schema)
        if semantic is not None:
            return semantic
        if t == "array":
            item = self.conv(schema.get("items"), namespace, depth + 1)
            return None if item is None else _each(item)
        if t == "map":
            val = self.conv(schema.get("values"), namespace, depth + 1)
            return None if val is None else _values(val)
        if t in ("record", "error"):
            fields = self.fields(schema, namespace, depth + 1)
            return None if not fields else _record(fields)
        if isinstance(t, (Mapping, list)):
            return self.conv(t, namespace, depth + 1)
        return None

    def _named(self, schema: Mapping[str, Any], namespace: str, depth: int) -> Optional[Conv]:
        semantic = self._semantic(schema)
        if semantic is not None:
            return semantic
        if schema.get("type") in ("record", "error"):
            fields = self.fields(schema, namespace, depth + 1)
            return None if not fields else _record(fields)
        return None

    def _semantic(self, schema: Mapping[str, Any]) -> Optional[Conv]:
        name = schema.get("connect.name")
        if not is_semantic_name(name):
            return None
        assert isinstance(name, str)
        self.found.append(name[:128])
        rule = SEMANTIC_TYPES.get(name)
        params = schema.get("connect.parameters")
        params = params if isinstance(params, Mapping) else {}
        if rule is None:
            def unknown(v: Any, n: str = name[:128]) -> Any:
                raise _Bad(f"semantic type {n!r} is not one serdes.cdc maps (docs/cdc.md lists them)")
            return unknown
        return rule[0](params)

    def fields(self, record: Mapping[str, Any], namespace: str, depth: int,
               signatures: Optional[Dict[str, Tuple[str, ...]]] = None) -> Dict[str, Conv]:
        """The converters of ``record``'s fields that have one; ``signatures`` (when given) gets
        each field's semantic types, in walk order (``()``: none)."""
        out: Dict[str, Conv] = {}
        fields = record.get("fields")
        if not isinstance(fields, list):
            return out
        for f in fields:
            if isinstance(f, Mapping) and isinstance(f.get("name"), str):
                mark = len(self.found)
                c = self.conv(f.get("type"), namespace, depth + 1)
                if signatures is not None:
                    signatures[f["name"]] = tuple(self.found[mark:])
                if c is not None:
                    out[f["name"]] = c
        return out


def _nullable(conv: Conv) -> Conv:
    return lambda v: None if v is None else conv(v)


def _each(conv: Conv) -> Conv:
    return lambda v: v if not isinstance(v, list) else [None if x is None else conv(x) for x in v]


def _values(conv: Conv) -> Conv:
    return lambda v: v if not isinstance(v, dict) else {k: None if x is None else conv(x) for k, x in v.items()}


def _record(fields: Mapping[str, Conv]) -> Conv:
    def conv(v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        out = dict(v)
        for name, f in fields.items():
            if out.get(name) is not None:
                out[name] = f(out[name])
        return out
    return conv


def _is_placeholder(v: Any, placeholder: str, raw: bytes, as_decimal: Optional[Decimal]) -> bool:
    if type(v) is str:
        return v == placeholder
    if type(v) is bytes:
        return v == raw
    if as_decimal is not None and isinstance(v, Decimal):
        # an Avro decimal column: the decoder already read the placeholder's bytes as a number
        return v == as_decimal
    if type(v) is list and len(v) == 1:  # an array column: Debezium sends [placeholder]
        return _is_placeholder(v[0], placeholder, raw, None)
    return False


def placeholder_columns(row: Optional[Mapping[str, Any]], placeholder: str = PLACEHOLDER) -> List[str]:
    """The columns of ``row`` holding Debezium's unavailable-value placeholder as text, bytes or a
    one-element array (the forms of the TOASTable column types: text, bytea, jsonb, arrays)."""
    if not row:
        return []
    raw = placeholder.encode()
    return [name for name, v in row.items() if v is not None and _is_placeholder(v, placeholder, raw, None)]


class RowConverter:
    """The converters of one row schema (``Value`` or ``Key``): :meth:`convert` returns a new dict.

    ``signatures``: each column's semantic types (``connect.name``s in the column's schema, in
    walk order; ``()`` for a column without one): two schemas read a column alike when its
    signatures are equal (``read_debezium`` compares each writer schema's with its row type's)."""

    __slots__ = ("columns", "placeholder", "signatures", "_raw", "_decimals")

    def __init__(self, columns: Dict[str, Conv], placeholder: Optional[str] = PLACEHOLDER,
                 decimal_scales: Optional[Mapping[str, int]] = None,
                 signatures: Optional[Dict[str, Tuple[str, ...]]] = None) -> None:
        self.columns = columns
        self.placeholder = placeholder
        self.signatures: Dict[str, Tuple[str, ...]] = signatures or {}
        self._raw = placeholder.encode() if placeholder is not None else b""
        self._decimals: Dict[str, Decimal] = {}
        if placeholder is not None:
            for name, scale in (decimal_scales or {}).items():
                self._decimals[name] = _unscaled(self._raw, scale, "placeholder")

    def convert(self, row: Optional[Dict[str, Any]], part: str, location: Optional[RecordLocation],
                unavailable_ok: bool = False) -> Optional[Dict[str, Any]]:
        """``row`` with each column's semantic type applied.  ``unavailable_ok``: the row is an
        update's ``after``, where Debezium's placeholder means "not sent" (an unchanged TOASTed
        column) and becomes :data:`UNAVAILABLE`.  Elsewhere the placeholder in a column of a
        semantic type is an error (Debezium has the whole row there); in a plain string column it
        is the column's text."""
        if row is None:
            return None
        out = dict(row)
        ph = self.placeholder
        for name, value in row.items():
            if value is None:
                continue
            conv = self.columns.get(name)
            if ph is not None and _is_placeholder(value, ph, self._raw, self._decimals.get(name)):
                if unavailable_ok:
                    out[name] = UNAVAILABLE
                    continue
                if conv is not None or name in self._decimals:
                    raise ColumnValueError(
                        f"Debezium column {part}.{name}: the unavailable-value placeholder {ph[:64]!r} "
                        "where the value is required (only an update's 'after' may lack a column)",
                        _copy(location), column=name)
            if conv is None:
                continue
            try:
                out[name] = conv(value)
            except _Bad as exc:
                raise ColumnValueError(f"Debezium column {part}.{name}: {exc}",
                                       _copy(location), column=name) from None
        return out


def _copy(location: Optional[RecordLocation]) -> RecordLocation:
    if location is None:
        return RecordLocation()
    return RecordLocation(location.topic, location.field, location.partition, location.offset)


def row_converters(schema: Any, placeholder: Optional[str] = PLACEHOLDER) -> Tuple[RowConverter, List[str]]:
    """From a writer schema (Avro JSON text or parsed): the converter of its row -- the
    envelope's ``before``/``after`` record, or the schema itself for a key -- and the names of the
    row's columns.  Raises :class:`ColumnValueError` for a schema it cannot walk."""
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except (ValueError, RecursionError) as exc:
            raise ColumnValueError(f"writer schema is not Avro JSON: {str(exc)[:200]}") from None
    walker = _Walker()
    try:
        if not isinstance(schema, Mapping) or schema.get("type") != "record":
            return RowConverter({}, placeholder), []
        ns = walker._register(schema, "")
        row = schema
        for f in schema.get("fields") or []:
            if isinstance(f, Mapping) and f.get("name") in ("before", "after"):
                branch = f.get("type")
                branches = branch if isinstance(branch, list) else [branch]
                for b in branches:
                    if isinstance(b, Mapping) and b.get("type") == "record":
                        row = b
                        break
                if row is not schema:
                    break
        if row is not schema:
            ns = walker._register(row, ns)
        signatures: Dict[str, Tuple[str, ...]] = {}
        columns = walker.fields(row, ns, 1, signatures)
    except _Bad as exc:
        raise ColumnValueError(f"writer schema: {exc}") from None
    fields = [f for f in row.get("fields") or [] if isinstance(f, Mapping) and isinstance(f.get("name"), str)]
    scales = {f["name"]: s for f in fields if (s := _decimal_scale(f.get("type"))) is not None}
    return RowConverter(columns, placeholder, scales, signatures), [f["name"] for f in fields]


def _decimal_scale(schema: Any) -> Optional[int]:
    """The scale of an Avro ``bytes``/``fixed`` ``decimal`` column (``["null", decimal]`` too)."""
    if isinstance(schema, list):
        branches = [b for b in schema if b not in _NULL_TYPES]
        return _decimal_scale(branches[0]) if len(branches) == 1 else None
    if isinstance(schema, Mapping) and schema.get("logicalType") == "decimal":
        scale = schema.get("scale", 0)
        return scale if isinstance(scale, int) and not isinstance(scale, bool) and 0 <= scale <= 1000 else None
    return None
