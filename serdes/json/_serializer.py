"""JSONSerializer: confluent-kafka's constructor and call, with a cached encoder per subject."""

from __future__ import annotations

from typing import Any, Callable, Optional

import jsonschema_rs
import orjson
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.json_schema import JSONSerializer as _ConfluentJSONSerializer
from confluent_kafka.serialization import SerializationContext

from .._confluent import get_parsed_schema, json_encoder, json_ref_registry, json_validates, own_parsed_schema, own_schema, to_dict
from .._errors import RecordLocation, SerdesError, ValidationError
from .._limits import split_limits_args
from .._serde import BuiltEncoder, EncodeStep, FastSerializer
from ._common import ValidatorCacheMixin
from ._depth import exceeds_depth
from ._refs import remote_refs_supported

__all__ = ["JSONSerializer", "NAN_AS_NULL_CONF"]

# orjson writes NaN and +-Infinity as null. A payload without "null" needs no further check
# (bytes.find: ``in`` on bytes first tries the needle as an int). A value whose payload holds a
# null goes through _is_finite: jsonschema-rs refuses a non-finite float wherever a schema looks at
# it, and this schema looks at every value (one Rust pass, ~2x orjson.dumps; reading the payload
# back and comparing was ~4-20x). Only a value it refuses (a NaN, or something jsonschema-rs cannot
# read, e.g. a datetime) is walked in Python for the path of the non-finite float.
_find = bytes.find
_FINITE_SCHEMA = {
    "$defs": {"v": {"type": ["null", "boolean", "number", "string", "array", "object"],
                    "items": {"$ref": "#/$defs/v"}, "additionalProperties": {"$ref": "#/$defs/v"}}},
    "$ref": "#/$defs/v",
}
_is_finite = jsonschema_rs.validator_for(_FINITE_SCHEMA).is_valid


class JSONSerializer(ValidatorCacheMixin, FastSerializer, _ConfluentJSONSerializer):
    """Encodes dicts (or objects via ``to_dict``) as Confluent-framed JSON.

    Same constructor arguments, configuration keys and defaults as
    ``confluent_kafka.schema_registry.json_schema.JSONSerializer``::

        JSONSerializer(schema_str, schema_registry_client, to_dict=None, conf=None,
                       rule_conf=None, rule_registry=None, json_encode=None)

    Per record (after the first of a ``(topic, field)``): ``to_dict`` -> validate (``validate``,
    default ``True``) with the compiled jsonschema-rs validator -> ``orjson.dumps`` (or
    ``json_encode``) -> frame prefix + bytes. The payload bytes are what confluent-kafka 2.16 writes
    (it also encodes with orjson, compact JSON).

    Raises (from ``__call__``):
        serdes.ValidationError: the value does not conform to the schema (message has the JSON path),
            cannot be encoded as JSON, or holds NaN / +-Infinity (confluent-kafka writes those as
            null; ``conf={"serdes.json.nan.as.null": True}`` does the same).
        serdes.SchemaMismatchError: auto-registration was refused (HTTP 409: incompatible with the
            subject's compatibility rule), or the schema is not a valid JSON Schema.
        serdes.UnknownSchemaError, serdes.RegistryError (and its subclasses): as for every serdes
            serializer.
    """

    _schema_type = "JSON"
    _confluent_kind = "json.serializer"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # serdes.* keys (docs/security.md) leave the conf before confluent-kafka checks it; the
        # limits must be known before its constructor parses schema_str
        args, kwargs, self._limits = split_limits_args(args, kwargs, 3)
        remote_refs_supported(self._limits)
        self._nan_as_null = self._limits.json_nan_as_null
        super().__init__(*args, **kwargs)
        self._init_fast()

    def _confluent_call(self, obj: Any, ctx: Optional[SerializationContext]) -> Optional[bytes]:
        # only for records confluent-kafka writes itself (data-contract rules, no context); its
        # failures are typed by FastSerializer._delegated. NaN / Infinity are refused first, as on
        # serdes' own path (confluent-kafka would write them as null).
        if not self._nan_as_null and obj is not None:
            convert = to_dict(self)
            value = convert(obj, ctx) if convert is not None and ctx is not None else obj
            where = non_finite_path(value)
            if where is not None:
                raise _nan_error(where, RecordLocation.from_ctx(ctx))
        written: Optional[bytes] = _ConfluentJSONSerializer.__call__(self, obj, ctx)
        return written

    def _build_encoder(self, prefix: bytes, written_with: Optional[Schema]) -> BuiltEncoder:
        if written_with is not None:
            schema: Optional[Schema] = written_with
            parsed, ref_registry = get_parsed_schema(self, written_with)
        else:
            schema = own_schema(self)
            parsed, ref_registry = own_parsed_schema(self), json_ref_registry(self)
        validator = None
        if json_validates(self) and schema is not None and parsed is not None and ref_registry is not None:
            validator = self._get_validator(schema, parsed, ref_registry)
        sid = _schema_id_of(prefix)
        return _make_encoder(prefix, validator, to_dict(self), json_encoder(self), sid, self._nan_as_null)


def _schema_id_of(prefix: bytes) -> Any:
    if len(prefix) >= 5 and prefix[0] == 0:
        return int.from_bytes(prefix[1:5], "big")
    if len(prefix) >= 17 and prefix[0] == 1:
        import uuid

        return uuid.UUID(bytes=bytes(prefix[1:17]))
    return None


