"""Avro serdes, drop-in for ``confluent_kafka.schema_registry.avro``.

Every public name of confluent-kafka's module is here: serdes' serializers, deserializers and
their builders (sync and asyncio), and confluent-kafka's own schema helpers re-exported as they are.
"""

from confluent_kafka.schema_registry import avro as _confluent

from .. import _exports

from ._async import AsyncAvroDeserializer, AsyncAvroSerializer
from ._builders import (
    AsyncAvroDeserializerBuilder,
    AsyncAvroSerializerBuilder,
    AvroDeserializerBuilder,
    AvroSerializerBuilder,
)
from ._deserializer import AvroDeserializer
from ._serializer import AvroSerializer
from ._source import generated_source

# confluent-kafka's schema helpers, re-exported as they are (each where the installed version has it)
_exports.reexport(globals(), _confluent, (
    "AvroMessage", "AvroSchema", "LocalSchemaRepository", "get_inline_tags", "get_type",
    "parse_schema_with_repo", "transform", "validate_message"
))

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
    "generated_source",
]

__all__ = _exports.defined(globals(), __all__)
