"""The one fast-path hook of serdes._serde: formats declare ParseStep / EncodeStep, the shared
``__call__`` runs them, and a failing step hands the record to its fallback (the typed error)."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import pkgutil
import uuid
from typing import Any, Iterator, List

import orjson
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes_test import dbz_accounts_pb2, order_pb2

import serdes
from serdes import _native
from serdes import CorruptPayloadError, TruncatedFrameError, ValidationError
from serdes._serde import EncodeStep, FastDeserializer, FastSerializer, ParseStep
from serdes.json import JSONDeserializer, JSONSerializer
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer, WrongMessageTypeError

from tests.support.implementations import Implementation

# every test here runs on the native dispatcher and on the pure-Python one (tests/support/implementations.py)
pytestmark = pytest.mark.usefixtures("implementation")

CTX = SerializationContext("hook", MessageField.VALUE)
SCHEMA = json.dumps({
    "type": "object",
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "score": {"type": "number"}},
    "required": ["id"],
})


@pytest.fixture
def registry() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://hook-{uuid.uuid4().hex}"})


def _serde_classes() -> Iterator[type]:
    # serdes.quix's classes are quixstreams' (tests/quix), which wrap serdes' serdes, not subclass them
    skip = ("serdes.flink", "serdes.demo", "serdes.testing", "serdes.quix")
    for info in pkgutil.walk_packages(serdes.__path__, "serdes."):
        if info.name.startswith(skip) or info.name.endswith("__main__"):
            continue
        mod = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, (FastDeserializer, FastSerializer)) and cls.__module__ == mod.__name__:
                yield cls


def test_no_format_overrides_the_shared_call() -> None:
    classes = list(_serde_classes())
    names = {c.__name__ for c in classes}
    assert {"AvroDeserializer", "JSONDeserializer", "JSONSerializer", "ProtobufDeserializer", "ProtobufSerializer"} <= names
    for cls in classes:
        own = [k for k in cls.__mro__ if "__call__" in k.__dict__][0]
        assert own in (FastDeserializer, FastSerializer), f"{cls.__name__}.__call__ is {own.__name__}'s"


def test_json_declares_steps_and_they_decode(registry: SchemaRegistryClient) -> None:
    ser = JSONSerializer(SCHEMA, registry)
    de = JSONDeserializer(None, schema_registry_client=registry)
    data = ser({"id": 1, "name": "a"}, CTX)
    assert isinstance(ser._value_encoders[CTX.topic], EncodeStep)
    assert de(data, CTX) == {"id": 1, "name": "a"}
    (step,) = de._steps.values()
    assert isinstance(step, ParseStep) and step.parse is orjson.loads
    assert de(data, CTX) == {"id": 1, "name": "a"}  # the step's own path


def test_json_failing_steps_raise_the_fallbacks_typed_errors(registry: SchemaRegistryClient) -> None:
    ser = JSONSerializer(SCHEMA, registry)
    de = JSONDeserializer(None, schema_registry_client=registry)
    data = ser({"id": 1}, CTX)
    de(data, CTX)
    with pytest.raises(ValidationError):
        ser({"id": "x"}, CTX)  # the step's validate refuses, the fallback says why
    with pytest.raises(ValidationError, match="NaN"):
        ser({"id": 1, "other": float("nan")}, CTX)  # caught by the step's null_check -> fallback
    with pytest.raises(CorruptPayloadError, match="not valid JSON"):
        de(data[:5] + b"{not json", CTX)
    with pytest.raises(ValidationError):
        de(data[:5] + b'{"id": "x"}', CTX)


def test_json_from_dict_errors_are_payload_errors_on_the_step(registry: SchemaRegistryClient) -> None:
    calls: list[Any] = []

    def from_dict(d: Any, ctx: Any) -> Any:
        calls.append(d)
        if d["id"] < 0:
            raise ValueError("negative id")
        return ("obj", d["id"])

    ser = JSONSerializer(SCHEMA, registry)
    de = JSONDeserializer(None, from_dict=from_dict, schema_registry_client=registry)
    assert de(ser({"id": 3}, CTX), CTX) == ("obj", 3)
    assert de(ser({"id": 4}, CTX), CTX) == ("obj", 4)
    calls.clear()
    with pytest.raises(CorruptPayloadError, match="negative id"):
        de(ser({"id": -1}, CTX), CTX)
    assert len(calls) == 1  # convert never runs twice for one record


def _order() -> order_pb2.Order:
    m = order_pb2.Order(id=7, customer="c", amount=1.5)
    m.address.city = "Paris"
    return m


def test_protobuf_declares_steps_and_they_decode(registry: SchemaRegistryClient) -> None:
    ser = ProtobufSerializer(order_pb2.Order, registry, {"use.deprecated.format": False})
    de = ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False}, registry)
    data = ser(_order(), CTX)
    assert isinstance(ser._value_encoders[CTX.topic], EncodeStep)
    assert de(data, CTX) == _order()
    (head,) = de._steps
    assert head == data[:6] and head[5] == 0  # magic 0, id, index array [0]
    assert de(data, CTX) == _order()
    with pytest.raises(CorruptPayloadError, match="does not parse"):
        de(data[:6] + b"\xff\xff\xff", CTX)
    with pytest.raises(TruncatedFrameError):
        de(data[:5], CTX)
    with pytest.raises(WrongMessageTypeError):
        ser(dbz_accounts_pb2.Key(), CTX)


def test_protobuf_dict_output_and_non_root_messages_use_the_fallback(registry: SchemaRegistryClient) -> None:
    ser = ProtobufSerializer(dbz_accounts_pb2.Value, registry, {"use.deprecated.format": False})
    de = ProtobufDeserializer(None, {"use.deprecated.format": False}, registry, output="dict")
    data = ser(dbz_accounts_pb2.Value(id=2, owner="o", balance=3), CTX)
    assert data[5] != 0  # message index [1]: not the root message, so no step covers it
    for _ in range(2):
        assert de(data, CTX) == {"id": 2, "owner": "o", "balance": 3}
    assert data[:6] not in de._steps
    root = ProtobufSerializer(order_pb2.Order, registry, {"use.deprecated.format": False})
    framed = root(_order(), SerializationContext("hook-root", MessageField.VALUE))
    for _ in range(2):  # the root message: the step, its convert the dict conversion
        out = de(framed, CTX)
        assert out["customer"] == "c" and out["address"]["city"] == "Paris"
    assert framed[:6] in de._steps


def test_the_dispatcher_is_the_implementation_asked_for(implementation: Implementation, registry: SchemaRegistryClient) -> None:
    de = JSONDeserializer(None, schema_registry_client=registry)
    ser = JSONSerializer(SCHEMA, registry)
    for serde in (de, ser):
        native = type(serde._dispatch).__module__ == "serdes._serdes_native"
        assert native is (implementation.name == "native")
        assert serde.__call__ == serde._dispatch  # the user's call is the dispatcher (or, with no extension, _call_py itself)


def test_protobuf_non_root_messages_get_a_step(implementation: Implementation, registry: SchemaRegistryClient) -> None:
    ser = ProtobufSerializer(dbz_accounts_pb2.Value, registry, {"use.deprecated.format": False})
    de = ProtobufDeserializer(dbz_accounts_pb2.Value, {"use.deprecated.format": False}, registry)
    data = ser(dbz_accounts_pb2.Value(id=2, owner="o"), CTX)
    assert data[5:7] == b"\x02\x02"  # message indexes [1]
    for _ in range(2):
        assert de(data, CTX) == dbz_accounts_pb2.Value(id=2, owner="o")
    assert data[:7] in de._steps  # registered by the decoder once the index path was checked
    with pytest.raises(CorruptPayloadError, match=r"message indexes|does not parse"):
        de(data[:7] + b"\xff\xff", CTX)
    with pytest.raises(CorruptPayloadError):
        de(data[:5] + b"\x02\x7e" + data[7:], CTX)  # an index the writer schema does not have


def test_native_and_pure_answer_alike_on_garbage(registry: SchemaRegistryClient) -> None:
    """The same values and the same typed errors (class and message) from both dispatchers."""
    import random

    ser = JSONSerializer(SCHEMA, registry)
    pser = ProtobufSerializer(order_pb2.Order, registry, {"use.deprecated.format": False})
    jframe = ser({"id": 1}, CTX)
    pframe = pser(_order(), SerializationContext("hook-pb", MessageField.VALUE))
    built = {}
    for impl in ("native", "pure"):
        ctxm = _native.forced_pure() if impl == "pure" else contextlib.nullcontext()
        with ctxm:
            built[impl] = (
                JSONDeserializer(None, schema_registry_client=registry),
                ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False}, registry),
            )
    rnd = random.Random(12)
    cases = [jframe, pframe, b"", b"\x00", b"\x07abc", jframe[:5], pframe[:6]]
    for _ in range(300):
        base = rnd.choice([jframe, pframe])
        cut = rnd.randrange(len(base) + 1)
        cases.append(base[:cut] + bytes(rnd.randrange(256) for _ in range(rnd.randrange(8))))
    for data in cases:
        for i in (0, 1):
            answers = []
            for impl in ("native", "pure"):
                try:
                    answers.append(("ok", built[impl][i](data, CTX)))
                except Exception as e:  # compared below: same class, same message
                    answers.append((type(e).__name__, str(e)))
            assert answers[0] == answers[1], (data, answers)


def test_serdes_are_collected_with_their_dispatcher(registry: SchemaRegistryClient) -> None:
    """The dispatcher references its serde (slow path, cached closures): the cycle is collectable."""
    import gc
    import weakref

    ser = JSONSerializer(SCHEMA, registry)
    de = JSONDeserializer(None, schema_registry_client=registry)
    de(ser({"id": 1}, CTX), CTX)
    refs = [weakref.ref(ser), weakref.ref(de)]
    del ser, de
    gc.collect()
    assert [r() for r in refs] == [None, None]


def _python_frames(call: Any) -> List[str]:
    """Names of the Python functions that ran during ``call()`` (C calls are not frames)."""
    import sys

    seen: List[str] = []

    def prof(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            seen.append(frame.f_code.co_name)

    sys.setprofile(prof)
    try:
        call()
    finally:
        sys.setprofile(None)
    return [n for n in seen if n not in ("_python_frames", "<lambda>")]


def test_a_cache_hit_runs_no_python_frame_of_serdes(implementation: Implementation, registry: SchemaRegistryClient) -> None:
    ser = JSONSerializer(SCHEMA, registry)
    de = JSONDeserializer(None, schema_registry_client=registry)
    pser = ProtobufSerializer(order_pb2.Order, registry, {"use.deprecated.format": False})
    pde = ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False}, registry)
    pctx = SerializationContext("hook-frames", MessageField.VALUE)
    data, pdata = ser({"id": 1}, CTX), pser(_order(), pctx)
    de(data, CTX), pde(pdata, pctx)  # the misses
    expected = [] if implementation.name == "native" else ["_call_py"]
    assert _python_frames(lambda: de(data, CTX)) == expected
    assert _python_frames(lambda: ser({"id": 2}, CTX)) == expected
    assert _python_frames(lambda: pde(pdata, pctx)) == expected
    msg = _order()
    assert _python_frames(lambda: pser(msg, pctx)) == expected
