"""Avro serdes, drop-in for ``confluent_kafka.schema_registry.avro``.

Every public name of confluent-kafka's module is here: serdes' serializers, deserializers and
their builders (sync and asyncio), and confluent-kafka's own schema helpers re-exported as they are.
"""

from confluent_kafka.schema_registry.avro import (  # noqa: F401 - re-exported helpers
    AvroMessage,
    AvroSchema,
    LocalSchemaRepository,
    get_inline_tags,
    get_type,
    parse_schema_with_repo,
    transform,
    validate_message,
)

from ._async import AsyncAvroDeserializer, AsyncAvroSerializer
from ._builders import (
    AsyncAvroDeserializerBuilder,
    AsyncAvroSerializerBuilder,
    AvroDeserializerBuilder,
    AvroSerializerBuilder,
)
from ._deserializer import AvroDeserializer
from ._serializer import AvroSerializer

__all__ = [
    "AvroSerializer",
    "AvroDeserializer",
    "AsyncAvroSerializer",
    "AsyncAvroDeserializer",
    "AvroSerializerBuilder",
    "AvroDeserializerBuilder",
    "AsyncAvroSerializerBuilder",
    "AsyncAvroDeserializerBuilder",
    "AvroMessage",
    "AvroSchema",
    "LocalSchemaRepository",
    "get_inline_tags",
    "get_type",
    "parse_schema_with_repo",
    "transform",
    "validate_message",
]
