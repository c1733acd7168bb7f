"""Pieces shared by the JSON serializer and deserializer."""

from __future__ import annotations

import threading
from typing import Any, Optional

from confluent_kafka.schema_registry import Schema

from ._validator import CompiledValidator, compile_validator

__all__ = ["ValidatorCacheMixin"]


class ValidatorCacheMixin:
    """Replaces confluent-kafka's ``_get_validator``: a :class:`CompiledValidator` per schema.

    confluent-kafka's own call path (first record of a subject, rule-carrying schemas) asks
    ``self._get_validator(...)`` and calls ``.validate(value)`` on the result; ours raises
    :class:`serdes.ValidationError` (a ``SerializationError``) instead of ``jsonschema``'s error, so
    both paths validate with the same compiled validator and fail with the same error type.
    """

    _validators: Any
    _validators_lock: threading.Lock
    _validator_backend: Optional[str] = None

    def _get_validator(self, schema: Schema, parsed_schema: Any, registry: Any) -> CompiledValidator:  # type: ignore[override]
        key = schema if schema is not None else id(parsed_schema)
        with self._validators_lock:
            v = self._validators.get(key, None)
        if v is not None:
            return v
        v = compile_validator(parsed_schema, registry, self._validator_backend)
        with self._validators_lock:
            self._validators[key] = v
        return v
