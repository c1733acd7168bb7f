"""JSON Schema builders (sync and async) with confluent-kafka's names, arguments and setters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._builders import CLIENT, AsyncSerdeBuilder, Construction, SerdeBuilder
from .._confluent import builder_bases
from ._async import AsyncJSONDeserializer, AsyncJSONSerializer
from ._deserializer import JSONDeserializer
from ._serializer import JSONSerializer

if TYPE_CHECKING:
    from confluent_kafka.schema_registry.json_schema import (  # noqa: I001
        JSONSerializerBuilder as _ConfluentJSONSerializerBuilder,
        JSONDeserializerBuilder as _ConfluentJSONDeserializerBuilder,
        AsyncJSONSerializerBuilder as _ConfluentAsyncJSONSerializerBuilder,
        AsyncJSONDeserializerBuilder as _ConfluentAsyncJSONDeserializerBuilder,
    )
else:
    # confluent-kafka 2.16 added the builders: on an older release serdes' builder classes still
    # import, and constructing one raises serdes.ConfluentVersionError naming 2.16
    (_ConfluentJSONSerializerBuilder, _ConfluentJSONDeserializerBuilder,
     _ConfluentAsyncJSONSerializerBuilder, _ConfluentAsyncJSONDeserializerBuilder) = builder_bases(
        "confluent_kafka.schema_registry.json_schema", "JSON", "serdes.json")


__all__ = ["JSONSerializerBuilder", "JSONDeserializerBuilder", "AsyncJSONSerializerBuilder", "AsyncJSONDeserializerBuilder"]

# the (Async)JSONSerializer / (Async)JSONDeserializer constructor calls of confluent-kafka's builders
_SERIALIZER = Construction(
    ("_schema_str", CLIENT, "_to_dict", "_serializer_conf", "_rule_conf", "_rule_registry", "_json_encode"),
    "_serializer_init",
)
_DESERIALIZER = Construction(
    ("_schema_str", "_from_dict", CLIENT, "_deserializer_conf", "_rule_conf", "_rule_registry", "_json_decode"),
    "_deserializer_init",
)


class JSONSerializerBuilder(SerdeBuilder[JSONSerializer], _ConfluentJSONSerializerBuilder):
    """confluent-kafka's ``JSONSerializerBuilder``; ``build`` gives a :class:`serdes.json.JSONSerializer`."""

    _serde, _construction = JSONSerializer, _SERIALIZER


class JSONDeserializerBuilder(SerdeBuilder[JSONDeserializer], _ConfluentJSONDeserializerBuilder):
    """confluent-kafka's ``JSONDeserializerBuilder``; ``build`` gives a :class:`serdes.json.JSONDeserializer`."""

    _serde, _construction = JSONDeserializer, _DESERIALIZER


class AsyncJSONSerializerBuilder(AsyncSerdeBuilder[AsyncJSONSerializer], _ConfluentAsyncJSONSerializerBuilder):  # type: ignore[misc]
    """confluent-kafka's ``AsyncJSONSerializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.json.AsyncJSONSerializer`."""

    _serde, _construction = AsyncJSONSerializer, _SERIALIZER


class AsyncJSONDeserializerBuilder(AsyncSerdeBuilder[AsyncJSONDeserializer], _ConfluentAsyncJSONDeserializerBuilder):  # type: ignore[misc]
    """confluent-kafka's ``AsyncJSONDeserializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.json.AsyncJSONDeserializer`."""

    _serde, _construction = AsyncJSONDeserializer, _DESERIALIZER
