"""Kafka sources and sinks that decode/encode with registry framing in the Python worker.

Reading::

    Java KafkaSource + shim  --Row(topic, partition, offset, timestamp, key, value, headers)-->
    Python DecodeFunction (registry client built in open())  --> decoded values

Writing::

    Python EncodeFunction (serializer built in open()) --Row(topic, key, value, headers)-->
    Java KafkaSink + shim
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from confluent_kafka.serialization import MessageField, SerializationContext
from pyflink.common import Row, Types, WatermarkStrategy
from pyflink.common.typeinfo import TypeInformation
from pyflink.datastream import DataStream, MapFunction, OutputTag, ProcessFunction
from pyflink.datastream.connectors.base import DeliveryGuarantee
from pyflink.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaSink,
    KafkaSource,
)

from serdes._errors import RecordDecodeError, RecordLocation, RegistryError, SerdesError

from ._codecs import SerdeSpec
from ._env import configure
from ._shim import DESERIALIZER_CLASS, SERIALIZER_CLASS

BYTES = Types.PRIMITIVE_ARRAY(Types.BYTE())
HEADERS = Types.MAP(Types.STRING(), BYTES)

#: What the source shim emits.
RECORD_ROW_TYPE = Types.ROW_NAMED(
    ["topic", "partition", "offset", "timestamp", "key", "value", "headers"],
    [Types.STRING(), Types.INT(), Types.LONG(), Types.LONG(), BYTES, BYTES, HEADERS],
)
#: What the sink shim consumes.
PRODUCER_ROW_TYPE = Types.ROW_NAMED(
    ["topic", "key", "value", "headers"], [Types.STRING(), BYTES, BYTES, HEADERS]
)
#: A record that failed to decode: raw bytes, coordinates and the reason.
DEAD_LETTER_ROW_TYPE = Types.ROW_NAMED(
    ["topic", "partition", "offset", "timestamp", "key", "value", "headers", "reason", "error_type"],
    [Types.STRING(), Types.INT(), Types.LONG(), Types.LONG(), BYTES, BYTES, HEADERS,
     Types.STRING(), Types.STRING()],
)
DEAD_LETTER_TAG = OutputTag("serdes-dead-letter", DEAD_LETTER_ROW_TYPE)

ON_ERROR_FAIL = "fail"
ON_ERROR_DEAD_LETTER = "dead_letter"
ON_ERROR_SKIP = "skip"

#: :meth:`DecodeFunction.decode`'s "nothing to emit" (tombstone or skipped record).
NOTHING = object()


def _create_in_worker(value_spec: SerdeSpec, key_spec: Optional[SerdeSpec]) -> Tuple[Any, Any]:
    """The value and key serdes of an operator, built in its ``open()`` (never pickled with the job);
    the key shares the value's registry client when both name the same registry."""
    client = None
    if value_spec.registry_conf is not None:
        from confluent_kafka.schema_registry import SchemaRegistryClient

        client = SchemaRegistryClient(value_spec.registry_conf)
    value = value_spec.create(client)
    key = None
    if key_spec is not None:
        key = key_spec.create(client if key_spec.registry_conf == value_spec.registry_conf else None)
    return value, key


