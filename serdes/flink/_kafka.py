"""One call from Kafka topics to a decoded stream, and from a stream to a Kafka topic.

Reading::

    Java KafkaSource + shim  --Row(topic, partition, offset, timestamp, key, value, headers)-->
    Python DecodeFunction (registry client built in open())  --> decoded values

Writing::

    Python EncodeFunction (serializer built in open()) --Row(topic, key, value, headers)-->
    Java KafkaSink + shim

The parts live in modules of their own: the rows and records that cross the shim
(``_records.py``), the decode operator and poison-pill handling (``_decode.py``), the encode
operators (``_encode.py``), the source and sink with the shim (``_connectors.py``). Their names are
re-exported here, where earlier releases defined them (and where pickles look them up).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence, Union

from pyflink.common import WatermarkStrategy
from pyflink.common.typeinfo import TypeInformation
from pyflink.datastream import DataStream, DataStreamSink, StreamExecutionEnvironment
from pyflink.datastream.connectors.base import DeliveryGuarantee
from pyflink.datastream.connectors.kafka import KafkaOffsetsInitializer

from .._errors import RecordDecodeError  # noqa: F401  (re-exported: serdes.flink.RecordDecodeError)
from . import _pyflink
from ._codecs import SerdeSpec
from ._codecs import create_in_worker as _create_in_worker  # noqa: F401  (re-exported)
from ._connectors import kafka_record_sink, kafka_record_source
from ._connectors import record_source
from ._decode import (  # noqa: F401  (re-exported)
    ON_ERROR_DEAD_LETTER,
    ON_ERROR_FAIL,
    ON_ERROR_SKIP,
    NOTHING,
    DecodeFunction,
    DecodingFunction,
)
from ._decode import check_on_error as _check_on_error  # noqa: F401  (re-exported)
from ._decode import poison_pill as _poison_pill  # noqa: F401  (re-exported)
from ._encode import DeadLetterToProducerRow, EncodeFunction, PackedEncodeFunction
from ._env import configure
from ._records import (  # noqa: F401  (re-exported)
    BYTES,
    DEAD_LETTER_ROW_TYPE,
    DEAD_LETTER_TAG,
    PICKLE_MODULE,
    PRODUCER_ROW_TYPE,
    RECORD_ROW_TYPE,
    FlinkSerializationContext,
    KafkaRecord,
)
from ._shim import PACKED_DESERIALIZER_CLASS, PACKED_SERIALIZER_CLASS
from ._typed_stream import TypedStream
from ._typeinfo import BytesCodecTypeInfo

__all__ = [
    "DEAD_LETTER_ROW_TYPE", "DEAD_LETTER_TAG", "PRODUCER_ROW_TYPE", "RECORD_ROW_TYPE",
    "DeadLetterToProducerRow", "DecodeFunction", "EncodeFunction", "FlinkSerializationContext", "KafkaRecord",
    "dead_letters", "kafka_record_sink", "kafka_record_source", "read_kafka", "read_records",
    "write_dead_letters", "write_kafka",
]

Topics = Union[str, Sequence[str]]


def read_records(env: StreamExecutionEnvironment, bootstrap_servers: str, topics: Topics,
                 name: str = "kafka-records", **kwargs: Any) -> DataStream:
    """DataStream of raw :data:`RECORD_ROW_TYPE` rows (no decoding); ``kwargs`` as for
    :func:`kafka_record_source` (``group_id``, ``starting_offsets``, ``bounded``, ``properties``)."""
    configure(env)
    source = kafka_record_source(bootstrap_servers, topics, **kwargs)
    return env.from_source(source, WatermarkStrategy.no_watermarks(), name)


def topics_label(topics: Topics) -> str:
    """``"a,b"`` for operator names."""
    return ",".join([topics] if isinstance(topics, str) else topics)


def read_kafka(
    env: StreamExecutionEnvironment,
    bootstrap_servers: str,
    topics: Topics,
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
) -> Union[DataStream, TypedStream]:
    """One call: Kafka topic(s) -> DataStream of decoded values.

    ``convert`` is applied to each decoded value (or :class:`KafkaRecord`) in the same operator,
    e.g. ``convert=avro_row_converter(schema), output_type=avro_row_type_info(schema)`` gives a
    stream of ``Row`` for the Table API.

    Failed records follow ``on_error`` (see :class:`DecodeFunction`); with ``"dead_letter"``
    get them with ``stream.get_side_output(DEAD_LETTER_TAG)`` (or :func:`dead_letters`).
    ``output_type``: default pickled Python objects; a :class:`ProtobufTypeInformation`
    returns a :class:`~serdes.flink.TypedStream` whose elements travel as protobuf bytes.
    """
    configure(env)
    # packed records (one byte[] each, _packed.py), not RECORD_ROW_TYPE rows: PyFlink builds a
    # Python Row object per row it hands to the worker
    source = record_source(bootstrap_servers, topics, _pyflink.new_java_object(PACKED_DESERIALIZER_CLASS),
                           group_id, starting_offsets, bounded, properties)
    rows = env.from_source(source, WatermarkStrategy.no_watermarks(), name or f"kafka:{topics_label(topics)}")
    emit = convert
    if isinstance(output_type, BytesCodecTypeInfo):
        emit = output_type.encoder() if convert is None else _Compose(convert, output_type.encoder())
    fn = DecodeFunction(value, key, on_error, include_metadata, skip_tombstones, emit)
    decoded = rows.process(fn, output_type=output_type).name("serdes-decode")
    if isinstance(output_type, BytesCodecTypeInfo):
        return TypedStream(decoded, output_type)
    return decoded


class _Compose:
    __module__ = PICKLE_MODULE

    def __init__(self, first: Callable[[Any], Any], second: Callable[[Any], Any]) -> None:
        self.first, self.second = first, second

    def __call__(self, value: Any) -> Any:
        return self.second(self.first(value))


def dead_letters(stream: Any) -> DataStream:
    """The dead-letter side output (:data:`DEAD_LETTER_ROW_TYPE`) of a :func:`read_kafka` stream
    (or of a :func:`~serdes.flink.read_kafka_keyed` stream's decode operators)."""
    if hasattr(stream, "dead_letters"):
        return stream.dead_letters()  # type: ignore[no-any-return]
    ds = getattr(stream, "data_stream", stream)
    return ds.get_side_output(DEAD_LETTER_TAG)  # type: ignore[no-any-return]


def write_kafka(
    stream: Union[DataStream, TypedStream],
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
) -> DataStreamSink:
    """Encode ``stream`` in Python with registry framing and write it with a Java KafkaSink.

    Exactly-once: ``delivery_guarantee=DeliveryGuarantee.EXACTLY_ONCE``, a
    ``transactional_id_prefix`` unique per job, checkpointing on, and
    ``properties={"transaction.timeout.ms": ...}`` not above the broker's
    ``transaction.max.timeout.ms`` (15 min by default; KafkaSink's default is 1 h).
    """
    decode_input = None
    if isinstance(stream, TypedStream):
        decode_input = stream.type_info.decoder()
        ds = stream.data_stream
    else:
        ds = stream
    rows = ds.map(
        PackedEncodeFunction(topic, value, key, key_fn, value_fn, topic_fn, decode_input),
        output_type=BYTES,
    ).name("serdes-encode")
    sink = kafka_record_sink(bootstrap_servers, topic, delivery_guarantee, properties, transactional_id_prefix,
                             serializer_class=PACKED_SERIALIZER_CLASS)
    return rows.sink_to(sink).name(name or f"kafka-sink:{topic}")


def write_dead_letters(stream: Any, bootstrap_servers: str, topic: str, **kwargs: Any) -> DataStreamSink:
    """Sink the dead-letter side output of ``stream`` to ``topic`` (raw bytes kept, reason in headers)."""
    rows = dead_letters(stream).map(DeadLetterToProducerRow(topic), output_type=PRODUCER_ROW_TYPE)
    return rows.sink_to(kafka_record_sink(bootstrap_servers, topic, **kwargs)).name(f"dead-letter:{topic}")
