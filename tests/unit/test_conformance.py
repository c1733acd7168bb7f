"""Conformance with confluent-kafka: every row of docs/conformance.md, sync and asyncio, on mock://.

Each test runs one scenario twice in the same mode -- with confluent-kafka's class and with serdes'
class of the same name -- on fresh mock registries, and asserts the same outcome: the same bytes
(or decoded value), or an error of confluent-kafka's class (serdes' errors subclass it).
"""

from __future__ import annotations

import inspect
import uuid
from typing import Any, Callable, Dict, Tuple

import pytest

from confluent_kafka.schema_registry import (
    AsyncSchemaRegistryClient,
    Schema,
    SchemaRegistryClient,
    header_schema_id_serializer,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
)
from confluent_kafka.schema_registry import avro as c_avro
from confluent_kafka.schema_registry import json_schema as c_json
from confluent_kafka.schema_registry import protobuf as c_protobuf
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes_test import common_pb2, order_pb2
from tests.support.confluent_releases import TOPIC_STRATEGY, needs

import serdes.avro as s_avro
import serdes.json as s_json
import serdes.protobuf as s_protobuf

MODES = ["sync", "async"]
IMPLS = {"confluent": {"avro": c_avro, "protobuf": c_protobuf, "json": c_json},
         "serdes": {"avro": s_avro, "protobuf": s_protobuf, "json": s_json}}

AVRO = ('{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"},'
        '{"name":"age","type":"int","default":0}]}')
AVRO_V2 = ('{"type":"record","name":"User","namespace":"ex","fields":[{"name":"name","type":"string"},'
           '{"name":"age","type":"int","default":0},{"name":"email","type":"string","default":"-"}]}')
AVRO_UNION = ('[{"type":"record","name":"A","fields":[{"name":"a","type":"int"}]},'
              '{"type":"record","name":"B","fields":[{"name":"b","type":"string"}]}]')
JSON = ('{"type":"object","title":"User","properties":{"name":{"type":"string"},"age":{"type":"integer"}},'
        '"required":["name"]}')

VALUE = SerializationContext("users", MessageField.VALUE)

#: subject.name.strategy.type / subject.name.strategy.conf are confluent-kafka 2.14's
_STRATEGY_CONF = needs("2.14", "subject.name.strategy.type / .conf")


def _ctx(headers: Any = None) -> SerializationContext:
    return SerializationContext("users", MessageField.VALUE, headers)


class Env:
    """One implementation in one mode: builds its classes and awaits them when they are asyncio."""

    def __init__(self, impl: str, mode: str) -> None:
        self.impl, self.mode = impl, mode
        url = f"mock://conf-{uuid.uuid4().hex}"
        self.client = (AsyncSchemaRegistryClient if mode == "async" else SchemaRegistryClient).new_client({"url": url})

    async def make(self, fmt: str, name: str, *args: Any, **kwargs: Any) -> Any:
        cls = getattr(IMPLS[self.impl][fmt], ("Async" if self.mode == "async" else "") + name)
        obj = cls(*args, **kwargs)
        return await obj if self.mode == "async" else obj

    async def reg(self, method: str, *args: Any) -> Any:
        out = getattr(self.client, method)(*args)
        return await out if inspect.isawaitable(out) else out


async def call(serde: Any, *args: Any) -> Any:
    out = serde(*args)
    return await out if inspect.isawaitable(out) else out


async def outcome(fn: Callable[[], Any]) -> Tuple[str, Any]:
    try:
        return "ok", await fn()
    except Exception as e:  # compared across implementations below
        return "err", e


async def same(scenario: Callable[[Env], Any], mode: str) -> Any:
    """Run ``scenario`` with both implementations; assert serdes' outcome equals confluent-kafka's."""
    theirs = await outcome(lambda: scenario(Env("confluent", mode)))
    ours = await outcome(lambda: scenario(Env("serdes", mode)))
    if theirs[0] == "err":
        assert ours[0] == "err", f"confluent-kafka raised {theirs[1]!r}, serdes returned {ours[1]!r}"
        assert isinstance(ours[1], type(theirs[1])), f"serdes raised {ours[1]!r}, confluent-kafka {theirs[1]!r}"
    else:
        assert ours == theirs
    return theirs[1]


# -- Avro -----------------------------------------------------------------------------------------

