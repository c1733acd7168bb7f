"""serdes: fast Confluent Schema Registry serializers for confluent-kafka and PyFlink.

The format packages are :mod:`serdes.avro`, :mod:`serdes.protobuf` and :mod:`serdes.json`; each
offers a serializer and a deserializer that take the same constructor arguments and the same
``(data, ctx)`` call as their ``confluent_kafka.schema_registry`` namesakes. PyFlink integration
lives in :mod:`serdes.flink` (install ``serdes[flink]``). :class:`DeserializingConsumer` (and its
asyncio form) is confluent-kafka's consumer with a ``consume(num_messages, timeout)`` that decodes
the batch and returns undecodable records with their typed error instead of raising.
"""

from . import _exports
from ._errors import (
    BatchError,
    ColumnValueError,
    ConfluentAPIError,
    ConfluentVersionError,
    CorruptPayloadError,
    FramingError,
    InvalidMagicByteError,
    MalformedEnvelopeError,
    RecordError,
    RecordLocation,
    RegistryAuthError,
    RegistryBadResponseError,
    RegistryError,
    RegistryRateLimitedError,
    RegistryUnavailableError,
    SchemaMismatchError,
    SerdesError,
    TruncatedFrameError,
    UnknownSchemaError,
    UnsupportedChangeError,
    ValidationError,
)
from ._consumer import AsyncDeserializingConsumer, DeserializationKafkaError, DeserializingConsumer, UndecodableMessage
from ._writer_schema import WriterSchema
from ._wire import Frame, decode_message_indexes, encode_message_indexes, frame_prefix, parse_frame

__version__ = "0.1.0"

__all__ = [
    "SerdesError",
    "RecordError",
    "BatchError",
    "FramingError",
    "InvalidMagicByteError",
    "TruncatedFrameError",
    "UnknownSchemaError",
    "RegistryError",
    "RegistryUnavailableError",
    "RegistryAuthError",
    "RegistryRateLimitedError",
    "RegistryBadResponseError",
    "SchemaMismatchError",
    "CorruptPayloadError",
    "ConfluentAPIError",
    "ConfluentVersionError",
    "ValidationError",
    "MalformedEnvelopeError",
    "UnsupportedChangeError",
    "ColumnValueError",
    "RecordLocation",
    "DeserializingConsumer",
    "AsyncDeserializingConsumer",
    "UndecodableMessage",
    "DeserializationKafkaError",
    "WriterSchema",
    "Frame",
    "parse_frame",
    "frame_prefix",
    "encode_message_indexes",
    "decode_message_indexes",
]

__all__ = _exports.defined(globals(), __all__)
