"""Coverage-guided differential fuzzer of serdes' native Avro code (atheris / libFuzzer).

Each input drives one of three targets, native against the pure-Python reference built for the
same schema in the same process (serdes._native.forced_pure):

* ``decode``: a compiled decoder (``AvroDecoder``) on the input's bytes, for a writer/reader pair
  of ``SCHEMAS`` (recursive records, general unions, logical types, defaults, promotions, enums);
  a value it decodes without a reader schema must also be what fastavro's ``schemaless_reader`` reads;
* ``dispatch``: a framed record through ``AvroDeserializer`` (the native ``Dispatcher``: frame
  head, cache lookup, direct Avro arm) against a pure deserializer over the same mock registry;
* ``json dispatch`` / ``json encode``: framed JSON through ``JSONDeserializer`` and JSON-ish values
  through ``JSONSerializer`` (the dispatchers' step arms: parse, validate, convert, dump);
* ``encode``: a value built from the input along a schema (with wrong types, out-of-range numbers,
  lone surrogates, NaN, naive datetimes mixed in) through ``AvroSerializer``'s native encoder;
* ``arrow``: a list of frames (valid ones, and frame heads followed by the input's bytes) through
  ``deserialize_arrow`` with ``errors="collect"`` -- the native columnar decoders (Avro, Protobuf,
  JSON Schema; JSON bodies also built from the input along the schema's properties)
  against the per-record path: the same batch, rows and error classes.

A finding is: a crash or a ``BaseException`` (a PyO3 ``PanicException``), a value or byte string
that differs from the pure path's, one side raising where the other does not, or different error
classes (the decoder alone may raise its typed ``CorruptPayloadError`` where the pure decoder lets
an ``IndexError``/``struct.error`` escape: the deserializer reports both as ``CorruptPayloadError``).

Run (tests/fuzz/run.sh does this): ``python tests/fuzz/fuzz_native.py WORKDIR tests/fuzz/corpus
-max_total_time=60``. With ``SERDES_FUZZ_NATIVE_COVERAGE=1`` (run.sh --coverage) the extension
was built with libFuzzer's coverage counters, so the Rust code guides the search too.
"""

from __future__ import annotations

import copy
import json
import datetime
import decimal
import io
import math
import os
import struct
import sys
import uuid
from typing import Any, Callable, Dict, List, Tuple

import atheris

with atheris.instrument_imports(include=["serdes"]):
    import fastavro
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    import serdes
    from serdes import SerdesError, _native
    from serdes._limits import Limits
    from serdes.avro import AvroDeserializer, AvroSerializer
    from serdes.avro._native_decoder import compile_native_decoder
    from serdes.json import JSONDeserializer, JSONSerializer
    from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

import pyarrow as pa  # noqa: E402
from serdes_test import order_pb2  # noqa: E402
from tests.support.arrow_rows import storage_rows  # noqa: E402

_root = os.environ.get("SERDES_FUZZ_EXPECT_ROOT")  # run.sh: the package copy --coverage loads
if _root and not serdes.__file__.startswith(_root):
    sys.exit(f"serdes imported from {serdes.__file__}, not from {_root}")
if _native.native is None:
    sys.exit(f"the native extension is not loaded ({_native.pure_python_reason}): nothing to fuzz")

UTC = datetime.timezone.utc