@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("record", [{"name": "a", "age": 1, "extra": 2}, {"name": "a"}, {"name": "a", "age": 3}])
@pytest.mark.parametrize("conf", [{"validate.strict": True}, {"validate.strict.allow.default": True}, {}])
async def test_avro_validate_strict(mode: str, conf: Dict[str, Any], record: Dict[str, Any]) -> None:
    async def scenario(env: Env) -> Any:
        ser = await env.make("avro", "AvroSerializer", env.client, AVRO, None, conf)
        await call(ser, {"name": "warm", "age": 0}, VALUE)  # the cached encoder path, not only the first record
        return await call(ser, record, VALUE)

    await same(scenario, mode)


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_avro_to_dict_from_dict(mode: str) -> None:
    async def scenario(env: Env) -> Any:
        ser = await env.make("avro", "AvroSerializer", env.client, AVRO, lambda o, ctx: {"name": o[0], "age": o[1]})
        de = await env.make("avro", "AvroDeserializer", env.client, None, lambda d, ctx: (d["name"], d["age"]))
        return [await call(de, await call(ser, ("x", i), VALUE), VALUE) for i in range(3)]

    assert await same(scenario, mode) == [("x", 0), ("x", 1), ("x", 2)]


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_avro_return_record_name(mode: str) -> None:
    async def scenario(env: Env) -> Any:
        ser = await env.make("avro", "AvroSerializer", env.client, AVRO_UNION, None, TOPIC_STRATEGY)
        de = await env.make("avro", "AvroDeserializer", env.client, None, None, True)
        return [await call(de, await call(ser, ("B", {"b": "x"}), VALUE), VALUE) for _ in range(2)]

    assert await same(scenario, mode) == [("B", {"b": "x"})] * 2


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("conf", [{"use.latest.version": True},
                                  {"use.latest.with.metadata": {"owner": "team-a"}}])
async def test_avro_use_latest(mode: str, conf: Dict[str, Any]) -> None:
    async def scenario(env: Env) -> Any:
        meta = {"properties": {"owner": "team-a"}} if "use.latest.with.metadata" in conf else None
        from confluent_kafka.schema_registry import Metadata

        await env.reg("register_schema", "users-value", Schema(AVRO, "AVRO"))
        v2 = Schema(AVRO_V2, "AVRO", metadata=Metadata(None, meta["properties"], None) if meta else None)
        await env.reg("register_schema", "users-value", v2)
        ser = await env.make("avro", "AvroSerializer", env.client, AVRO_V2, None,
                             dict(conf, **{"auto.register.schemas": False, **TOPIC_STRATEGY}))
        de = await env.make("avro", "AvroDeserializer", env.client, None, None, False,
                            dict(conf, **TOPIC_STRATEGY))
        data = [await call(ser, {"name": "n", "age": i, "email": "e"}, VALUE) for i in range(2)]
        return data, [await call(de, d, VALUE) for d in data]

    await same(scenario, mode)


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["callable", pytest.param("type", marks=_STRATEGY_CONF), pytest.param("conf", marks=_STRATEGY_CONF)])
async def test_avro_subject_name_strategy(mode: str, how: str) -> None:
    conf = {"callable": {"subject.name.strategy": topic_record_subject_name_strategy},
            "type": {"subject.name.strategy.type": "RECORD"},
            "conf": {"subject.name.strategy": record_subject_name_strategy,
                     "subject.name.strategy.conf": {}}}[how]

    async def scenario(env: Env) -> Any:
        ser = await env.make("avro", "AvroSerializer", env.client, AVRO, None, conf)
        out = [await call(ser, {"name": "n", "age": i}, VALUE) for i in range(2)]
        return out, sorted(await env.reg("get_subjects"))

    _, subjects = await same(scenario, mode)
    assert subjects == (["users-ex.User"] if how == "callable" else ["ex.User"])


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", ["avro", "json"])
async def test_header_schema_id_framing(mode: str, fmt: str) -> None:
    async def scenario(env: Env) -> Any:
        cls = "AvroSerializer" if fmt == "avro" else "JSONSerializer"
        args = (env.client, AVRO) if fmt == "avro" else (JSON, env.client)
        ser = await env.make(fmt, cls, *args, None, {"schema.id.serializer": header_schema_id_serializer})
        out = []
        for i in range(2):
            headers: list = []
            # (confluent-kafka's Avro deserializer refuses header-framed payloads under 6 bytes)
            payload = await call(ser, {"name": "header-framed", "age": i}, _ctx(headers))
            out.append((payload, headers))
        if fmt == "avro":
            de = await env.make("avro", "AvroDeserializer", env.client)
        else:
            de = await env.make("json", "JSONDeserializer", None, None, env.client)
        # header values hold the schema GUID, random per registry: compare payloads and header names
        return ([(p, [name for name, _ in h]) for p, h in out], [await call(de, p, _ctx(h)) for p, h in out])

    out, decoded = await same(scenario, mode)
    assert out[0][1] == ["__value_schema_id"] and decoded[1] == {"name": "header-framed", "age": 1}


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_avro_normalize_schemas(mode: str) -> None:
    spaced = AVRO.replace(",", ", ")

    async def scenario(env: Env) -> Any:
        ser = await env.make("avro", "AvroSerializer", env.client, spaced, None, {"normalize.schemas": True})
        out = [await call(ser, {"name": "n", "age": i}, VALUE) for i in range(2)]
        return out, [r.schema.schema_str for r in [await env.reg("get_latest_version", "users-value")]]

    await same(scenario, mode)


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_avro_use_schema_id(mode: str) -> None:
    async def scenario(env: Env) -> Any:
        sid = await env.reg("register_schema", "users-value", Schema(AVRO, "AVRO"))
        ser = await env.make("avro", "AvroSerializer", env.client, AVRO, None,
                             {"use.schema.id": sid, "auto.register.schemas": False})
        return [await call(ser, {"name": "n", "age": i}, VALUE) for i in range(2)]

    await same(scenario, mode)


