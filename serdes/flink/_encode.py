"""The encode operators: Python objects (or dead-letter rows) -> Kafka producer rows.

:class:`EncodeFunction` serializes with registry framing (prefix or header), the serializers
built once per worker in ``open()``; :class:`DeadLetterToProducerRow` turns a dead letter back into
the raw record for a DLQ topic, its reason and coordinates in headers.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from confluent_kafka.serialization import MessageField, SerializationContext
from pyflink.common import Row
from pyflink.datastream import MapFunction, RuntimeContext

from ._codecs import SerdeSpec, create_in_worker
from ._metrics import BatchedCounter, batched, flush_all
from ._packed import pack_producer_record
from ._records import PICKLE_MODULE

__all__ = ["EncodeFunction", "PackedEncodeFunction", "DeadLetterToProducerRow"]


class DeadLetterToProducerRow(MapFunction):
    """Dead-letter row -> producer row for a DLQ topic; reason and coordinates become headers."""

    __module__ = PICKLE_MODULE

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def map(self, row: Any) -> Row:
        headers = dict(row[6] or {})
        headers["serdes.dlq.reason"] = row[7].encode("utf-8", "replace")
        headers["serdes.dlq.error"] = row[8].encode()
        headers["serdes.dlq.topic"] = row[0].encode()
        headers["serdes.dlq.partition"] = str(row[1]).encode()
        headers["serdes.dlq.offset"] = str(row[2]).encode()
        return Row(self.topic, row[4], row[5], headers)


class EncodeFunction(MapFunction):
    """Python object -> :data:`PRODUCER_ROW_TYPE` row, with registry framing (prefix or header).

    ``key_fn(obj)`` extracts the key (serialized with ``key`` when given, else it must be
    bytes/str/None); ``value_fn(obj)`` extracts the value (default: the object itself);
    ``topic_fn(obj)`` picks the topic per record (default: the sink topic).
    """

    __module__ = PICKLE_MODULE

    def __init__(
        self,
        topic: str,
        value: SerdeSpec,
        key: Optional[SerdeSpec] = None,
        key_fn: Optional[Callable[[Any], Any]] = None,
        value_fn: Optional[Callable[[Any], Any]] = None,
        topic_fn: Optional[Callable[[Any], str]] = None,
        decode_input: Optional[Callable[[bytes], Any]] = None,
    ) -> None:
        self.topic = topic
        self.value_spec = value
        self.key_spec = key
        self.key_fn = key_fn
        self.value_fn = value_fn
        self.topic_fn = topic_fn
        self.decode_input = decode_input

    def open(self, runtime_context: RuntimeContext) -> None:
        self._value_ser, self._key_ser = create_in_worker(self.value_spec, self.key_spec)
        self._batched: List[BatchedCounter] = []
        # counted per record: batched (``_metrics.py``), flushed in close()
        self._encoded = batched(self._batched, runtime_context.get_metrics_group().counter("serdes_encoded"))

    def close(self) -> None:
        flush_all(getattr(self, "_batched", ()))  # type: ignore[arg-type]  # () before open()

    def _serialize(self, obj: Any) -> Tuple[str, Optional[bytes], Optional[bytes],
                                             Optional[Dict[str, Union[str, bytes, None]]]]:
        """(topic, key bytes, value bytes, headers) of one object: what both outputs carry."""
        if self.decode_input is not None:
            obj = self.decode_input(obj)
        topic = self.topic_fn(obj) if self.topic_fn is not None else self.topic
        headers: List[Tuple[str, Union[str, bytes, None]]] = []
        value = self.value_fn(obj) if self.value_fn is not None else obj
        raw_value = None
        if value is not None:
            raw_value = self._value_ser(value, SerializationContext(topic, MessageField.VALUE, headers))
        raw_key = None
        if self.key_fn is not None:
            k = self.key_fn(obj)
            if self._key_ser is not None and k is not None:
                raw_key = self._key_ser(k, SerializationContext(topic, MessageField.KEY, headers))
            elif isinstance(k, str):
                raw_key = k.encode()
            else:
                raw_key = k
        self._encoded.inc()
        return topic, raw_key, raw_value, (dict(headers) if headers else None)

    def map(self, obj: Any) -> Row:
        return Row(*self._serialize(obj))

    def pack(self, obj: Any) -> bytes:
        """``obj`` as a packed producer record (``_packed.py``) for the packed sink shim, which
        writes to this function's ``topic`` when the record names none."""
        topic, raw_key, raw_value, headers = self._serialize(obj)
        return pack_producer_record(None if topic == self.topic else topic.encode(), raw_key, raw_value, headers)


class PackedEncodeFunction(EncodeFunction):
    """:class:`EncodeFunction` whose ``map`` emits packed producer records (``bytes``) for the packed
    sink shim (what :func:`~serdes.flink.write_kafka` uses: PyFlink builds and reads a Python ``Row``
    object per producer row, a ``bytes`` value it passes as is)."""

    __module__ = PICKLE_MODULE

    def map(self, obj: Any) -> bytes:  # type: ignore[override]  # bytes instead of a Row: the packed sink's type
        return self.pack(obj)
