"""Debezium change events (CDC envelopes) as typed :class:`Change` values; no PyFlink needed.

A Debezium connector writes one record per changed row; its value is an *envelope*
``{before, after, source, op, ts_ms, transaction}`` and its key the row's primary key.  A delete
is followed by a *tombstone* (same key, ``None`` value) for log compaction.  This module turns
an envelope decoded by any of serdes' (or confluent-kafka's) deserializers -- an Avro or JSON
Schema ``dict``, or a Protobuf message or its dict form -- into a :class:`Change`::

    from serdes.cdc import ChangeParser, Op

    parser = ChangeParser()                     # counts tombstones and changes per op
    for msg in consumer:                        # a confluent_kafka.Consumer
        change = parser.parse_message(msg, value_deserializer, key_deserializer)
        if change is None:                      # tombstone: skipped, counted in parser.tombstones
            continue
        if change.op is Op.DELETE:
            table.pop(change.before["id"])
        elif change.op is not Op.TRUNCATE:
            table[change.after["id"]] = change.after

Rules (see docs/cdc.md):

* ``c`` (create) and ``r`` (snapshot read) -> :attr:`Op.CREATE` / :attr:`Op.READ`; ``after`` required.
* ``u`` -> :attr:`Op.UPDATE`; ``after`` required; ``before`` required unless
  ``before_required=False`` (PostgreSQL ``REPLICA IDENTITY DEFAULT`` sends updates without it).
* ``d`` -> :attr:`Op.DELETE`; ``before`` required; with ``before_required=False`` a delete
  without ``before`` takes the record key (a dict/message of the key columns) as ``before``,
  and is malformed only when there is no key either.
* ``t`` -> :attr:`Op.TRUNCATE` (``before`` and ``after`` are ``None``, whatever the envelope
  holds): a valid event about the whole table; the caller decides (the Flink changelog reader
  fails or skips, as configured).
* ``columns`` (the table's column names, optional; ``read_debezium`` always passes its row's):
  every ``before``/``after`` of the envelope must have every column (a SQL ``NULL`` is a
  ``None`` value, never a missing key) but the ``optional_columns`` the schema lets an event omit;
  a delete by record key needs a key whose fields are all columns, and its ``before`` then has
  every column (``None`` but the key's).
* A ``None`` value (tombstone) is not a change: :func:`parse_change` returns ``None``;
  :class:`ChangeParser` counts it.
* ``semantic_types=SemanticTypes(registry_client)`` (:class:`ChangeParser`, Avro envelopes):
  column values of Debezium's / Connect's semantic types become the Python values they mean
  (``io.debezium.time.MicroTimestamp`` -> ``datetime``, ``io.debezium.data.Uuid`` -> ``UUID``, ...;
  the table in docs/cdc.md), from the ``connect.name`` annotations of each record's writer
  schema; an unchanged TOASTed column of an update is :data:`UNAVAILABLE`; a value or semantic
  type that cannot be mapped is a :class:`serdes.ColumnValueError` naming the column.
* Anything else -- not a record, ``op`` missing/empty/not a string/unknown (``m`` logical
  messages included: they go to their own topic), ``before``/``after``/``source``/``transaction``
  not a record -- raises :class:`serdes.MalformedEnvelopeError` naming what was wrong and where.
"""

from __future__ import annotations

import enum
from typing import AbstractSet, Any, Collection, Dict, Mapping, NamedTuple, Optional

from ._cache import bounded_store
from ._cdc_types import PLACEHOLDER, SEMANTIC_TYPES, UNAVAILABLE, RowConverter, row_converters
from ._errors import ColumnValueError, MalformedEnvelopeError, RecordLocation, SerdesError

__all__ = [
    "Op",
    "Change",
    "ChangeParser",
    "SemanticTypes",
    "UNAVAILABLE",
    "PLACEHOLDER",
    "SEMANTIC_TYPES",
    "parse_change",
    "message_to_dict",
    "MalformedEnvelopeError",
    "ColumnValueError",
]

#: Protobuf nesting bound for :func:`message_to_dict` (the protobuf parser's own default is 100).
MAX_MESSAGE_DEPTH = 64


class Op(str, enum.Enum):
    """Debezium's ``op`` codes."""

    CREATE = "c"
    READ = "r"
    UPDATE = "u"
    DELETE = "d"
    TRUNCATE = "t"


_OPS = {op.value: op for op in Op}


