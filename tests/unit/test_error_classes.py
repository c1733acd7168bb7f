"""Every failure -> exactly one error class, for each format (issue 9).

The table is (failure, format, caller): ``CALLERS`` holds how a serde is built and called --
``"sync"``: serdes' sync classes over ``SchemaRegistryClient``, ``serde(data, ctx)``; ``"async"``:
the asyncio classes (``AsyncAvroDeserializer`` ...) over confluent-kafka's
``AsyncSchemaRegistryClient``, ``await serde(data, ctx)`` on one event loop. Every failure is
checked in both columns.

Registry failures are answered by a real HTTP server on 127.0.0.1 (tests/support/registry_http.py) to the
real ``SchemaRegistryClient`` / ``AsyncSchemaRegistryClient``; schemas, payloads and values use
confluent-kafka's ``mock://`` registry (sync or async mock).
"""

from __future__ import annotations

import json
import pickle
import uuid
from typing import Any, Callable, Dict

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

import serdes
from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.json import JSONDeserializer, JSONSerializer
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer, WrongMessageTypeError
from serdes_test import legacy_pb2, order_pb2

from tests.support.registry_http import FailingRegistry

# the native dispatcher and the pure-Python one, same cases (tests/support/implementations.py)
pytestmark = pytest.mark.usefixtures("implementation")

FORMATS = ("avro", "protobuf", "json")

AVRO_SCHEMA = json.dumps({"type": "record", "name": "User", "namespace": "t", "fields": [
    {"name": "name", "type": "string"},
    {"name": "nick", "type": ["null", "string"]},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
]})
AVRO_UNREADABLE_READER = json.dumps({"type": "record", "name": "User", "namespace": "t", "fields": [
    {"name": "name", "type": "long"}]})
JSON_SCHEMA = json.dumps({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
GOOD = {
    "avro": {"name": "a", "nick": None, "tags": ["x"]},
    "protobuf": order_pb2.Order(id=1, customer="c"),
    "json": {"name": "a", "x": 1.5},
}


class SyncCaller:
    """serdes' sync classes: ``serde(data, ctx)``."""

    def mock_client(self) -> Any:
        return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})

    def client(self, conf: Dict[str, Any]) -> Any:
        return SchemaRegistryClient(conf)

    def deserializer(self, fmt: str, client: Any, **kw: Any) -> Any:
        if fmt == "avro":
            return AvroDeserializer(client, **kw)
        if fmt == "json":
            return JSONDeserializer(None, schema_registry_client=client)
        return ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False}, client)

    def serializer(self, fmt: str, client: Any, msg_type: Any = None) -> Any:
        if fmt == "avro":
            return AvroSerializer(client, AVRO_SCHEMA)
        if fmt == "json":
            return JSONSerializer(JSON_SCHEMA, client)
        return ProtobufSerializer(msg_type or order_pb2.Order, client, {"use.deprecated.format": False})

    def __call__(self, serde: Any, data: Any, ctx: SerializationContext) -> Any:
        return serde(data, ctx)

    def cache(self, serde: Any, name: str) -> Dict[Any, Any]:
        """The serde's per-schema cache (``_decoders`` / ``_encoders``)."""
        return getattr(serde, name)  # type: ignore[no-any-return]

    def close(self) -> None:
        pass


