"""AvroSerializer: confluent-kafka's constructor and call, with a cached encoder per subject."""

from __future__ import annotations

import io
from typing import Any, Optional

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer as _ConfluentAvroSerializer
from confluent_kafka.serialization import SerializationContext
from fastavro import schemaless_writer

from .._serde import Encoder, FastSerializer

__all__ = ["AvroSerializer"]


class AvroSerializer(FastSerializer, _ConfluentAvroSerializer):
    """Encodes dicts (or objects via ``to_dict``) as Confluent-framed Avro.

    Same constructor arguments, configuration keys and defaults as
    ``confluent_kafka.schema_registry.avro.AvroSerializer``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_fast()

    def _confluent_call(self, obj: Any, ctx: Optional[SerializationContext]) -> Optional[bytes]:
        return _ConfluentAvroSerializer.__call__(self, obj, ctx)

    def _build_encoder(self, prefix: bytes, written_with: Optional[Schema]) -> Encoder:
        parsed = self._get_parsed_schema(written_with) if written_with is not None else self._parsed_schema
        to_dict = self._to_dict
        strict = self._strict
        strict_allow_default = self._strict_allow_default

        def encode(obj: Any, ctx: Optional[SerializationContext]) -> bytes:
            if to_dict is not None:
                obj = to_dict(obj, ctx)
            fo = io.BytesIO()
            fo.write(prefix)
            schemaless_writer(fo, parsed, obj, strict=strict, strict_allow_default=strict_allow_default)
            return fo.getvalue()

        return encode
