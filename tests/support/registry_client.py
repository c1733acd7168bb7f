"""confluent-kafka's ``SchemaRegistryClient`` for the tests, with a finite request timeout.

confluent-kafka's default ``timeout`` is None: httpx then waits on the socket forever. Under CI
load the local Apicurio Registry has left a request unanswered (twice, both the 404 it gives
confluent-kafka 2.14+'s ``get_associations_by_resource_name`` during the subject-name lookup),
and the test hung until pytest-timeout killed it. With a timeout the client's own retries
(``max.retries``, 3 by default) send the request again on a new connection.
"""

from __future__ import annotations

from typing import Any, Dict

from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, SchemaRegistryClient

__all__ = ["REQUEST_TIMEOUT_S", "async_registry_client", "registry_client", "with_request_timeout"]

# long enough for a loaded 2-core machine (a normal answer takes milliseconds), short enough that
# four tries fit in the shortest per-test timeout (300 s)
REQUEST_TIMEOUT_S = 30


def with_request_timeout(conf: Dict[str, Any]) -> Dict[str, Any]:
    """``conf`` with the tests' request timeout, unless it sets one of its own."""
    return {"timeout": REQUEST_TIMEOUT_S, **conf}


def registry_client(url: str, **conf: Any) -> SchemaRegistryClient:
    """A client for the registry at ``url``; ``conf`` adds or overrides client settings."""
    return SchemaRegistryClient(with_request_timeout({"url": url, **conf}))


def async_registry_client(url: str, **conf: Any) -> AsyncSchemaRegistryClient:
    """The async client for the registry at ``url``, with the same timeout."""
    return AsyncSchemaRegistryClient(with_request_timeout({"url": url, **conf}))