class AsyncCaller(SyncCaller):
    """serdes' asyncio classes over confluent-kafka's AsyncSchemaRegistryClient: ``await serde(data, ctx)``
    (construction is awaited too), all on one event loop so the clients' HTTP pools stay usable."""

    def __init__(self) -> None:
        self._loop: Any = None

    def run(self, awaitable: Any) -> Any:
        import asyncio

        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(awaitable)

    def mock_client(self) -> Any:
        from confluent_kafka.schema_registry import AsyncSchemaRegistryClient

        return AsyncSchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})

    def client(self, conf: Dict[str, Any]) -> Any:
        from confluent_kafka.schema_registry import AsyncSchemaRegistryClient

        return AsyncSchemaRegistryClient(conf)

    def deserializer(self, fmt: str, client: Any, **kw: Any) -> Any:
        from serdes.avro import AsyncAvroDeserializer
        from serdes.json import AsyncJSONDeserializer
        from serdes.protobuf import AsyncProtobufDeserializer

        if fmt == "avro":
            return self.run(AsyncAvroDeserializer(client, **kw))
        if fmt == "json":
            return self.run(AsyncJSONDeserializer(None, schema_registry_client=client))
        return self.run(AsyncProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False}, client))

    def serializer(self, fmt: str, client: Any, msg_type: Any = None) -> Any:
        from serdes.avro import AsyncAvroSerializer
        from serdes.json import AsyncJSONSerializer
        from serdes.protobuf import AsyncProtobufSerializer

        if fmt == "avro":
            return self.run(AsyncAvroSerializer(client, AVRO_SCHEMA))
        if fmt == "json":
            return self.run(AsyncJSONSerializer(JSON_SCHEMA, client))
        return self.run(AsyncProtobufSerializer(msg_type or order_pb2.Order, client, {"use.deprecated.format": False}))

    def __call__(self, serde: Any, data: Any, ctx: SerializationContext) -> Any:
        return self.run(serde(data, ctx))

    def cache(self, serde: Any, name: str) -> Dict[Any, Any]:
        return getattr(serde._engine, name)  # type: ignore[no-any-return]  # the sync engine's cache

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None


# caller name -> how a serde is built and called
CALLERS: Dict[str, SyncCaller] = {"sync": SyncCaller(), "async": AsyncCaller()}


@pytest.fixture(scope="module", autouse=True)
def _close_event_loop() -> Any:
    yield
    for caller in CALLERS.values():
        caller.close()


def ctx(topic: str = "orders") -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


@pytest.fixture(scope="module")
def frames() -> Dict[str, Dict[str, Any]]:
    """Per caller: one mock registry (sync or async) holding a schema of each format, and a good
    frame of each written by that caller's serializers."""
    out: Dict[str, Dict[str, Any]] = {}
    for name, caller in CALLERS.items():
        client = caller.mock_client()
        out[name] = {"client": client}
        for fmt in FORMATS:
            out[name][fmt] = caller(caller.serializer(fmt, client), GOOD[fmt], ctx(f"topic-{fmt}"))
    return out


def assert_exactly(cls: type, fn: Callable[[], Any]) -> serdes.SerdesError:
    with pytest.raises(serdes.SerdesError) as info:
        fn()
    assert type(info.value) is cls, f"{type(info.value).__name__} raised, {cls.__name__} expected: {info.value}"
    return info.value


# -- registry failures (real HTTP server) ---------------------------------------------------------