# -- Protobuf -------------------------------------------------------------------------------------

@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_protobuf_deserializer_without_client(mode: str) -> None:
    async def scenario(env: Env) -> Any:
        ser = await env.make("protobuf", "ProtobufSerializer", order_pb2.Order, env.client, {"use.deprecated.format": False})
        de = await env.make("protobuf", "ProtobufDeserializer", order_pb2.Order, {"use.deprecated.format": False})
        return [await call(de, await call(ser, order_pb2.Order(id=i, customer="c"), VALUE), VALUE) for i in range(3)]

    assert [m.id for m in await same(scenario, mode)] == [0, 1, 2]


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_protobuf_use_schema_id_lookups(mode: str) -> None:
    calls: Dict[str, list] = {}

    async def scenario(env: Env) -> Any:
        base = await env.make("protobuf", "ProtobufSerializer", order_pb2.Order, env.client, {"use.deprecated.format": False})
        first = await call(base, order_pb2.Order(id=1), VALUE)
        sid = int.from_bytes(first[1:5], "big")
        counted = calls.setdefault(env.impl, [])
        original = env.client.get_schema

        if env.mode == "async":
            async def counting(*a: Any, **k: Any) -> Any:
                counted.append(a)
                return await original(*a, **k)
        else:
            def counting(*a: Any, **k: Any) -> Any:  # type: ignore[misc]
                counted.append(a)
                return original(*a, **k)

        env.client.get_schema = counting  # type: ignore[method-assign]
        ser = await env.make("protobuf", "ProtobufSerializer", order_pb2.Order, env.client,
                             {"use.deprecated.format": False, "auto.register.schemas": False, "use.schema.id": sid})
        out = [await call(ser, order_pb2.Order(id=0), VALUE)]
        counted.append("after the first record")
        return out + [await call(ser, order_pb2.Order(id=i), VALUE) for i in range(1, 5)]

    await same(scenario, mode)
    # the first record: exactly the lookups confluent-kafka makes (the schema it resolved is reused
    # to check for rules, not fetched again); later records: none (confluent-kafka: one per record)
    first = {impl: c[:c.index("after the first record")] for impl, c in calls.items()}
    assert first["serdes"] == first["confluent"]
    assert calls["serdes"][-1] == "after the first record"


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("conf", [{"skip.known.types": True}, {"skip.known.types": False},
                                  {"reference.subject.name.strategy": lambda ctx, fd: "ref-" + fd.name},
                                  {"normalize.schemas": True}])
async def test_protobuf_serializer_conf(mode: str, conf: Dict[str, Any]) -> None:
    async def scenario(env: Env) -> Any:
        ser = await env.make("protobuf", "ProtobufSerializer", order_pb2.Order, env.client,
                             dict(conf, **{"use.deprecated.format": False}))
        de = await env.make("protobuf", "ProtobufDeserializer", order_pb2.Order, {"use.deprecated.format": False}, env.client)
        out = [await call(ser, order_pb2.Order(id=i, level=common_pb2.HIGH), VALUE) for i in range(2)]
        return out, [await call(de, o, VALUE) for o in out], sorted(await env.reg("get_subjects"))

    await same(scenario, mode)


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_protobuf_wrong_type_raises_value_error(mode: str) -> None:
    async def scenario(env: Env) -> Any:
        ser = await env.make("protobuf", "ProtobufSerializer", order_pb2.Order, env.client, {"use.deprecated.format": False})
        await call(ser, order_pb2.Order(id=1), VALUE)
        return await call(ser, common_pb2.Money(), VALUE) if hasattr(common_pb2, "Money") else await call(ser, "x", VALUE)

    await same(scenario, mode)


# -- JSON Schema ----------------------------------------------------------------------------------

