"""deserialize_batch / serialize_batch on every sync class: the values single calls give, every
record attempted, failures reported by position (serdes.BatchError, or errors="collect")."""

from __future__ import annotations

import json
import pickle
import uuid
from typing import Any, Callable, List, Tuple

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes_test import order_pb2

import serdes
from serdes import BatchError, CorruptPayloadError, InvalidMagicByteError, TruncatedFrameError, ValidationError
from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.json import JSONDeserializer, JSONSerializer
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer, WrongMessageTypeError

pytestmark = pytest.mark.usefixtures("implementation")

CTX = SerializationContext("batch", MessageField.VALUE)
AVRO = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": "string"}]})
JSON = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]})
PB = {"use.deprecated.format": False}


@pytest.fixture
def registry() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://batch-{uuid.uuid4().hex}"})


Pair = Tuple[Any, Any, List[Any], Any]  # serializer, deserializer, good values, a value the serializer refuses


def _pairs(registry: SchemaRegistryClient) -> List[Tuple[str, Callable[[], Pair]]]:
    def avro() -> Pair:
        return (AvroSerializer(registry, AVRO), AvroDeserializer(registry),
                [{"a": i, "b": str(i)} for i in range(50)], {"a": "x", "b": "y"})

    def js() -> Pair:
        return (JSONSerializer(JSON, registry), JSONDeserializer(None, schema_registry_client=registry),
                [{"a": i, "b": str(i)} for i in range(50)], {"a": "x"})

    def pb() -> Pair:
        return (ProtobufSerializer(order_pb2.Order, registry, PB), ProtobufDeserializer(order_pb2.Order, PB, registry),
                [order_pb2.Order(id=i, customer=str(i)) for i in range(50)], object())

    return [("avro", avro), ("json", js), ("protobuf", pb)]


FORMATS = ["avro", "json", "protobuf"]


def _pair(registry: SchemaRegistryClient, fmt: str) -> Pair:
    return dict(_pairs(registry))[fmt]()


@pytest.mark.parametrize("fmt", FORMATS)
def test_batches_equal_single_calls(registry: SchemaRegistryClient, fmt: str) -> None:
    ser, de, values, _ = _pair(registry, fmt)
    items = values + [None]
    frames = ser.serialize_batch(items, CTX)  # the first value resolves the schema inside the batch
    assert frames == [ser(v, CTX) for v in items] and frames[-1] is None
    assert de.deserialize_batch(frames, CTX) == [de(f, CTX) for f in frames] == items
    assert de.deserialize_batch(iter(frames), CTX) == items  # any iterable
    assert de.deserialize_batch([], CTX) == [] and ser.serialize_batch([], CTX) == []
    assert de.deserialize_batch([bytearray(frames[0])], CTX) == [values[0]]  # the slow path, inside a batch


@pytest.mark.parametrize("fmt", FORMATS)
def test_failures_are_reported_by_position_and_nothing_is_dropped(registry: SchemaRegistryClient, fmt: str) -> None:
    ser, de, values, bad_value = _pair(registry, fmt)
    frames = ser.serialize_batch(values[:3], CTX)
    broken = [frames[0], b"\x07" + frames[1][1:], frames[1], frames[2][:3], frames[2]]
    with pytest.raises(BatchError) as info:
        de.deserialize_batch(broken, CTX)
    err = info.value
    assert [(i, type(e)) for i, e in err.errors] == [(1, InvalidMagicByteError), (3, TruncatedFrameError)]
    assert err.values == [values[0], None, values[1], None, values[2]]
    assert err.__cause__ is err.errors[0][1]
    assert "2 of 5 records failed to decode" in str(err) and "index 1" in str(err)
    assert err.location.topic == "batch"
    # the same errors single calls raise
    for i, e in err.errors:
        with pytest.raises(type(e), match="magic|ends|empty|bytes"):
            de(broken[i], CTX)

    collected = de.deserialize_batch(broken, CTX, errors="collect")
    assert collected[0] == values[0] and collected[2] == values[1] and collected[4] == values[2]
    assert isinstance(collected[1], InvalidMagicByteError) and isinstance(collected[3], TruncatedFrameError)

    with pytest.raises(BatchError) as info:
        ser.serialize_batch([values[0], bad_value, values[1]], CTX)
    ((i, e),) = info.value.errors
    expected = WrongMessageTypeError if fmt == "protobuf" else ValidationError
    assert i == 1 and isinstance(e, expected)
    assert info.value.values == [frames[0], None, frames[1]]
    out = ser.serialize_batch([bad_value, values[0]], CTX, errors="collect")
    assert isinstance(out[0], expected) and out[1] == frames[0]


