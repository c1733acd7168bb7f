"""README/docs examples that need a broker or a registry (or start servers), run against the real servers.

Each runs with no ``TOPIC`` or other variable besides the two addresses and must print the ```text
block under it. An example that uses the shared servers runs twice in a row, as a newcomer would
rerun it, so one that reuses a topic, a consumer group's offsets or a subject from its previous
run fails here; one that starts servers or a cluster of its own (``local_servers(``,
``LocalFlinkCluster(``) starts from nothing each time and runs once (a second run costs minutes
and could only fail the way the first does).
"""

from __future__ import annotations

from typing import Any, Dict

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from tests.support.registry_client import with_request_timeout
from tests.unit.test_docs_examples import Example, assert_prints_what_it_shows, example_params

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("example", example_params(needs_servers=True))
def test_doc_example_prints_what_it_shows_twice(
    example: Example, kafka_bootstrap: str, registry_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the examples' registry clients get the test clients' request timeout (the examples run as
    # written; confluent-kafka's default waits forever, and under CI load the local Apicurio has
    # left a request unanswered: tests/support/registry_client.py). Its retries then resend it.
    plain_init = SchemaRegistryClient.__init__

    def with_timeout(self: SchemaRegistryClient, conf: Dict[str, Any], *args: Any, **kwargs: Any) -> None:
        plain_init(self, with_request_timeout(conf), *args, **kwargs)

    monkeypatch.setattr(SchemaRegistryClient, "__init__", with_timeout)
    monkeypatch.setenv("KAFKA_BOOTSTRAP", kafka_bootstrap)
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", registry_url)
    monkeypatch.delenv("TOPIC", raising=False)
    own_servers = any(k in example.code for k in ("local_servers(", "LocalFlinkCluster("))
    for _ in range(1 if own_servers else 2):
        assert_prints_what_it_shows(example)