@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_json_deserializer_without_client(mode: str) -> None:
    async def scenario(env: Env) -> Any:
        ser = await env.make("json", "JSONSerializer", JSON, env.client)
        de = await env.make("json", "JSONDeserializer", JSON)
        data = [await call(ser, {"name": "n", "age": i}, VALUE) for i in range(2)]
        return [await call(de, d, VALUE) for d in data]

    assert await same(scenario, mode) == [{"name": "n", "age": 0}, {"name": "n", "age": 1}]


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("record", [{"name": "n"}, {"age": 1}, {"name": 5}])
async def test_json_validation(mode: str, record: Dict[str, Any]) -> None:
    async def scenario(env: Env) -> Any:
        ser = await env.make("json", "JSONSerializer", JSON, env.client)
        await call(ser, {"name": "warm"}, VALUE)
        return await call(ser, record, VALUE)

    await same(scenario, mode)


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_json_to_dict_from_dict_use_latest(mode: str) -> None:
    async def scenario(env: Env) -> Any:
        await env.reg("register_schema", "users-value", Schema(JSON, "JSON"))
        ser = await env.make("json", "JSONSerializer", JSON, env.client, lambda o, ctx: {"name": o},
                             {"use.latest.version": True, "auto.register.schemas": False,
                              **TOPIC_STRATEGY})
        de = await env.make("json", "JSONDeserializer", None, lambda d, ctx: d["name"], env.client,
                            {"use.latest.version": True, **TOPIC_STRATEGY})
        return [await call(de, await call(ser, f"n{i}", VALUE), VALUE) for i in range(2)]

    assert await same(scenario, mode) == ["n0", "n1"]


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("conf", [{"use.latest.version": True},
                                  pytest.param({"subject.name.strategy.type": "RECORD"}, marks=_STRATEGY_CONF),
                                  {"schema.id.serializer": header_schema_id_serializer}])
async def test_protobuf_conf_forms(mode: str, conf: Dict[str, Any]) -> None:
    async def scenario(env: Env) -> Any:
        if "use.latest.version" in conf:
            primer = await env.make("protobuf", "ProtobufSerializer", order_pb2.Order, env.client,
                                    {"use.deprecated.format": False, **TOPIC_STRATEGY})
            await call(primer, order_pb2.Order(id=99), VALUE)
            ser_conf = dict(conf, **{"auto.register.schemas": False, **TOPIC_STRATEGY})
            de_conf = dict(conf, **TOPIC_STRATEGY)
        elif "schema.id.serializer" in conf:
            ser_conf, de_conf = dict(conf), {}
        else:
            ser_conf, de_conf = dict(conf), dict(conf)
        ser = await env.make("protobuf", "ProtobufSerializer", order_pb2.Order, env.client,
                             dict(ser_conf, **{"use.deprecated.format": False}))
        de = await env.make("protobuf", "ProtobufDeserializer", order_pb2.Order,
                            dict(de_conf, **{"use.deprecated.format": False}), env.client)
        out = []
        for i in range(2):
            headers: list = []
            out.append((await call(ser, order_pb2.Order(id=i, customer="c"), _ctx(headers)),
                        [name for name, _ in headers], headers))
        decoded = [await call(de, p, _ctx(h)) for p, _, h in out]
        return [(p, names) for p, names, _ in out], decoded, sorted(await env.reg("get_subjects"))

    _, decoded, subjects = await same(scenario, mode)
    assert [m.id for m in decoded] == [0, 1]
    if conf.get("subject.name.strategy.type") == "RECORD":
        assert "serdes.test.Order" in subjects


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("conf", [{"normalize.schemas": True},
                                  pytest.param({"subject.name.strategy.type": "RECORD"}, marks=_STRATEGY_CONF),
                                  {"use.schema.id": 1, "auto.register.schemas": False}])
async def test_json_conf_forms(mode: str, conf: Dict[str, Any]) -> None:
    async def scenario(env: Env) -> Any:
        if "use.schema.id" in conf:
            await env.reg("register_schema", "users-value", Schema(JSON, "JSON"))
        ser = await env.make("json", "JSONSerializer", JSON.replace(",", ", "), env.client, None, conf)
        de = await env.make("json", "JSONDeserializer", None, None, env.client,
                            {k: v for k, v in conf.items() if k.startswith("subject.name")})
        out = [await call(ser, {"name": "n", "age": i}, VALUE) for i in range(2)]
        return out, [await call(de, o, VALUE) for o in out], sorted(await env.reg("get_subjects"))

    out, decoded, subjects = await same(scenario, mode)
    assert decoded == [{"name": "n", "age": 0}, {"name": "n", "age": 1}]
    if "subject.name.strategy.type" in conf:
        assert subjects == ["User"]