REGISTRY_FAILURES = {
    "401": (serdes.RegistryAuthError, 401),
    "403": (serdes.RegistryAuthError, 403),
    "429": (serdes.RegistryRateLimitedError, 429),
    "html": (serdes.RegistryBadResponseError, None),
    "no_schema": (serdes.RegistryBadResponseError, None),
    "slow": (serdes.RegistryUnavailableError, None),  # slower than the client's timeout
    "not_found": (serdes.RegistryBadResponseError, 404),  # a wrong base URL: a 404 without an error code
}


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("answer", sorted(REGISTRY_FAILURES))
def test_registry_failure_deserializing_is_a_registry_error(answer, fmt, caller, frames):
    cls, status = REGISTRY_FAILURES[answer]
    call = CALLERS[caller]
    with FailingRegistry(answer) as reg:
        de = call.deserializer(fmt, call.client(reg.client_conf()))
        err = assert_exactly(cls, lambda: call(de, frames[caller][fmt], ctx()))
        assert reg.requests, "the registry was never asked"
    assert isinstance(err, serdes.RegistryError) and not isinstance(err, serdes.CorruptPayloadError)
    assert err.http_status == status
    assert err.location.topic == "orders"
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls and again.http_status == status and str(again) == str(err)
    # nothing was cached: the next record asks the registry again
    assert not call.cache(de, "_decoders")


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("answer", sorted(REGISTRY_FAILURES))
def test_registry_failure_serializing_is_a_registry_error(answer, fmt, caller):
    cls, status = REGISTRY_FAILURES[answer]
    call = CALLERS[caller]
    with FailingRegistry(answer) as reg:
        ser = call.serializer(fmt, call.client(reg.client_conf()))
        err = assert_exactly(cls, lambda: call(ser, GOOD[fmt], ctx()))
    assert err.http_status == status
    assert not call.cache(ser, "_encoders")


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("fmt", FORMATS)
def test_unreachable_registry_is_registry_unavailable(fmt, caller, frames):
    call = CALLERS[caller]
    client = call.client({"url": "http://127.0.0.1:1", "max.retries": 0, "timeout": 2})
    de, ser = call.deserializer(fmt, client), call.serializer(fmt, client)
    assert_exactly(serdes.RegistryUnavailableError, lambda: call(de, frames[caller][fmt], ctx()))
    assert_exactly(serdes.RegistryUnavailableError, lambda: call(ser, GOOD[fmt], ctx()))


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_registry_recovers_after_an_auth_outage(caller, frames):
    """The same record decodes once the registry answers again (the failure was not cached)."""
    call = CALLERS[caller]
    with FailingRegistry("401") as reg:
        de = call.deserializer("avro", call.client(reg.client_conf()))
        assert_exactly(serdes.RegistryAuthError, lambda: call(de, frames[caller]["avro"], ctx()))
    good = call.deserializer("avro", frames[caller]["client"])
    assert call(good, frames[caller]["avro"], ctx()) == GOOD["avro"]


# -- schema, payload and value failures (mock registry) -------------------------------------------

WRONG_FORMAT = [(reader, writer) for reader in FORMATS for writer in FORMATS if reader != writer]


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("reader,writer", WRONG_FORMAT)
def test_schema_of_another_format_is_schema_mismatch(reader, writer, caller, frames):
    de = CALLERS[caller].deserializer(reader, frames[caller]["client"])
    data = frames[caller][writer]
    if reader == "protobuf":  # a Protobuf frame carries message indexes after the id
        data = data[:5] + b"\x00" + data[5:]
    err = assert_exactly(serdes.SchemaMismatchError, lambda: CALLERS[caller](de, data, ctx()))
    assert writer.upper() in str(err) and err.location.topic == "orders"


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_writer_unreadable_with_reader_is_schema_mismatch(caller, frames):
    call = CALLERS[caller]
    de = call.deserializer("avro", frames[caller]["client"], schema_str=AVRO_UNREADABLE_READER)
    assert_exactly(serdes.SchemaMismatchError, lambda: call(de, frames[caller]["avro"], ctx()))


CORRUPT = {"avro": b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "protobuf": b"\x00\xff\xff\xff", "json": b"{not json"}


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("warm", [False, True], ids=["first", "later"])
def test_corrupt_payload_is_corrupt_payload(fmt, warm, caller, frames):
    good = frames[caller][fmt]
    de = CALLERS[caller].deserializer(fmt, frames[caller]["client"])
    if warm:
        CALLERS[caller](de, good, ctx())
    assert_exactly(serdes.CorruptPayloadError, lambda: CALLERS[caller](de, good[:5] + CORRUPT[fmt], ctx()))


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("fmt", FORMATS)
def test_unknown_schema_id_and_bad_magic(fmt, caller, frames):
    good = frames[caller][fmt]
    de = CALLERS[caller].deserializer(fmt, frames[caller]["client"])
    assert_exactly(serdes.UnknownSchemaError, lambda: CALLERS[caller](de, b"\x00\x00\x01\x00\x00" + good[5:], ctx()))
    assert_exactly(serdes.InvalidMagicByteError, lambda: CALLERS[caller](de, b"\x07" + good[1:], ctx()))


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("warm", [False, True], ids=["first", "later"])
def test_invalid_json_document_is_validation_error(warm, caller, frames):
    good = frames[caller]["json"]
    de = CALLERS[caller].deserializer("json", frames[caller]["client"])
    if warm:
        CALLERS[caller](de, good, ctx())
    # the writer schema (the registry's) requires "name"
    assert_exactly(serdes.ValidationError, lambda: CALLERS[caller](de, good[:5] + b'{"x": 1}', ctx()))


