"""Exactly-once Kafka -> Flink -> Kafka with serdes.flink.write_kafka: checkpointing, a
transactional KafkaSink, a function that fails once mid-stream, a fixed-delay restart; a
read_committed consumer sees every output record exactly once."""

from __future__ import annotations

import os
import sys
import uuid

import cloudpickle
import pytest
from pyflink.datastream import MapFunction
from pyflink.datastream.connectors.base import DeliveryGuarantee

from serdes import flink as sf

from tests.support.kafka_io import drain

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = [pytest.mark.flink, pytest.mark.integration, pytest.mark.timeout(300)]

N = 40
FAIL_AT = 30


class FailOnce(MapFunction):
    """Doubles the value; raises on FAIL_AT the first time only (marker file)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def map(self, row):
        i = int(row[5])
        if i == FAIL_AT and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError(f"injected failure at {i}")
        return i * 2


def text_serializer(client):
    return _encode_text


def _encode_text(value, ctx):
    return str(value).encode()


def read_all(bootstrap, topic, expected, isolation, timeout=90.0, idle=3.0):
    """The int values of every record of ``topic`` read with ``isolation``."""
    return [int(m.value()) for m in drain(bootstrap, topic, expected, timeout=timeout, idle=idle,
                                           isolation=isolation, group="eo")]


def test_exactly_once_with_a_failure(kafka_bootstrap, new_topic, produce, tmp_path):
    in_topic, out_topic = new_topic("eo-in"), new_topic("eo-out")
    marker = str(tmp_path / "failed-once")
    env = sf.create_env(config={
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "3",
        "restart-strategy.fixed-delay.delay": "1 s",
        "python.fn-execution.bundle.size": "5",     # records reach the open transaction before the failure
    })
    env.enable_checkpointing(500)
    rows = sf.read_records(env, kafka_bootstrap, in_topic)
    doubled = rows.map(FailOnce(marker))
    sf.write_kafka(doubled, kafka_bootstrap, out_topic, sf.custom("json", "ser", text_serializer),
                   delivery_guarantee=DeliveryGuarantee.EXACTLY_ONCE,
                   transactional_id_prefix=f"serdes-eo-{uuid.uuid4().hex[:8]}",
                   properties={"transaction.timeout.ms": "60000"})
    job = env.execute_async("exactly-once")
    try:
        produce(in_topic, [(None, str(i).encode()) for i in range(FAIL_AT - 10)])
        first = read_all(kafka_bootstrap, out_topic, FAIL_AT - 10, "read_committed", idle=0.5)
        assert sorted(first) == [i * 2 for i in range(FAIL_AT - 10)]    # committed by a checkpoint
        produce(in_topic, [(None, str(i).encode()) for i in range(FAIL_AT - 10, N)])
        committed = read_all(kafka_bootstrap, out_topic, N, "read_committed")
    finally:
        job.cancel().result()
    assert os.path.exists(marker), "the injected failure did not happen"
    assert sorted(committed) == [i * 2 for i in range(N)]              # no loss, no duplicates
    uncommitted = read_all(kafka_bootstrap, out_topic, N, "read_uncommitted", timeout=20, idle=1.0)
    print(f"read_uncommitted sees {len(uncommitted)} records (aborted transaction included)")
    assert len(uncommitted) > N    # the failure aborted a transaction holding some records
