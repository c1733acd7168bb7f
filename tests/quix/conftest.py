"""Fixtures of the serdes.quix tests (scripts/test-matrix.sh's ``quix`` leg installs quixstreams).

Outside that leg quixstreams is absent and each test module skips, saying so (``QUIX_REASON``).
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, Iterator, NamedTuple

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

QUIX_REASON = "serdes.quix's tests need quixstreams (scripts/test-matrix.sh quix)"


class MockRegistry(NamedTuple):
    url: str
    client: Any  # the shared MockSchemaRegistryClient, for writing with confluent-kafka's serializers


@pytest.fixture
def mock_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockRegistry]:
    """A mock:// registry URL that every ``SchemaRegistryClient(config)`` of quixstreams' serializers
    and of serdes.quix resolves to one shared in-memory registry.

    quixstreams builds its client with ``SchemaRegistryClient(config)``, which (confluent-kafka 2.12)
    speaks HTTP even to a mock:// URL; the mock comes from ``SchemaRegistryClient.new_client``,
    which builds a new, empty one per call, so one per URL is kept here.
    """
    import quixstreams.models.serializers.avro as quix_avro
    import quixstreams.models.serializers.json as quix_json
    import quixstreams.models.serializers.protobuf as quix_protobuf

    import serdes.quix

    clients: Dict[str, Any] = {}

    def client(conf: Dict[str, Any]) -> Any:
        url = conf["url"]
        if url not in clients:
            clients[url] = SchemaRegistryClient.new_client({"url": url})
        return clients[url]

    for module in (quix_avro, quix_json, quix_protobuf, serdes.quix):
        monkeypatch.setattr(module, "SchemaRegistryClient", client)
    url = f"mock://quix-{uuid.uuid4().hex}"
    yield MockRegistry(url, client({"url": url}))
