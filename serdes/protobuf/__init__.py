"""Protobuf serializer and deserializer, drop-in for ``confluent_kafka.schema_registry.protobuf``.

``ProtobufDeserializer(None, conf, client)`` decodes without generated classes: the message class
is built from the writer schema in the registry (see :mod:`serdes.protobuf._schemas`).

Every public name of confluent-kafka's module is here too: the asyncio classes, the builders and
confluent-kafka's own helpers (re-exported as they are).
"""

from typing import Any

from confluent_kafka.schema_registry import protobuf as _confluent

from .. import _exports

from ._async import AsyncProtobufDeserializer, AsyncProtobufSerializer
from ._builders import (
    AsyncProtobufDeserializerBuilder,
    AsyncProtobufSerializerBuilder,
    ProtobufDeserializerBuilder,
    ProtobufSerializerBuilder,
)
from ._deserializer import ProtobufDeserializer
from ._serializer import ProtobufSerializer, WrongMessageTypeError

# confluent-kafka's schema helpers, re-exported as they are (each where the installed version has it)
_exports.reexport(globals(), _confluent, (
    "decimal_to_protobuf", "get_inline_tags", "get_type", "is_map_field", "protobuf_to_decimal",
    "protobuf_to_variant", "transform", "validate_message", "variant_to_protobuf"
))

__all__ = [
    "ProtobufSerializer",
    "ProtobufDeserializer",
    "AsyncProtobufSerializer",
    "AsyncProtobufDeserializer",
    "ProtobufSerializerBuilder",
    "ProtobufDeserializerBuilder",
    "AsyncProtobufSerializerBuilder",
    "AsyncProtobufDeserializerBuilder",
    "WrongMessageTypeError",
    "check_compatibility",
    "CompatibilityResult",
    "decimal_to_protobuf",
    "get_inline_tags",
    "get_type",
    "is_map_field",
    "protobuf_to_decimal",
    "protobuf_to_variant",
    "transform",
    "validate_message",
    "variant_to_protobuf",
]

_COMPAT_NAMES = ("check_compatibility", "CompatibilityResult")


def __getattr__(name: str) -> Any:
    # Descriptor compatibility checks live in serdes.protobuf.compat; imported on first use.
    if name in _COMPAT_NAMES:
        try:
            from . import compat
        except ImportError as e:  # pragma: no cover - compat module not installed/available
            raise AttributeError(f"serdes.protobuf.{name} is unavailable: {e}") from e
        value = getattr(compat, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'serdes.protobuf' has no attribute {name!r}")

__all__ = _exports.defined(globals(), __all__, lazy=_COMPAT_NAMES)