BAD_VALUES = {
    "avro": {
        "wrong type": {"name": 5, "nick": None, "tags": []},
        "missing nullable field without default": {"name": "a", "tags": []},
        "bytes for an array": {"name": "a", "nick": None, "tags": b""},
    },
    "protobuf": {
        "proto2 required field unset": legacy_pb2.Legacy(name="no id"),
    },
    "json": {
        "not valid against the schema": {"x": 1},
        "set": {"name": "a", "s": {1, 2}},
        "bytes": {"name": "a", "b": b"x"},
        "2**64": {"name": "a", "n": 2 ** 64},
        "lone surrogate": {"name": "\ud800"},
        "non-string key": {"name": "a", 1: 2},
        "NaN": {"name": "a", "f": float("nan")},
        "Infinity": {"name": "a", "f": [float("inf")]},
        "-Infinity": {"name": "a", "f": {"g": float("-inf")}},
    },
}
VALUE_CASES = [(fmt, name) for fmt in FORMATS for name in BAD_VALUES[fmt]]


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("warm", [False, True], ids=["first", "later"])
@pytest.mark.parametrize("fmt,case", VALUE_CASES)
def test_bad_value_is_validation_error_on_every_call(fmt, case, warm, caller):
    """The first record of a topic and later ones raise the same class (issue 9 items 4-6)."""
    call = CALLERS[caller]
    client = call.mock_client()
    value = BAD_VALUES[fmt][case]
    if fmt == "protobuf":
        ser = call.serializer(fmt, client, legacy_pb2.Legacy)
        good = legacy_pb2.Legacy(id=1)
    else:
        ser, good = call.serializer(fmt, client), GOOD[fmt]
    if warm:
        CALLERS[caller](ser, good, ctx())
    err = assert_exactly(serdes.ValidationError, lambda: CALLERS[caller](ser, value, ctx()))
    assert err.location.topic == "orders"


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("warm", [False, True], ids=["first", "later"])
def test_wrong_message_type_is_wrong_message_type_error(warm, caller):
    call = CALLERS[caller]
    ser = call.serializer("protobuf", call.mock_client())
    if warm:
        call(ser, GOOD["protobuf"], ctx())
    assert_exactly(WrongMessageTypeError, lambda: call(ser, legacy_pb2.Legacy(id=1), ctx()))


def test_json_nan_as_null_conf_restores_confluent_behaviour():
    from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJSONSerializer

    client = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})
    ours = JSONSerializer(JSON_SCHEMA, client, conf={"serdes.json.nan.as.null": True})
    theirs = ConfluentJSONSerializer(JSON_SCHEMA, client)
    value = {"name": "a", "f": [float("nan"), float("inf"), None]}
    for _ in range(2):  # first and later call
        assert ours(value, ctx()) == theirs(value, ctx())
    # the key never reaches confluent-kafka's conf check, and a bad value is refused
    with pytest.raises(ValueError):
        JSONSerializer(JSON_SCHEMA, client, conf={"serdes.json.nan.as.null": "yes"})
    # a null that is a null is written on the fast path as always
    strict = JSONSerializer(JSON_SCHEMA, client)
    assert strict({"name": "a", "z": None}, ctx()).endswith(b'{"name":"a","z":null}')


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("fmt", FORMATS)
def test_wrong_base_url_names_the_url_and_the_registrys_answer(fmt, caller):
    """A registry asked at the wrong base URL (Apicurio without /apis/ccompat/v7) answers 404 with
    its own message and no Schema Registry error code: the error names the URL and that message,
    not "no such schema (None)"."""
    call = CALLERS[caller]
    with FailingRegistry("not_found") as reg:
        ser = call.serializer(fmt, call.client(reg.client_conf()))
        err = assert_exactly(serdes.RegistryBadResponseError, lambda: call(ser, GOOD[fmt], ctx()))
        url = reg.url
    text = str(err)
    assert f"{url}/subjects/" in text, text  # the request the registry refused (Protobuf registers its imports first)
    assert "RESTEASY003210: Could not find resource" in text and "/apis/ccompat/v7" in text
    assert "no such schema" not in text and err.http_status == 404


