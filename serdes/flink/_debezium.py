"""Debezium CDC topics -> a changelog ``DataStream`` of ``Row``s with ``RowKind`` for the Table API.

::

    Java KafkaSource + shim --Row(topic, partition, offset, timestamp, key, value, headers)-->
    DebeziumDecodeFunction: deserialize (registry), serdes.cdc.parse_change, envelope -> Row(s)
        c/r -> +I(after)   u -> -U(before), +U(after)   d -> -D(before)   (retract mode)
        c/r -> +I(after)   u -> +U(after)               d -> -D(before or key)  (upsert mode)

The row type is the envelope's ``after`` type (Avro ``Value`` record, JSON Schema ``after``
object, Protobuf ``after`` message), fixed when the job is built, plus optional metadata columns
taken from ``source`` and the envelope.  Envelope rules and errors are :mod:`serdes.cdc`'s; with
``semantic_types`` (Avro) the columns of Debezium / Connect semantic types get Flink's DATE, TIME,
TIMESTAMP, TIMESTAMP_LTZ, DECIMAL types and values by ``serdes.cdc.SemanticTypes``' rules
(:mod:`serdes.flink._semantic`).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from confluent_kafka.serialization import MessageField
from pyflink.common import Row, RowKind, Types
from pyflink.common.typeinfo import RowTypeInfo, TypeInformation
from pyflink.datastream import DataStream, RuntimeContext, StreamExecutionEnvironment

from serdes._cache import bounded_store
from serdes._cdc_types import PLACEHOLDER, UNAVAILABLE, RowConverter, placeholder_columns, row_converters
from serdes._errors import ColumnValueError, MalformedEnvelopeError, RecordLocation, SerdesError, UnsupportedChangeError
from serdes._limits import DEFAULT_LIMITS
from serdes.cdc import Change, Op, parse_change

from ._codecs import SerdeSpec
from ._column_checks import Check, column_checks, value_check
from ._decode import ON_ERROR_FAIL, ON_ERROR_SKIP, DecodingFunction, check_on_error
from ._kafka import read_records, topics_label
from ._metrics import batched
from ._records import FlinkSerializationContext
from ._pickling import PICKLE_MODULE
from ._records import bytes_type, row_named
from ._semantic import (
    SemanticColumn,
    SemanticColumns,
    refuse_json_semantic_types,
    semantic_columns,
    with_semantic_types,
)
from ._rows import (
    MissingPropertyError,
    _identity,
    _json_converter,
    _json_optional,
    _MapOf,
    _RecordToRow,
    _to_float,
    avro_row_converter,
    avro_row_type_info,
    json_schema_row_type_info,
)

__all__ = [
    "read_debezium",
    "debezium_row_type",
    "DebeziumDecodeFunction",
    "METADATA_COLUMNS",
    "RETRACT",
    "UPSERT",
]

RETRACT = "retract"
UPSERT = "upsert"


# -- metadata columns -------------------------------------------------------------------------------

def _src(name: str) -> Callable[[Change], Any]:
    def get(change: Change) -> Any:
        return None if change.source is None else change.source.get(name)
    get.__name__ = f"source_{name}"
    return get


def _position(change: Change) -> Optional[str]:
    """The connector's log position as a string: PostgreSQL ``lsn``, MySQL ``file:pos``,
    SQL Server ``change_lsn``, Oracle ``scn``, MongoDB ``ord`` (first one present)."""
    s = change.source or {}
    if s.get("lsn") is not None:
        return str(s["lsn"])
    if s.get("file") is not None and s.get("pos") is not None:
        return f"{s['file']}:{s['pos']}"
    for k in ("change_lsn", "commit_lsn", "scn", "ord"):
        if s.get(k) is not None:
            return str(s[k])
    return None


def _tx_id(change: Change) -> Optional[str]:
    return None if change.transaction is None else change.transaction.get("id")


#: name -> (Flink type factory, extractor). ``metadata=[...]`` picks from these.
METADATA_COLUMNS: Dict[str, Tuple[Callable[[], TypeInformation], Callable[[Change], Any]]] = {
    "op": (Types.STRING, lambda ch: ch.op.value),
    "ts_ms": (Types.LONG, lambda ch: ch.ts_ms),
    "source_ts_ms": (Types.LONG, _src("ts_ms")),
    "connector": (Types.STRING, _src("connector")),
    "server": (Types.STRING, _src("name")),
    "db": (Types.STRING, _src("db")),
    "schema": (Types.STRING, _src("schema")),
    "table": (Types.STRING, _src("table")),
    "snapshot": (Types.STRING, _src("snapshot")),
    "lsn": (Types.LONG, _src("lsn")),
    "tx_id": (Types.STRING, _tx_id),
    "position": (Types.STRING, _position),
}


def _metadata_spec(metadata: Union[None, Sequence[str], Mapping[str, str]]) -> List[Tuple[str, str]]:
    """``["db", "table"]`` -> columns named ``db``, ``table``; ``{"src_db": "db"}`` renames."""
    if not metadata:
        return []
    pairs = list(metadata.items()) if isinstance(metadata, Mapping) else [(m, m) for m in metadata]
    for _column, key in pairs:
        if key not in METADATA_COLUMNS:
            raise ValueError(f"unknown Debezium metadata {key!r}; one of {sorted(METADATA_COLUMNS)}")
    return pairs


# -- the after schema -------------------------------------------------------------------------------

def _check_depth(obj: Any, limit: int = DEFAULT_LIMITS.max_schema_depth) -> None:
    """Schemas come from the registry: bound their nesting before anything recurses into them."""
    stack = [(obj, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise ValueError(f"schema nested deeper than {limit}")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def _avro_after(envelope_schema: Union[str, Dict[str, Any]]) -> Dict[str, Any]:
    s = json.loads(envelope_schema) if isinstance(envelope_schema, str) else envelope_schema
    _check_depth(s)
    if not (isinstance(s, dict) and s.get("type") == "record"):
        raise ValueError("a Debezium Avro envelope schema is a record")
    fields = {f.get("name"): f for f in s.get("fields", [])}
    if "after" not in fields or "op" not in fields:
        raise ValueError(f"Avro schema {s.get('name')!r} is not a Debezium envelope (no 'after'/'op' field)")
    named: Dict[str, Dict[str, Any]] = {}
    _collect_named(s, s.get("namespace"), named)
    t = fields["after"]["type"]
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        if len(rest) != 1:
            raise ValueError(f"Debezium 'after' type {t!r} is not [\"null\", record]")
        t = rest[0]
    if isinstance(t, str):
        ns = s.get("namespace")
        t = named.get(t) or (named.get(f"{ns}.{t}") if ns else None)
        if t is None:
            raise ValueError(f"Debezium 'after' names an undefined type {fields['after']['type']!r}")
    if not (isinstance(t, dict) and t.get("type") == "record"):
        raise ValueError("Debezium 'after' is not a record")
    return t


def _collect_named(s: Any, ns: Optional[str], named: Dict[str, Dict[str, Any]]) -> None:
    if isinstance(s, list):
        for x in s:
            _collect_named(x, ns, named)
        return
    if not isinstance(s, dict):
        return
    t = s.get("type")
    if t in ("record", "error", "enum", "fixed") and isinstance(s.get("name"), str):
        name = s["name"]
        own_ns = s.get("namespace", ns) if "." not in name else name.rsplit(".", 1)[0]
        full = name if "." in name else (f"{own_ns}.{name}" if own_ns else name)
        named.setdefault(full, s)
        named.setdefault(full.rsplit(".", 1)[-1], s)
        ns = own_ns
        for f in s.get("fields", []) if t in ("record", "error") else []:
            _collect_named(f.get("type"), ns, named)
    elif t in ("array", "map"):
        _collect_named(s.get("items" if t == "array" else "values"), ns, named)
    elif isinstance(t, (dict, list)):
        _collect_named(t, ns, named)


def _json_nullable(s: Any, depth: int = 0) -> Any:
    """JsonSchemaConverter writes optional fields as ``oneOf: [{type: null}, T]``; the Row
    helpers of ``_rows`` understand ``type: [T, "null"]``: rewrite (a copy)."""
    if depth > DEFAULT_LIMITS.max_schema_depth:
        raise ValueError("JSON Schema nested too deeply")
    if not isinstance(s, dict):
        return s
    out = dict(s)
    for kw in ("oneOf", "anyOf"):
        alts = out.get(kw)
        if isinstance(alts, list):
            rest = [a for a in alts if not (isinstance(a, dict) and a.get("type") == "null")]
            if len(rest) == 1 and len(rest) < len(alts) and isinstance(rest[0], dict):
                del out[kw]
                inner = _json_nullable(rest[0], depth + 1)
                merged = {**out, **inner}
                t = inner.get("type")
                if isinstance(t, str):
                    merged["type"] = [t, "null"]
                return merged
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _json_nullable(v, depth + 1) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _json_nullable(out["items"], depth + 1)
    return out


def _json_after(envelope_schema: Union[str, Dict[str, Any]]) -> Dict[str, Any]:
    s = json.loads(envelope_schema) if isinstance(envelope_schema, str) else envelope_schema
    _check_depth(s)
    props = s.get("properties") if isinstance(s, dict) else None
    if not isinstance(props, dict) or "after" not in props or "op" not in props:
        raise ValueError("JSON Schema is not a Debezium envelope (no 'after'/'op' property)")
    after = _json_nullable(props["after"])
    t = after.get("type")
    if not (isinstance(after, dict) and (t == "object" or (isinstance(t, list) and "object" in t))):
        raise ValueError("Debezium 'after' is not an object schema")
    return after


_PB_INT = {"int32", "sint32", "sfixed32"}
_PB_LONG = {"int64", "sint64", "sfixed64", "uint32", "fixed32", "uint64", "fixed64"}
_PB_WRAPPERS: Dict[str, Callable[[], TypeInformation]] = {
    "google.protobuf.DoubleValue": Types.DOUBLE, "google.protobuf.FloatValue": Types.FLOAT,
    "google.protobuf.Int64Value": Types.LONG, "google.protobuf.UInt64Value": Types.LONG,
    "google.protobuf.Int32Value": Types.INT, "google.protobuf.UInt32Value": Types.LONG,
    "google.protobuf.BoolValue": Types.BOOLEAN, "google.protobuf.StringValue": Types.STRING,
    "google.protobuf.BytesValue": bytes_type,
}


def _pb_type(fd: Any, depth: int) -> TypeInformation:
    from serdes.protobuf._todict import is_repeated

    if depth > DEFAULT_LIMITS.max_schema_depth:
        raise ValueError("Protobuf message nested too deeply for a Row type")
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        mt = fd.message_type
        return Types.MAP(_pb_scalar(mt.fields_by_name["key"], depth), _pb_scalar(mt.fields_by_name["value"], depth))
    t = _pb_scalar(fd, depth)
    return Types.LIST(t) if is_repeated(fd) else t


def _pb_scalar(fd: Any, depth: int) -> TypeInformation:
    from google.protobuf.descriptor import FieldDescriptor as F

    if fd.message_type is not None:
        wrapper = _PB_WRAPPERS.get(fd.message_type.full_name)
        if wrapper is not None:
            return wrapper()
        return _pb_row_type(fd.message_type, depth + 1)
    if fd.enum_type is not None:
        return Types.STRING()
    name = {F.TYPE_INT32: "int32", F.TYPE_SINT32: "sint32", F.TYPE_SFIXED32: "sfixed32",
            F.TYPE_INT64: "int64", F.TYPE_SINT64: "sint64", F.TYPE_SFIXED64: "sfixed64",
            F.TYPE_UINT32: "uint32", F.TYPE_FIXED32: "fixed32", F.TYPE_UINT64: "uint64",
            F.TYPE_FIXED64: "fixed64"}.get(fd.type)
    if name in _PB_INT:
        return Types.INT()
    if name in _PB_LONG:
        return Types.LONG()
    scalars: Dict[int, Callable[[], TypeInformation]] = {
        F.TYPE_BOOL: Types.BOOLEAN, F.TYPE_STRING: Types.STRING, F.TYPE_DOUBLE: Types.DOUBLE,
        F.TYPE_FLOAT: Types.FLOAT, F.TYPE_BYTES: bytes_type}
    return scalars[fd.type]()


def _pb_row_type(desc: Any, depth: int = 0) -> RowTypeInfo:
    return row_named([f.name for f in desc.fields], [_pb_type(f, depth) for f in desc.fields])


def _pb_converter(desc: Any, depth: int = 0) -> _RecordToRow:
    from serdes.protobuf._todict import is_repeated

    if depth > DEFAULT_LIMITS.max_schema_depth:
        raise ValueError("Protobuf message nested too deeply for a Row type")
    convs: List[Optional[Callable[[Any], Any]]] = []
    for f in desc.fields:
        if f.message_type is not None and not f.message_type.GetOptions().map_entry \
                and f.message_type.full_name not in _PB_WRAPPERS:
            inner = _pb_converter(f.message_type, depth + 1)
            convs.append(_ListOfRows(inner) if is_repeated(f) else inner)
        elif f.message_type is not None and f.message_type.GetOptions().map_entry \
                and _pb_message_value(f.message_type.fields_by_name["value"]):
            # map<K, Message>: its values are rows too (the MAP's value type is a ROW)
            convs.append(_MapOf(_pb_converter(f.message_type.fields_by_name["value"].message_type, depth + 1)))
        else:
            convs.append(None)
    names = [f.name for f in desc.fields]
    if all(c is None for c in convs):
        return _RecordToRow(names, None)
    return _RecordToRow(names, [c if c is not None else _ident for c in convs])


def _pb_message_value(fd: Any) -> bool:
    """A field whose value is a row: a message other than a ``google.protobuf.*Value`` wrapper."""
    return fd.message_type is not None and fd.message_type.full_name not in _PB_WRAPPERS


def _ident(v: Any) -> Any:
    return v


class _ListOfRows:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, v: Any) -> Any:
        return None if v is None else [self.inner(x) for x in v]


def _fetch_latest(spec: SerdeSpec, subject: str) -> str:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    if spec.registry_conf is None:
        raise ValueError("read_debezium needs the envelope schema: pass schema= or a registry")
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    client = SchemaRegistryClient(spec.registry_conf)
    try:
        schema_str = client.get_latest_version(subject).schema.schema_str
    except SchemaRegistryError as e:
        raise ValueError(
            f"read_debezium derives the row type from the envelope schema: subject {subject!r} "
            f"has no version in the registry ({e}); pass schema= (the envelope schema) for other "
            "subject-name strategies or topics not written yet"
        ) from e
    if schema_str is None:
        raise ValueError(f"the registry's latest version of subject {subject!r} has no schema")
    return schema_str


def _after_row(value: SerdeSpec, topic: str, schema: Any, semantic_types: bool = False
               ) -> Tuple[SerdeSpec, RowTypeInfo, _RecordToRow]:
    """(value spec to decode with, after row type, dict -> Row converter of the physical values)."""
    spec, row_t, conv, _, _ = _after_row_and_optional(value, topic, schema, semantic_types)
    return spec, row_t, conv


class _SemanticRow:
    """``semantic_types=True`` on an Avro envelope with columns of semantic types: the reader
    schema's :class:`RowConverter` (``SemanticTypes``' rules, run on each before / after) and the
    Flink types and cells of those columns (``_semantic``)."""

    __slots__ = ("reader", "columns")

    def __init__(self, reader: RowConverter, columns: SemanticColumns) -> None:
        self.reader, self.columns = reader, columns


def _avro_semantic(envelope_schema: Any, after: Dict[str, Any]) -> Optional[_SemanticRow]:
    """The :class:`_SemanticRow` of an Avro envelope, ``None`` when no column has a semantic type."""
    s = json.loads(envelope_schema) if isinstance(envelope_schema, str) else envelope_schema
    named: Dict[str, Dict[str, Any]] = {}
    _collect_named(s, s.get("namespace"), named)
    columns = semantic_columns(after, named)
    if not columns.cells:
        return None
    try:
        reader, _ = row_converters(s)
    except SerdesError as e:
        raise ValueError(f"the envelope schema's semantic types: {e}") from None
    return _SemanticRow(reader, columns)


class _CheckedColumn:
    """A column's converter (nested rows, timestamps, ...) followed by its value check; whatever
    the converter raises for a value it cannot convert is the column's :class:`ColumnValueError`."""

    __slots__ = ("conv", "check")

    def __init__(self, conv: Callable[[Any], Any], check: Any) -> None:
        self.conv, self.check = conv, check

    def __call__(self, v: Any) -> Any:
        try:
            v = self.conv(v)
        except MissingPropertyError as e:
            e.path.append(f".{self.check.path}")   # the column; the operator adds after/before
            raise
        except SerdesError:
            raise
        except Exception as e:  # noqa: BLE001 - a value the converter cannot take, typed below
            raise self.check.fail(f"{type(e).__name__}: {str(e)[:200]}") from e
        return self.check(v)


