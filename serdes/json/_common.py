"""Pieces shared by the JSON serializer and deserializer."""

from __future__ import annotations

from typing import Any, Optional

from confluent_kafka.schema_registry import Schema

from .._cache import bounded_store
from .._confluent import json_loads, json_validators, parsed_schema_cache, registry_of
from .._limits import DEFAULT_LIMITS, Limits
from ._refs import resolve_references
from ._validator import CompiledValidator, compile_validator

__all__ = ["ValidatorCacheMixin"]

_json_loads = json_loads()


class ValidatorCacheMixin:
    """Replaces confluent-kafka's ``_get_validator``: a :class:`CompiledValidator` per schema.

    confluent-kafka's own call path (first record of a subject, rule-carrying schemas) asks
    ``self._get_validator(...)`` and calls ``.validate(value)`` on the result; ours raises
    :class:`serdes.ValidationError` (a ``SerializationError``) instead of ``jsonschema``'s error, so
    both paths validate with the same compiled validator and fail with the same error type.
    """

    _validator_backend: Optional[str] = None
    #: serdes.* limits from the conf (set before confluent-kafka's constructor runs)
    _limits: Limits = DEFAULT_LIMITS

    def _get_parsed_schema(self, schema: Optional[Schema]) -> Any:
        """confluent-kafka's ``_get_parsed_schema`` with serdes' reference resolution: bounded
        depth/count, cycles followed once, and a ``referencing.Registry`` that never fetches a
        ``$ref`` outside the schema and its references unless ``serdes.allow.remote.refs``."""
        if schema is None:
            return None, None
        cache = parsed_schema_cache(self)
        result = cache.get_parsed_schema(schema)
        if result is not None:
            return result
        ref_registry = resolve_references(schema, registry_of(self), self._limits)
        if schema.schema_str is None:
            raise TypeError("Schema string cannot be None")
        parsed = _json_loads(schema.schema_str)
        cache.set(schema, (parsed, ref_registry))
        return parsed, ref_registry

    # -> Any, not CompiledValidator: confluent-kafka declares jsonschema's Validator here, which a
    # CompiledValidator is not (it has only the .validate its callers use)
    def _get_validator(self, schema: Schema, parsed_schema: Any, registry: Any) -> Any:
        key = schema if schema is not None else id(parsed_schema)
        validators, lock = json_validators(self)
        with lock:
            v: Optional[CompiledValidator] = validators.get(key, None)
        if v is not None:
            return v
        v = compile_validator(parsed_schema, registry, self._validator_backend, self._limits)
        with lock:
            bounded_store(validators, key, v, self._limits.cache_size)
        return v
