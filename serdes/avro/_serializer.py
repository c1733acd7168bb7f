"""AvroSerializer: confluent-kafka's constructor and call, with a cached encoder per subject."""

from __future__ import annotations

from typing import Any, Optional

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer as _ConfluentAvroSerializer
from confluent_kafka.serialization import SerializationContext

from .._serde import Encoder, FastSerializer
from ._encgen import check_value, compile_encoder
from .._errors import RecordLocation, SerdesError, ValidationError

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
        key = (ctx.topic, ctx.field) if ctx is not None else None
        if key not in self._encoders and self._parsed_schema is not None and obj is not None:
            # the first record of a subject goes through confluent-kafka, which writes whatever
            # fastavro accepts: validate it the way the cached encoder will
            value = self._to_dict(obj, ctx) if self._to_dict is not None and ctx is not None else obj
            try:
                check_value(self._parsed_schema, value, self._strict)
            except ValidationError as e:
                raise (e.at(topic=ctx.topic, field=ctx.field) if ctx is not None else e)
        try:
            return _ConfluentAvroSerializer.__call__(self, obj, ctx)
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as e:
            if isinstance(e, SerdesError):
                raise
            raise ValidationError(f"value does not match the schema: {type(e).__name__}: {e}",
                                  RecordLocation.from_ctx(ctx)) from e

    def _build_encoder(self, prefix: bytes, written_with: Optional[Schema]) -> Encoder:
        parsed = self._get_parsed_schema(written_with) if written_with is not None else self._parsed_schema
        return compile_encoder(parsed, prefix, self._strict, self._strict_allow_default, self._to_dict)