def _bound(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``f``'s bound ``__call__``: calling it is cheaper than calling the object (once per column
    and record)."""
    call: Callable[[Any], Any] = type(f).__call__.__get__(f)
    return call


def _column_function(conv: Callable[[Any], Any], check: Check) -> Callable[[Any], Any]:
    """A column's converter followed by its value check (``_column_checks``)."""
    # identities need no converter, and a DOUBLE column's check turns an int into a float itself
    if conv in (_ident, _identity, _to_float):
        return check
    return _CheckedColumn(conv, check)


def _after_row_and_optional(value: SerdeSpec, topic: str, schema: Any, semantic_types: bool = False
                            ) -> Tuple[SerdeSpec, RowTypeInfo, _RecordToRow, List[str], Optional[_SemanticRow]]:
    """:func:`_after_row`, the columns an event may omit (:func:`_json_optional`) and, with
    ``semantic_types`` and an Avro envelope whose columns have semantic types, their
    :class:`_SemanticRow` (the row type then has their Flink types)."""
    if value.format == "protobuf":
        desc = value.kwargs["message_type"].DESCRIPTOR
        if "after" not in desc.fields_by_name or "op" not in desc.fields_by_name:
            raise ValueError(f"Protobuf message {desc.full_name} is not a Debezium envelope (no after/op)")
        after = desc.fields_by_name["after"].message_type
        if after is None:
            raise ValueError(f"{desc.full_name}.after is not a message")
        # the generated class carries no Connect names: the physical types (docs/cdc.md)
        return value, _pb_row_type(after), _pb_converter(after), [], None
    if schema is None:
        schema = value.kwargs.get("schema_str")
    if schema is None:
        schema = _fetch_latest(value, f"{topic}-value")
    spec = value
    if value.kwargs.get("schema_str") is None:
        # decode with the schema the row type comes from (Avro: as the reader schema, so older
        # and newer writer versions resolve to it by Avro's rules)
        spec = copy.copy(value)
        spec.kwargs = dict(value.kwargs, schema_str=schema if isinstance(schema, str) else json.dumps(schema))
    if value.format == "avro":
        after = _avro_after(schema)
        row_t = avro_row_type_info(after)
        semantic = _avro_semantic(schema, after) if semantic_types else None
        if semantic is not None:
            row_t = with_semantic_types(row_t, semantic.columns)
        return spec, row_t, _record_converter(avro_row_converter(after)), [], semantic
    if value.format == "json":
        after = _json_after(schema)
        if semantic_types:
            refuse_json_semantic_types(after)
        # complete: Debezium writes every column, nested ones too (the rule of _json_optional)
        return (spec, json_schema_row_type_info(after), _record_converter(_json_converter(after, complete=True)),
                _json_optional(after), None)
    raise ValueError(f"unsupported format {value.format!r}")


