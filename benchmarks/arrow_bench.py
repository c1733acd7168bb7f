"""Columnar decode and encode (serdes.arrow) against per-record decoding, in one process.

Lanes, per format (standard records of benchmarks/serde_cases.py, 20,000 frames, medians of 5):

* ``serdes deserialize_arrow``: frames -> one Arrow batch;
* ``serdes per-record dicts``: ``deserialize_batch`` (what columnar output starts from today);
* ``confluent-kafka + from_pylist``: confluent-kafka's deserializer per record, then
  ``pyarrow.Table.from_pylist`` (what a user does without serdes);
* ``serdes serialize_arrow`` and ``confluent-kafka per-record encode`` of the same rows.

Results: benchmarks/results/arrow_bench.json. ``python -m benchmarks.arrow_bench [--count N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
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
from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.json import JSONDeserializer, JSONSerializer
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

RESULTS = Path(__file__).parent / "results" / "arrow_bench.json"
CTX = SerializationContext("arrow-bench", MessageField.VALUE)


def _median_ns(fn: Callable[[], Any], count: int, reps: int) -> float:
    fn()  # warm: decoders compiled, registry answers cached
    times = []
    for _ in range(reps):
        t = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / count


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


def _lanes(fmt: str, ser: Any, deser: Any, ck_deser: Any, frames: List[bytes], table: Any, count: int, reps: int
           ) -> Dict[str, float]:
    if fmt == "protobuf":
        from google.protobuf.json_format import MessageToDict

        def ck_rows() -> List[Any]:
            return [MessageToDict(ck_deser(f, CTX), preserving_proto_field_name=True) for f in frames]
    else:
        def ck_rows() -> List[Any]:
            return [ck_deser(f, CTX) for f in frames]
    return {
        "serdes deserialize_arrow": _median_ns(lambda: deser.deserialize_arrow(frames, CTX), count, reps),
        "serdes per-record dicts": _median_ns(lambda: deser.deserialize_batch(frames, CTX), count, reps),
        "confluent-kafka + from_pylist": _median_ns(lambda: pa.Table.from_pylist(ck_rows()), count, reps),
        "serdes serialize_arrow": _median_ns(lambda: ser.serialize_arrow(table, CTX), count, reps),
    }


def run(count: int, reps: int) -> Dict[str, Any]:
    out: Dict[str, Any] = {"count": count, "reps": reps, "pyarrow": pa.__version__, "formats": {}}
    for fmt in ("avro", "protobuf", "json"):
        registry = SchemaRegistryClient.new_client({"url": f"mock://arrow-bench-{fmt}"})
        ser, deser, ck_deser = _serdes(fmt, registry)
        frames: List[bytes] = [ser(r, CTX) for r in serde_cases.records(fmt, "standard", count)]
        table = pa.table(deser.deserialize_arrow(frames, CTX))
        lanes = _lanes(fmt, ser, deser, ck_deser, frames, table, count, reps)
        base = lanes["confluent-kafka + from_pylist"]
        out["formats"][fmt] = {
            "ns_per_record": {k: round(v, 1) for k, v in lanes.items()},
            "decode_speedup_vs_confluent_from_pylist": round(base / lanes["serdes deserialize_arrow"], 2),
        }
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


if __name__ == "__main__":
    main()