RECURSIVE = {"type": "record", "name": "Node", "fields": [
    {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]}
LOGICAL = {"type": "record", "name": "Logical", "fields": [
    {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3}},
    {"name": "fdec", "type": {"type": "fixed", "name": "F8", "size": 8, "logicalType": "decimal",
                              "precision": 18, "scale": 2}},
]}
UNIONS = {"type": "record", "name": "Unions", "fields": [
    {"name": "u", "type": ["null", "boolean", "int", "long", "float", "double", "string", "bytes"]},
    {"name": "e", "type": ["string", {"type": "enum", "name": "Suit", "symbols": ["H", "S"]}]},
    {"name": "c", "type": ["null", {"type": "array", "items": "long"}, {"type": "map", "values": "double"}]},
    {"name": "f", "type": [{"type": "fixed", "name": "F2", "size": 2}, "bytes"]},
]}
CONTAINERS = {"type": "record", "name": "Containers", "fields": [
    {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": ["null", "string"]}}},
    {"name": "a", "type": {"type": "array", "items": {"type": "record", "name": "Empty", "fields": []}}},
    {"name": "n", "type": {"type": "array", "items": "null"}},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["R", "G", "B"], "default": "R"}},
    {"name": "x", "type": {"type": "fixed", "name": "F3", "size": 3}},
    {"name": "fl", "type": "float"},
]}
WRITER_V1 = {"type": "record", "name": "Evolve", "fields": [
    {"name": "a", "type": "int"}, {"name": "gone", "type": {"type": "array", "items": "string"}},
    {"name": "s", "type": "string"}, {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y", "Z"]}}]}
READER_V2 = {"type": "record", "name": "Evolve", "fields": [
    {"name": "a", "type": "double"}, {"name": "s", "type": "bytes"},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"], "default": "X"}},
    {"name": "new", "type": {"type": "map", "values": "int"}, "default": {"k": 1}}]}

#: the JSON Schema of the JSON targets (the dispatcher's step arms: parse, validate, encode)
JSON_SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer", "minimum": 0}, "name": {"type": "string", "maxLength": 8},
    "tags": {"type": "array", "items": {"type": "string"}}, "score": {"type": ["number", "null"]},
    "child": {"$ref": "#"}}, "required": ["id"]}
JSON_VALID = {"id": 1, "name": "a", "tags": ["x"], "score": 0.5, "child": {"id": 2}}
#: the columnar JSON target's schema: one the native columnar decoder compiles (no recursion)
ARROW_JSON_SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer", "minimum": 0}, "name": {"type": "string", "maxLength": 8},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}, "score": {"type": ["number", "null"]},
    "kind": {"enum": ["a", "b"]}, "sub": {"type": "object", "properties": {"x": {"type": "boolean"}}}},
    "required": ["id"]}

#: (writer, reader) pairs of the decode target; the writers are the dispatch/encode schemas
SCHEMAS: List[Tuple[Any, Any]] = [
    (RECURSIVE, None), (LOGICAL, None), (UNIONS, None), (CONTAINERS, None), (WRITER_V1, READER_V2),
    ("long", "double"), ({"type": "array", "items": RECURSIVE}, None),
]
WRITERS = [RECURSIVE, LOGICAL, UNIONS, CONTAINERS, WRITER_V1]


#: serdes.max.items for the decoders: items of zero bytes (null, empty records) are bounded by it
#: alone (docs/security.md), so the default 10,000,000 lets a 40-byte input take seconds; a lower
#: budget reaches the same checks in microseconds
MAX_ITEMS = 100_000


