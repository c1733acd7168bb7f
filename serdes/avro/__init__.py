"""Avro serializer and deserializer, drop-in for ``confluent_kafka.schema_registry.avro``."""

from ._deserializer import AvroDeserializer
from ._serializer import AvroSerializer

__all__ = ["AvroSerializer", "AvroDeserializer"]
