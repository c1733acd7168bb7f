"""The lanes of the serializer benchmark: what is timed, built the same way for every format.

For every (format, size, direction) a :class:`Group` holds these lanes, all in one process, on one
confluent ``mock://`` registry client and the same records:

* ``native``    -- ``serdes.<format>`` built as installed (the compiled fast path where the
  extension is built and covers the format; pure Python otherwise -- the report says which);
* ``pure``      -- the same classes built inside ``serdes._native.forced_pure()``: the pure-Python
  reference implementation, side by side in the same process;
* ``confluent`` -- ``confluent_kafka.schema_registry.<format>``, same constructor arguments;
* ``floor``     -- the bare codec without registry framing: fastavro ``schemaless_writer`` /
  ``schemaless_reader`` for Avro, ``SerializeToString`` / ``FromString`` for Protobuf,
  ``orjson`` plus a jsonschema-rs validity check for JSON.

The batch group (standard Avro records, deserialize) times ``deserialize_batch`` of a list of
records against the per-record call, for both serdes implementations.
"""

from __future__ import annotations

import importlib
import io
import json
import statistics
import traceback
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Dict, List, Optional, Sequence, Tuple

from .. import serde_cases as cases

FORMATS = cases.FORMATS
SIZES = cases.SIZES
DIRECTIONS = ("serialize", "deserialize")
#: the serdes lanes: one per implementation
SERDES_LANES = ("native", "pure")
LANES = (*SERDES_LANES, "confluent", "floor")
#: the batch group's lanes: per-record calls and one deserialize_batch call, per implementation
BATCH_LANES = ("native_record", "native_batch", "pure_record", "pure_batch")
BATCH_FORMAT, BATCH_SIZE = "avro", "standard"
DEFAULT_BATCH_RECORDS = 10_000

Call = Callable[[Any, Any], Any]

CLASS_NAMES = {
    "avro": ("AvroSerializer", "AvroDeserializer"),
    "protobuf": ("ProtobufSerializer", "ProtobufDeserializer"),
    "json": ("JSONSerializer", "JSONDeserializer"),
}


@dataclass
class Lane:
    name: str
    fn: Optional[Call] = None
    inputs: List[Any] = field(default_factory=list)  # the pool of distinct inputs (one per call)
    error: Optional[str] = None
    records_per_call: int = 1  # a batch lane's call handles this many records
    implementation: Optional[str] = None  # serdes lanes: "native" / "pure" as built
    n_records: int = 0  # calls per repeat
    samples_ns: List[float] = field(default_factory=list)  # wall ns/record, one per repeat
    cpu_samples_ns: List[float] = field(default_factory=list)  # process CPU ns/record, same repeats

    @property
    def available(self) -> bool:
        return self.fn is not None and self.error is None


@dataclass
class Group:
    fmt: str
    size: str
    direction: str
    ctx: Any
    lanes: Dict[str, Lane]
    check: Dict[str, Any] = field(default_factory=dict)
    payload_bytes: Dict[str, float] = field(default_factory=dict)
    kind: str = "codec"  # "codec" (the format x size x direction table) or "batch"


def short_error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".splitlines()[0][:300]


def ours_module(fmt: str) -> Any:
    return importlib.import_module({"avro": "serdes.avro", "protobuf": "serdes.protobuf", "json": "serdes.json"}[fmt])


def confluent_module(fmt: str) -> Any:
    return importlib.import_module(
        {
            "avro": "confluent_kafka.schema_registry.avro",
            "protobuf": "confluent_kafka.schema_registry.protobuf",
            "json": "confluent_kafka.schema_registry.json_schema",
        }[fmt]
    )


def make_serde(mod: Any, fmt: str, size: str, direction: str, registry: Any) -> Call:
    """Build a serializer/deserializer from ``mod`` with confluent-kafka's constructor arguments."""
    ser_name, de_name = CLASS_NAMES[fmt]
    if fmt == "avro":
        schema_str = json.dumps(cases.AVRO_SCHEMAS[size])
        if direction == "serialize":
            return getattr(mod, ser_name)(registry, schema_str)
        return getattr(mod, de_name)(registry)  # writer schema from the registry
    if fmt == "protobuf":
        cls = cases.proto_classes()[size]
        if direction == "serialize":
            return getattr(mod, ser_name)(cls, registry, {"use.deprecated.format": False})
        return getattr(mod, de_name)(cls, {"use.deprecated.format": False}, registry)
    schema_str = json.dumps(cases.JSON_SCHEMAS[size])
    if direction == "serialize":
        return getattr(mod, ser_name)(schema_str, registry)  # validate=True is the default
    return getattr(mod, de_name)(schema_str, schema_registry_client=registry)


