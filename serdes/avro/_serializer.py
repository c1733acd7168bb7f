"""AvroSerializer: confluent-kafka's constructor and call, with a cached encoder per subject."""

from __future__ import annotations

from typing import Any, Optional

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer as _ConfluentAvroSerializer
from confluent_kafka.serialization import SerializationContext

from .._confluent import avro_strictness, get_parsed_schema, own_parsed_schema, to_dict
from .._errors import RecordLocation, SchemaMismatchError
from .._limits import DEFAULT_LIMITS, Limits, split_limits_args
from .._serde import Encoder, FastSerializer
from ._native_encoder import compile_native_encoder
from ._refs import ReferencesMixin
from ._schema_check import check_schema

__all__ = ["AvroSerializer"]


class AvroSerializer(ReferencesMixin, FastSerializer, _ConfluentAvroSerializer):
    """Encodes dicts (or objects via ``to_dict``) as Confluent-framed Avro.

    Same constructor arguments, configuration keys and defaults as
    ``confluent_kafka.schema_registry.avro.AvroSerializer``. ``conf`` also takes serdes' limit keys
    (``serdes.max.schema.depth``, ...; see docs/security.md), removed before confluent-kafka sees it.

    The serializer's own schema must use Avro names (``[A-Za-z_][A-Za-z0-9_]*`` per dotted part):
    a name like ``O'Brien`` raises :class:`serdes.SchemaMismatchError` on the first record, before
    anything is registered. So does a registry schema (``use.latest.version``, ``use.schema.id``)
    with such a name, for every record.
    """

    _schema_type = "AVRO"
    _confluent_kind = "avro.serializer"
    _limits: Limits = DEFAULT_LIMITS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        args, kwargs, self._limits = split_limits_args(args, kwargs, 3)
        super().__init__(*args, **kwargs)
        self._init_fast()

    def _confluent_call(self, obj: Any, ctx: Optional[SerializationContext]) -> Optional[bytes]:
        # only for records confluent-kafka writes itself (data-contract rules, no context); its
        # failures are typed by FastSerializer._delegated
        written: Optional[bytes] = _ConfluentAvroSerializer.__call__(self, obj, ctx)
        return written

    def _schema_to_register(self, ctx: SerializationContext, loc: RecordLocation) -> Optional[Schema]:
        # the serializer's own schema is checked before anything is registered under the subject
        own = own_parsed_schema(self)
        if own is not None:
            try:
                check_schema(own, "serializer's", self._limits.max_schema_depth, self._limits.max_fields)
            except SchemaMismatchError as e:
                raise e.at(topic=ctx.topic, field=ctx.field)  # noqa: B904 - the same exception, located
        return super()._schema_to_register(ctx, loc)

    def _build_encoder(self, prefix: bytes, written_with: Optional[Schema]) -> Encoder:
        if written_with is None:
            parsed, role = own_parsed_schema(self), "serializer's"
        else:
            role = "registry"
            try:
                parsed = get_parsed_schema(self, written_with)
            except Exception as e:  # noqa: BLE001 - an untrusted registry schema
                raise SchemaMismatchError(f"the registry schema does not parse: {type(e).__name__}: {e}") from None
        # native when the extension is active and compiles the schema, else the pure encoder
        strict, strict_allow_default = avro_strictness(self)
        return compile_native_encoder(parsed, prefix, strict, strict_allow_default, to_dict(self), self._limits, role)
