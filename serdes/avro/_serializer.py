"""AvroSerializer: confluent-kafka's constructor and call, with a cached encoder per subject."""

from __future__ import annotations

from typing import Any, Optional

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer as _ConfluentAvroSerializer
from confluent_kafka.serialization import SerializationContext

from .._serde import Encoder, FastSerializer
from ._encgen import compile_encoder

__all__ = ["AvroSerializer"]


class AvroSerializer(FastSerializer, _ConfluentAvroSerializer):
    """Encodes dicts (or objects via ``to_dict``) as Confluent-framed Avro.

    Same constructor arguments, configuration keys and defaults as
    ``confluent_kafka.schema_registry.avro.AvroSerializer``.
    """

    _schema_type = "AVRO"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_fast()

    def _confluent_call(self, obj: Any, ctx: Optional[SerializationContext]) -> Optional[bytes]:
        # only for records confluent-kafka writes itself (data-contract rules, no context); its
        # failures are typed by FastSerializer._delegated
        return _ConfluentAvroSerializer.__call__(self, obj, ctx)

    def _build_encoder(self, prefix: bytes, written_with: Optional[Schema]) -> Encoder:
        parsed = self._get_parsed_schema(written_with) if written_with is not None else self._parsed_schema
        return compile_encoder(parsed, prefix, self._strict, self._strict_allow_default, self._to_dict)
