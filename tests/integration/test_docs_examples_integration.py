"""README/docs examples that need a broker or a registry, run against the real servers."""

from __future__ import annotations

import uuid

import pytest

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
    if "write_dead_letters" in code:  # the Flink quick start: 6 running totals, 1 dead letter
        totals = _consume(kafka_bootstrap, topic + "-totals", 6)
        assert len(totals) == 6
        assert len(_consume(kafka_bootstrap, topic + "-dlq", 1)) == 1


def _consume(bootstrap, topic, count):
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    out = []
    try:
        for _ in range(60):
            msg = consumer.poll(1)
            if msg is not None and not msg.error():
                out.append(msg.value())
            if len(out) >= count:
                # a moment more: anything beyond `count` would be a duplicate
                extra = consumer.poll(2)
                if extra is not None and not extra.error():
                    out.append(extra.value())
                break
    finally:
        consumer.close()
    return out
