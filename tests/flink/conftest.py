"""Fixtures for the PyFlink tests: topics, a producer and a draining consumer (tests.support.kafka_io).

Server fixtures (``kafka_bootstrap``, ``registry_url``) come from ``serdes.testing.pytest_plugin``.
Every test here that runs a job is marked ``flink`` and ``integration``.
"""

from __future__ import annotations

import uuid
from typing import Callable, List

import pytest

from tests.support.kafka_io import drain

pytest.importorskip("pyflink")


@pytest.fixture
def new_topic(kafka_bootstrap) -> Callable[..., str]:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})

    def make(prefix: str = "t", partitions: int = 1) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        fut = admin.create_topics([NewTopic(name, partitions, 1)])[name]
        fut.result(30)
        return name

    return make


@pytest.fixture
def produce(kafka_bootstrap) -> Callable[..., None]:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})

    def send(topic: str, records, partition: int | None = None) -> None:
        for rec in records:
            key, value, headers = rec if len(rec) == 3 else (rec[0], rec[1], None)
            kw = {} if partition is None else {"partition": partition}
            p.produce(topic, value=value, key=key, headers=headers, **kw)
        assert p.flush(30) == 0

    return send


@pytest.fixture
def consume(kafka_bootstrap) -> Callable[..., List]:
    """``consume(topic, expected, timeout=60, idle=3, finished=True)``: every record of ``topic``
    (``kafka_io.drain``). ``finished``: the job that writes ``topic`` has ended, so the topic is read
    to its end instead of waiting ``idle`` seconds for late records; a job still running passes False."""

    def read(topic: str, expected: int, timeout: float = 60.0, idle: float = 3.0, finished: bool = True) -> List:
        return drain(kafka_bootstrap, topic, expected, timeout=timeout, idle=idle, finished=finished)

    return read