def _record_converter(conv: Callable[[Any], Any]) -> _RecordToRow:
    """The row converter of a record (or object) schema is a :class:`_RecordToRow`."""
    assert isinstance(conv, _RecordToRow)
    return conv


def debezium_row_type(
    value: SerdeSpec,
    topic: str,
    schema: Any = None,
    metadata: Union[None, Sequence[str], Mapping[str, str]] = None,
    semantic_types: bool = True,
) -> RowTypeInfo:
    """The ``RowTypeInfo`` :func:`read_debezium` emits: the ``after`` columns, then ``metadata``."""
    _, after_t, _ = _after_row(value, topic, schema, semantic_types)
    return _with_metadata(after_t, _metadata_spec(metadata))


def _with_metadata(after_t: RowTypeInfo, meta: List[Tuple[str, str]]) -> RowTypeInfo:
    names = list(after_t.get_field_names())
    types = list(after_t.get_field_types())
    for column, key in meta:
        if column in names:
            raise ValueError(f"metadata column {column!r} clashes with a column of the table")
        names.append(column)
        types.append(METADATA_COLUMNS[key][0]())
    return row_named(names, types)


# -- the decode operator ------------------------------------------------------------------------------

class DebeziumDecodeFunction(DecodingFunction):
    """Shim rows -> changelog ``Row``s (see the module docstring).

    ``on_error`` as :class:`serdes.flink.DecodeFunction` (``"fail"``, ``"dead_letter"``,
    ``"skip"``) for undecodable records *and* malformed envelopes; ``on_truncate``: ``"fail"``
    raises :class:`serdes.UnsupportedChangeError` (then ``on_error`` applies), ``"skip"`` drops
    and counts it.  Metrics: ``serdes_decoded``, ``serdes_failed``, ``serdes_tombstones``,
    ``serdes_truncates``, ``serdes_inserts``, ``serdes_updates``, ``serdes_deletes``.
    ``semantic_types``: as :func:`read_debezium` (a job graph pickled before the option existed
    reads physical values, as it was built to).
    """

    __module__ = PICKLE_MODULE

    def __init__(
        self,
        value: SerdeSpec,
        key: Optional[SerdeSpec],
        converter: _RecordToRow,
        metadata: List[Tuple[str, str]],
        mode: str = RETRACT,
        on_error: str = ON_ERROR_FAIL,
        on_truncate: str = ON_ERROR_FAIL,
        semantic_types: bool = True,
    ) -> None:
        check_on_error(on_error)
        if on_truncate not in (ON_ERROR_FAIL, ON_ERROR_SKIP):
            raise ValueError(f"on_truncate must be 'fail' or 'skip', not {on_truncate!r}")
        if mode not in (RETRACT, UPSERT):
            raise ValueError(f"changelog_mode must be 'retract' or 'upsert', not {mode!r}")
        self.value_spec, self.key_spec = value, key
        self.names = list(converter.names) + [c for c, _ in metadata]
        self.after_names = list(converter.names)
        self.convs = converter.convs
        self.meta_keys = [k for _, k in metadata]
        self.mode, self.on_error, self.on_truncate = mode, on_error, on_truncate
        self.semantic_types = semantic_types

    def open(self, runtime_context: RuntimeContext) -> None:
        super().open(runtime_context)
        self._column_rules()
        g = runtime_context.get_metrics_group()
        self._truncates = g.counter("serdes_truncates")
        self._inserts = batched(self._batched, g.counter("serdes_inserts"))
        self._updates = batched(self._batched, g.counter("serdes_updates"))
        self._deletes = batched(self._batched, g.counter("serdes_deletes"))

    def _column_rules(self) -> None:
        """Per column: its converter (which refuses a nested object without a property it must
        have, ``_rows._ObjectToRow``) followed by the check that its value fits the column's Flink
        type (``_column_checks``: PyFlink's coder runs after this operator, outside its ``try``), and
        the columns every before/after must have (``parse_change(columns=...)``).  Derived here, in
        the worker, from the value spec's envelope schema -- which ``read_debezium`` always puts in
        it -- rather than pickled with the job, so a job graph pickled by an earlier serdes gets them
        too."""
        spec = self.value_spec
        if spec.format in ("avro", "json") and spec.kwargs.get("schema_str") is None:
            raise ValueError("DebeziumDecodeFunction needs a value spec with the envelope schema "
                             "(schema_str; read_debezium builds one)")
        _, row_t, conv, optional, semantic = _after_row_and_optional(
            spec, "", None, getattr(self, "semantic_types", False))
        checks = dict(zip(row_t.get_field_names(), column_checks(row_t), strict=True))
        missing = [n for n in self.after_names if n not in checks]
        if missing:
            raise ValueError(f"the converter's columns {missing} are not in the envelope's after type")
        # the converters derived here too, not the pickled self.convs: a graph pickled by an earlier
        # serdes gets the nested-object rule of this one (_ObjectToRow)
        convs = dict(zip(conv.names, conv.convs if conv.convs is not None else [_ident] * len(conv.names),
                         strict=True))
        self._cells = [(n, _bound(_column_function(convs[n], checks[n]))) for n in self.after_names]
        # semantic_types: SemanticTypes' converter of the reader schema runs on each row first; the
        # columns of semantic types then take (physical, converted) values (_semantic.SemanticColumn)
        self._semantic = semantic
        self._semantic_cells: List[Tuple[str, Callable[..., Any], bool]] = []
        if semantic is not None:
            cells = semantic.columns.cells
            self._semantic_cells = [
                (n, SemanticColumn(cells[n], checks[n]).__call__, True) if n in cells
                else (n, _bound(_column_function(convs[n], checks[n])), False) for n in self.after_names]
        self._writer_verdicts: Dict[Any, Optional[Tuple[str, str]]] = {}
        self._writer_registry: Any = None
        self._meta_cells = [(METADATA_COLUMNS[k][1], _bound(value_check(METADATA_COLUMNS[k][0](), column)))
                            for column, k in zip(self.names[len(self.after_names):], self.meta_keys, strict=True)]
        self.columns = frozenset(self.after_names)
        self.optional_columns = frozenset(optional) & self.columns

    def _row(self, rec: Optional[Mapping[str, Any]], kind: RowKind, change: Change, part: str) -> Row:
        # parse_change(columns=...) checked that the op's before / after is there with every
        # column but the optional ones (absent: None); the converters check the nested objects
        assert rec is not None
        try:
            values = [c(rec.get(n)) for n, c in self._cells]
        except MissingPropertyError as e:
            paths = e.where(part)
            shown = ", ".join(repr(p) for p in paths[:10]) + (f" ... ({len(paths)} in all)" if len(paths) > 10 else "")
            raise MalformedEnvelopeError(
                f"Debezium {change.op.name.lower()} event (op {change.op.value!r}): no column {shown} "
                "(a NULL column is a null value, not a missing one)") from None
        return self._finish_row(values, kind, change)

    def _semantic_row(self, rec: Optional[Dict[str, Any]], kind: RowKind, change: Change, part: str) -> Row:
        """:meth:`_row` with ``SemanticTypes``' converter of the reader schema applied first."""
        assert rec is not None and self._semantic is not None
        converted = self._semantic.reader.convert(rec, part, None, unavailable_ok=part == "after"
                                                  and change.op is Op.UPDATE)
        assert converted is not None
        for name, v in converted.items():
            if v is UNAVAILABLE:
                raise self._unsent(name)
        try:
            values = [c(rec.get(n), converted.get(n)) if pair else c(rec.get(n))
                      for n, c, pair in self._semantic_cells]
        except MissingPropertyError as e:  # pragma: no cover - Avro records have every field
            raise MalformedEnvelopeError(f"Debezium {change.op.name.lower()} event: no column {e.where(part)}") from None
        return self._finish_row(values, kind, change)

    def _finish_row(self, values: List[Any], kind: RowKind, change: Change) -> Row:
        """The column values, then the metadata columns', as a named ``Row`` of ``kind``."""
        for m, check in self._meta_cells:
            values.append(check(m(change)))
        row = Row(*values)
        row.set_field_names(self.names)
        row.set_row_kind(kind)
        return row

    @staticmethod
    def _unsent(column: str) -> ColumnValueError:
        # REPLICA IDENTITY DEFAULT: an update that left a TOASTed column unchanged does not send it;
        # a Flink row has no "unchanged" value, and the text is not the column's
        return ColumnValueError(
            f"Debezium update: column {column!r} of 'after' is the unavailable-value placeholder "
            f"{PLACEHOLDER!r} (a TOASTed column the update left unchanged, which Debezium does not "
            "send under REPLICA IDENTITY DEFAULT); read_debezium cannot fill it in: set the "
            "table's REPLICA IDENTITY FULL, or read it with serdes.cdc (UNAVAILABLE)",
            column=column)  # the record's location is added by poison_pill

    def rows(self, change: Change) -> List[Row]:
        op = change.op
        if self._semantic is not None:
            make = self._semantic_row
            if op is Op.CREATE or op is Op.READ:
                return [make(change.after, RowKind.INSERT, change, "after")]
            if op is Op.UPDATE:
                if self.mode == UPSERT:
                    return [make(change.after, RowKind.UPDATE_AFTER, change, "after")]
                return [make(change.before, RowKind.UPDATE_BEFORE, change, "before"),
                        make(change.after, RowKind.UPDATE_AFTER, change, "after")]
            return [make(change.before, RowKind.DELETE, change, "before")]
        if op is Op.CREATE or op is Op.READ:
            return [self._row(change.after, RowKind.INSERT, change, "after")]
        if op is Op.UPDATE:
            unsent = placeholder_columns(change.after)
            if unsent:
                raise self._unsent(unsent[0])
            if self.mode == UPSERT:
                return [self._row(change.after, RowKind.UPDATE_AFTER, change, "after")]
            return [self._row(change.before, RowKind.UPDATE_BEFORE, change, "before"),
                    self._row(change.after, RowKind.UPDATE_AFTER, change, "after")]
        return [self._row(change.before, RowKind.DELETE, change, "before")]

    def process_element(self, row: Any, ctx: Any) -> Iterator[Any]:
        topic, partition, offset, _ts, raw_key, raw_value, headers = row
        if raw_value is None:
            self._tombstones.inc()
            return
        field = MessageField.VALUE
        try:
            value = self._value_de(raw_value, FlinkSerializationContext(topic, field, headers, partition, offset))
            key = raw_key
            if self._key_de is not None and raw_key is not None:
                field = MessageField.KEY
                key = self._key_de(raw_key, FlinkSerializationContext(topic, field, headers, partition, offset))
            field = MessageField.VALUE
            change = parse_change(value, key, self.mode == RETRACT, RecordLocation(topic, field, partition, offset),
                                  self.columns, self.optional_columns)
            if change is None:  # the value decoded to null (a JSON ``null``), which is no envelope
                raise MalformedEnvelopeError("Debezium record value decoded to null, not an envelope",
                                             RecordLocation(topic, field, partition, offset))
            if change.op is Op.TRUNCATE:
                if self.on_truncate == ON_ERROR_SKIP:
                    self._truncates.inc()
                    return
                table = (change.source or {}).get("table")
                raise UnsupportedChangeError(
                    f"Debezium truncate event (op 't') of table {table!r} cannot be expressed in a "
                    "changelog stream; on_truncate='skip' drops it (counted in serdes_truncates)",
                    RecordLocation(topic, field, partition, offset),
                )
            if self._semantic is not None:
                self._check_writer(raw_value, RecordLocation(topic, field, partition, offset))
            out = self.rows(change)        # all rows of a change are built before any is emitted
        except Exception as exc:  # noqa: BLE001 - registry failures raise, the rest are poison pills
            yield from self._reject(exc, row, field)
            return
        self._decoded.inc()
        (self._updates if change.op is Op.UPDATE else self._deletes if change.op is Op.DELETE
         else self._inserts).inc()
        for r in out:
            yield r


    def _check_writer(self, raw_value: Any, location: RecordLocation) -> None:
        """The record's writer schema gives each column the semantic types of the job's reader
        schema (its row type), else the record is a :class:`ColumnValueError` naming the column.
        Avro resolution matches physical types only: a column the connector now writes as
        ``NanoTimestamp`` (``time.precision.mode`` changed) resolves to a reader ``MicroTimestamp``
        ``long`` and would read 1000 times off.  One verdict per writer schema id (bounded)."""
        from serdes._wire import parse_frame

        schema_id = parse_frame(raw_value, location=location).schema_id
        if schema_id in self._writer_verdicts:
            verdict = self._writer_verdicts[schema_id]
        else:
            verdict = self._writer_verdict(schema_id, location)
            bounded_store(self._writer_verdicts, schema_id, verdict, MAX_WRITER_SCHEMAS)
        if verdict is not None:
            raise ColumnValueError(verdict[1], location, schema_id, column=verdict[0] or None)

    def _writer_verdict(self, schema_id: Any, location: RecordLocation) -> Optional[Tuple[str, str]]:
        """``None`` when the writer schema reads like the reader, else (column, reason)."""
        from serdes._registry import fetch_writer_schema

        assert self._semantic is not None
        if self._writer_registry is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            if self.value_spec.registry_conf is None:
                return None  # no registry to ask (the value deserializer was given its schemas)
            self._writer_registry = SchemaRegistryClient(self.value_spec.registry_conf)
        schema = fetch_writer_schema(self._writer_registry, schema_id, location=location)
        try:
            writer, _ = row_converters(schema.schema_str)
        except ColumnValueError as e:
            return ("", f"writer schema id {schema_id}: {e.reason}")
        reader = self._semantic.reader.signatures
        for column in self.after_names:
            want = reader.get(column, ())
            got = writer.signatures.get(column)
            if got is not None and got != want:
                def says(sig: Tuple[str, ...]) -> str:
                    return ", ".join(sig) if sig else "no semantic type"
                return (column, f"column {column!r}: writer schema id {schema_id} has {says(got)}, the job's row "
                                f"type was built for {says(want)} (semantic_types=True); restart the job to build "
                                "it from the new schema, or read with semantic_types=False")
        return None


