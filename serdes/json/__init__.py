"""JSON Schema serializer and deserializer, drop-in for ``confluent_kafka.schema_registry.json_schema``.

Inside this package ``import json`` is still the standard library (absolute imports).
"""

from __future__ import annotations

from ._deserializer import JSONDeserializer
from ._serializer import JSONSerializer
from ._validator import CompiledValidator, compile_validator

__all__ = ["JSONSerializer", "JSONDeserializer", "CompiledValidator", "compile_validator"]
