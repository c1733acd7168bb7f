"""JSON Schema ``$ref`` resolution: the schema itself and its registry references, nothing else.

confluent-kafka resolves a ``$ref`` outside the schema by fetching it over HTTP(S) (guarded to
public addresses) and jsonschema-rs, left to itself, fetches ``http(s)://`` and reads ``file://``
targets. A schema from the registry is chosen by whoever registered it, so by default serdes
resolves a ``$ref`` only against the schema's own document and its registry references
(``Schema.references``, fetched here with bounded depth and count) and refuses every other target
with a :class:`~serdes.SchemaMismatchError`; no request is made and no file is read.

With ``serdes.allow.remote.refs=true`` an ``http(s)://`` target is fetched the way confluent-kafka
fetches it (its guard: public addresses only, no redirects); other schemes stay refused.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Set
from urllib.parse import urlsplit

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.common.json_schema import DEFAULT_SPEC
from referencing import Registry, Resource

from .._confluent import FEATURE_SINCE, guard_external_uri, httpx_module, json_loads, require_release
from .._errors import RemoteRefRefused, SchemaMismatchError
from .._limits import DEFAULT_LIMITS, Limits

__all__ = ["RemoteRefRefused", "remote_retriever", "resolve_references", "guarded_registry"]

#: seconds one opted-in remote ``$ref`` fetch may take
REMOTE_REF_TIMEOUT = 10.0

_json_loads = json_loads()


def remote_refs_supported(limits: Limits) -> None:
    """At construction: ``serdes.allow.remote.refs`` fetches through confluent-kafka's public-address
    guard, which confluent-kafka 2.16 added; on an older release it is refused here
    (:class:`serdes.ConfluentVersionError`) rather than at the first remote ``$ref``."""
    if limits.allow_remote_refs:
        require_release("serdes.allow.remote.refs", FEATURE_SINCE["remote refs"])


def remote_retriever(allow_remote: bool) -> Callable[[str], Any]:
    """The retriever for URIs outside the schema and its references: refuses, or (opted in) fetches
    ``http(s)://`` through confluent-kafka's public-address guard. Returns the parsed document."""

    def retrieve(uri: str) -> Any:
        if not allow_remote or urlsplit(uri).scheme not in ("http", "https"):
            raise RemoteRefRefused(uri, allow_remote)
        httpx = httpx_module()
        try:
            guard_external_uri(uri)
        except ValueError as e:
            raise SchemaMismatchError(f"JSON Schema $ref {uri!r}: {e}") from None
        try:
            response = httpx.get(uri, follow_redirects=False, timeout=REMOTE_REF_TIMEOUT)
            response.raise_for_status()
            return response.json()
        except Exception as e:  # transport error, HTTP error status, not JSON
            raise SchemaMismatchError(f"JSON Schema $ref {uri!r} could not be fetched: {type(e).__name__}: {e}") from None

    return retrieve


def guarded_registry(ref_registry: Optional[Registry], allow_remote: bool) -> Registry:
    """``ref_registry``'s resources in a ``referencing.Registry`` whose retrieval is :func:`remote_retriever`."""
    fetch = remote_retriever(allow_remote)

    def retrieve(uri: str) -> Resource:
        return Resource.from_contents(fetch(uri), default_specification=DEFAULT_SPEC)

    base: Registry = Registry(retrieve=retrieve)  # type: ignore[call-arg]
    if ref_registry is None:
        return base
    return base.with_resources((uri, ref_registry[uri]) for uri in ref_registry)


def refused_uri(exc: BaseException) -> Optional[SchemaMismatchError]:
    """The retrieval error (:class:`RemoteRefRefused`, a refused or failed fetch) somewhere in
    ``exc``'s cause/context chain (the Python validator wraps it in its own errors)."""
    seen = 0
    cur: Optional[BaseException] = exc
    while cur is not None and seen < 32:
        if isinstance(cur, SchemaMismatchError):
            return cur
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None


def resolve_references(schema: Schema, client: Any, limits: Limits = DEFAULT_LIMITS) -> Registry:
    """``schema``'s references, fetched from the registry recursively, as a guarded
    ``referencing.Registry`` named like confluent-kafka names them (``ref.name``).

    confluent-kafka's own resolver recurses without bound and loops forever on a cycle; here a
    reference already being resolved is not fetched again, the chain may be at most
    ``limits.max_schema_depth`` deep and at most ``limits.max_references`` are fetched.
    """
    resources: Dict[str, Resource] = {}
    fetched = 0

    def walk(s: Schema, visiting: Set[str], depth: int) -> None:
        nonlocal fetched
        for ref in s.references or []:
            if ref.subject is None or ref.version is None:
                raise TypeError("Subject or version cannot be None")  # confluent-kafka's error
            if ref.name is None:
                raise TypeError("Name cannot be None")
            if ref.name in resources or ref.name in visiting:
                continue
            if depth >= limits.max_schema_depth:
                raise SchemaMismatchError(
                    f"JSON schema reference {ref.name!r} is nested deeper than serdes.max.schema.depth={limits.max_schema_depth}"
                )
            fetched += 1
            if fetched > limits.max_references:
                raise SchemaMismatchError(
                    f"JSON schema reference {ref.name!r}: the schema pulls more than serdes.max.references="
                    f"{limits.max_references} references from the registry"
                )
            visiting.add(ref.name)
            referenced = client.get_version(ref.subject, ref.version, True)
            walk(referenced.schema, visiting, depth + 1)
            if referenced.schema.schema_str is None:
                raise TypeError("Schema string cannot be None")
            try:
                contents = _json_loads(referenced.schema.schema_str)
            except Exception as e:
                raise SchemaMismatchError(f"JSON schema reference {ref.name!r} is not JSON: {e}") from e
            resources[ref.name] = Resource.from_contents(contents, default_specification=DEFAULT_SPEC)

    if schema.references:
        if client is None:
            raise SchemaMismatchError("the schema has references but there is no registry client")
        walk(schema, set(), 0)
    registry = guarded_registry(None, limits.allow_remote_refs)
    return registry.with_resources(resources.items()) if resources else registry
