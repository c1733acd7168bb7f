"""PyFlink ``KafkaSource`` / ``KafkaSink`` with serdes' Java record shim in place of PyFlink's schemas.

PyFlink's builders only take its value-only (de)serialization schemas; the shim's
``KafkaRecordDeserializationSchema`` keeps every record's coordinates, key and headers and its
``KafkaRecordSerializationSchema`` writes key, value and headers (``_shim.py``). The environment
must have been :func:`serdes.flink.configure`-d (jars on the classpath).
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, Optional, Sequence, Union

from pyflink.datastream.connectors.base import DeliveryGuarantee
from pyflink.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSink, KafkaSource

from . import _pyflink
from ._shim import DESERIALIZER_CLASS, SERIALIZER_CLASS

__all__ = ["kafka_record_source", "record_source", "kafka_record_sink"]


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
    return record_source(bootstrap_servers, topics, _pyflink.new_java_object(DESERIALIZER_CLASS), group_id,
                         starting_offsets, bounded, properties)


def record_source(bootstrap_servers: str, topics: Union[str, Sequence[str]], j_deserializer: Any,
                  group_id: Optional[str] = None, starting_offsets: Optional[KafkaOffsetsInitializer] = None,
                  bounded: bool = False, properties: Optional[Dict[str, str]] = None) -> KafkaSource:
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
    _pyflink.set_source_deserializer(builder, j_deserializer)
    return builder.build()


def kafka_record_sink(
    bootstrap_servers: str,
    topic: Optional[str] = None,
    delivery_guarantee: DeliveryGuarantee = DeliveryGuarantee.AT_LEAST_ONCE,
    properties: Optional[Dict[str, str]] = None,
    transactional_id_prefix: Optional[str] = None,
    serializer_class: str = SERIALIZER_CLASS,
) -> KafkaSink:
    """A ``KafkaSink`` for :data:`PRODUCER_ROW_TYPE` rows (``topic`` = default topic), or for
    packed producer records with ``serializer_class=PACKED_SERIALIZER_CLASS``."""
    builder = KafkaSink.builder().set_bootstrap_servers(bootstrap_servers)
    builder = builder.set_delivery_guarantee(delivery_guarantee)
    if transactional_id_prefix:
        builder = builder.set_transactional_id_prefix(transactional_id_prefix)
    for k, v in (properties or {}).items():
        builder = builder.set_property(k, str(v))
    return _pyflink.build_sink(builder, _pyflink.new_java_object(serializer_class, topic))  # type: ignore[no-any-return]