def _build() -> Dict[str, Any]:
    limits = Limits(max_items=MAX_ITEMS)
    decoders = [
        (compile_native_decoder(w, r, limits=limits), _pure(lambda w=w, r=r: compile_native_decoder(w, r, limits=limits)))
        for w, r in SCHEMAS
    ]
    client = SchemaRegistryClient.new_client({"url": "mock://fuzz-native"})
    conf = {"auto.register.schemas": True}
    sers = []
    for w in WRITERS:
        text = json.dumps(w)
        sers.append((AvroSerializer(client, text, conf=conf), _pure(lambda text=text: AvroSerializer(client, text, conf=conf))))
    jtext = json.dumps(JSON_SCHEMA)
    items = {"serdes.max.items": MAX_ITEMS}
    parsed = [(fastavro.parse_schema(w), None if r is None else fastavro.parse_schema(r)) for w, r in SCHEMAS]
    pb_conf = {"use.deprecated.format": False}
    arrow = {
        "avro": [(AvroDeserializer(client, conf=items), _pure(lambda: AvroDeserializer(client, conf=items)))],
        "protobuf": [(ProtobufDeserializer(order_pb2.Order, {**pb_conf, **items}),
                      _pure(lambda: ProtobufDeserializer(order_pb2.Order, {**pb_conf, **items})))],
        "json": [(JSONDeserializer(json.dumps(ARROW_JSON_SCHEMA), schema_registry_client=client, conf=items),
                  _pure(lambda: JSONDeserializer(json.dumps(ARROW_JSON_SCHEMA), schema_registry_client=client,
                                                 conf=items)))],
    }
    return {"arrow": arrow, "pb_ser": ProtobufSerializer(order_pb2.Order, client, pb_conf),
            "arrow_json_ser": JSONSerializer(json.dumps(ARROW_JSON_SCHEMA), client),
            "decoders": decoders, "parsed": parsed, "ctx": SerializationContext("fuzz", MessageField.VALUE), "sers": sers,
            "deser": (AvroDeserializer(client, conf=items), _pure(lambda: AvroDeserializer(client, conf=items))),
            "json_ser": (JSONSerializer(jtext, client), _pure(lambda: JSONSerializer(jtext, client))),
            "json_de": (JSONDeserializer(None, schema_registry_client=client),
                        _pure(lambda: JSONDeserializer(None, schema_registry_client=client)))}


def _pure(make: Callable[[], Any]) -> Any:
    with _native.forced_pure():
        return make()


# --- values -----------------------------------------------------------------------------------

ODD = [None, True, 0, -1, 2**31, 2**63, -(2**63) - 1, 1.5, float("nan"), float("inf"), 3.5e38, "s", "\ud800",
       b"b", bytearray(b"ba"), [], {}, ("Node", {}), decimal.Decimal("NaN"), decimal.Decimal("1.2345"),
       datetime.datetime(2020, 1, 1), datetime.datetime(1, 1, 1, tzinfo=UTC), datetime.date(9999, 12, 31),
       uuid.UUID(int=7), "12345678-1234-5678-1234-567812345678"]


def value(fdp: Any, schema: Any, named: Dict[str, Any], depth: int = 0) -> Any:
    """A value for ``schema`` chosen by the input, now and then of the wrong type."""
    if fdp.ConsumeIntInRange(0, 15) == 0:
        return ODD[fdp.ConsumeIntInRange(0, len(ODD) - 1)]
    if isinstance(schema, str):
        if schema in named:
            return value(fdp, named[schema], named, depth + 1)
        t = schema
        schema = {"type": t}
    if isinstance(schema, list):
        return value(fdp, schema[fdp.ConsumeIntInRange(0, len(schema) - 1)], named, depth)
    t = schema["type"]
    lt = schema.get("logicalType")
    if lt in ("timestamp-millis", "timestamp-micros", "local-timestamp-micros"):
        us = fdp.ConsumeIntInRange(-62135596800 * 10**6, 253402300799 * 10**6)
        tz = UTC if fdp.ConsumeBool() else None
        return datetime.datetime(1970, 1, 1, tzinfo=tz) + datetime.timedelta(microseconds=us)
    if lt == "date":
        return datetime.date.fromordinal(fdp.ConsumeIntInRange(1, 3652059))
    if lt == "time-millis":
        return datetime.time(fdp.ConsumeIntInRange(0, 23), fdp.ConsumeIntInRange(0, 59), 0,
                             fdp.ConsumeIntInRange(0, 999) * 1000)
    if lt == "uuid":
        return uuid.UUID(int=fdp.ConsumeIntInRange(0, 2**128 - 1))
    if lt == "decimal":
        digits = fdp.ConsumeIntInRange(-(10**20), 10**20)
        return decimal.Decimal(digits).scaleb(-fdp.ConsumeIntInRange(0, 5))
    if t == "record":
        named.setdefault(schema["name"], schema)
        out = {}
        for f in schema["fields"]:
            if fdp.ConsumeIntInRange(0, 31) == 0:
                continue  # missing field
            out[f["name"]] = value(fdp, f["type"], named, depth + 1) if depth < 40 else None
        return out
    if t == "enum":
        named.setdefault(schema["name"], schema)
        return schema["symbols"][fdp.ConsumeIntInRange(0, len(schema["symbols"]) - 1)]
    if t == "fixed":
        named.setdefault(schema["name"], schema)
        return fdp.ConsumeBytes(schema["size"] if fdp.ConsumeIntInRange(0, 7) else fdp.ConsumeIntInRange(0, 9))
    if t == "array":
        return [value(fdp, schema["items"], named, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 4))]
    if t == "map":
        return {fdp.ConsumeUnicodeNoSurrogates(4): value(fdp, schema["values"], named, depth + 1)
                for _ in range(fdp.ConsumeIntInRange(0, 4))}
    if t in ("int", "long"):
        bits = 31 if t == "int" else 63
        return fdp.ConsumeIntInRange(-(2**bits) - 1, 2**bits)
    if t in ("float", "double"):
        return fdp.ConsumeRegularFloat() if fdp.ConsumeBool() else fdp.ConsumeFloat()
    if t == "string":
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 12))
    if t == "bytes":
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 12))
    if t == "boolean":
        return fdp.ConsumeBool()
    return None


