"""``poll_arrow``: up to N messages from a consumer, as one Arrow batch."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from confluent_kafka import KafkaError, KafkaException

from ._batch import ArrowBatch
from ._decode import deserialize_arrow

__all__ = ["poll_arrow"]


def poll_arrow(
    consumer: Any,
    deserializer: Any,
    max_messages: int = 10_000,
    timeout: float = 1.0,
    *,
    reader_schema: Any = None,
    errors: str = "raise",
    metadata: Sequence[str] = ("topic", "partition", "offset", "timestamp"),
    threads: int = 1,
) -> ArrowBatch:
    """Consume up to ``max_messages`` messages (waiting at most ``timeout`` seconds) from a
    ``confluent_kafka.Consumer`` without value deserializer, and decode their values into one
    batch with ``deserializer.deserialize_arrow`` (``metadata``: the Kafka coordinate columns;
    ``threads``: as there).

    A partition-EOF event (``enable.partition.eof``) is skipped; any other error the broker reports
    for a message raises ``KafkaException``, before anything is decoded, so a batch never silently
    misses a message. An empty poll gives an empty batch (of the reader schema's columns when one
    is known: pass ``reader_schema`` for a batch shape that does not depend on the records).
    """
    if max_messages < 1:
        raise ValueError("max_messages must be at least 1")
    msgs = consumer.consume(num_messages=max_messages, timeout=timeout)
    kept = []
    for m in msgs:
        err: Optional[KafkaError] = m.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                continue
            raise KafkaException(err)
        kept.append(m)
    return deserialize_arrow(deserializer, kept, reader_schema=reader_schema, errors=errors, metadata=metadata,
                             threads=threads)