def test_payload_errors_inside_a_step_batch(registry: SchemaRegistryClient) -> None:
    ser, de, values, _ = _pair(registry, "json")
    frames = ser.serialize_batch(values[:2], CTX)
    out = de.deserialize_batch([frames[0], frames[0][:5] + b"{", frames[0][:5] + b'{"a": "x"}', frames[1]], CTX,
                               errors="collect")
    assert out[0] == values[0] and out[3] == values[1]
    assert isinstance(out[1], CorruptPayloadError) and isinstance(out[2], ValidationError)
    assert out[2].location.topic == "batch"


def test_errors_option_is_checked(registry: SchemaRegistryClient) -> None:
    ser, de, _, _ = _pair(registry, "json")
    with pytest.raises(ValueError, match="errors must be one of"):
        de.deserialize_batch([], CTX, errors="ignore")
    with pytest.raises(ValueError, match="errors must be one of"):
        ser.serialize_batch([], CTX, errors="skip")


def test_base_exceptions_are_not_collected(registry: SchemaRegistryClient) -> None:
    ser, _, values, _ = _pair(registry, "json")
    frames = ser.serialize_batch(values[:1], CTX)

    def from_dict(d: Any, ctx: Any) -> Any:
        raise KeyboardInterrupt

    de = JSONDeserializer(None, from_dict=from_dict, schema_registry_client=registry)
    with pytest.raises(KeyboardInterrupt):
        de.deserialize_batch(frames * 3, CTX, errors="collect")


def test_batch_error_pickles_with_its_errors_and_values() -> None:
    inner = CorruptPayloadError("bad bytes", serdes.RecordLocation("t", "value"), 3)
    err = BatchError("1 of 2 records failed", serdes.RecordLocation("t", "value"), None, [(1, inner)], [{"a": 1}, None])
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is BatchError and str(back) == str(err)
    assert back.values == [{"a": 1}, None]
    ((i, e),) = back.errors
    assert i == 1 and type(e) is CorruptPayloadError and str(e) == str(inner) and e.schema_id == 3


@pytest.mark.parametrize("errors", ["raise", "collect"])
def test_a_registry_failure_is_not_a_batch_of_bad_records(registry: SchemaRegistryClient, errors: str) -> None:
    """A registry refusing the credentials fails every record of a batch; that is raised as the
    RegistryAuthError itself (not a BatchError, which is a SerializationError a skip-the-bad-records
    handler would swallow); ``errors="collect"`` still returns it in place."""
    from confluent_kafka.serialization import SerializationError

    from tests.support.registry_http import FailingRegistry

    schema = '{"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]}'
    frames = AvroSerializer(registry, schema).serialize_batch([{"n": 1}, {"n": 2}], CTX)
    with FailingRegistry("401") as reg:
        client = SchemaRegistryClient(reg.client_conf())
        de, ser = AvroDeserializer(client), AvroSerializer(client, schema)
        if errors == "collect":
            got = de.deserialize_batch(frames, CTX, errors="collect")
            assert [type(e) for e in got] == [serdes.RegistryAuthError] * 2
            return
        for call in (lambda: de.deserialize_batch(frames, CTX), lambda: ser.serialize_batch([{"n": 1}], CTX)):
            with pytest.raises(serdes.RegistryAuthError) as info:
                call()
            assert not isinstance(info.value, SerializationError)