def json_value(fdp: Any, depth: int = 0) -> Any:
    """A JSON-ish value (NaN, big ints, non-str keys, bytes now and then) for the JSON encoder."""
    k = fdp.ConsumeIntInRange(0, 11)
    if k == 0 or depth > 6:
        return ODD[fdp.ConsumeIntInRange(0, len(ODD) - 1)]
    if k <= 4:
        out = {}
        for key in ("id", "name", "tags", "score", "child"):
            if fdp.ConsumeBool():
                out[key] = json_value(fdp, depth + 1) if fdp.ConsumeIntInRange(0, 3) == 0 else {
                    "id": fdp.ConsumeIntInRange(-2, 2**65), "name": fdp.ConsumeUnicode(10),
                    "tags": [fdp.ConsumeUnicode(3)], "score": fdp.ConsumeFloat(), "child": {"id": 0}}[key]
        return out
    if k == 5:
        return [json_value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    if k == 6:
        return fdp.ConsumeIntInRange(-(2**70), 2**70)
    if k == 7:
        return fdp.ConsumeFloat()
    if k == 8:
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 10))
    if k == 9:
        return {fdp.ConsumeIntInRange(0, 3): 1}
    return fdp.ConsumeBool()


# --- comparison -------------------------------------------------------------------------------

def json_record(fdp: Any) -> bytes:
    """A JSON object along ARROW_JSON_SCHEMA's properties (values of any JSON type, now and then
    an undeclared key), as text: what the columnar JSON decoders must read alike."""
    keys = list(ARROW_JSON_SCHEMA["properties"]) + ["extra"]
    obj = {keys[fdp.ConsumeIntInRange(0, len(keys) - 1)]: json_value(fdp, 5) for _ in range(fdp.ConsumeIntInRange(0, 7))}
    try:
        return json.dumps(obj, allow_nan=fdp.ConsumeBool()).encode()
    except (TypeError, ValueError):
        return fdp.ConsumeBytes(40)


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types, key order and tzinfo included; NaN equals NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, decimal.Decimal):
        return a.as_tuple() == b.as_tuple()
    if isinstance(a, datetime.datetime):
        return a == b and a.tzinfo is b.tzinfo
    return bool(a == b)


def outcome(fn: Callable[..., Any], *args: Any) -> Tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except Exception as e:  # a BaseException (PanicException) is not caught: a finding
        return "err", e


# the decoder alone: the pure generated decoder lets these escape where the native one is typed
_UNTYPED_PURE = (IndexError, ValueError, OverflowError, TypeError, KeyError, struct.error)