#: writer schema ids whose semantic types a decode operator remembers having checked
MAX_WRITER_SCHEMAS = 1000


def read_debezium(
    env: StreamExecutionEnvironment,
    bootstrap_servers: str,
    topics: Union[str, Sequence[str]],
    value: SerdeSpec,
    key: Optional[SerdeSpec] = None,
    schema: Any = None,
    metadata: Union[None, Sequence[str], Mapping[str, str]] = None,
    changelog_mode: str = RETRACT,
    on_error: str = ON_ERROR_FAIL,
    on_truncate: str = ON_ERROR_FAIL,
    group_id: Optional[str] = None,
    starting_offsets: Any = None,
    bounded: bool = False,
    properties: Optional[Dict[str, str]] = None,
    name: Optional[str] = None,
    semantic_types: bool = True,
) -> DataStream:
    """Debezium topic(s) -> ``DataStream`` of ``Row``s with ``RowKind`` set, for
    ``t_env.from_changelog_stream(stream)``.

    ``value``: ``sf.avro(registry)``, ``sf.json_schema(registry, schema)`` or
    ``sf.protobuf(EnvelopeClass, registry)``.  The row type is the envelope's ``after`` type:
    Protobuf from the class; Avro/JSON from ``schema=`` (the envelope schema), else the spec's
    ``schema_str``, else the latest version of ``<first topic>-value`` in the registry, fetched
    now and then used as the reader schema (so older and newer writer versions decode by the
    format's evolution rules and always fit the row type).  All topics must share that row type.

    ``semantic_types`` (default ``True``; Avro envelopes): the columns whose schema carries a
    Debezium / Kafka Connect semantic type (``connect.name``) get the Flink type it means --
    ``io.debezium.time.Date`` DATE, ``Time``/``MicroTime``/``NanoTime`` TIME (milliseconds: Flink's
    TIME holds no more; a value with sub-millisecond digits is a ``ColumnValueError``),
    ``Timestamp``/``MicroTimestamp``/``NanoTimestamp`` TIMESTAMP(9) (``LocalTimeTypeInfo``),
    ``ZonedTimestamp`` TIMESTAMP_LTZ(9) (``Types.INSTANT()``), ``VariableScaleDecimal`` and Connect's
    ``Decimal`` DECIMAL(38, 18) (values beyond it are ``ColumnValueError``s); ``Uuid``, ``Json``,
    ``Enum``, ``ZonedTime`` ... stay STRING, ``MicroDuration`` BIGINT microseconds, ``Bits`` BYTES,
    validated -- with the values ``serdes.cdc.SemanticTypes`` gives, by its rules (docs/cdc.md,
    "Semantic types").  An unknown semantic type, a value its type cannot hold, a writer schema giving
    a column another semantic type than the job's row type are ``ColumnValueError``s naming the
    column, following ``on_error``.  A JSON Schema envelope with semantic types is refused (``ValueError``;
    ``SemanticTypes`` reads Avro only); Protobuf envelopes keep their physical types.
    ``semantic_types=False``: the physical values (an INT of days, a BIGINT of microseconds, ...).

    ``key``: the key deserializer; needed for deletes without ``before`` in upsert mode.
    ``metadata``: extra columns after the table's, from :data:`METADATA_COLUMNS` (``db``,
    ``schema``, ``table``, ``source_ts_ms``, ``ts_ms``, ``lsn``, ``position``, ``op``, ``tx_id``,
    ...), a list (column = name) or a ``{column: name}`` dict.
    ``changelog_mode``: ``"retract"`` (``before`` required on u/d; -U/+U pairs) or
    ``"upsert"`` (REPLICA IDENTITY DEFAULT: u -> +U only, d -> -D of ``before`` or the key;
    declare the primary key in ``from_changelog_stream``'s schema with ``ChangelogMode.upsert()``).
    ``on_error`` / ``on_truncate``: see :class:`DebeziumDecodeFunction`; dead letters via
    :func:`serdes.flink.dead_letters` / :func:`serdes.flink.write_dead_letters`.
    """
    topic_list = [topics] if isinstance(topics, str) else list(topics)
    meta = _metadata_spec(metadata)
    spec, after_t, converter = _after_row(value, topic_list[0], schema, semantic_types)
    row_t = _with_metadata(after_t, meta)
    fn = DebeziumDecodeFunction(spec, key, converter, meta, changelog_mode, on_error, on_truncate, semantic_types)
    rows = read_records(
        env, bootstrap_servers, topic_list, name=name or f"debezium:{topics_label(topic_list)}",
        group_id=group_id, starting_offsets=starting_offsets, bounded=bounded, properties=properties,
    )
    return rows.process(fn, output_type=row_t).name("serdes-debezium")
