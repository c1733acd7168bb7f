"""Protobuf serializer and deserializer, drop-in for ``confluent_kafka.schema_registry.protobuf``.

``ProtobufDeserializer(None, conf, client)`` decodes without generated classes: the message class
is built from the writer schema in the registry (see :mod:`serdes.protobuf._schemas`).
"""

from typing import Any

from ._deserializer import ProtobufDeserializer
from ._serializer import ProtobufSerializer, WrongMessageTypeError

__all__ = ["ProtobufSerializer", "ProtobufDeserializer", "WrongMessageTypeError", "check_compatibility", "CompatibilityResult"]

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