def test_a_schema_registry_404_is_still_unknown_schema():
    """A 404 that carries a Schema Registry error code (40403: no such schema) is the record's."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    from serdes._registry import classify_registry_error

    err = classify_registry_error("fetching schema id 9", SchemaRegistryError(404, 40403, "Schema 9 not found."))
    assert type(err) is serdes.UnknownSchemaError and "Schema 9 not found." in str(err)
    for code in (None, -1, 404):  # a web server's or a proxy's 404
        err = classify_registry_error("registering", SchemaRegistryError(404, code, None))
        assert type(err) is serdes.RegistryBadResponseError and err.http_status == 404


# -- the hierarchy: whose fault a failure is ------------------------------------------------------

# every error class of serdes/_errors.py -> its direct bases (tests/unit/test_error_pickling.py
# checks that every exception class serdes defines anywhere is one of these, or a SerdesError)
TREE = {
    "SerdesError": ("Exception",),
    "RecordError": ("SerdesError", "SerializationError"),
    "FramingError": ("RecordError",),
    "InvalidMagicByteError": ("FramingError",),
    "TruncatedFrameError": ("FramingError",),
    "UnknownSchemaError": ("RecordError",),
    "SchemaMismatchError": ("RecordError",),
    "RemoteRefRefused": ("SchemaMismatchError",),
    "CorruptPayloadError": ("RecordError",),
    "ValidationError": ("RecordError", "ValueError"),
    "WrongMessageTypeError": ("ValidationError", "ValueError"),
    "MalformedEnvelopeError": ("ValidationError",),
    "ColumnValueError": ("ValidationError",),
    "BatchError": ("RecordError",),
    "UnsupportedChangeError": ("RecordError",),
    "RecordDecodeError": ("RecordError",),
    "KeyFieldMismatchError": ("RecordError",),
    "RegistryError": ("SerdesError",),
    "RegistryUnavailableError": ("RegistryError",),
    "RegistryAuthError": ("RegistryError",),
    "RegistryRateLimitedError": ("RegistryError",),
    "RegistryBadResponseError": ("RegistryError",),
    "StateSchemaIncompatibleError": ("_UnlocatedError",),
    "FlinkJobError": ("_UnlocatedError", "RuntimeError"),
    "ConnectorJarError": ("_UnlocatedError", "RuntimeError"),
    "PackedRecordError": ("_UnlocatedError", "ValueError"),
    "JobGraphError": ("_UnlocatedError", "RuntimeError"),
    "ThreadModeError": ("JobGraphError",),
    "StrictTypeError": ("JobGraphError",),
    "ServerStartError": ("_UnlocatedError", "RuntimeError"),
    "MissingToolError": ("_UnlocatedError", "RuntimeError"),
    "FlinkSubmitError": ("_UnlocatedError", "RuntimeError"),
    "FlinkJobFailed": ("_UnlocatedError", "RuntimeError"),
    "ConfluentAPIError": ("_UnlocatedError", "TypeError"),
    "ConfluentVersionError": ("ConfluentAPIError",),
    "PyFlinkAPIError": ("_UnlocatedError", "TypeError"),
}

# the record's fault: a skip-the-bad-record handler (``except SerializationError``) may skip them
RECORD = {name for name in TREE if name != "SerdesError" and issubclass(getattr(serdes._errors, name), serdes.RecordError)}


def test_the_tree_is_pinned():
    import serdes._errors as errors

    classes = {name: getattr(errors, name) for name in errors.__all__
               if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), BaseException)}
    assert {name: tuple(b.__name__ for b in cls.__bases__) for name, cls in classes.items()} == TREE
    assert errors._UnlocatedError.__bases__ == (serdes.SerdesError,)


def test_only_record_errors_are_serialization_errors():
    import serdes._errors as errors

    assert RECORD == {"RecordError", "FramingError", "InvalidMagicByteError", "TruncatedFrameError",
                      "UnknownSchemaError", "SchemaMismatchError", "RemoteRefRefused", "CorruptPayloadError",
                      "ValidationError", "WrongMessageTypeError", "MalformedEnvelopeError", "ColumnValueError", "BatchError",
                      "UnsupportedChangeError", "RecordDecodeError", "KeyFieldMismatchError"}
    for name in TREE:
        cls = getattr(errors, name)
        assert issubclass(cls, serdes.SerdesError)
        assert issubclass(cls, SerializationError) == (name in RECORD), name


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_a_skip_the_bad_record_handler_does_not_swallow_the_environment(caller):
    """``except SerializationError: skip`` skips a bad value, and lets a registry refusing the
    credentials through (confluent-kafka's serdes raise their SchemaRegistryError there, not a
    SerializationError)."""
    call = CALLERS[caller]

    def produce(ser: Any, value: Any) -> str:
        try:
            call(ser, value, ctx())
        except SerializationError:
            return "skipped"
        return "sent"

    assert produce(call.serializer("avro", call.mock_client()), {"name": 5, "nick": None, "tags": []}) == "skipped"
    with FailingRegistry("401") as reg:
        ser = call.serializer("avro", call.client(reg.client_conf()))
        with pytest.raises(serdes.RegistryAuthError):
            produce(ser, GOOD["avro"])


# bad records confluent-kafka's own deserializers are given: serdes raises a SerializationError for
# each one confluent-kafka raises one for (the drop-in promise)
BAD_FRAMES = {
    "bad magic": lambda good: b"\x07" + good[1:],
    "truncated id": lambda good: good[:3],
    "corrupt payload": lambda good: good[:5] + CORRUPT_PAYLOADS[good[5:6] == b"\x00"],
}
CORRUPT_PAYLOADS = {False: b"\xff\xff\xff\xff\xff\xff\xff\xff\xff", True: b"\x00\xff\xff\xff"}


def _confluent_deserializer(fmt: str, client: Any) -> Any:
    from confluent_kafka.schema_registry.avro import AvroDeserializer as CAvro
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJSON
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CProto

    if fmt == "avro":
        return CAvro(client)
    if fmt == "json":
        return CJSON(None, schema_registry_client=client)
    return CProto(order_pb2.Order, {"use.deprecated.format": False}, client)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", sorted(BAD_FRAMES))
def test_what_confluent_kafka_raises_serialization_error_for_still_is_one(fmt, case, frames):
    good = frames["sync"][fmt]
    data = BAD_FRAMES[case](good) if fmt != "json" or case != "corrupt payload" else good[:5] + CORRUPT["json"]
    client = frames["sync"]["client"]
    try:
        _confluent_deserializer(fmt, client)(data, ctx())
        theirs: Any = None
    except Exception as e:
        theirs = e
    with pytest.raises(Exception) as ours:
        CALLERS["sync"].deserializer(fmt, client)(data, ctx())
    assert isinstance(ours.value, serdes.RecordError), repr(ours.value)
    if isinstance(theirs, SerializationError):
        assert isinstance(ours.value, SerializationError)