def check(target: str, native: Tuple[str, Any], pure: Tuple[str, Any], decoder: bool = False) -> None:
    (nk, nv), (pk, pv) = native, pure
    if nk == pk == "ok":
        if not same(nv, pv):
            raise AssertionError(f"{target}: native {nv!r:.500} != pure {pv!r:.500}")
        return
    if nk != pk:
        raise AssertionError(f"{target}: native {nk} {nv!r:.300}, pure {pk} {pv!r:.300}")
    if type(nv) is type(pv):
        return
    if decoder and isinstance(nv, SerdesError) and isinstance(pv, _UNTYPED_PURE):
        return
    raise AssertionError(f"{target}: native raised {type(nv).__name__}: {nv}, pure {type(pv).__name__}: {pv}")


STATE: Dict[str, Any] = {}


def arrow_view(batch: Any) -> Tuple[Any, ...]:
    """What two columnar results must share: schema, values (NaN equal to NaN), rows, error classes."""
    rows = storage_rows(batch)
    return (pa.record_batch(batch).schema, _canon(rows), list(batch.rows), [(i, type(e).__name__) for i, e in batch.errors])


def _canon(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, list):
        return [_canon(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_canon(x) for x in v)
    if isinstance(v, dict):
        return {k: _canon(x) for k, x in v.items()}
    return v


def columnar(deser: Any, frames: List[Any], ctx: Any, pure: bool) -> Tuple[str, Any]:
    def run() -> Any:
        return arrow_view(deser.deserialize_arrow(frames, ctx, errors="collect"))
    if pure:
        with _native.forced_pure():
            return outcome(run)
    return outcome(run)


def test_one_input(data: bytes) -> None:
    st = STATE
    fdp = atheris.FuzzedDataProvider(data)
    target = fdp.ConsumeIntInRange(0, 5)
    if target == 0:
        i = fdp.ConsumeIntInRange(0, len(st["decoders"]) - 1)
        native, pure = st["decoders"][i]
        payload = fdp.ConsumeBytes(fdp.remaining_bytes())
        got = outcome(native, payload, 0, None)
        check(f"decode {i}", got, outcome(pure, payload, 0, None), decoder=True)
        w, r = st["parsed"][i]
        if got[0] == "ok" and r is None:  # a value decoded: fastavro reads the same one
            # (not with a reader schema: fastavro skips a writer-only array block by its byte size,
            # serdes walks and checks its items, so a hostile block size reads differently)
            ref = fastavro.schemaless_reader(io.BytesIO(payload), w, r)
            if not same(got[1], ref):
                raise AssertionError(f"decode {i}: native {got[1]!r:.500} != fastavro {ref!r:.500}")
    elif target == 1:
        i = fdp.ConsumeIntInRange(0, len(st["sers"]) - 1)
        frame = st["heads"][i] if fdp.ConsumeIntInRange(0, 7) else fdp.ConsumeBytes(5)
        data = frame + fdp.ConsumeBytes(fdp.remaining_bytes())
        native, pure = st["deser"]
        check(f"dispatch {i}", outcome(native, data, st["ctx"]), outcome(pure, data, st["ctx"]))
    elif target == 3:
        head = st["json_head"] if fdp.ConsumeIntInRange(0, 7) else fdp.ConsumeBytes(5)
        data = head + fdp.ConsumeBytes(fdp.remaining_bytes())
        native, pure = st["json_de"]
        check("json dispatch", outcome(native, data, st["ctx"]), outcome(pure, data, st["ctx"]))
    elif target == 5:
        fmt = ("avro", "protobuf", "json")[fdp.ConsumeIntInRange(0, 2)]
        native, pure = st["arrow"][fmt][0]
        valid = st["arrow_frames"][fmt]
        frames: List[Any] = []
        for _ in range(fdp.ConsumeIntInRange(1, 4)):
            k = fdp.ConsumeIntInRange(0, 7)
            if k == 0:
                frames.append(None)   # a tombstone
            elif k < 3:
                frames.append(valid[fdp.ConsumeIntInRange(0, len(valid) - 1)])
            elif fmt == "json" and k < 5:
                frames.append(st["arrow_heads"][fmt] + json_record(fdp))
            else:
                head = st["arrow_heads"][fmt] if k < 7 else fdp.ConsumeBytes(5)
                frames.append(head + fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 200)))
        # no context: the columns follow the frames' one writer schema (with a topic, the latest
        # registered under its subject would be the reader)
        check(f"arrow {fmt} {frames!r:.300}", columnar(native, frames, None, False), columnar(pure, frames, None, True))
    elif target == 4:
        v = json_value(fdp)
        native, pure = st["json_ser"]
        check(f"json encode {v!r:.300}", outcome(native, copy.deepcopy(v), st["ctx"]),
              outcome(pure, copy.deepcopy(v), st["ctx"]))
    else:
        i = fdp.ConsumeIntInRange(0, len(st["sers"]) - 1)
        v = value(fdp, WRITERS[i], {})
        native, pure = st["sers"][i]
        # the encoders may convert the value in place never; a copy each keeps that honest
        check(f"encode {i} {v!r:.300}", outcome(native, copy.deepcopy(v), st["ctx"]),
              outcome(pure, copy.deepcopy(v), st["ctx"]))


