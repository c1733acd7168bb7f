"""serdes: fast Confluent Schema Registry serializers for confluent-kafka and PyFlink.

The format packages are :mod:`serdes.avro`, :mod:`serdes.protobuf` and :mod:`serdes.json`; each
offers a serializer and a deserializer that take the same constructor arguments and the same
``(data, ctx)`` call as their ``confluent_kafka.schema_registry`` namesakes. PyFlink integration
lives in :mod:`serdes.flink` (install ``serdes[flink]``).
"""

from ._errors import (
    CorruptPayloadError,
    FramingError,
    InvalidMagicByteError,
    MalformedEnvelopeError,
    RecordLocation,
    RegistryUnavailableError,
    SchemaMismatchError,
    SerdesError,
    TruncatedFrameError,
    UnknownSchemaError,
    UnsupportedChangeError,
    ValidationError,
)
from ._wire import Frame, decode_message_indexes, encode_message_indexes, frame_prefix, parse_frame

__version__ = "0.1.0"

__all__ = [
    "SerdesError",
    "FramingError",
    "InvalidMagicByteError",
    "TruncatedFrameError",
    "UnknownSchemaError",
    "RegistryUnavailableError",
    "SchemaMismatchError",
    "CorruptPayloadError",
    "ValidationError",
    "MalformedEnvelopeError",
    "UnsupportedChangeError",
    "RecordLocation",
    "Frame",
    "parse_frame",
    "frame_prefix",
    "encode_message_indexes",
    "decode_message_indexes",
]
