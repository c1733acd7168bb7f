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

from ._confluent import failed_response, httpx_module
from ._errors import (
    RecordLocation,
    RegistryAuthError,
    RegistryBadResponseError,
    RegistryRateLimitedError,
    RegistryUnavailableError,
    SchemaMismatchError,
    SerdesError,
    UnknownSchemaError,
)
from ._wire import SchemaRef

__all__ = [
    "fetch_writer_schema",
    "registry_call",
    "classify_registry_error",
    "checked_schema",
    "TRANSPORT_ERRORS",
    "SchemaRegistryClient",
]


def _transport_errors() -> Tuple[Type[BaseException], ...]:
    errors: List[Type[BaseException]] = [OSError, TimeoutError]
    # confluent-kafka talks HTTP through httpx (or its successor): missing, it is a ConfluentAPIError,
    # never a silently shorter list (transport failures would then be mis-typed)
    errors.append(httpx_module().TransportError)
    try:
        import requests

        errors.append(requests.exceptions.RequestException)
    except Exception:  # pragma: no cover
        pass
    return tuple(errors)


TRANSPORT_ERRORS: Tuple[Type[BaseException], ...] = _transport_errors()

T = TypeVar("T")


# Errors a registry client call raises while reading the registry's answer: a 200 with an HTML
# page (json.JSONDecodeError is a ValueError), a JSON body of the wrong shape (TypeError,
# AttributeError, KeyError from RegisteredSchema.from_dict). Only ever caught around a call that
# does nothing but talk to the registry, so they cannot come from a record.
_ANSWER_ERRORS: Tuple[Type[BaseException], ...] = (ValueError, TypeError, AttributeError, KeyError)


def classify_registry_error(
    what: str,
    e: BaseException,
    location: Optional[RecordLocation] = None,
    schema_id: Any = None,
) -> Optional[SerdesError]:
    """The typed error for a failure that can only come from the registry, else ``None``.

    HTTP 404 with a Schema Registry error code (40400-40499: no such subject, version or schema)
    -> :class:`UnknownSchemaError`; a 404 without one (the URL is not a Schema Registry API: a
    wrong base URL) -> :class:`RegistryBadResponseError` naming the URL and the answer; 409 (incompatible) and 422 (invalid schema) ->
    :class:`SchemaMismatchError`; 401/403 -> :class:`RegistryAuthError`; 429 ->
    :class:`RegistryRateLimitedError`; unreachable, timeout, 408 or 5xx ->
    :class:`RegistryUnavailableError`; any other status -> :class:`RegistryBadResponseError`.
    Used as is around confluent-kafka calls that also encode or decode (delegated records),
    where a ``ValueError`` may be the record's.
    """
    if isinstance(e, SchemaRegistryError):
        status = e.http_status_code
        if status == 404:
            if _is_schema_registry_404(e.error_code):
                return UnknownSchemaError(f"{what}: registry has no such schema ({e.error_message})", location, schema_id)
            return RegistryBadResponseError(_not_a_registry_api(what, e), location, schema_id, status)
        if status in (409, 422):
            # 409: incompatible with the subject's compatibility rule; 422: not a valid schema
            return SchemaMismatchError(f"{what}: registry rejected the schema ({e})", location, schema_id)
        if status in (401, 403):
            word = "unauthorized (bad or missing credentials)" if status == 401 else "forbidden (credentials lack permission)"
            return RegistryAuthError(f"{what}: registry answered HTTP {status} {word}: {e.error_message}",
                                     location, schema_id, status)
        if status == 429:
            return RegistryRateLimitedError(f"{what}: registry rate limit (HTTP 429) outlasted the client's retries",
                                            location, schema_id, status)
        if status in (-1, 0, 408) or status >= 500:
            return RegistryUnavailableError(f"{what}: registry failed ({e})", location, schema_id,
                                            status if status > 0 else None)
        return RegistryBadResponseError(f"{what}: registry answered HTTP {status}, not a Schema Registry answer ({e})",
                                        location, schema_id, status)
    if isinstance(e, TRANSPORT_ERRORS):
        return RegistryUnavailableError(
            f"{what}: schema registry unreachable ({type(e).__name__}: {e})", location, schema_id
        )
    return None


def _is_schema_registry_404(error_code: Any) -> bool:
    """A Schema Registry's own 404 (``error_code`` 40401 subject, 40402 version, 40403 schema, ...;
    confluent-kafka's mock answers 40400), as opposed to a web server's "no such path"."""
    return isinstance(error_code, int) and 40400 <= error_code <= 40499


def _not_a_registry_api(what: str, e: BaseException) -> str:
    answer = failed_response(e)
    where = f"{answer[0]} answered" if answer is not None else "the registry answered"
    said = f": {answer[1]!r}" if answer is not None and answer[1] else ""
    return (f"{what}: {where} HTTP 404 without a Schema Registry error code, so the URL is not a Schema "
            f"Registry API; check the client's base url (Apicurio Registry serves the Confluent API under "
            f"/apis/ccompat/v7){said}")


def registry_call(
    what: str,
    fn: Callable[[], T],
    location: Optional[RecordLocation] = None,
    schema_id: Any = None,
) -> T:
    """Run one registry request (``fn`` must do nothing else) and type its failures.

    Every failure becomes a typed error: see :func:`classify_registry_error`; an answer the client
    cannot read (HTML, wrong JSON shape) -> :class:`RegistryBadResponseError`. A ``SerdesError``
    raised inside ``fn`` passes through unchanged.
    """
    try:
        return fn()
    except SerdesError:
        raise
    except Exception as e:
        typed = classify_registry_error(what, e, location, schema_id)
        if typed is not None:
            raise typed from e
        if isinstance(e, _ANSWER_ERRORS):
            raise RegistryBadResponseError(
                f"{what}: registry answer is not a Schema Registry answer ({type(e).__name__}: {e})",
                location, schema_id,
            ) from e
        raise


def checked_schema(what: str, schema: Any, location: Optional[RecordLocation], schema_id: Any) -> Schema:
    """``schema`` if it is a usable registry schema (a ``schema`` string), else
    :class:`RegistryBadResponseError` (a 200 answer without ``schema``)."""
    if not isinstance(schema, Schema) or not isinstance(schema.schema_str, str):
        raise RegistryBadResponseError(f"{what}: registry answer has no schema string", location, schema_id)
    return schema


def fetch_writer_schema(
    registry: SchemaRegistryClient,
    schema_id: SchemaRef,
    subject: Optional[str] = None,
    fmt: Optional[str] = None,
    location: Optional[RecordLocation] = None,
) -> Schema:
    """The schema a record was written with, by int id or GUID."""
    if isinstance(schema_id, int):
        what = f"fetching schema id {schema_id}"
        got = registry_call(what, lambda: registry.get_schema(schema_id, subject, fmt), location, schema_id)
    else:
        what = f"fetching schema GUID {schema_id}"
        got = registry_call(what, lambda: registry.get_schema_by_guid(str(schema_id), fmt), location, schema_id)
    return checked_schema(what, got, location, schema_id)
