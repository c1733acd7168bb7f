"""Avro builders (sync and async) with confluent-kafka's names, arguments and setters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._builders import CLIENT, AsyncSerdeBuilder, Construction, SerdeBuilder
from .._confluent import builder_bases
from ._async import AsyncAvroDeserializer, AsyncAvroSerializer
from ._deserializer import AvroDeserializer
from ._serializer import AvroSerializer

if TYPE_CHECKING:
    from confluent_kafka.schema_registry.avro import (  # noqa: I001
        AvroSerializerBuilder as _ConfluentAvroSerializerBuilder,
        AvroDeserializerBuilder as _ConfluentAvroDeserializerBuilder,
        AsyncAvroSerializerBuilder as _ConfluentAsyncAvroSerializerBuilder,
        AsyncAvroDeserializerBuilder as _ConfluentAsyncAvroDeserializerBuilder,
    )
else:
    # confluent-kafka 2.16 added the builders: on an older release serdes' builder classes still
    # import, and constructing one raises serdes.ConfluentVersionError naming 2.16
    (_ConfluentAvroSerializerBuilder, _ConfluentAvroDeserializerBuilder,
     _ConfluentAsyncAvroSerializerBuilder, _ConfluentAsyncAvroDeserializerBuilder) = builder_bases(
        "confluent_kafka.schema_registry.avro", "Avro", "serdes.avro")


__all__ = ["AvroSerializerBuilder", "AvroDeserializerBuilder", "AsyncAvroSerializerBuilder", "AsyncAvroDeserializerBuilder"]

# the (Async)AvroSerializer / (Async)AvroDeserializer constructor calls of confluent-kafka's builders
_SERIALIZER = Construction(
    (CLIENT, "_schema_str", "_to_dict", "_serializer_conf", "_rule_conf", "_rule_registry"), "_serializer_init",
)
_DESERIALIZER = Construction(
    (CLIENT, "_schema_str", "_from_dict", "_return_record_name", "_deserializer_conf", "_rule_conf", "_rule_registry"),
    "_deserializer_init",
)


class AvroSerializerBuilder(SerdeBuilder[AvroSerializer], _ConfluentAvroSerializerBuilder):
    """confluent-kafka's ``AvroSerializerBuilder``; ``build`` gives a :class:`serdes.avro.AvroSerializer`."""

    _serde, _construction = AvroSerializer, _SERIALIZER


class AvroDeserializerBuilder(SerdeBuilder[AvroDeserializer], _ConfluentAvroDeserializerBuilder):
    """confluent-kafka's ``AvroDeserializerBuilder``; ``build`` gives a :class:`serdes.avro.AvroDeserializer`."""

    _serde, _construction = AvroDeserializer, _DESERIALIZER


class AsyncAvroSerializerBuilder(AsyncSerdeBuilder[AsyncAvroSerializer], _ConfluentAsyncAvroSerializerBuilder):  # type: ignore[misc]
    """confluent-kafka's ``AsyncAvroSerializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.avro.AsyncAvroSerializer`."""

    _serde, _construction = AsyncAvroSerializer, _SERIALIZER


class AsyncAvroDeserializerBuilder(AsyncSerdeBuilder[AsyncAvroDeserializer], _ConfluentAsyncAvroDeserializerBuilder):  # type: ignore[misc]
    """confluent-kafka's ``AsyncAvroDeserializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.avro.AsyncAvroDeserializer`."""

    _serde, _construction = AsyncAvroDeserializer, _DESERIALIZER
