"""Debezium / Kafka Connect semantic types -> Flink column types (``read_debezium(semantic_types=True)``).

The *values* follow ``serdes.cdc.SemanticTypes``' rules -- the decode operator runs the
:class:`~serdes._cdc_types.RowConverter` of the job's reader schema on each ``before`` / ``after``
(one rule per semantic type, in ``serdes._cdc_types.SEMANTIC_TYPES``) -- and this module only says
which Flink type each semantic type becomes and how the Python value ``SemanticTypes`` gives is
handed to that type's PyFlink coder (:data:`FLINK_TYPES`): a ``datetime`` with a zone becomes a
PyFlink ``Instant``, a ``time`` with sub-millisecond digits is refused (Flink's TIME keeps
milliseconds), and the columns whose Flink type is their physical one (STRING, BYTES, BIGINT, INT)
keep the physical value ``SemanticTypes`` validated (a ``uuid`` stays its text, ``jsonb`` its JSON
text).

Only Avro envelopes carry the annotations ``SemanticTypes`` reads (``connect.name`` /
``connect.parameters``).  A JSON Schema ``after`` with Debezium / Connect names in ``title`` or
``connect.name`` is refused when the job is built (:func:`refuse_json_semantic_types`); Protobuf
envelopes pass with their physical types (the generated class carries no Connect names).
"""

from __future__ import annotations

import datetime
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from pyflink.common import Row, Types
from pyflink.common.typeinfo import LocalTimeTypeInfo, RowTypeInfo, TypeInformation

from .._cdc_types import MAX_SCHEMA_DEPTH, SEMANTIC_TYPES, SemanticValueError, is_semantic_name
from .._errors import SerdesError
from ._column_checks import declare_decimal
from ._records import bytes_type, row_named
from ._rows import _converter, _non_null, avro_type_info

__all__ = ["FLINK_TYPES", "FLINK_DECIMAL", "SemanticColumns", "semantic_columns", "refuse_json_semantic_types",
           "SemanticColumn"]

#: the DECIMAL a ``VariableScaleDecimal`` (PostgreSQL ``numeric`` without a scale) becomes: Flink's
#: widest precision, and the scale ``Types.BIG_DEC()`` columns have in the Table API anyway
FLINK_DECIMAL = (38, 18)

#: ``value -> Flink value`` for a value of the Python type ``SemanticTypes`` gives
Adapter = Callable[[Any], Any]


def _local_date() -> TypeInformation:
    return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE)


def _local_time() -> TypeInformation:
    return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_TIME)


def _local_date_time() -> TypeInformation:
    return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE_TIME)


def _decimal() -> TypeInformation:
    return declare_decimal(Types.BIG_DEC(), *FLINK_DECIMAL)


def _same(v: Any) -> Any:
    return v


def _millisecond_time(t: Any) -> Any:
    """Flink's TIME holds milliseconds (its Table runtime stores an int of milliseconds of the day,
    PyFlink's coders too): a time with more digits would lose them unseen."""
    if t.microsecond % 1000:
        raise SemanticValueError(
            f"time {t.isoformat()} has sub-millisecond digits, which Flink's TIME cannot hold (it keeps "
            "milliseconds); read the column with semantic_types=False for its microseconds")
    return t


_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _naive_utc(d: Any) -> Any:
    """A Connect ``Timestamp`` decodes as an aware UTC ``datetime``; a TIMESTAMP (no zone) holds its
    UTC wall clock, as ``avro_row_converter`` gives Avro's ``timestamp-*`` columns."""
    if d.tzinfo is not None:
        return d.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return d


def _instant(d: Any) -> Any:
    """An aware ``datetime`` -> PyFlink ``Instant`` (seconds, nanos), exactly."""
    from pyflink.common.time import Instant

    if d.tzinfo is None:
        raise SemanticValueError(f"timestamp {d.isoformat()} has no time zone, so it is no instant")
    delta = d - _EPOCH_UTC
    return Instant(delta.days * 86_400 + delta.seconds, delta.microseconds * 1000)


def _connect_decimal(params: Mapping[str, Any]) -> TypeInformation:
    # the column's own decimal(p, s) is SemanticTypes' check; this one is the Table API's DECIMAL(38, 18)
    return _decimal()


