"""The standalone-cluster tests' job and its driver: produce Avro orders, submit
``tests/cluster/jobs/keyed_totals.py`` with ``flink run --python``, read back its exactly-once totals.

No PyFlink import here: the job runs in the cluster's processes, this side only talks to Kafka.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

from tests.support.kafka_io import drain
from tests.support.registry_client import registry_client

#: the job file; its directory is shipped with ``--pyFiles``
JOB = Path(__file__).resolve().parents[1] / "cluster" / "jobs" / "keyed_totals.py"
CUSTOMERS = 8


@dataclass
class Orders:
    """Avro orders produced to a 4-partition topic (key = customer), and what the job must emit."""

    bootstrap: str
    registry: str
    topic: str
    sent: List[dict] = field(default_factory=list)
    _serializer: object = None

    def produce(self, n: int, serializer=None) -> List[Tuple[int, int]]:
        """Produce ``n`` more orders; returns their (partition, offset)."""
        from confluent_kafka import Producer
        from confluent_kafka.serialization import MessageField, SerializationContext

        from serdes.avro import AvroSerializer
        from serdes.demo.__main__ import ORDER_AVRO

        if serializer is None:
            if self._serializer is None:   # one serializer: its schema id stays cached
                self._serializer = AvroSerializer(registry_client(self.registry), ORDER_AVRO)
            serializer = self._serializer
        ser = serializer
        ctx = SerializationContext(self.topic, MessageField.VALUE)
        coords: List[Tuple[int, int]] = []

        def delivered(err, msg):
            assert err is None, err
            coords.append((msg.partition(), msg.offset()))

        p = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        for _ in range(n):
            i = len(self.sent)
            order = {"order_id": f"o-{i}", "customer": f"c{i % CUSTOMERS}", "amount_cents": 100 + i,
                     "currency": "EUR"}
            p.produce(self.topic, key=order["customer"].encode(), value=ser(order, ctx), on_delivery=delivered)
            self.sent.append(order)
        assert p.flush(60) == 0
        return coords

    def expected_totals(self) -> List[Tuple[str, int, int]]:
        """(customer, count, total) after each order: Kafka keeps one customer's orders in order."""
        running: Dict[str, Tuple[int, int]] = defaultdict(lambda: (0, 0))
        out = []
        for o in self.sent:
            count, total = running[o["customer"]]
            running[o["customer"]] = (count + 1, total + o["amount_cents"])
            out.append((o["customer"], count + 1, total + o["amount_cents"]))
        return sorted(out)


def submit_totals(cluster, jars, bootstrap, registry_conf: dict, in_topic, out_topic, group, **options) -> str:
    """``flink run --python keyed_totals.py ...`` on ``cluster``; returns the job id."""
    args = ["--bootstrap", bootstrap, "--registry", json.dumps(registry_conf), "--input", in_topic,
            "--output", out_topic, "--group", group]
    savepoint = options.pop("savepoint", None)
    cluster.wait_for_free_slots(int(options.get("parallelism", 4)))
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return cluster.submit(JOB, args, jars=jars, py_files=[JOB.parent], savepoint=savepoint)


def read_totals(bootstrap, registry, topic, expected: int, timeout: float = 120.0, idle: float = 3.0):
    """Every committed record of ``topic`` (read_committed) as sorted (customer, count, total)."""
    from confluent_kafka.serialization import MessageField, SerializationContext

    from serdes.demo.orders_pb2 import CustomerTotal
    from serdes.protobuf import ProtobufDeserializer

    de = ProtobufDeserializer(CustomerTotal, {"use.deprecated.format": False},
                              schema_registry_client=registry_client(registry))
    ctx = SerializationContext(topic, MessageField.VALUE)
    msgs = drain(bootstrap, topic, expected, timeout=timeout, idle=idle, isolation="read_committed")
    return sorted((t.customer, t.count, t.total_cents) for t in (de(m.value(), ctx) for m in msgs))


def wait_for_committed(bootstrap, topic, at_least: int, timeout: float = 120.0) -> None:
    """Block until ``topic`` holds ``at_least`` committed records."""
    n = len(drain(bootstrap, topic, at_least, timeout=timeout, idle=0.0, isolation="read_committed", group="wait"))
    assert n >= at_least, f"only {n}/{at_least} committed records on {topic}"
