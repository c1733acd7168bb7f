"""AsyncProtobufSerializer / AsyncProtobufDeserializer: confluent-kafka's async classes, serdes' caches."""

from __future__ import annotations

from typing import Any, Dict

from confluent_kafka.schema_registry.protobuf import AsyncProtobufDeserializer as _ConfluentAsyncProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import AsyncProtobufSerializer as _ConfluentAsyncProtobufSerializer
from google.protobuf import empty_pb2

from .._async import AsyncDeserializerMixin, AsyncSerializerMixin
from ._deserializer import ProtobufDeserializer
from ._serializer import ProtobufSerializer

__all__ = ["AsyncProtobufSerializer", "AsyncProtobufDeserializer"]


# misc: the async __call__ (the mixin's, as confluent-kafka's own async class) overrides the sync
# confluent_kafka.serialization.Serializer.__call__ that class inherits: intended, not an error
class AsyncProtobufSerializer(AsyncSerializerMixin, _ConfluentAsyncProtobufSerializer):  # type: ignore[misc]
    """Asyncio :class:`~serdes.protobuf.ProtobufSerializer`: ``ser = await AsyncProtobufSerializer(msg_type,
    client, conf=None, rule_conf=None, rule_registry=None)``, then ``await ser(msg, ctx)``; a cache
    hit awaits nothing."""

    _engine_class = ProtobufSerializer


class AsyncProtobufDeserializer(AsyncDeserializerMixin, _ConfluentAsyncProtobufDeserializer):
    """Asyncio :class:`~serdes.protobuf.ProtobufDeserializer`: ``deser = await AsyncProtobufDeserializer(
    message_type, conf=None, schema_registry_client=None, ...)`` (plus serdes' keyword options
    ``message_descriptor``, ``descriptor_set``, ``message_name``, ``output``), then
    ``await deser(data, ctx)``; a cache hit awaits nothing."""

    _engine_class = ProtobufDeserializer

    def _confluent_kwargs(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        # dynamic mode (no generated class): confluent-kafka's constructor insists on one
        if kwargs.get("message_type") is None:
            kwargs = dict(kwargs, message_type=empty_pb2.Empty)
        return kwargs