#: semantic type -> (Flink type factory taking the schema's ``connect.parameters``, adapter of the
#: value ``SemanticTypes`` gives (``None``: the column keeps the physical value, which
#: ``SemanticTypes`` validated), the Flink type for docs/cdc.md)
FLINK_TYPES: Dict[str, Tuple[Callable[[Mapping[str, Any]], TypeInformation], Optional[Adapter], str]] = {
    "io.debezium.time.Date": (lambda p: _local_date(), _same, "DATE"),
    "io.debezium.time.Time": (lambda p: _local_time(), _millisecond_time, "TIME, ms"),
    "io.debezium.time.MicroTime": (lambda p: _local_time(), _millisecond_time, "TIME, ms"),
    "io.debezium.time.NanoTime": (lambda p: _local_time(), _millisecond_time, "TIME, ms"),
    "io.debezium.time.ZonedTime": (lambda p: Types.STRING(), None, "STRING"),
    "io.debezium.time.Timestamp": (lambda p: _local_date_time(), _naive_utc, "TIMESTAMP(9)"),
    "io.debezium.time.MicroTimestamp": (lambda p: _local_date_time(), _naive_utc, "TIMESTAMP(9)"),
    "io.debezium.time.NanoTimestamp": (lambda p: _local_date_time(), _naive_utc, "TIMESTAMP(9)"),
    "io.debezium.time.ZonedTimestamp": (lambda p: Types.INSTANT(), _instant, "TIMESTAMP_LTZ(9)"),
    "io.debezium.time.MicroDuration": (lambda p: Types.LONG(), None, "BIGINT µs"),
    "io.debezium.time.Year": (lambda p: Types.INT(), None, "INT"),
    "io.debezium.time.Interval": (lambda p: Types.STRING(), None, "STRING"),
    "io.debezium.data.VariableScaleDecimal": (lambda p: _decimal(), _same, "DECIMAL(38, 18)"),
    "org.apache.kafka.connect.data.Decimal": (_connect_decimal, _same, "DECIMAL(38, 18)"),
    "io.debezium.data.Uuid": (lambda p: Types.STRING(), None, "STRING"),
    "io.debezium.data.Json": (lambda p: Types.STRING(), None, "STRING"),
    "io.debezium.data.Enum": (lambda p: Types.STRING(), None, "STRING"),
    "io.debezium.data.EnumSet": (lambda p: Types.STRING(), None, "STRING"),
    "io.debezium.data.Xml": (lambda p: Types.STRING(), None, "STRING"),
    "io.debezium.data.Ltree": (lambda p: Types.STRING(), None, "STRING"),
    "io.debezium.data.Bits": (lambda p: bytes_type(), None, "BYTES"),
    "org.apache.kafka.connect.data.Date": (lambda p: _local_date(), _same, "DATE"),
    "org.apache.kafka.connect.data.Time": (lambda p: _local_time(), _millisecond_time, "TIME, ms"),
    "org.apache.kafka.connect.data.Timestamp": (lambda p: _local_date_time(), _naive_utc, "TIMESTAMP(9)"),
}

assert FLINK_TYPES.keys() == SEMANTIC_TYPES.keys(), "one Flink type per rule of SemanticTypes"


# -- cells: (physical value, SemanticTypes' value) -> the Flink value ----------------------------------

#: ``(physical, converted) -> Flink value``; ``converted`` is ``None`` exactly when ``physical`` is
Cell = Callable[[Any, Any], Any]


class _OnePart:
    """A cell holding one part (an adapter, a converter or the cell of the values inside),
    pickled as that part."""

    __slots__ = ("part",)

    def __init__(self, part: Any) -> None:
        self.part = part

    def __getstate__(self) -> Any:
        return self.part

    def __setstate__(self, state: Any) -> None:
        self.part = state


class _Leaf(_OnePart):
    """A value of a semantic type: ``adapter(converted)``, or the physical value (no adapter)."""

    __slots__ = ()
    part: Optional[Adapter]

    def __call__(self, physical: Any, converted: Any) -> Any:
        if physical is None or self.part is None:
            return physical
        return self.part(converted)


class _Physical(_OnePart):
    """A value without a semantic type (beside ones that have one): its physical converter."""

    __slots__ = ()
    part: Callable[[Any], Any]

    def __call__(self, physical: Any, converted: Any) -> Any:
        return self.part(physical)


class _Elements(_OnePart):
    """An array: element by element (``SemanticTypes`` converts arrays element by element too)."""

    __slots__ = ()
    part: Cell

    def __call__(self, physical: Any, converted: Any) -> Any:
        if physical is None:
            return None
        if not isinstance(physical, list) or not isinstance(converted, list) or len(physical) != len(converted):
            raise SemanticValueError(f"a {type(physical).__name__} where the schema has an array")
        inner = self.part
        return [inner(p, c) for p, c in zip(physical, converted, strict=True)]