class Change(NamedTuple):
    """One row change.  ``before``/``after`` are dicts of the row's columns (or ``None``),
    ``source`` the connector's source block as a dict, ``ts_ms`` when the connector processed the
    event, ``transaction`` the transaction block (``id``, ``total_order``,
    ``data_collection_order``) when the connector provides transaction metadata."""

    op: Op
    before: Optional[Dict[str, Any]]
    after: Optional[Dict[str, Any]]
    source: Optional[Dict[str, Any]]
    ts_ms: Optional[int]
    transaction: Optional[Dict[str, Any]]


def _is_message(obj: Any) -> bool:
    return hasattr(obj, "DESCRIPTOR") and hasattr(obj, "ListFields")


def message_to_dict(msg: Any) -> Optional[Dict[str, Any]]:
    """A Protobuf message -> ``dict`` keyed by proto field names, keeping presence: a field
    with presence (``optional``, a message, a ``google.protobuf.*Value`` wrapper) that is not
    set is ``None``; wrappers unwrap to their value; enums become their names; 64-bit integers
    stay ``int`` (unlike ``json_format.MessageToDict``).  The converter is
    ``ProtobufDeserializer(output="dict")``'s, with wrappers unwrapped."""
    if msg is None:
        return None
    # imported here: serdes.cdc serves Avro and JSON Schema envelopes without loading serdes.protobuf
    from .protobuf._todict import MessageTooDeepError, dict_converter

    try:
        return dict_converter(msg.DESCRIPTOR, unwrap_wrappers=True, max_depth=MAX_MESSAGE_DEPTH)(msg)
    except MessageTooDeepError as e:
        raise MalformedEnvelopeError(str(e)) from None


def _as_record(value: Any, part: str, location: Optional[RecordLocation]) -> Optional[Dict[str, Any]]:
    if value is None or type(value) is dict:   # the common cases first (hasattr misses are slow)
        return value
    if _is_message(value):
        return message_to_dict(value)
    if isinstance(value, Mapping):
        return value if isinstance(value, dict) else dict(value)
    raise MalformedEnvelopeError(
        f"Debezium envelope field {part!r} is a {type(value).__name__}, not a record", _loc(location)
    )


def _loc(location: Optional[RecordLocation]) -> RecordLocation:
    # each error gets its own location object (SerdesError.at() mutates it)
    if location is None:
        return RecordLocation()
    return RecordLocation(location.topic, location.field, location.partition, location.offset)


def parse_change(
    envelope: Any,
    key: Any = None,
    before_required: bool = True,
    location: Optional[RecordLocation] = None,
    columns: Optional[Collection[str]] = None,
    optional_columns: Collection[str] = (),
) -> Optional[Change]:
    """Turn one decoded Debezium envelope into a :class:`Change` (``None`` for a tombstone).

    ``envelope``: the decoded record value (``dict``, ``Mapping`` or Protobuf message).
    ``key``: the decoded record key; used as ``before`` of a delete without ``before`` when
    ``before_required=False``.  ``location`` goes into errors (topic, partition, offset).
    ``columns``: the table's column names (best a ``frozenset``): a ``before``/``after`` without
    one of them is malformed -- except ``optional_columns``, which the schema lets an event omit
    (JSON Schema: not ``required`` and nullable) -- and a delete by key gets a ``before`` with all
    of them.
    Raises :class:`serdes.MalformedEnvelopeError` for anything that is not a valid envelope.
    """
    if envelope is None:
        return None
    if type(envelope) is dict:
        pass
    elif _is_message(envelope):
        envelope = message_to_dict(envelope)
    elif not isinstance(envelope, Mapping):
        raise MalformedEnvelopeError(
            f"Debezium envelope is a {type(envelope).__name__}, not a record", _loc(location)
        )
    code = envelope.get("op")
    if code is None or code == "":
        raise MalformedEnvelopeError("Debezium envelope has no 'op'", _loc(location))
    if not isinstance(code, str):
        raise MalformedEnvelopeError(
            f"Debezium envelope 'op' is a {type(code).__name__}, not a string", _loc(location)
        )
    op = _OPS.get(code)
    if op is None:
        raise MalformedEnvelopeError(
            f"Debezium envelope has unknown op {code[:32]!r} (expected one of c, r, u, d, t)",
            _loc(location),
        )
    before = _as_record(envelope.get("before"), "before", location)
    after = _as_record(envelope.get("after"), "after", location)
    source = _as_record(envelope.get("source"), "source", location)
    transaction = _as_record(envelope.get("transaction"), "transaction", location)
    ts_ms = envelope.get("ts_ms")
    if ts_ms is not None and (not isinstance(ts_ms, int) or isinstance(ts_ms, bool)):
        raise MalformedEnvelopeError(
            f"Debezium envelope 'ts_ms' is a {type(ts_ms).__name__}, not an integer", _loc(location)
        )
    if op is Op.TRUNCATE:
        return Change(op, None, None, source, ts_ms, transaction)
    if op in (Op.CREATE, Op.READ, Op.UPDATE) and after is None:
        raise MalformedEnvelopeError(
            f"Debezium {op.name.lower()} event (op {code!r}) has no 'after'", _loc(location)
        )
    if op is Op.UPDATE and before is None and before_required:
        raise MalformedEnvelopeError(
            "Debezium update event (op 'u') has no 'before' (the table's REPLICA IDENTITY is not "
            "FULL?); configure before_required=False to read updates as after-images only",
            _loc(location),
        )
    if op is Op.DELETE and before is None:
        if before_required:
            raise MalformedEnvelopeError(
                "Debezium delete event (op 'd') has no 'before'; configure before_required=False "
                "to delete by the record key", _loc(location),
            )
        before = _as_record(key, "key", location)
        if before is None:
            raise MalformedEnvelopeError(
                "Debezium delete event (op 'd') has neither 'before' nor a record key", _loc(location)
            )
        if columns is not None:
            before = _key_row(before, _column_set(columns), location)
            columns = None  # the key row has every column now
    if columns is not None:
        cols = _column_set(columns)
        for part, rec in (("after", after), ("before", before)):
            if rec is not None and not rec.keys() >= cols:
                absent = cols - rec.keys() - _column_set(optional_columns)
                if not absent:
                    continue
                missing = ", ".join(repr(c) for c in sorted(absent))
                raise MalformedEnvelopeError(
                    f"Debezium {op.name.lower()} event (op {code!r}): {part!r} has no column {missing} "
                    "(a NULL column is a null value, not a missing one)", _loc(location),
                )
    return Change(op, before, after, source, ts_ms, transaction)