class KafkaRecord(NamedTuple):
    """A decoded record with its coordinates (``include_metadata=True``)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Any
    value: Any
    headers: Optional[Dict[str, bytes]]


class FlinkSerializationContext(SerializationContext):
    """confluent-kafka ``SerializationContext`` that also carries partition and offset."""

    __slots__ = ("partition", "offset")

    def __init__(self, topic, field, headers=None, partition=None, offset=None):
        self.topic = topic
        self.field = field
        self.headers = headers
        self.partition = partition
        self.offset = offset


def _locate(err: BaseException, topic, partition, offset, field) -> SerdesError:
    if isinstance(err, SerdesError):
        return err.at(topic=topic, partition=partition, offset=offset, field=field)
    reason = f"{type(err).__name__}: {err}"
    return RecordDecodeError(reason, RecordLocation(topic, field, partition, offset))


# ---------------------------------------------------------------------------------------------
# decode
# ---------------------------------------------------------------------------------------------


def _check_on_error(on_error: str) -> None:
    if on_error not in (ON_ERROR_FAIL, ON_ERROR_DEAD_LETTER, ON_ERROR_SKIP):
        raise ValueError(f"on_error must be 'fail', 'dead_letter' or 'skip', not {on_error!r}")


def _poison_pill(on_error: str, failed: Any, registry_failures: Any, exc: BaseException, row, topic, partition, offset, field):
    """A record that does not decode: apply ``on_error`` to it, unless the registry failed.

    A :class:`serdes.RegistryError` (unreachable, 401/403, 429, a bad answer) is the registry's
    failure, not the record's: the same record decodes once the registry answers. It is counted in
    ``registry_failures`` and always raised -- never dead-lettered or skipped -- so the operator
    fails and Flink's restart strategy retries from the last checkpoint. Any other failure is
    counted in ``failed``; ``"fail"`` raises the located error, ``"dead_letter"`` returns the
    ``(DEAD_LETTER_TAG, row)`` output to emit, ``"skip"`` returns None.
    """
    if isinstance(exc, RegistryError):
        registry_failures.inc()
        raise exc.at(topic=topic, partition=partition, offset=offset, field=field)
    failed.inc()
    err = _locate(exc, topic, partition, offset, field)
    if on_error == ON_ERROR_FAIL:
        raise err from exc
    if on_error == ON_ERROR_DEAD_LETTER:
        return DEAD_LETTER_TAG, _dead_letter_row(row, err)
    return None


class DecodeFunction(ProcessFunction):
    """Decodes shim rows with registry deserializers built once per worker in :meth:`open`.

    ``on_error``: ``"fail"`` raises a :class:`serdes.SerdesError` naming topic/partition/offset
    (the job fails); ``"dead_letter"`` emits a :data:`DEAD_LETTER_ROW_TYPE` row on
    :data:`DEAD_LETTER_TAG`; ``"skip"`` drops the record.  A :class:`serdes.RegistryError`
    (registry unreachable, HTTP 401/403/429, a bad answer) is not the record's fault: whatever
    ``on_error`` says, it fails the operator (Flink's restart strategy retries), so an auth outage
    never dead-letters or skips good records.  Counters ``serdes_decoded``, ``serdes_failed``,
    ``serdes_tombstones`` and ``serdes_registry_failures`` are registered in the operator's
    metric group.

    ``emit``: optional callable turning the decoded output (value or :class:`KafkaRecord`)
    into what goes downstream (e.g. a typed encoder for ``ProtobufTypeInformation``).
    """

    def __init__(
        self,
        value: SerdeSpec,
        key: Optional[SerdeSpec] = None,
        on_error: str = ON_ERROR_FAIL,
        include_metadata: bool = False,
        skip_tombstones: bool = True,
        emit: Optional[Callable[[Any], Any]] = None,
    ) -> None:
        _check_on_error(on_error)
        self.value_spec = value
        self.key_spec = key
        self.on_error = on_error
        self.include_metadata = include_metadata
        self.skip_tombstones = skip_tombstones
        self.emit = emit
        self._value_de = None
        self._key_de = None

    def open(self, runtime_context) -> None:
        self._value_de, self._key_de = _create_in_worker(self.value_spec, self.key_spec)
        group = runtime_context.get_metrics_group()
        self._decoded = group.counter("serdes_decoded")
        self._failed = group.counter("serdes_failed")
        self._tombstones = group.counter("serdes_tombstones")
        self._registry_failures = group.counter("serdes_registry_failures")

    def process_element(self, row, ctx):
        out = self.decode(row)
        if out is not NOTHING:
            yield out

    def decode(self, row):
        """One shim row -> what ``process_element`` emits: the decoded output, a dead-letter
        ``(DEAD_LETTER_TAG, row)``, or :data:`NOTHING` (tombstone, skipped record).  A plain call,
        for operators that decode inside their own ``process_element`` (no generator per record)."""
        topic, partition, offset, ts, raw_key, raw_value, headers = row
        if raw_value is None and self.skip_tombstones:
            self._tombstones.inc()
            return NOTHING
        field = MessageField.VALUE
        try:
            value = self._value_de(
                raw_value, FlinkSerializationContext(topic, MessageField.VALUE, headers, partition, offset)
            )
            key = raw_key
            if self._key_de is not None and raw_key is not None:
                field = MessageField.KEY
                key = self._key_de(
                    raw_key, FlinkSerializationContext(topic, MessageField.KEY, headers, partition, offset)
                )
        except Exception as exc:  # noqa: BLE001 - registry failures raise, the rest are poison pills
            dead = _poison_pill(self.on_error, self._failed, self._registry_failures, exc, row, topic, partition, offset, field)
            return NOTHING if dead is None else dead
        self._decoded.inc()
        out = KafkaRecord(topic, partition, offset, ts, key, value, headers) if self.include_metadata else value
        if self.emit is not None:
            out = self.emit(out)
        return out


def _dead_letter_row(row, err: BaseException):
    from pyflink.common import Row

    reason = getattr(err, "reason", None) or str(err)
    return Row(row[0], row[1], row[2], row[3], row[4], row[5], row[6], str(reason), type(err).__name__)


# ---------------------------------------------------------------------------------------------
# source / sink builders
# ---------------------------------------------------------------------------------------------


def kafka_record_source(
    bootstrap_servers: str,
    topics: Union[str, Sequence[str]],
    group_id: Optional[str] = None,
    starting_offsets: Optional[KafkaOffsetsInitializer] = None,
    bounded: bool = False,
    properties: Optional[Dict[str, str]] = None,
) -> KafkaSource:
    """A ``KafkaSource`` whose records are :data:`RECORD_ROW_TYPE` rows (coordinates + headers).

    ``bounded=True`` stops at the offsets that are latest when the job starts.
    The environment must have been :func:`serdes.flink.configure`-d (jars on the classpath).
    """
    return _record_source(bootstrap_servers, topics, _new_java(DESERIALIZER_CLASS), group_id,
                          starting_offsets, bounded, properties)


def _record_source(bootstrap_servers, topics, j_deserializer, group_id=None, starting_offsets=None,
                   bounded=False, properties=None) -> KafkaSource:
    """A ``KafkaSource`` whose records the Java ``KafkaRecordDeserializationSchema`` makes."""
    if isinstance(topics, str):
        topics = [topics]
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap_servers)
        .set_topics(*topics)
        .set_group_id(group_id or f"serdes-flink-{uuid.uuid4().hex[:8]}")
        .set_starting_offsets(starting_offsets or KafkaOffsetsInitializer.earliest())
    )
    if bounded:
        builder = builder.set_bounded(KafkaOffsetsInitializer.latest())
    for k, v in (properties or {}).items():
        builder = builder.set_property(k, str(v))
    builder._j_builder.setDeserializer(j_deserializer)
    return builder.build()


def read_records(env, bootstrap_servers: str, topics, name: str = "kafka-records", **kwargs) -> DataStream:
    """DataStream of raw :data:`RECORD_ROW_TYPE` rows (no decoding)."""
    configure(env)
    source = kafka_record_source(bootstrap_servers, topics, **kwargs)
    return env.from_source(source, WatermarkStrategy.no_watermarks(), name)


def read_kafka(
    env,
    bootstrap_servers: str,
    topics: Union[str, Sequence[str]],
    value: SerdeSpec,
    key: Optional[SerdeSpec] = None,
    on_error: str = ON_ERROR_FAIL,
    include_metadata: bool = False,
    output_type: Optional[TypeInformation] = None,
    group_id: Optional[str] = None,
    starting_offsets: Optional[KafkaOffsetsInitializer] = None,
    bounded: bool = False,
    properties: Optional[Dict[str, str]] = None,
    name: Optional[str] = None,
    skip_tombstones: bool = True,
    convert: Optional[Callable[[Any], Any]] = None,
):
    """One call: Kafka topic(s) -> DataStream of decoded values.

    ``convert`` is applied to each decoded value (or :class:`KafkaRecord`) in the same operator,
    e.g. ``convert=avro_row_converter(schema), output_type=avro_row_type_info(schema)`` gives a
    stream of ``Row`` for the Table API.

    Failed records follow ``on_error`` (see :class:`DecodeFunction`); with ``"dead_letter"``
    get them with ``stream.get_side_output(DEAD_LETTER_TAG)`` (or :func:`dead_letters`).
    ``output_type``: default pickled Python objects; a :class:`ProtobufTypeInformation`
    returns a :class:`~serdes.flink.TypedStream` whose elements travel as protobuf bytes.
    """
    rows = read_records(
        env,
        bootstrap_servers,
        topics,
        name=name or f"kafka:{','.join([topics] if isinstance(topics, str) else topics)}",
        group_id=group_id,
        starting_offsets=starting_offsets,
        bounded=bounded,
        properties=properties,
    )
    from ._types import BytesCodecTypeInfo, TypedStream

    emit = convert
    j_type = output_type
    if isinstance(output_type, BytesCodecTypeInfo):
        emit = output_type.encoder() if convert is None else _Compose(convert, output_type.encoder())
    fn = DecodeFunction(value, key, on_error, include_metadata, skip_tombstones, emit)
    decoded = rows.process(fn, output_type=j_type).name("serdes-decode")
    if isinstance(output_type, BytesCodecTypeInfo):
        return TypedStream(decoded, output_type)
    return decoded


class _Compose:
    def __init__(self, first, second) -> None:
        self.first, self.second = first, second

    def __call__(self, value):
        return self.second(self.first(value))


def dead_letters(stream) -> DataStream:
    """The dead-letter side output (:data:`DEAD_LETTER_ROW_TYPE`) of a :func:`read_kafka` stream
    (or of a :func:`~serdes.flink.read_kafka_keyed` stream's decode operators)."""
    if hasattr(stream, "dead_letters"):
        return stream.dead_letters()
    ds = getattr(stream, "data_stream", stream)
    return ds.get_side_output(DEAD_LETTER_TAG)


class DeadLetterToProducerRow(MapFunction):
    """Dead-letter row -> producer row for a DLQ topic; reason and coordinates become headers."""

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def map(self, row):
        from pyflink.common import Row

        headers = dict(row[6] or {})
        headers["serdes.dlq.reason"] = row[7].encode("utf-8", "replace")
        headers["serdes.dlq.error"] = row[8].encode()
        headers["serdes.dlq.topic"] = row[0].encode()
        headers["serdes.dlq.partition"] = str(row[1]).encode()
        headers["serdes.dlq.offset"] = str(row[2]).encode()
        return Row(self.topic, row[4], row[5], headers)


class EncodeFunction(MapFunction):
    """Python object -> :data:`PRODUCER_ROW_TYPE` row, with registry framing (prefix or header).

    ``key_fn(obj)`` extracts the key (serialized with ``key`` when given, else it must be
    bytes/str/None); ``value_fn(obj)`` extracts the value (default: the object itself);
    ``topic_fn(obj)`` picks the topic per record (default: the sink topic).
    """

    def __init__(
        self,
        topic: str,
        value: SerdeSpec,
        key: Optional[SerdeSpec] = None,
        key_fn: Optional[Callable[[Any], Any]] = None,
        value_fn: Optional[Callable[[Any], Any]] = None,
        topic_fn: Optional[Callable[[Any], str]] = None,
        decode_input: Optional[Callable[[bytes], Any]] = None,
    ) -> None:
        self.topic = topic
        self.value_spec = value
        self.key_spec = key
        self.key_fn = key_fn
        self.value_fn = value_fn
        self.topic_fn = topic_fn
        self.decode_input = decode_input

    def open(self, runtime_context) -> None:
        self._value_ser, self._key_ser = _create_in_worker(self.value_spec, self.key_spec)
        self._encoded = runtime_context.get_metrics_group().counter("serdes_encoded")

    def map(self, obj):
        if self.decode_input is not None:
            obj = self.decode_input(obj)
        topic = self.topic_fn(obj) if self.topic_fn is not None else self.topic
        headers: List = []
        value = self.value_fn(obj) if self.value_fn is not None else obj
        raw_value = None
        if value is not None:
            raw_value = self._value_ser(value, SerializationContext(topic, MessageField.VALUE, headers))
        raw_key = None
        if self.key_fn is not None:
            k = self.key_fn(obj)
            if self._key_ser is not None and k is not None:
                raw_key = self._key_ser(k, SerializationContext(topic, MessageField.KEY, headers))
            elif isinstance(k, str):
                raw_key = k.encode()
            else:
                raw_key = k
        self._encoded.inc()
        return Row(topic, raw_key, raw_value, dict(headers) if headers else None)


def kafka_record_sink(
    bootstrap_servers: str,
    topic: Optional[str] = None,
    delivery_guarantee: DeliveryGuarantee = DeliveryGuarantee.AT_LEAST_ONCE,
    properties: Optional[Dict[str, str]] = None,
    transactional_id_prefix: Optional[str] = None,
) -> KafkaSink:
    """A ``KafkaSink`` for :data:`PRODUCER_ROW_TYPE` rows (``topic`` = default topic)."""
    builder = KafkaSink.builder().set_bootstrap_servers(bootstrap_servers)
    builder = builder.set_delivery_guarantee(delivery_guarantee)
    if transactional_id_prefix:
        builder = builder.set_transactional_id_prefix(transactional_id_prefix)
    for k, v in (properties or {}).items():
        builder = builder.set_property(k, str(v))
    shim = _new_java(SERIALIZER_CLASS, topic)
    builder._j_builder.setRecordSerializer(shim)
    return KafkaSink(builder._j_builder.build())


def _new_java(class_name: str, *args):
    """Instantiate a class from a jar added with ``env.add_jars`` (user class loader)."""
    from pyflink.java_gateway import get_gateway

    obj = get_gateway().jvm
    for part in class_name.split("."):
        obj = getattr(obj, part)
    return obj(*args)


def write_kafka(
    stream,
    bootstrap_servers: str,
    topic: str,
    value: SerdeSpec,
    key: Optional[SerdeSpec] = None,
    key_fn: Optional[Callable[[Any], Any]] = None,
    value_fn: Optional[Callable[[Any], Any]] = None,
    topic_fn: Optional[Callable[[Any], str]] = None,
    delivery_guarantee: DeliveryGuarantee = DeliveryGuarantee.AT_LEAST_ONCE,
    properties: Optional[Dict[str, str]] = None,
    name: Optional[str] = None,
    transactional_id_prefix: Optional[str] = None,
):
    """Encode ``stream`` in Python with registry framing and write it with a Java KafkaSink.

    Exactly-once: ``delivery_guarantee=DeliveryGuarantee.EXACTLY_ONCE``, a
    ``transactional_id_prefix`` unique per job, checkpointing on, and
    ``properties={"transaction.timeout.ms": ...}`` not above the broker's
    ``transaction.max.timeout.ms`` (15 min by default; KafkaSink's default is 1 h).
    """
    from ._types import TypedStream

    decode_input = None
    ds = stream
    if isinstance(stream, TypedStream):
        decode_input = stream.type_info.decoder()
        ds = stream.data_stream
    rows = ds.map(
        EncodeFunction(topic, value, key, key_fn, value_fn, topic_fn, decode_input),
        output_type=PRODUCER_ROW_TYPE,
    ).name("serdes-encode")
    sink = kafka_record_sink(bootstrap_servers, topic, delivery_guarantee, properties, transactional_id_prefix)
    return rows.sink_to(sink).name(
        name or f"kafka-sink:{topic}"
    )


def write_dead_letters(stream, bootstrap_servers: str, topic: str, **kwargs):
    """Sink the dead-letter side output of ``stream`` to ``topic`` (raw bytes kept, reason in headers)."""
    rows = dead_letters(stream).map(DeadLetterToProducerRow(topic), output_type=PRODUCER_ROW_TYPE)
    return rows.sink_to(kafka_record_sink(bootstrap_servers, topic, **kwargs)).name(f"dead-letter:{topic}")
