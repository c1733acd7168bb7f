"""Columnar decode and encode (serdes.arrow) against per-record decoding, in one process.

Lanes, per format (standard records of benchmarks/serde_cases.py, 20,000 frames, medians of 5, the
garbage collector off while timing, as ``timeit`` does; the native columnar lanes of Avro and
Protobuf take turns within each repetition, so that the machine's drift in speed reaches them alike):

* ``serdes deserialize_arrow``: frames -> one Arrow batch (for Avro and Protobuf: the native
  columnar decoders, when the extension is built; ``threads=2``: the same on two threads);
* ``serdes deserialize_arrow, pure Python``: the same call in a process without the extension;
* ``serdes per-record dicts``: ``deserialize_batch`` (what columnar output starts from today);
* ``confluent-kafka + from_pylist``: confluent-kafka's deserializer per record, then
  ``pyarrow.Table.from_pylist`` (what a user does without serdes);
* Avro only: ``arrow-avro alone (floor)``, the crate's own streaming decoder over the same frames
  laid end to end, timed inside Rust (no Python, no per-frame checks); ``pyruhvro`` (schemaless
  Avro: no registry, no framing) on the frames' bodies, prefix already stripped, when installed;
* Protobuf only: ``native loop alone (floor)``, serdes' Protobuf loop over the same frames into
  columns, timed inside Rust (no Python, no hand-over to pyarrow);
* JSON Schema only (when the native decoder takes the records): ``serdes JSON parser alone``, its
  parse-validate-build loop over the same frames timed inside Rust (no Python around it); and
  ``arrow-json alone (no validation)``, arrow-json's tape decoder over the bodies laid end to end
  into the same columns, timed inside Rust, in builds with ``--features arrow-json-floor`` (the
  measurement behind docs/arrow.md's choice of parser; wheels do not carry the crate);
* the issue's measure, Protobuf's and JSON Schema's columnar decode against Avro's: the three
  formats' ``deserialize_arrow`` calls taking turns in one more round (``over_avro``), under one drift;
* ``serdes serialize_arrow`` of the same rows (for Avro: the native columnar encoder when the
  extension is built); Avro also, taking turns with it: ``serdes serialize_arrow, per-record
  path`` (the same call with the native columnar encoder off: the columns made Python values, then
  the serializer's batch path), ``serdes per-record encode (dicts)`` (``serialize_batch`` of the
  records as dicts: the per-record native encoder alone, no columns), and ``confluent-kafka
  per-record + to_pylist`` (``Table.to_pylist()``, then confluent-kafka's serializer per row: what
  a user does without serdes).

Avro also gets ``peak memory / Arrow buffers``: the rise of the process's peak RSS (Linux's
``VmHWM``, reset just before) while 200,000 frames decode into one batch, over that batch's buffer
bytes, in a fresh subprocess that holds only the frames.

Results: benchmarks/results/arrow_bench.json. ``python -m benchmarks.arrow_bench [--count N]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import pyarrow as pa
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry import avro as ck_avro
from confluent_kafka.schema_registry import json_schema as ck_json
from confluent_kafka.schema_registry import protobuf as ck_protobuf
from confluent_kafka.serialization import MessageField, SerializationContext

from benchmarks import serde_cases
from serdes import _native
from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.json import JSONDeserializer, JSONSerializer
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

RESULTS = Path(__file__).parent / "results" / "arrow_bench.json"
CTX = SerializationContext("arrow-bench", MessageField.VALUE)


def _median_ns(fn: Callable[[], Any], count: int, reps: int) -> float:
    fn()  # warm: decoders compiled, registry answers cached
    times = []
    # the collector off while timing, as timeit does: else a full collection (of the last run's
    # 20,000 messages or dicts) lands in every other run of the lanes that allocate per record
    gc.collect()
    gc.disable()
    try:
        for _ in range(reps):
            t = time.perf_counter_ns()
            result = fn()
            times.append(time.perf_counter_ns() - t)
            del result  # freed outside the timing: a decode's time, not the allocator's
    finally:
        gc.enable()
    return statistics.median(times) / count


def _interleaved_ns(lanes: Dict[str, Callable[[], Any]], count: int, reps: int) -> Dict[str, float]:
    """Median ns per record of each lane, the lanes taking turns within each repetition: this
    machine's speed drifts by up to 1.5x over seconds, and turns give each lane the same drift.
    A lane returning an int reports its own time (ns; the crate floor, timed inside Rust)."""
    for fn in lanes.values():
        fn()  # warm
    times: Dict[str, List[float]] = {name: [] for name in lanes}
    gc.collect()
    gc.disable()
    try:
        for _ in range(reps):
            for name, fn in lanes.items():
                t = time.perf_counter_ns()
                own = fn()
                took = time.perf_counter_ns() - t
                times[name].append(own if isinstance(own, int) else took)
                del own  # freed outside the timing (of this lane and the next)
    finally:
        gc.enable()
    return {name: statistics.median(ts) / count for name, ts in times.items()}


def _serdes(fmt: str, registry: Any) -> Any:
    if fmt == "avro":
        schema = json.dumps(serde_cases.AVRO_SCHEMAS["standard"])
        return AvroSerializer(registry, schema), AvroDeserializer(registry), \
            ck_avro.AvroDeserializer(registry)
    if fmt == "json":
        schema = json.dumps(serde_cases.JSON_SCHEMAS["standard"])
        return JSONSerializer(schema, registry), JSONDeserializer(schema, schema_registry_client=registry), \
            ck_json.JSONDeserializer(schema, schema_registry_client=registry)
    cls = serde_cases.proto_classes()["standard"]
    conf = {"use.deprecated.format": False}
    return ProtobufSerializer(cls, registry, conf), ProtobufDeserializer(cls, conf), \
        ck_protobuf.ProtobufDeserializer(cls, conf)


def _lanes(fmt: str, ser: Any, deser: Any, pure: Any, ck_deser: Any, frames: List[bytes], table: Any, count: int,
           reps: int, records: List[Any]) -> Dict[str, float]:
    if fmt == "protobuf":
        from google.protobuf.json_format import MessageToDict

        def ck_rows() -> List[Any]:
            return [MessageToDict(ck_deser(f, CTX), preserving_proto_field_name=True) for f in frames]
    else:
        def ck_rows() -> List[Any]:
            return [ck_deser(f, CTX) for f in frames]
    if fmt in ("avro", "protobuf"):
        # the native columnar lanes and their references, taking turns
        turns: Dict[str, Callable[[], Any]] = {
            "serdes deserialize_arrow": lambda: deser.deserialize_arrow(frames, CTX),
            "serdes deserialize_arrow threads=2": lambda: deser.deserialize_arrow(frames, CTX, threads=2),
        }
        if fmt == "avro":
            floor = _crate_floor(deser, frames)
            if floor is not None:
                turns["arrow-avro alone (floor)"] = floor
            ruhvro = _pyruhvro(frames)
            if ruhvro is not None:
                turns["pyruhvro (bodies, no registry)"] = ruhvro
        else:
            floor = _protobuf_loop(deser, frames)
            if floor is not None:
                turns["native loop alone (floor)"] = floor
        lanes = _interleaved_ns(turns, count, reps)
    elif fmt == "json":
        turns = {"serdes deserialize_arrow": lambda: deser.deserialize_arrow(frames, CTX)}
        turns.update(_json_floors(deser, frames))
        lanes = _interleaved_ns(turns, count, reps)
    else:
        lanes = {"serdes deserialize_arrow": _median_ns(lambda: deser.deserialize_arrow(frames, CTX), count, reps)}
    with _native.forced_pure():
        lanes["serdes deserialize_arrow, pure Python"] = _median_ns(
            lambda: pure.deserialize_arrow(frames, CTX), count, reps)
    lanes.update({
        "serdes per-record dicts": _median_ns(lambda: deser.deserialize_batch(frames, CTX), count, reps),
        "confluent-kafka + from_pylist": _median_ns(lambda: pa.Table.from_pylist(ck_rows()), count, reps),
    })
    if fmt == "avro":
        lanes.update(_interleaved_ns(_avro_encode_lanes(ser, table, records), count, reps))
    else:
        lanes["serdes serialize_arrow"] = _median_ns(lambda: ser.serialize_arrow(table, CTX), count, reps)
    return lanes


def _avro_encode_lanes(ser: Any, table: Any, records: List[Any]) -> Dict[str, Callable[[], Any]]:
    """The Avro encode lanes, to take turns: the native columnar encoder, the same call on the
    per-record path, the per-record native encoder on dicts, confluent-kafka per row."""
    from serdes.arrow import _native_encoder

    def per_record_path() -> Any:
        _native_encoder.NATIVE_ROWS = False
        try:
            return ser.serialize_arrow(table, CTX)
        finally:
            _native_encoder.NATIVE_ROWS = True

    registry = SchemaRegistryClient.new_client({"url": "mock://arrow-bench-avro-ck"})
    ck_ser = ck_avro.AvroSerializer(registry, json.dumps(serde_cases.AVRO_SCHEMAS["standard"]))
    if ser.serialize_arrow(table, CTX) != per_record_path() or ck_ser(records[0], CTX)[5:] != ser(records[0], CTX)[5:]:
        raise AssertionError("the encode lanes do not write the same bytes")
    return {
        "serdes serialize_arrow": lambda: ser.serialize_arrow(table, CTX),
        "serdes serialize_arrow, per-record path": per_record_path,
        "serdes per-record encode (dicts)": lambda: ser.serialize_batch(records, CTX),
        "confluent-kafka per-record + to_pylist": lambda: [ck_ser(r, CTX) for r in table.to_pylist()],
    }


def _crate_floor(deser: Any, frames: List[bytes]) -> Any:
    """One timing of the crate's own decode of ``frames`` (ns, measured inside Rust; the native
    decoder ``deser`` built), or ``None`` without the extension."""
    natives = list(deser.__dict__.get("_arrow_native", {}).values())
    if not natives:
        return None
    dec = natives[0]._dec
    return lambda: int(dec._crate_floor_ns(frames, 1)[0])


def _protobuf_loop(deser: Any, frames: List[bytes]) -> Any:
    """One timing of serdes' native Protobuf loop alone over ``frames`` into columns (ns, measured
    inside Rust: no Python, no hand-over to pyarrow), or ``None`` without the extension."""
    natives = [n for n in deser.__dict__.get("_arrow_native_protobuf", {}).values() if n is not None]
    if not natives:
        return None
    dec = natives[0]._dec
    return lambda: int(dec._decode_ns(frames, 1)[0])


def _json_floors(deser: Any, frames: List[bytes]) -> Dict[str, Callable[[], Any]]:
    """The JSON floors, each one timing inside Rust (ns): serdes' parser alone, and arrow-json's
    decoder alone where the build has it; none without the native decoder."""
    deser.deserialize_arrow(frames, CTX)  # the native decoder built, its programs added
    natives = list(deser.__dict__.get("_arrow_native_json", {}).values())
    if not natives or not natives[0].taken:
        return {}
    dec = natives[0]._dec
    out: Dict[str, Callable[[], Any]] = {"serdes JSON parser alone": lambda: int(dec.parse_floor_ns(frames, 1)[0])}
    if dec.has_arrow_json():
        out["arrow-json alone (no validation)"] = lambda: int(dec.arrow_json_floor_ns(frames, 1)[0])
    return out


def _pyruhvro(frames: List[bytes]) -> Any:
    try:
        import pyruhvro  # type: ignore[import-not-found]
    except ImportError:
        return None
    schema = json.dumps(serde_cases.AVRO_SCHEMAS["standard"])
    bodies = [f[5:] for f in frames]
    return lambda: pyruhvro.deserialize_array(bodies, schema)


_MEMORY_CHILD = """
import json, sys
import pyarrow as pa
from confluent_kafka.schema_registry import SchemaRegistryClient, Schema
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes.avro import AvroDeserializer
ctx = SerializationContext("arrow-bench", MessageField.VALUE)
registry = SchemaRegistryClient.new_client({"url": "mock://arrow-bench-memory"})
registry.register_schema("arrow-bench-value", Schema(sys.argv[2], "AVRO"))
frames = []
with open(sys.argv[1], "rb") as f:
    while head := f.read(4):
        frames.append(f.read(int.from_bytes(head, "little")))