#: one valid record per writer: its first serialization registers the schema (the frame head)
VALID = [
    {"v": 1, "next": {"v": 2, "next": None}},
    {"ts_ms": datetime.datetime(2024, 1, 1, tzinfo=UTC), "ts_us": 5, "lts": datetime.datetime(2024, 1, 1),
     "day": datetime.date(2024, 2, 29), "t": datetime.time(1, 2, 3), "id": uuid.UUID(int=1),
     "dec": decimal.Decimal("1.234"), "fdec": decimal.Decimal("-12.34")},
    {"u": 3, "e": "H", "c": [1, 2], "f": b"ab"},
    {"m": {"k": [None, "x"]}, "a": [{}], "n": [None], "e": "G", "x": b"abc", "fl": 0.5},
    {"a": 1, "gone": ["x"], "s": "s", "e": "Z"},
]


def setup() -> None:
    STATE.update(_build())
    STATE["heads"] = [native(rec, STATE["ctx"])[:5] for (native, _), rec in zip(STATE["sers"], VALID, strict=True)]
    STATE["json_head"] = STATE["json_ser"][0](JSON_VALID, STATE["ctx"])[:5]
    ctx = STATE["ctx"]
    pb = [order_pb2.Order(id=7, customer="ada", amount=1.5, paid=True, tags=["a", "b"], counts={"x": 1, "y": -2},
                          blob=b"\x00\xff", priority=3),
          order_pb2.Order()]
    pb[0].created.FromSeconds(1_700_000_000)
    STATE["arrow_frames"] = {"avro": [STATE["sers"][1][0](VALID[1], ctx), STATE["sers"][1][0](
        {**VALID[1], "dec": decimal.Decimal("-0.001"), "id": uuid.UUID(int=2**128 - 1)}, ctx)],
                             "protobuf": [STATE["pb_ser"](m, SerializationContext("fuzz-pb", MessageField.VALUE))
                                          for m in pb]}
    # the heads: Avro magic + id (the LOGICAL writer's); Protobuf's adds the message index byte
    json_ctx = SerializationContext("fuzz-json", MessageField.VALUE)
    STATE["arrow_frames"]["json"] = [STATE["arrow_json_ser"](r, json_ctx) for r in (
        {"id": 0, "name": "", "tags": [], "score": None, "kind": "a", "sub": {"x": True}}, {"id": 2**62})]
    STATE["arrow_heads"] = {"avro": STATE["arrow_frames"]["avro"][0][:5],
                            "protobuf": STATE["arrow_frames"]["protobuf"][0][:6],
                            "json": STATE["arrow_frames"]["json"][0][:5]}


def main() -> None:
    setup()
    # libFuzzer re-runs argv[0] for -merge / -fork: run.sh names a wrapper that starts this venv's python
    argv = [os.environ.get("SERDES_FUZZ_ARGV0", sys.argv[0]), *sys.argv[1:]]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
