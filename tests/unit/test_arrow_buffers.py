"""The native columnar decoders take their large column buffers from a pool the extension owns and
give them back when the batch is dropped (rust/src/columnar/pool.rs; the pool's own rules are
tested in Rust). What a user relies on: a batch still held is never written by later calls, in
any format, while the buffers of the batches dropped in between are taken again."""

from __future__ import annotations

import json
import uuid
from typing import Any, Callable, List, Tuple

import pytest

pa = pytest.importorskip("pyarrow")

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from serdes.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from serdes.json import JSONDeserializer, JSONSerializer  # noqa: E402
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer  # noqa: E402
from tests.support.implementations import require_native  # noqa: E402
from tests.unit.test_arrow_native_protobuf import F, _File  # noqa: E402

CTX = SerializationContext("t", MessageField.VALUE)
# enough rows that every fixed-width column and every string column is a pooled buffer (32 KiB up)
ROWS = 10_000


@pytest.fixture(autouse=True)
def _native_built() -> None:
    require_native()


def _rows(seed: int) -> List[Any]:
    return [{"id": seed * 1_000_000 + i, "name": f"n{seed}-{i}" * (1 + i % 3), "score": i / 7 + seed}
            for i in range(ROWS)]


def _case(fmt: str) -> Tuple[Callable[[List[bytes]], Any], Callable[[int], List[bytes]]]:
    """(decode frames to columns, the frames of `_rows(seed)`) for one format."""
    client = SchemaRegistryClient.new_client({"url": f"mock://arrow-buffers-{uuid.uuid4().hex}"})
    if fmt == "avro":
        schema = {"type": "record", "name": "R", "fields": [
            {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "score", "type": "double"}]}
        ser: Any = AvroSerializer(client, json.dumps(schema))
        deser: Any = AvroDeserializer(client)
        make = dict
    elif fmt == "json":
        schema = {"type": "object", "properties": {
            "id": {"type": "integer"}, "name": {"type": "string"}, "score": {"type": "number"}},
            "required": ["id", "name", "score"]}
        ser = JSONSerializer(json.dumps(schema), client)
        deser = JSONDeserializer(json.dumps(schema), schema_registry_client=client)
        make = dict
    else:
        f = _File("buffers.proto", "buffers")
        m = f.message("R")
        f.field(m, "id", 1, F.TYPE_INT64)
        f.field(m, "name", 2, F.TYPE_STRING)
        f.field(m, "score", 3, F.TYPE_DOUBLE)
        (cls,) = f.classes("R")
        conf = {"use.deprecated.format": False}
        ser = ProtobufSerializer(cls, client, conf)
        deser = ProtobufDeserializer(cls, conf)
        make = lambda r: cls(**r)  # noqa: E731

    def frames(seed: int) -> List[bytes]:
        return [ser(make(r), CTX) for r in _rows(seed)]

    return (lambda fs: deser.deserialize_arrow(fs, CTX)), frames


@pytest.mark.parametrize("fmt", ["avro", "json", "protobuf"])
def test_a_batch_held_is_not_changed_by_later_calls(fmt: str) -> None:
    decode, frames = _case(fmt)
    first, other = frames(1), frames(2)
    kept = pa.record_batch(decode(first))
    expected = _rows(1)
    assert kept.to_pylist() == expected
    for _ in range(4):  # batches dropped at once: their buffers go back to the pool and are taken again
        dropped = pa.record_batch(decode(other))
        assert dropped.num_rows == ROWS
        del dropped
    again = pa.record_batch(decode(first))
    assert kept.to_pylist() == expected
    assert again.equals(kept)