class _MapValues(_OnePart):
    """A map: value by value."""

    __slots__ = ()
    part: Cell

    def __call__(self, physical: Any, converted: Any) -> Any:
        if physical is None:
            return None
        if not isinstance(physical, dict) or not isinstance(converted, dict):
            raise SemanticValueError(f"a {type(physical).__name__} where the schema has a map")
        inner = self.part
        return {k: inner(v, converted.get(k)) for k, v in physical.items()}


class _Fields:
    """A record with semantic types inside -> ``Row``."""

    __slots__ = ("names", "cells")

    def __init__(self, names: List[str], cells: List[Cell]) -> None:
        self.names, self.cells = names, cells

    def __getstate__(self) -> Tuple[List[str], List[Cell]]:
        return (self.names, self.cells)

    def __setstate__(self, state: Tuple[List[str], List[Cell]]) -> None:
        self.names, self.cells = state

    def __call__(self, physical: Any, converted: Any) -> Any:
        if physical is None:
            return None
        if not isinstance(physical, dict) or not isinstance(converted, dict):
            raise SemanticValueError(f"a {type(physical).__name__} where the schema has a record")
        row = Row(*[c(physical.get(n), converted.get(n)) for n, c in zip(self.names, self.cells, strict=True)])
        row.set_field_names(self.names)
        return row


class SemanticColumn:
    """A column of a semantic type in the decode operator: its cell, then its value check
    (``_column_checks``).  A value the cell cannot take is the column's ``ColumnValueError``."""

    __slots__ = ("cell", "check")

    def __init__(self, cell: Cell, check: Any) -> None:
        self.cell, self.check = cell, check

    def __call__(self, physical: Any, converted: Any) -> Any:
        try:
            v = self.cell(physical, converted)
        except SerdesError:
            raise
        except SemanticValueError as e:
            raise self.check.fail(str(e)) from None
        except Exception as e:  # noqa: BLE001 - a value the cell cannot take, typed here
            raise self.check.fail(f"{type(e).__name__}: {str(e)[:200]}") from e
        return self.check(v)


# -- the walk of the reader schema ------------------------------------------------------------------

