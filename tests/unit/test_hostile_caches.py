"""Caches and registry traffic under hostile records (issue 21, findings 4, 5, 6 and 12).

Each test asserts what the bound guarantees -- cached entries, registry requests (counted by a real
HTTP registry stand-in, tests/support/counting_registry.py), memory growth of a child process
under a memory limit, the typed error -- never a wall-clock time. Native and pure Python alike
(the ``implementation`` fixture; the children build their serdes the same way).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, Callable, Dict, Tuple

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import timestamp_pb2

from serdes import BatchError, FramingError, SchemaMismatchError, SerdesError, UnknownSchemaError
from serdes.avro import AsyncAvroDeserializer, AvroDeserializer, AvroSerializer
from serdes.json import JSONDeserializer, JSONSerializer
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

from tests.support.counting_registry import CountingRegistry
from tests.support.implementations import Implementation
from tests.support.isolated import CHILD_PRELUDE, run_bounded
from tests.support.registry_client import async_registry_client, registry_client

pytestmark = pytest.mark.usefixtures("implementation")

FORMATS = ("avro", "json", "protobuf")
PROTO = 'syntax = "proto3";\nmessage M { int64 seconds = 1; }\n'
#: format -> (schema string, schema type, a payload of that schema, its decoded value's check)
SCHEMAS: Dict[str, Tuple[str, str, bytes]] = {
    "avro": ('"string"', "AVRO", b"\x04hi"),
    "json": ('{"type": "string"}', "JSON", b'"hi"'),
    "protobuf": (PROTO, "PROTOBUF", b"\x08\x05"),
}
CTX = SerializationContext("t", MessageField.VALUE)


def _deserializer(fmt: str, client: Any, conf: Any = None) -> Any:
    if fmt == "avro":
        return AvroDeserializer(client, conf=conf)
    if fmt == "json":
        return JSONDeserializer(None, schema_registry_client=client, conf=conf)
    return ProtobufDeserializer(None, conf, client)


def _frame(fmt: str, sid: int) -> bytes:
    return b"\x00" + sid.to_bytes(4, "big") + (b"\x00" if fmt == "protobuf" else b"")


def _check_value(fmt: str, value: Any) -> None:
    if fmt == "protobuf":
        assert value.seconds == 5
    else:
        assert value == "hi"


# -- finding 4: header framing is keyed on the parsed frame; trailing bytes are refused -----------

_CHILD = CHILD_PRELUDE + '''
import gc, os, random, uuid
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes import _native
IMPL = __IMPL__

def build(make):
    if IMPL == "pure":
        with _native.forced_pure():
            return make()
    return make()

def rss():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
'''


def _child(implementation: Implementation) -> str:
    return _CHILD.replace("__IMPL__", repr(implementation.name))


def test_header_junk_after_the_id_is_refused_and_never_cached(implementation: Implementation) -> None:
    out = run_bounded(_child(implementation) + f'''
from serdes import FramingError
from serdes.avro import AvroDeserializer
from serdes.json import JSONDeserializer
from serdes.protobuf import ProtobufDeserializer
SCHEMAS = {SCHEMAS!r}
result = {{}}
for fmt, (text, kind, payload) in SCHEMAS.items():
    client = SchemaRegistryClient.new_client({{"url": "mock://junk-" + uuid.uuid4().hex}})
    sid = client.register_schema("t-value", Schema(text, kind))
    de = build(lambda: AvroDeserializer(client) if fmt == "avro" else JSONDeserializer(
        None, schema_registry_client=client) if fmt == "json" else ProtobufDeserializer(None, None, client))
    head = b"\\x00" + sid.to_bytes(4, "big") + (b"\\x00" if fmt == "protobuf" else b"")
    def ctx(value):
        return SerializationContext("t", MessageField.VALUE, [("__value_schema_id", value)])
    de(payload, ctx(head))
    spellings = 0
    if fmt == "protobuf":  # [0] written as count 1, index 0: another spelling of the same frame
        de(payload, ctx(head[:5] + b"\\x02\\x00"))
        spellings = 1
    before = rss()
    refused = 0
    for i in range(40_000):
        try:
            de(payload, ctx(head + i.to_bytes(4, "big")))
        except FramingError as e:
            refused += "__value_schema_id" in str(e) and "after the schema" in str(e)
    result[fmt] = dict(refused=refused, entries=len(de._header_decoders), spellings=spellings,
                       growth=rss() - before)
print(json.dumps(result))
''')
    assert out.pop("returncode") == 0
    for fmt, r in out.items():
        assert r["refused"] == 40_000, (fmt, r)
        assert r["entries"] == 1, (fmt, r)  # one schema, one entry, whatever the spelling
        assert r["growth"] < 8 << 20, (fmt, r)  # unbounded: ~30 MB for 40,000 records


def test_header_value_spellings_share_one_entry_and_decode() -> None:
    client = SchemaRegistryClient.new_client({"url": f"mock://spell-{uuid.uuid4().hex}"})
    text, kind, payload = SCHEMAS["protobuf"]
    sid = client.register_schema("t-value", Schema(text, kind))
    de = _deserializer("protobuf", client)
    head = b"\x00" + sid.to_bytes(4, "big")
    for indexes in (b"\x00", b"\x02\x00", b"\x82\x00\x00"):  # [0]: short, counted, an over-long varint
        ctx = SerializationContext("t", MessageField.VALUE, {"__value_schema_id": head + indexes})
        _check_value("protobuf", de(payload, ctx))
    assert list(de._header_decoders) == [head + b"\x00"]


# -- finding 5: without a registry client, one decoder per schema, not per frame ------------------


def test_registry_less_deserializers_cache_per_schema_not_per_frame(implementation: Implementation) -> None:
    out = run_bounded(_child(implementation) + '''
from google.protobuf import timestamp_pb2
from serdes.json import JSONDeserializer
from serdes.protobuf import ProtobufDeserializer
rnd = random.Random(21)
result = {}
makers = {
    "json": (lambda: JSONDeserializer('{"type": "string"}'), b'"hi"'),
    "protobuf": (lambda: ProtobufDeserializer(timestamp_pb2.Timestamp, None), b"\\x00\\x08\\x05"),
}
ctx = SerializationContext("t", MessageField.VALUE)
for fmt, (make, payload) in makers.items():
    de = build(make)
    before = rss()
    ok = 0
    for _ in range(40_000):
        value = de(b"\\x00" + rnd.getrandbits(32).to_bytes(4, "big") + payload, ctx)
        ok += value == "hi" if fmt == "json" else value.seconds == 5
    result[fmt] = dict(ok=ok, decoders=len(de._decoders), steps=len(de._steps), shared=len(de._shared),
                       growth=rss() - before)
# random one-byte message-index arrays (count, then that many indexes), random ids
de = build(makers["protobuf"][0])
before = rss()
ok = 0
for _ in range(20_000):
    n = rnd.randrange(1, 60)
    indexes = bytes([2 * n]) + bytes(2 * rnd.randrange(64) for _ in range(n))
    value = de(b"\\x00" + rnd.getrandbits(32).to_bytes(4, "big") + indexes + b"\\x08\\x05", ctx)
    ok += value.seconds == 5
result["indexes"] = dict(ok=ok, decoders=len(de._decoders), steps=len(de._steps), shared=len(de._shared),
                         growth=rss() - before)
print(json.dumps(result))
''')
    assert out.pop("returncode") == 0
    for case, r in out.items():
        assert r["ok"] == (20_000 if case == "indexes" else 40_000), (case, r)
        assert r["shared"] == 1, (case, r)  # one decoder built, for every id
        assert r["decoders"] <= 1000 and r["steps"] <= 1000, (case, r)  # serdes.cache.size
        assert r["growth"] < 16 << 20, (case, r)  # unbounded, 200,000 frames: +305 MB (JSON), +828 MB (Protobuf); a fifth of that is still over


def test_registry_less_errors_name_the_record_schema_id() -> None:
    de = JSONDeserializer('{"type": "string"}')
    de(_frame("json", 7) + b'"ok"', CTX)
    with pytest.raises(SerdesError) as e:
        de(_frame("json", 9) + b"12", CTX)
    assert e.value.schema_id == 9


def test_avro_without_a_registry_is_an_unknown_schema_remembered_and_bounded() -> None:
    de = AvroDeserializer(None, '"string"', conf={"serdes.cache.size": 50})
    for sid in range(300):
        with pytest.raises(UnknownSchemaError):
            de(_frame("avro", sid) + b"\x04hi", CTX)
    assert len(de._decoders) == 0 and len(de._misses) <= 50


# -- finding 6: bounded caches, misses remembered ------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_distinct_valid_ids_stay_within_the_bound(fmt: str) -> None:
    text, kind, payload = SCHEMAS[fmt]
    # (Protobuf compiles each schema with protoc: fewer ids, a smaller bound)
    ids, bound = (60, 10) if fmt == "protobuf" else (400, 50)
    with CountingRegistry(any_id_below=1 << 20, any_schema=(text, kind)) as reg:
        de = _deserializer(fmt, registry_client(reg.url), {"serdes.cache.size": bound})
        for sid in range(1, ids + 1):
            _check_value(fmt, de(_frame(fmt, sid) + payload, CTX))
            _check_value(fmt, de(_frame(fmt, sid) + payload, CTX))  # a hit
        assert len(de._decoders) <= bound and len(de._steps) <= bound
        parsed = getattr(getattr(de, "_parsed_schemas", None), "parsed_schemas", {})
        assert len(parsed) <= bound
        assert reg.count("GET /schemas/ids/") == ids  # one request per distinct id, none per record
        _check_value(fmt, de(_frame(fmt, 1) + payload, CTX))  # evicted: rebuilt, still decodes


@pytest.mark.parametrize("fmt", FORMATS)
def test_unknown_id_and_guid_are_asked_once_per_ttl(fmt: str) -> None:
    _, _, payload = SCHEMAS[fmt]
    with CountingRegistry() as reg:
        de = _deserializer(fmt, registry_client(reg.url), {"serdes.cache.miss.ttl": 0.5})
        for offset in range(100):
            ctx = SerializationContext("t", MessageField.VALUE)
            ctx.offset = offset  # type: ignore[attr-defined]
            with pytest.raises(UnknownSchemaError) as e:
                de(_frame(fmt, 77) + payload, ctx)
            assert e.value.schema_id == 77 and e.value.location.offset == offset
        assert reg.count("GET /schemas/ids/77") == 1
        guid = uuid.uuid4()
        guid_frame = b"\x01" + guid.bytes + (b"\x00" if fmt == "protobuf" else b"")
        for _ in range(100):
            with pytest.raises(UnknownSchemaError):
                de(guid_frame + payload, CTX)
        assert reg.count("GET /schemas/guids/") == 1
        with pytest.raises(BatchError) as b:
            de.deserialize_batch([_frame(fmt, 77) + payload] * 50, CTX)
        assert [type(err) for _, err in b.value.errors] == [UnknownSchemaError] * 50
        assert reg.count("GET /schemas/ids/77") == 1
        time.sleep(0.6)  # past serdes.cache.miss.ttl: the registry is asked again, once
        for _ in range(10):
            with pytest.raises(UnknownSchemaError):
                de(_frame(fmt, 77) + payload, CTX)
        assert reg.count("GET /schemas/ids/77") == 2


def test_remembered_misses_are_bounded() -> None:
    with CountingRegistry() as reg:
        de = _deserializer("avro", registry_client(reg.url), {"serdes.cache.size": 40})
        for sid in range(200):
            with pytest.raises(UnknownSchemaError):
                de(_frame("avro", sid) + b"\x04hi", CTX)
        assert len(de._misses) <= 40 and len(de._decoders) == 0
        assert reg.count("GET /schemas/ids/") == 200


def _serializer(fmt: str, client: Any) -> Callable[[], Any]:
    if fmt == "avro":
        return AvroSerializer(client, '"string"')
    if fmt == "json":
        return JSONSerializer('{"type": "string"}', client)
    return ProtobufSerializer(timestamp_pb2.Timestamp, client, {"use.deprecated.format": False})


@pytest.mark.parametrize("fmt", FORMATS)
def test_failing_subject_is_asked_once_per_ttl(fmt: str) -> None:
    value = timestamp_pb2.Timestamp(seconds=5) if fmt == "protobuf" else "hi"
    with CountingRegistry(reject_subjects=True) as reg:
        ser = _serializer(fmt, registry_client(reg.url))
        for _ in range(100):
            with pytest.raises(SchemaMismatchError):
                ser(value, CTX)
        with pytest.raises(BatchError) as b:
            ser.serialize_batch([value] * 20, CTX)
        assert {type(err) for _, err in b.value.errors} == {SchemaMismatchError}
        assert reg.count("POST /subjects/t-value/versions") == 1


def test_async_unknown_id_is_asked_once() -> None:
    async def run(url: str) -> None:
        de = await AsyncAvroDeserializer(async_registry_client(url))
        for _ in range(50):
            with pytest.raises(UnknownSchemaError):
                await de(_frame("avro", 5) + b"\x04hi", CTX)

    with CountingRegistry() as reg:
        asyncio.run(run(reg.url))
        assert reg.count("GET /schemas/ids/5") == 1


# -- finding 12: every header value type is a typed error naming the header ----------------------

BAD_VALUES = ["\u0100\x00\x00\x00\x01", "\U0001f600", 5, 1.5, object(), [0, 0, 0, 0, 1], {"a": 1}, True]
BAD_HEADERS = [[("__value_schema_id",)], [1, 2], [("__value_schema_id", b"\x00", b"x")], 5, object()]


@pytest.mark.parametrize("fmt", FORMATS)
def test_header_values_of_every_type_are_typed_errors(fmt: str) -> None:
    client = SchemaRegistryClient.new_client({"url": f"mock://types-{uuid.uuid4().hex}"})
    text, kind, payload = SCHEMAS[fmt]
    sid = client.register_schema("t-value", Schema(text, kind))
    de = _deserializer(fmt, client)
    for field, name in ((MessageField.VALUE, "__value_schema_id"), (MessageField.KEY, "__key_schema_id")):
        for value in BAD_VALUES:
            ctx = SerializationContext("t", field, [(name, value)])
            with pytest.raises(FramingError) as e:
                de(payload, ctx)
            assert name in str(e.value), (value, e.value)
            got = de.deserialize_batch([payload, payload], ctx, errors="collect")
            assert all(isinstance(x, FramingError) for x in got), got
    for headers in BAD_HEADERS:
        ctx = SerializationContext("t", MessageField.VALUE, headers)
        with pytest.raises(FramingError) as e:
            de(payload, ctx)
        assert "__value_schema_id" in str(e.value)
        with pytest.raises(BatchError) as b:
            de.deserialize_batch([payload], ctx)
        assert all(isinstance(err, SerdesError) for _, err in b.value.errors)
    # a null header value is no header, as in confluent-kafka: the payload's own frame is read
    ctx = SerializationContext("t", MessageField.VALUE, [("__value_schema_id", None)])
    _check_value(fmt, de(_frame(fmt, sid) + payload, ctx))
    # latin-1 text is the header's bytes
    ctx = SerializationContext("t", MessageField.VALUE, [("__value_schema_id", _frame(fmt, sid).decode("latin-1"))])
    _check_value(fmt, de(payload, ctx))


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_untyped_exception_is_never_filed_as_a_record_error(fmt: str) -> None:
    client = SchemaRegistryClient.new_client({"url": f"mock://bug-{uuid.uuid4().hex}"})
    text, kind, payload = SCHEMAS[fmt]
    sid = client.register_schema("t-value", Schema(text, kind))
    de = _deserializer(fmt, client)
    good = _frame(fmt, sid) + payload
    # a payload that is not bytes is the caller's bug (bytes(5) would be a frame of schema id 0)
    for errors in ("raise", "collect"):
        with pytest.raises(TypeError):
            de.deserialize_batch([good, 5, b"\x07bad"], CTX, errors=errors)
    with pytest.raises(BatchError) as b:
        de.deserialize_batch([good, b"\x07bad", b""], CTX)
    assert all(isinstance(err, SerdesError) for _, err in b.value.errors)


@pytest.mark.parametrize("fmt", FORMATS)
def test_encoders_by_topic_stay_within_the_bound(fmt: str) -> None:
    client = SchemaRegistryClient.new_client({"url": f"mock://topics-{uuid.uuid4().hex}"})
    conf = {"serdes.cache.size": 20}
    ser = (AvroSerializer(client, '"string"', conf=conf) if fmt == "avro"
           else JSONSerializer('{"type": "string"}', client, conf=conf) if fmt == "json"
           else ProtobufSerializer(timestamp_pb2.Timestamp, client, {"use.deprecated.format": False, **conf}))
    de = _deserializer(fmt, client)
    value = timestamp_pb2.Timestamp(seconds=5) if fmt == "protobuf" else "hi"
    for i in range(100):
        for field in (MessageField.VALUE, MessageField.KEY):
            framed = ser(value, SerializationContext(f"t{i}", field))
            _check_value(fmt, de(framed, SerializationContext(f"t{i}", field)))
    assert len(ser._encoders) <= 20 and len(ser._value_encoders) <= 20 and len(ser._key_encoders) <= 20


def test_remembered_misses_do_not_keep_their_records_alive() -> None:
    import gc
    import tracemalloc

    with CountingRegistry() as reg:
        de = _deserializer("avro", registry_client(reg.url))
        tracemalloc.start()
        try:
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            for sid in range(60):
                record = _frame("avro", 1000 + sid) + bytes(1 << 20)  # 1 MiB each, one per unknown id
                with pytest.raises(UnknownSchemaError):
                    de(record, CTX)
                del record
            gc.collect()
            growth = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert len(de._misses) == 60
        assert growth < 8 << 20, growth  # pinned by the tracebacks: 60 MiB