def _column_set(columns: Collection[str]) -> AbstractSet[str]:
    return columns if isinstance(columns, (frozenset, set)) else frozenset(columns)


def _key_row(key: Dict[str, Any], cols: AbstractSet[str], location: Optional[RecordLocation]) -> Dict[str, Any]:
    """The ``before`` of a delete by record key: every column, ``None`` but the key's."""
    if not key:
        raise MalformedEnvelopeError("Debezium delete event (op 'd') by record key: the key has no fields",
                                     _loc(location))
    if not key.keys() <= cols:
        extra = ", ".join(repr(str(c)[:64]) for c in sorted(map(str, key.keys() - cols))[:5])
        raise MalformedEnvelopeError(
            f"Debezium delete event (op 'd') by record key: key field {extra} is not a column of the table",
            _loc(location),
        )
    row = dict.fromkeys(cols)
    row.update(key)
    return row


class SemanticTypes:
    """Debezium's / Kafka Connect's semantic types applied to the rows of Avro envelopes.

    ``registry``: the ``SchemaRegistryClient`` the records were written against (the writer
    schema of each record is looked up by the id in its frame; the client caches it).
    ``placeholder``: the connector's ``unavailable.value.placeholder`` (``None``: no TOAST
    placeholders are recognised).  ``max_schemas`` bounds the converters kept (one per writer
    schema).  :meth:`for_schema` gives the converter of a schema text without a registry.
    """

    def __init__(self, registry: Any = None, placeholder: Optional[str] = PLACEHOLDER,
                 max_schemas: int = 1000) -> None:
        self.registry = registry
        self.placeholder = placeholder
        self.max_schemas = max_schemas
        self._by_id: Dict[Any, RowConverter] = {}

    def for_schema(self, schema: Any) -> RowConverter:
        """The row converter of an Avro envelope (or key) schema, as JSON text or parsed."""
        return row_converters(schema, self.placeholder)[0]

    def for_id(self, schema_id: Any, location: Optional[RecordLocation] = None) -> RowConverter:
        """The row converter of the writer schema ``schema_id`` (fetched from ``registry``)."""
        conv = self._by_id.get(schema_id)
        if conv is not None:
            return conv
        if self.registry is None:
            raise ValueError("SemanticTypes needs a registry client to look up schema ids")
        from ._registry import fetch_writer_schema

        schema = fetch_writer_schema(self.registry, schema_id, location=location)
        if (schema.schema_type or "AVRO").upper() != "AVRO":
            raise ColumnValueError(
                f"semantic types are read from Avro writer schemas; schema id {schema_id} is "
                f"{schema.schema_type}", _loc(location), schema_id)
        try:
            conv = self.for_schema(schema.schema_str)
        except SerdesError as err:
            err.schema_id = schema_id
            if location is not None:
                err.at(location.topic, location.partition, location.offset, location.field)
            raise
        bounded_store(self._by_id, schema_id, conv, self.max_schemas)
        return conv

    def for_frame(self, raw: Any, location: Optional[RecordLocation] = None) -> RowConverter:
        """The row converter of a Confluent-framed record's writer schema."""
        from ._wire import parse_frame

        return self.for_id(parse_frame(raw, location=location).schema_id, location)