deser = AvroDeserializer(registry)
deser.deserialize_arrow(frames[:10], ctx)
def rss(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM) starts again from now (Linux)
before = rss("VmRSS:")
batch = pa.record_batch(deser.deserialize_arrow(frames, ctx))
print(json.dumps({"peak_rise_bytes": rss("VmHWM:") - before, "arrow_bytes": batch.nbytes}))
"""


def _memory(count: int) -> Dict[str, Any]:
    """Peak RSS rise of one decode of ``count`` standard Avro frames, in a process that holds only
    the frames (read from a file: no records were built there to raise the peak first)."""
    registry = SchemaRegistryClient.new_client({"url": "mock://arrow-bench-memory"})
    schema = json.dumps(serde_cases.AVRO_SCHEMAS["standard"])
    ser = AvroSerializer(registry, schema)
    with tempfile.NamedTemporaryFile(suffix=".frames") as f:
        for r in serde_cases.records("avro", "standard", count):
            frame = ser(r, CTX)
            f.write(len(frame).to_bytes(4, "little") + frame)
        f.flush()
        out = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, f.name, schema], check=True,
                             capture_output=True, text=True).stdout
    m = json.loads(out.strip().splitlines()[-1])
    m["ratio"] = round(m["peak_rise_bytes"] / m["arrow_bytes"], 2)
    m["frames"] = count
    return dict(m)


def run(count: int, reps: int) -> Dict[str, Any]:
    out: Dict[str, Any] = {"count": count, "reps": reps, "pyarrow": pa.__version__,
                           "implementation": _native.implementation(), "formats": {}}
    decoders: Dict[str, Any] = {}
    for fmt in ("avro", "protobuf", "json"):
        registry = SchemaRegistryClient.new_client({"url": f"mock://arrow-bench-{fmt}"})
        ser, deser, ck_deser = _serdes(fmt, registry)
        with _native.forced_pure():
            pure = _serdes(fmt, registry)[1]  # the same deserializer, built pure-Python
        records = serde_cases.records(fmt, "standard", count)
        frames: List[bytes] = [ser(r, CTX) for r in records]
        table = pa.table(deser.deserialize_arrow(frames, CTX))
        lanes = _lanes(fmt, ser, deser, pure, ck_deser, frames, table, count, reps, records)
        base = lanes["confluent-kafka + from_pylist"]
        out["formats"][fmt] = {
            "ns_per_record": {k: round(v, 1) for k, v in lanes.items()},
            "decode_speedup_vs_confluent_from_pylist": round(base / lanes["serdes deserialize_arrow"], 2),
        }
        if "confluent-kafka per-record + to_pylist" in lanes:
            out["formats"][fmt]["encode_speedup_vs_confluent_to_pylist"] = round(
                lanes["confluent-kafka per-record + to_pylist"] / lanes["serdes serialize_arrow"], 2)
        for floor in ("arrow-avro alone (floor)", "native loop alone (floor)"):
            if floor in lanes:
                out["formats"][fmt]["decode_over_floor"] = round(lanes["serdes deserialize_arrow"] / lanes[floor], 2)
        decoders[fmt] = (deser, frames)
    # the issue's measure, Protobuf's and JSON Schema's columnar decode against Avro's: the three taking turns
    both = _interleaved_ns({fmt: (lambda d=d, f=f: d.deserialize_arrow(f, CTX)) for fmt, (d, f) in decoders.items()},
                           count, reps)
    out["over_avro"] = {**{f"{fmt}_ns": round(ns, 1) for fmt, ns in both.items()},
                        "protobuf": round(both["protobuf"] / both["avro"], 2), "json": round(both["json"] / both["avro"], 2)}
    out["formats"]["avro"]["peak_memory_over_arrow_buffers"] = _memory(200_000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    result = run(args.count, args.reps)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    for fmt, r in result["formats"].items():
        lanes = ", ".join(f"{k} {v:.0f} ns" for k, v in r["ns_per_record"].items())
        print(f"{fmt}: {lanes}; columnar decode {r['decode_speedup_vs_confluent_from_pylist']}x confluent-kafka + from_pylist")
    t = result["over_avro"]
    print(f"taking turns: deserialize_arrow avro {t['avro_ns']:.0f} ns, protobuf {t['protobuf_ns']:.0f} ns "
          f"({t['protobuf']}x avro), json {t['json_ns']:.0f} ns ({t['json']}x avro)")


if __name__ == "__main__":
    main()
