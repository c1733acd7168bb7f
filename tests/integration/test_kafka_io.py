"""The suite's consume helper (``tests.support.kafka_io.drain``) on the real broker: with
``finished=True`` it reads every partition to its end, so a record beyond the expected count is
returned (the duplicate checks of the Flink tests rely on it), and it returns at the end of a
topic written in transactions too, where the commit markers take offsets. The idle and timeout
limits are set far beyond the test's own timeout: a drain that did not stop at the end fails here."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.kafka_io import drain

pytestmark = pytest.mark.timeout(120)
NEVER = 3600.0


def _topic(bootstrap: str, name: str, partitions: int) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    return name


def test_finished_drain_returns_the_records_beyond_expected(kafka_bootstrap: str, unique_name: str) -> None:
    topic = _topic(kafka_bootstrap, unique_name, 3)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(7):
        producer.produce(topic, value=b"%d" % i, partition=i % 3)
    assert producer.flush(30) == 0
    got = drain(kafka_bootstrap, topic, 5, finished=True, idle=NEVER, timeout=NEVER)
    assert sorted(int(m.value()) for m in got) == list(range(7))


def test_finished_drain_of_an_empty_topic_returns_nothing(kafka_bootstrap: str, unique_name: str) -> None:
    topic = _topic(kafka_bootstrap, unique_name, 2)
    assert drain(kafka_bootstrap, topic, 0, finished=True, idle=NEVER, timeout=NEVER) == []


def test_finished_drain_reads_committed_transactions_to_their_end(kafka_bootstrap: str, unique_name: str) -> None:
    topic = _topic(kafka_bootstrap, unique_name, 2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": unique_name})
    producer.init_transactions(30)
    for batch in range(2):
        producer.begin_transaction()
        for i in range(4):
            producer.produce(topic, value=b"%d" % (batch * 4 + i), partition=i % 2)
        producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"aborted", partition=0)
    producer.abort_transaction(30)
    got = drain(kafka_bootstrap, topic, 8, finished=True, idle=NEVER, timeout=NEVER, isolation="read_committed")
    assert sorted(int(m.value()) for m in got) == list(range(8))