def implementation_scope(impl: str) -> ContextManager[None]:
    """Where a serdes lane's objects are built *and first called* (serdes builds a decoder or
    encoder at the first record of a schema, and asks serdes._native then): ``pure`` inside
    ``forced_pure()``, ``native`` as installed."""
    if impl == "pure":
        from serdes import _native

        return _native.forced_pure()
    return nullcontext()


def built_implementation(impl: str) -> str:
    """What a serdes lane built with ``impl`` runs: "native" only when the extension is loaded."""
    if impl == "pure":
        return "pure"
    from serdes import _native

    return _native.implementation()


def build_serdes(impl: str, fmt: str, size: str, direction: str, registry: Any, first_input: Any, ctx: Any) -> Call:
    """A serdes lane: built, and primed with one call, inside :func:`implementation_scope`."""
    with implementation_scope(impl):
        fn = make_serde(ours_module(fmt), fmt, size, direction, registry)
        fn(first_input, ctx)
    return fn


def floor_codec(fmt: str, size: str) -> Tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    """(encode, decode) of the bare codec: no framing, no registry."""
    if fmt == "avro":
        from fastavro import parse_schema, schemaless_reader, schemaless_writer

        parsed = parse_schema(cases.AVRO_SCHEMAS[size])
        BytesIO = io.BytesIO

        def avro_encode(rec: Any) -> bytes:
            fo = BytesIO()
            schemaless_writer(fo, parsed, rec)
            return fo.getvalue()

        def avro_decode(data: bytes) -> Any:
            return schemaless_reader(BytesIO(data), parsed, None, False)

        return avro_encode, avro_decode
    if fmt == "protobuf":
        cls = cases.proto_classes()[size]
        return cls.SerializeToString, cls.FromString
    import jsonschema_rs
    import orjson

    is_valid = jsonschema_rs.validator_for(cases.JSON_SCHEMAS[size]).is_valid
    dumps, loads = orjson.dumps, orjson.loads

    def json_encode(obj: Any) -> bytes:
        if not is_valid(obj):
            raise ValueError("invalid record")
        return dumps(obj)

    def json_decode(data: bytes) -> Any:
        obj = loads(data)
        if not is_valid(obj):
            raise ValueError("invalid record")
        return obj

    return json_encode, json_decode


def as_call(f: Callable[[Any], Any]) -> Call:
    def call(x: Any, ctx: Any) -> Any:
        return f(x)

    return call


def context(fmt: str, size: str, suffix: str = "") -> Any:
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(f"bench-{fmt}-{size}{suffix}", MessageField.VALUE)


def build_group(fmt: str, size: str, direction: str, registry: Any, pool: int, seed: int, lanes: Sequence[str]) -> Group:
    ctx = context(fmt, size)
    recs = cases.records(fmt, size, pool, seed)
    g = Group(fmt, size, direction, ctx, {name: Lane(name) for name in LANES})

    # confluent first: it registers the schema, and its frames are the deserializers' input
    conf_ser = make_serde(confluent_module(fmt), fmt, size, "serialize", registry)
    conf_de = make_serde(confluent_module(fmt), fmt, size, "deserialize", registry)
    framed = [conf_ser(r, ctx) for r in recs]
    floor_enc, floor_dec = floor_codec(fmt, size)
    bare = [floor_enc(r) for r in recs]
    g.payload_bytes = {
        "framed_mean": statistics.fmean(len(b) for b in framed),
        "bare_mean": statistics.fmean(len(b) for b in bare),
    }

    if direction == "serialize":
        g.lanes["confluent"].fn, g.lanes["confluent"].inputs = conf_ser, recs
        g.lanes["floor"].fn, g.lanes["floor"].inputs = as_call(floor_enc), recs
    else:
        g.lanes["confluent"].fn, g.lanes["confluent"].inputs = conf_de, framed
        g.lanes["floor"].fn, g.lanes["floor"].inputs = as_call(floor_dec), bare

    inputs = recs if direction == "serialize" else framed
    for impl in SERDES_LANES:
        if impl not in lanes:
            continue
        lane = g.lanes[impl]
        try:
            lane.fn = build_serdes(impl, fmt, size, direction, registry, inputs[0], ctx)
            lane.inputs = inputs
            lane.implementation = built_implementation(impl)
        except Exception as e:  # not written yet, or broken: this lane is n/a
            lane.fn = None
            lane.error = "unavailable: " + short_error(e)
    for name in LANES:
        if name not in lanes and g.lanes[name].error is None:
            g.lanes[name].fn = None
            g.lanes[name].error = "not selected"

    g.check = check(g, recs, framed, bare, conf_de, floor_dec)
    return g


