"""JSON Schema serdes, drop-in for ``confluent_kafka.schema_registry.json_schema``.

Every public name of confluent-kafka's module is here: serdes' serializers, deserializers and
their builders (sync and asyncio), and confluent-kafka's own schema helpers re-exported as they are.
Inside this package ``import json`` is still the standard library (absolute imports).
"""

from __future__ import annotations

from confluent_kafka.schema_registry import json_schema as _confluent

from .. import _exports

from ._async import AsyncJSONDeserializer, AsyncJSONSerializer
from ._builders import (
    AsyncJSONDeserializerBuilder,
    AsyncJSONSerializerBuilder,
    JSONDeserializerBuilder,
    JSONSerializerBuilder,
)
from ._deserializer import JSONDeserializer
from ._serializer import JSONSerializer
from ._validator import CompiledValidator, compile_validator

# confluent-kafka's schema helpers, re-exported as they are (each where the installed version has it)
_exports.reexport(globals(), _confluent, (
    "DEFAULT_SPEC", "JsonMessage", "JsonSchema", "get_inline_tags", "get_type", "transform",
    "validate_message"
))

__all__ = [
    "JSONSerializer",
    "JSONDeserializer",
    "AsyncJSONSerializer",
    "AsyncJSONDeserializer",
    "JSONSerializerBuilder",
    "JSONDeserializerBuilder",
    "AsyncJSONSerializerBuilder",
    "AsyncJSONDeserializerBuilder",
    "CompiledValidator",
    "compile_validator",
    "DEFAULT_SPEC",
    "JsonMessage",
    "JsonSchema",
    "get_inline_tags",
    "get_type",
    "transform",
    "validate_message",
]

__all__ = _exports.defined(globals(), __all__)