def _make_encoder(
    prefix: bytes,
    validator: Any,
    to_dict: Optional[Callable[[Any, Any], Any]],
    json_encode: Optional[Callable[[Any], Any]],
    schema_id: Any,
    nan_as_null: bool = False,
) -> BuiltEncoder:
    """The encoder of one (topic, field); the first record and every later one run it.

    For prefix framing, the default codec, no ``to_dict`` and no depth bound (the dominant
    configuration) it is an :class:`EncodeStep` -- the validator's is_valid, orjson.dumps, the
    finite-float check on payloads holding ``null`` -- that FastSerializer.__call__ (or the native
    dispatcher) runs with no Python frame of ours; its fallback is ``encode`` below.

    Fast paths return only a payload that passed every check; anything else (invalid, not
    encodable, a ``null`` in the output that may be a NaN) goes to ``slow``, which raises the
    typed error or returns the same bytes.
    """
    default_codec = json_encode is None  # json_encoder(): None for confluent-kafka's default
    dumps = orjson.dumps

    def slow(value: Any, ctx: Optional[SerializationContext]) -> bytes:
        """Every check, typed errors: runs when the fast path did not return."""
        try:
            if validator is not None and not validator.check(value):
                raise validator.error(value)
            try:
                if default_codec:
                    payload = dumps(value)
                    if not nan_as_null and _find(payload, b"null") >= 0 and not _is_finite(value):
                        where = non_finite_path(value)
                        if where is not None:
                            raise _nan_error(where)
                else:
                    payload = json_encode(value)  # type: ignore[misc]
                    if isinstance(payload, str):
                        payload = payload.encode("utf8")
            except (TypeError, ValueError, OverflowError) as e:
                raise ValidationError(f"value cannot be encoded as JSON: {type(e).__name__}: {e}") from e
            return prefix + payload
        except SerdesError as e:
            if e.schema_id is None:
                e.schema_id = schema_id
            raise e.at(topic=getattr(ctx, "topic", None), field=getattr(ctx, "field", None))  # noqa: B904 - the same exception, located

    if not default_codec:
        return slow  # a user codec: keep every check explicit
    if validator is not None and validator.guarded:
        # patterns under the regex budget: its guard raises from is_valid, so take the path that
        # raises typed errors at once (the guard runs once, not again after a fast path)
        def encode_guarded(obj: Any, ctx: Optional[SerializationContext]) -> bytes:
            return slow(to_dict(obj, ctx) if to_dict is not None else obj, ctx)

        return encode_guarded

    # One closure per check, for every configuration: a to_dict of None and a missing validator
    # cost one test each per record (no call, no extra frame).
    limit = validator.max_depth if validator is not None else None
    if limit is not None:
        # A recursive schema: the depth is bounded before validation. orjson encodes first (it
        # refuses more than 255 levels itself); a payload with fewer brackets than the limit needs
        # no walk of the value.
        unchecked = validator.unchecked_is_valid

        def encode_bounded(obj: Any, ctx: Optional[SerializationContext]) -> bytes:
            value = to_dict(obj, ctx) if to_dict is not None else obj
            try:
                payload = dumps(value)
                if payload.count(b"{") + payload.count(b"[") <= limit or not exceeds_depth(value, limit):
                    if unchecked(value) and (nan_as_null or _find(payload, b"null") < 0 or _is_finite(value)):
                        return prefix + payload
            except Exception:
                pass
            return slow(value, ctx)  # raises the typed error (depth first)
        return encode_bounded

    is_valid = validator.is_valid if validator is not None else None

    def encode(obj: Any, ctx: Optional[SerializationContext]) -> bytes:
        value = to_dict(obj, ctx) if to_dict is not None else obj
        try:
            if is_valid is None or is_valid(value):
                payload = dumps(value)
                if nan_as_null or _find(payload, b"null") < 0 or _is_finite(value):
                    return prefix + payload
        except Exception:
            pass
        return slow(value, ctx)
    if prefix and is_valid is not None and to_dict is None:
        return EncodeStep(prefix, is_valid, dumps, None if nan_as_null else _is_finite, encode)
    return encode


#: the ``serdes.*`` conf key restoring confluent-kafka's behaviour for NaN / +-Infinity (write null)
NAN_AS_NULL_CONF = "serdes.json.nan.as.null"


_INF = float("inf")
_CONTAINERS = (dict, list, tuple, float)


def non_finite_path(value: Any, _path: str = "$") -> Optional[str]:
    """The JSON path of the first NaN or +-Infinity float in ``value``, else ``None``. Runs only on
    records whose encoding holds a ``null`` (how orjson writes those floats); the depth is bounded:
    orjson encoded ``value`` already and refuses more than 254 levels."""
    if isinstance(value, float):
        return _path if value != value or value == _INF or value == -_INF else None
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, _CONTAINERS):
                found = non_finite_path(v, f"{_path}.{k}")
                if found is not None:
                    return found
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if isinstance(v, _CONTAINERS):
                found = non_finite_path(v, f"{_path}[{i}]")
                if found is not None:
                    return found
    return None


def _nan_error(where: str, location: Optional[RecordLocation] = None) -> ValidationError:
    return ValidationError(
        f"{where} is NaN or Infinity, which JSON cannot represent (confluent-kafka writes null; "
        f"{NAN_AS_NULL_CONF}=True does that)",
        location,
    )