def failed_group(fmt: str, size: str, direction: str, e: BaseException) -> Group:
    """A group whose set-up (confluent or the floor itself) failed: every lane n/a, with why."""
    g = Group(fmt, size, direction, context(fmt, size), {n: Lane(n, error="setup failed: " + short_error(e)) for n in LANES})
    g.check = {"error": traceback.format_exc(limit=5)}
    return g


def check(g: Group, recs: List[Any], framed: List[bytes], bare: List[bytes], conf_de: Call,
          floor_dec: Callable[[bytes], Any]) -> Dict[str, Any]:
    """Correctness before timing: every lane must agree with confluent on every pool record.

    deserialize: serdes(frame) == confluent(frame), floor(bare) == confluent(frame).
    serialize:   confluent_de(serdes(rec)) == confluent_de(confluent(rec)), floor(rec) decodes back.
    A lane that raises is marked unavailable (its error is reported) and is not timed.
    """
    ctx = g.ctx
    expected = [conf_de(b, ctx) for b in framed]
    out: Dict[str, Any] = {"records": len(recs)}
    for name in (*SERDES_LANES, "floor"):
        lane = g.lanes[name]
        if lane.fn is None or lane.error is not None:
            out[name] = {"ok": None, "detail": lane.error}
            continue
        fn = lane.fn
        mismatches = 0
        first: Optional[str] = None
        identical = 0
        try:
            for i, rec in enumerate(recs):
                if g.direction == "deserialize":
                    got = fn(lane.inputs[i], ctx)
                else:
                    enc = fn(rec, ctx)
                    if name == "floor":
                        identical += enc == bare[i]
                        got = floor_dec(enc)
                    else:
                        identical += enc == framed[i]
                        got = conf_de(enc, ctx)
                if got != expected[i]:
                    mismatches += 1
                    if first is None:
                        first = f"record {i}: got {got!r:.200} expected {expected[i]!r:.200}"
        except Exception as e:
            lane.error = "failed: " + short_error(e)
            lane.fn = None
            out[name] = {"ok": False, "detail": lane.error, "traceback": traceback.format_exc(limit=5)}
            continue
        entry: Dict[str, Any] = {"ok": mismatches == 0, "mismatches": mismatches, "detail": first}
        if g.direction == "serialize":
            entry["bytes_identical"] = identical == len(recs)
        out[name] = entry
    return out


def build_batch_group(registry: Any, batch: int, pool: int, seed: int, lanes: Sequence[str]) -> Group:
    """``deserialize_batch`` of ``batch`` standard Avro records vs ``batch`` per-record calls,
    per serdes implementation. A batch lane's input is one list of ``batch`` frames per call."""
    fmt, size = BATCH_FORMAT, BATCH_SIZE
    ctx = context(fmt, size, "-batch")
    recs = cases.records(fmt, size, pool, seed)
    g = Group(fmt, size, "deserialize", ctx, {name: Lane(name) for name in BATCH_LANES}, kind="batch")
    conf_ser = make_serde(confluent_module(fmt), fmt, size, "serialize", registry)
    conf_de = make_serde(confluent_module(fmt), fmt, size, "deserialize", registry)
    framed = [conf_ser(r, ctx) for r in recs]
    frames = [framed[i % len(framed)] for i in range(batch)]
    expected = [conf_de(b, ctx) for b in frames]
    g.payload_bytes = {"framed_mean": statistics.fmean(len(b) for b in framed), "batch_records": batch}
    for impl in SERDES_LANES:
        rec_lane, batch_lane = g.lanes[f"{impl}_record"], g.lanes[f"{impl}_batch"]
        if impl not in lanes:
            rec_lane.error = batch_lane.error = "not selected"
            continue
        try:
            de = build_serdes(impl, fmt, size, "deserialize", registry, framed[0], ctx)
            decode_batch = de.deserialize_batch
            got = decode_batch(frames, ctx)
        except Exception as e:
            rec_lane.error = batch_lane.error = "unavailable: " + short_error(e)
            g.check[impl] = {"ok": False, "detail": rec_lane.error}
            continue
        ok = got == expected
        g.check[impl] = {"ok": ok, "records": batch,
                         "detail": None if ok else "deserialize_batch differs from confluent's per-record values"}
        if not ok:
            rec_lane.error = batch_lane.error = "failed: values differ from confluent's"
            continue
        rec_lane.fn, rec_lane.inputs = de, frames
        batch_lane.fn, batch_lane.inputs, batch_lane.records_per_call = decode_batch, [frames], batch
        rec_lane.implementation = batch_lane.implementation = built_implementation(impl)
    return g