def apply_semantic_types(change: Change, value_types: Optional[RowConverter],
                         location: Optional[RecordLocation] = None) -> Change:
    """``change`` with ``value_types`` applied to ``before`` and ``after`` (an update's ``after``
    may hold :data:`UNAVAILABLE` columns)."""
    if value_types is None or change.op is Op.TRUNCATE:
        return change
    before = value_types.convert(change.before, "before", location)
    after = value_types.convert(change.after, "after", location, unavailable_ok=change.op is Op.UPDATE)
    return change._replace(before=before, after=after)


class ChangeParser:
    """Stateful front end of :func:`parse_change` for a consumer loop: skips and counts
    tombstones, counts changes per :class:`Op`.

    ``columns``, ``optional_columns``: the table's column names, as for :func:`parse_change`.
    ``semantic_types``: a :class:`SemanticTypes` to map column values of semantic types.
    ``parse(value, key=None, location=None, value_types=None, key_types=None)`` takes decoded
    values (and optionally the :class:`RowConverter` of their writer schemas);
    ``parse_message(msg, value_deserializer, key_deserializer=None)`` takes a
    ``confluent_kafka.Message`` and the deserializers, puts topic/partition/offset into errors and,
    with ``semantic_types``, finds the writer schemas from the records' frames.
    """

    def __init__(self, before_required: bool = True, columns: Optional[Collection[str]] = None,
                 optional_columns: Collection[str] = (), semantic_types: Optional[SemanticTypes] = None) -> None:
        self.before_required = before_required
        self.semantic_types = semantic_types
        self.columns = None if columns is None else frozenset(columns)
        self.optional_columns = frozenset(optional_columns)
        self.tombstones = 0
        self.counts: Dict[Op, int] = {op: 0 for op in Op}

    @property
    def changes(self) -> int:
        """Number of changes returned so far."""
        return sum(self.counts.values())

    def parse(self, value: Any, key: Any = None, location: Optional[RecordLocation] = None,
              value_types: Optional[RowConverter] = None, key_types: Optional[RowConverter] = None) -> Optional[Change]:
        if value is None:
            self.tombstones += 1
            return None
        if key_types is not None and key is not None:
            key_location = None if location is None else RecordLocation(
                location.topic, "key", location.partition, location.offset)
            key = key_types.convert(_as_record(key, "key", location), "key", key_location)
        change = parse_change(value, key, self.before_required, location, self.columns, self.optional_columns)
        assert change is not None
        change = apply_semantic_types(change, value_types, location)
        self.counts[change.op] += 1
        return change

    def parse_message(self, msg: Any, value_deserializer: Any, key_deserializer: Any = None) -> Optional[Change]:
        from confluent_kafka.serialization import MessageField, SerializationContext

        topic, raw_value = msg.topic(), msg.value()
        location = RecordLocation(topic, MessageField.VALUE, msg.partition(), msg.offset())
        if raw_value is None:
            self.tombstones += 1
            return None
        headers = msg.headers()
        field = MessageField.VALUE
        value_types = key_types = None
        try:
            value = value_deserializer(raw_value, SerializationContext(topic, field, headers))
            if self.semantic_types is not None:
                value_types = self.semantic_types.for_frame(raw_value, location)
            key = raw_key = msg.key()
            if key_deserializer is not None and key is not None:
                field = MessageField.KEY
                key = key_deserializer(key, SerializationContext(topic, field, headers))
                if self.semantic_types is not None:
                    key_types = self.semantic_types.for_frame(
                        raw_key, RecordLocation(topic, MessageField.KEY, msg.partition(), msg.offset()))
        except SerdesError as err:
            # the same exception re-raised with its location filled in: no new cause to chain
            raise err.at(topic=topic, partition=msg.partition(), offset=msg.offset(), field=field)  # noqa: B904
        return self.parse(value, key, location, value_types, key_types)
