"""JSONDeserializer: confluent-kafka's constructor and call, with per-schema compiled decoders."""

from __future__ import annotations

from typing import Any, Optional

import orjson
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as _ConfluentJSONDeserializer
from confluent_kafka.serialization import SerializationContext

from .._confluent import (
    from_dict,
    get_parsed_schema,
    json_decoder,
    json_loads,
    json_ref_registry,
    json_validates,
    own_schema,
    reader_schema,
    registry_of,
)
from .._errors import CorruptPayloadError, RecordLocation, SerdesError
from .._limits import split_limits_args
from .._serde import Built, FastDeserializer, ParseStep
from .._wire import Frame
from ._common import ValidatorCacheMixin
from ._depth import depth_error, exceeds_depth
from ._refs import remote_refs_supported

__all__ = ["JSONDeserializer"]

_json_loads = json_loads()


class JSONDeserializer(ValidatorCacheMixin, FastDeserializer, _ConfluentJSONDeserializer):
    """Decodes Confluent-framed JSON into dicts (or objects via ``from_dict``).

    Same constructor arguments, configuration keys and defaults as
    ``confluent_kafka.schema_registry.json_schema.JSONDeserializer``::

        JSONDeserializer(schema_str, from_dict=None, schema_registry_client=None, conf=None,
                         rule_conf=None, rule_registry=None, json_decode=None)

    Validation (``validate``, default ``True``) is against the reader schema, as in
    confluent-kafka: the latest subject version with ``use.latest.version``, else ``schema_str``,
    else the writer schema from the registry. After the first record of a schema id, decoding is a
    dict lookup, ``orjson.loads`` (or ``json_decode``) and the compiled jsonschema-rs validator.

    Raises (from ``__call__``):
        serdes.CorruptPayloadError: the payload is not JSON.
        serdes.ValidationError: the document does not conform to the reader schema.
        serdes.SchemaMismatchError: the schema id names an Avro or Protobuf schema.
        serdes.FramingError, serdes.UnknownSchemaError, serdes.RegistryError: as for every serdes
            deserializer.
    """

    _schema_type = "JSON"
    _confluent_kind = "json.deserializer"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # serdes.* keys (docs/security.md) leave the conf before confluent-kafka checks it; the
        # limits must be known before its constructor parses schema_str
        args, kwargs, self._limits = split_limits_args(args, kwargs, 3)
        remote_refs_supported(self._limits)
        super().__init__(*args, **kwargs)
        self._init_fast()

    def _confluent_call(self, data: Any, ctx: Optional[SerializationContext]) -> Any:
        return _ConfluentJSONDeserializer.__call__(self, data, ctx)

    def _record_name(self, writer: Schema) -> Optional[str]:
        parsed, _ = get_parsed_schema(self, writer)
        return parsed.get("title") if isinstance(parsed, dict) else None

    def _build_for_frame(self, frame: Frame, ctx: Optional[SerializationContext], loc: RecordLocation) -> Built:
        if registry_of(self) is not None:
            return super()._build_for_frame(frame, ctx, loc)
        # No registry client (confluent-kafka allows it with a schema_str): no writer schema lookup,
        # the frame is only checked, the document is validated against schema_str -- by one
        # decoder for every schema id, not one per id.
        return self._shared_decoder(frame, ctx)

    def _build_decoder(
        self, writer: Optional[Schema], reader: Optional[Schema], frame: Frame, ctx: Optional[SerializationContext]
    ) -> Built:
        # the reader schema, as confluent-kafka picks it: latest version > schema_str > writer schema
        if reader is not None:
            schema: Optional[Schema] = reader
            parsed, ref_registry = get_parsed_schema(self, reader)
        elif own_schema(self) is not None:
            schema = own_schema(self)
            parsed, ref_registry = reader_schema(self), json_ref_registry(self)
        elif writer is not None:
            schema = writer
            parsed, ref_registry = get_parsed_schema(self, writer)
        else:
            schema, parsed, ref_registry = None, None, None
        validator = None
        if json_validates(self) and schema is not None and parsed is not None and ref_registry is not None:
            validator = self._get_validator(schema, parsed, ref_registry)
        return _make_decoder(validator, from_dict(self), json_decoder(self), frame.schema_id)


def _make_decoder(validator: Any, from_dict: Any, json_decode: Any, schema_id: Any) -> Built:
    """The decoder of one reader schema. With the default codec and no depth bound (the dominant
    configuration) it is a :class:`ParseStep` -- orjson.loads, the validator's is_valid, from_dict
    -- that FastDeserializer.__call__ (or the native dispatcher) runs with no Python frame of ours;
    its fallback is the decoder below, which raises the typed errors."""
    loads = orjson.loads if (json_decode is None or json_decode is _json_loads) else json_decode

    def corrupt(e: Exception, data: Any, offset: int, ctx: Optional[SerializationContext]) -> CorruptPayloadError:
        return CorruptPayloadError(
            f"payload of {len(data) - offset} bytes is not valid JSON: {type(e).__name__}: {e}",
            RecordLocation.from_ctx(ctx),
            schema_id,
        )

    def invalid(obj: Any, ctx: Optional[SerializationContext]) -> SerdesError:
        if validator.check(obj):  # pragma: no cover - only if jsonschema-rs could not read the value
            return None  # type: ignore[return-value]
        err: SerdesError = validator.error(obj)
        err.schema_id = schema_id
        return err.at(topic=getattr(ctx, "topic", None), field=getattr(ctx, "field", None))

    def located(e: SerdesError, ctx: Optional[SerializationContext]) -> SerdesError:
        if e.schema_id is None:
            e.schema_id = schema_id
        return e.at(topic=getattr(ctx, "topic", None), field=getattr(ctx, "field", None))

    # One closure for every configuration: no validator, a validator, and a recursive schema's
    # (whose document depth is bounded before the validator recurses into it).
    is_valid = validator.is_valid if validator is not None else None
    limit = validator.max_depth if validator is not None else None
    check = validator.unchecked_is_valid if limit is not None else is_valid

    def decode(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
        try:
            obj = loads(data[offset:] if offset else data)
        except Exception as e:
            raise corrupt(e, data, offset, ctx) from e
        if limit is not None:
            # fewer brackets in the payload than the limit is proof enough (one C scan each, no walk)
            try:
                shallow = data.count(b"{", offset) + data.count(b"[", offset) <= limit
            except Exception:  # a str from a custom json_decode path, ...
                shallow = False
            if not shallow and exceeds_depth(obj, limit):
                raise located(depth_error(limit), ctx)
        if check is not None:
            try:
                ok = check(obj)
            except SerdesError as e:  # a limit of the Python fallback validator (regex budget)
                raise located(e, ctx)  # noqa: B904 - the same exception, located
            except Exception:
                ok = False
            if not ok:
                err = invalid(obj, ctx)
                if err is not None:
                    raise err
        if from_dict is not None:
            return from_dict(obj, ctx)
        return obj

    if limit is not None or (validator is not None and validator.guarded):
        return decode  # the guard raises its typed error once, from decode (not again after a fast path)
    if loads is orjson.loads:
        return ParseStep(loads, is_valid, from_dict, decode)
    return decode
