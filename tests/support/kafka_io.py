"""Produce and drain helpers shared by the integration, Flink and cluster tests (real broker): the one
consume loop of the suite."""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable, Iterable, List, Optional, Set, Tuple

from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka.serialization import MessageField, SerializationContext


def produce_values(
    bootstrap: str,
    topic: str,
    values: Iterable[Any],
    serialize: Callable[[Any, SerializationContext], Optional[bytes]],
    *,
    header_framing: bool = False,
    start: int = 0,
) -> None:
    """Serialize each value for ``topic`` and produce it with key ``str(index)``; fail if any is not delivered.

    With ``header_framing`` the serializer's context carries a header list that is sent with the record.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(values, start):
        headers: list = []
        ctx = SerializationContext(topic, MessageField.VALUE, headers if header_framing else None)
        producer.produce(topic, key=str(i).encode(), value=serialize(value, ctx), headers=headers or None)
    assert producer.flush(60) == 0, "records not delivered"


def drain(bootstrap: str, topic: str, expected: int, *, timeout: float = 90.0, idle: float = 2.0,
          finished: bool = False, isolation: str = "read_uncommitted", group: Optional[str] = None) -> List[Message]:
    """Every record of ``topic`` from the beginning, or what arrived by ``timeout``.

    ``finished=True`` says every writer of ``topic`` is done (a bounded job returned, a producer was
    flushed): the call returns once ``expected`` records arrived and every partition has been read
    to its end, so a record beyond ``expected`` (a duplicate) is still in the result, with no wait.
    Otherwise (a job still writing) it returns ``idle`` seconds after the last record once
    ``expected`` arrived, and so also where the topic was never created. A consumer error fails the
    call, except "unknown topic" while a job's sink has not created ``topic`` yet."""
    assigned: Set[int] = set()
    at_end: Set[int] = set()    # partitions read to their end since their last record
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"{group or 'verify'}-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "enable.partition.eof": finished,
        "isolation.level": isolation,
    })
    consumer.subscribe([topic], on_assign=lambda _, parts: assigned.update(p.partition for p in parts))
    out: List[Message] = []
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    try:
        while time.monotonic() < deadline:
            if finished and len(out) >= expected and assigned and assigned <= at_end:
                break
            msg = consumer.poll(0.5)
            if msg is None:
                if len(out) >= expected and time.monotonic() - last > idle:
                    break
                continue
            err = msg.error()
            if err is not None and err.code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition())
                continue
            if err is not None and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue
            assert err is None, err
            out.append(msg)
            at_end.discard(msg.partition())
            last = time.monotonic()
    finally:
        consumer.close()
    return out


def consume_keyed(bootstrap: str, topic: str, expected: int,
                  deserialize: Callable[[bytes, SerializationContext], Any],
                  group: Optional[str] = None) -> List[Tuple[int, Any]]:
    """``(key, decoded value)`` of every record of ``topic`` (keys as ``produce_values`` wrote them),
    ordered by key; each value decoded with its record headers."""
    decoded = [
        (int(m.key()), deserialize(m.value(), SerializationContext(m.topic(), MessageField.VALUE, m.headers())))
        for m in drain(bootstrap, topic, expected, finished=True, group=group)
    ]
    return sorted(decoded, key=lambda kv: kv[0])
