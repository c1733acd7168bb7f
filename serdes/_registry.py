"""Schema Registry access for the slow path: fetch schemas, map registry failures to typed errors.

serdes builds on ``confluent_kafka.schema_registry.SchemaRegistryClient`` (auth, TLS, retries and
``mock://`` come with it). The client's own caches take a lock per lookup; serdes calls it only on
a cache miss of its per-schema decoder/encoder caches, so after the first record of a schema the
hot path never reaches this module.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple, Type, TypeVar

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from ._errors import RecordLocation, RegistryUnavailableError, SchemaMismatchError, SerdesError, UnknownSchemaError
from ._wire import SchemaRef

__all__ = [
    "fetch_writer_schema",
    "registry_call",
    "TRANSPORT_ERRORS",
    "SchemaRegistryClient",
]


def _transport_errors() -> Tuple[Type[BaseException], ...]:
    errors: List[Type[BaseException]] = [OSError, TimeoutError]
    try:  # confluent-kafka >= 2.12 talks HTTP through httpx (or its successor httpx2)
        from confluent_kafka.schema_registry.common._httpx_compat import httpx

        errors.append(httpx.TransportError)
    except Exception:  # pragma: no cover - older confluent-kafka
        pass
    try:
        import requests

        errors.append(requests.exceptions.RequestException)
    except Exception:  # pragma: no cover
        pass
    return tuple(errors)


TRANSPORT_ERRORS: Tuple[Type[BaseException], ...] = _transport_errors()

T = TypeVar("T")


def registry_call(
    what: str,
    fn: Callable[[], T],
    location: Optional[RecordLocation] = None,
    schema_id: Any = None,
) -> T:
    """Run one registry request and type its failures.

    404 -> :class:`UnknownSchemaError`; 409 (incompatible) and 422 (invalid schema) ->
    :class:`SchemaMismatchError`; unreachable or 5xx -> :class:`RegistryUnavailableError`.
    """
    try:
        return fn()
    except SerdesError:
        raise
    except SchemaRegistryError as e:
        if e.http_status_code == 404:
            raise UnknownSchemaError(f"{what}: registry has no such schema ({e.error_message})", location, schema_id) from e
        if e.http_status_code in (409, 422):
            # 409: incompatible with the subject's compatibility rule; 422: not a valid schema
            raise SchemaMismatchError(f"{what}: registry rejected the schema ({e})", location, schema_id) from e
        if e.http_status_code in (-1, 0) or e.http_status_code >= 500:
            raise RegistryUnavailableError(f"{what}: registry failed ({e})", location, schema_id) from e
        raise
    except TRANSPORT_ERRORS as e:
        raise RegistryUnavailableError(
            f"{what}: schema registry unreachable ({type(e).__name__}: {e})", location, schema_id
        ) from e


def fetch_writer_schema(
    registry: SchemaRegistryClient,
    schema_id: SchemaRef,
    subject: Optional[str] = None,
    fmt: Optional[str] = None,
    location: Optional[RecordLocation] = None,
) -> Schema:
    """The schema a record was written with, by int id or GUID."""
    if isinstance(schema_id, int):
        return registry_call(
            f"fetching schema id {schema_id}",
            lambda: registry.get_schema(schema_id, subject, fmt),
            location,
            schema_id,
        )
    return registry_call(
        f"fetching schema GUID {schema_id}",
        lambda: registry.get_schema_by_guid(str(schema_id), fmt),
        location,
        schema_id,
    )
