"""README/docs examples that need a broker or a registry, run against the real servers."""

from __future__ import annotations

import uuid

import pytest

from tests.support.kafka_io import drain
from tests.unit.test_docs_examples import python_blocks, run_block

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("code", python_blocks(needs_servers=True))
def test_doc_example_runs_against_servers(code, kafka_bootstrap, registry_url, monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP", kafka_bootstrap)
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", registry_url)
    topic = f"docs-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("TOPIC", topic)
    out = run_block(code)
    if "print(seen)" in code:  # the README quick start consumes what it produced
        assert "user-0" in out and "user-2" in out
    if "protobuf keyed orders" in code:  # docs/flink.md's Protobuf keyed job prints what it wrote
        assert out.strip().splitlines()[-1] == (
            "[('c0', 1, 100), ('c0', 2, 202), ('c0', 3, 306), ('c1', 1, 101), ('c1', 2, 204), ('c1', 3, 309)]")
    if "write_dead_letters" in code:  # the Flink jobs: 6 running totals, 1 dead letter
        assert len(drain(kafka_bootstrap, topic + "-totals", 6)) == 6
        assert len(drain(kafka_bootstrap, topic + "-dlq", 1)) == 1

