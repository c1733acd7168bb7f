"""serdes.arrow on the real broker and registry: 100,000 records of a topic whose schema evolves
twice, consumed with poll_arrow into one table, resolved to the latest registered schema and
queried with DuckDB."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, List

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import _native
from serdes.arrow import poll_arrow
from serdes.avro import AvroDeserializer, AvroSerializer
from tests.support.registry_client import registry_client

pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")  # the test extra installs it; CI runs this test

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

N = 100_000
V1 = {"type": "record", "name": "Reading", "namespace": "arrow.it", "fields": [
    {"name": "id", "type": "long"}, {"name": "sensor", "type": "string"}, {"name": "legacy", "type": "int"}]}
V2 = {"type": "record", "name": "Reading", "namespace": "arrow.it", "fields": [
    {"name": "id", "type": "long"}, {"name": "sensor", "type": "string"},
    {"name": "unit", "type": ["null", "string"], "default": None}]}
V3 = {"type": "record", "name": "Reading", "namespace": "arrow.it", "fields": [
    {"name": "id", "type": "long"}, {"name": "sensor", "type": "string"},
    {"name": "unit", "type": ["null", "string"], "default": None},
    {"name": "value", "type": "double", "default": -1.0}]}
VERSIONS = (V1, V2, V3)


def _produce(bootstrap: str, registry_url: str, topic: str) -> None:
    client = registry_client(registry_url)
    ctx = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    per_version = -(-N // len(VERSIONS))
    for v, schema in enumerate(VERSIONS):
        ser = AvroSerializer(client, json.dumps(schema))
        rows = [{"id": i, "sensor": f"s{i % 7}", "legacy": 1, "unit": "C", "value": i / 10}
                for i in range(v * per_version, min(N, (v + 1) * per_version))]
        frames = ser.serialize_batch([{f["name"]: r[f["name"]] for f in schema["fields"]} for r in rows], ctx)
        for frame in frames:
            producer.produce(topic, value=frame)
            producer.poll(0)
    assert producer.flush(120) == 0


def test_evolving_topic_into_one_table_queried_with_duckdb(kafka_bootstrap: str, registry_url: str,
                                                           unique_name: str) -> None:
    _produce(kafka_bootstrap, registry_url, unique_name)
    deser = AvroDeserializer(registry_client(registry_url))
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"arrow-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([unique_name])
    batches: List[Any] = []
    rows = 0
    deadline = time.monotonic() + 300
    try:
        while rows < N and time.monotonic() < deadline:
            batch = poll_arrow(consumer, deser, max_messages=20_000, timeout=1.0)
            assert batch.errors == []
            if batch.num_rows:
                batches.append(pa.record_batch(batch))
                rows += batch.num_rows
    finally:
        consumer.close()
    readings = pa.Table.from_batches(batches)
    assert readings.num_rows == N
    if _native.active() is not None:
        # the native columnar decoder took every poll (one decoder: the latest schema's)
        (native,) = deser.__dict__["_arrow_native"].values()
        assert native.taken >= 1 and native.declined == 0
    # one schema for every version: the latest registered (V3), older records with its defaults
    assert readings.column_names == ["id", "sensor", "unit", "value", "topic", "partition", "offset", "timestamp"]
    got = duckdb.sql(
        "select count(*), count(distinct id), sum(case when unit is null then 1 else 0 end), "
        "sum(case when value = -1.0 then 1 else 0 end), count(distinct sensor) from readings").fetchall()[0]
    per_version = -(-N // 3)
    assert got == (N, N, per_version, 2 * per_version, 7)
    ids = duckdb.sql("select min(id), max(id) from readings where value >= 0").fetchall()[0]
    assert ids == (2 * per_version, N - 1)