class _Walker:
    """An Avro schema (parsed JSON) -> (Flink type, cell or ``None`` when nothing in it has a
    semantic type).  Named types are registered as ``avro_type_info`` / ``_converter`` expect them
    (short and full name), and references resolved through them; depth-bounded."""

    def __init__(self, named: Dict[str, Any]) -> None:
        self.named = named

    def _register(self, s: Mapping[str, Any], ns: Optional[str]) -> Optional[str]:
        name = s.get("name")
        if not isinstance(name, str):
            return ns
        own = name.rsplit(".", 1)[0] if "." in name else s.get("namespace", ns)
        full = name if "." in name else (f"{own}.{name}" if own else name)
        self.named.setdefault(full, s)
        self.named.setdefault(name.rsplit(".", 1)[-1], s)
        return own if isinstance(own, str) else ns

    def walk(self, schema: Any, ns: Optional[str], depth: int) -> Tuple[TypeInformation, Optional[Cell]]:
        if depth > MAX_SCHEMA_DEPTH:
            raise ValueError(f"schema nested deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(schema, list):
            return self.walk(_non_null(schema), ns, depth + 1)
        if isinstance(schema, str):
            ref = self.named.get(schema) or (self.named.get(f"{ns}.{schema}") if ns else None)
            if isinstance(ref, Mapping):
                return self.walk(ref, ns, depth + 1)
            return avro_type_info(schema, self.named), None
        if not isinstance(schema, Mapping):
            raise ValueError(f"not an Avro schema: {str(schema)[:80]!r}")
        t = schema.get("type")
        if t in ("record", "error", "enum", "fixed"):
            ns = self._register(schema, ns)
        name = schema.get("connect.name")
        if isinstance(name, str) and is_semantic_name(name):
            rule = FLINK_TYPES.get(name)
            if rule is not None:
                params = schema.get("connect.parameters")
                return rule[0](params if isinstance(params, Mapping) else {}), _Leaf(rule[1])
            # an unknown semantic type: the physical type; SemanticTypes' converter refuses its
            # values (a ColumnValueError per record), and a NULL is a NULL
            return avro_type_info(dict(schema), self.named), _Leaf(None)
        if t in ("record", "error"):
            names: List[str] = []
            types: List[TypeInformation] = []
            cells: List[Optional[Cell]] = []
            fields = [f for f in schema.get("fields") or [] if isinstance(f, Mapping)]
            for f in fields:
                ft, fc = self.walk(f.get("type"), ns, depth + 1)
                names.append(str(f.get("name")))
                types.append(ft)
                cells.append(fc)
            row_t = row_named(names, types)
            if all(c is None for c in cells):
                return row_t, None
            return row_t, _Fields(names, [c if c is not None else self._physical(f.get("type"))
                                          for c, f in zip(cells, fields, strict=True)])
        if t == "array":
            it, ic = self.walk(schema.get("items"), ns, depth + 1)
            return Types.LIST(it), None if ic is None else _Elements(ic)
        if t == "map":
            vt, vc = self.walk(schema.get("values"), ns, depth + 1)
            return Types.MAP(Types.STRING(), vt), None if vc is None else _MapValues(vc)
        if isinstance(t, (Mapping, list)):
            return self.walk(t, ns, depth + 1)
        return avro_type_info(dict(schema), self.named), None

    def _physical(self, schema: Any) -> Cell:
        return _Physical(_converter(schema, self.named))


class SemanticColumns:
    """The reader schema's columns of semantic types: ``types`` (column -> Flink type) and
    ``cells`` (column -> :data:`Cell`); the other columns keep their ``avro_row_type_info`` type."""

    __slots__ = ("types", "cells")

    def __init__(self, types: Dict[str, TypeInformation], cells: Dict[str, Cell]) -> None:
        self.types, self.cells = types, cells


def semantic_columns(after: Mapping[str, Any], named: Dict[str, Any]) -> SemanticColumns:
    """The columns of the Avro ``after`` record that have a semantic type somewhere in them.
    ``named``: the envelope's named types (``_collect_named``); added to as the walk registers."""
    walker = _Walker(dict(named))
    ns = walker._register(after, after.get("namespace") if isinstance(after.get("namespace"), str) else None)
    types: Dict[str, TypeInformation] = {}
    cells: Dict[str, Cell] = {}
    for f in after.get("fields") or []:
        t, cell = walker.walk(f.get("type"), ns, 1)
        if cell is not None:
            types[f["name"]], cells[f["name"]] = t, cell
    return SemanticColumns(types, cells)


def with_semantic_types(row_t: RowTypeInfo, columns: SemanticColumns) -> RowTypeInfo:
    """``row_t`` with the columns of semantic types given their Flink types."""
    names = list(row_t.get_field_names())
    types = [columns.types.get(n, t) for n, t in zip(names, row_t.get_field_types(), strict=True)]
    return row_named(names, types)


# -- JSON Schema ------------------------------------------------------------------------------------

def _json_semantic_names(s: Any, path: str, depth: int, out: List[Tuple[str, str]]) -> None:
    if depth > MAX_SCHEMA_DEPTH:
        raise ValueError(f"JSON Schema nested deeper than {MAX_SCHEMA_DEPTH} levels")
    if isinstance(s, list):
        for x in s:
            _json_semantic_names(x, path, depth + 1, out)
        return
    if not isinstance(s, Mapping):
        return
    for key in ("connect.name", "title"):
        if is_semantic_name(s.get(key)):
            out.append((path, str(s[key])[:128]))
            break
    props = s.get("properties")
    if isinstance(props, Mapping):
        for name, p in props.items():
            _json_semantic_names(p, f"{path}.{name}" if path else str(name), depth + 1, out)
    for key in ("items", "oneOf", "anyOf", "allOf", "additionalProperties"):
        if key in s:
            _json_semantic_names(s[key], f"{path}[]" if key == "items" else path, depth + 1, out)


def refuse_json_semantic_types(after: Mapping[str, Any]) -> None:
    """``semantic_types=True`` with a JSON Schema envelope: ``SemanticTypes`` reads Avro writer
    schemas only, so an ``after`` whose columns carry Debezium / Connect semantic types (Confluent's
    JsonSchemaConverter writes them as ``title``, with ``connect.type``) is refused here -- rather
    than read as physical values the job was not asked for."""
    found: List[Tuple[str, str]] = []
    _json_semantic_names(after, "", 0, found)
    if found:
        shown = ", ".join(f"{p!r} ({n})" for p, n in found[:5]) + (f" ... ({len(found)} in all)" if len(found) > 5 else "")
        raise ValueError(
            f"read_debezium(semantic_types=True) maps semantic types of Avro envelopes only; this JSON Schema "
            f"envelope's columns {shown} have them. Pass semantic_types=False to read their physical values "
            "(docs/cdc.md, 'Semantic types')")
