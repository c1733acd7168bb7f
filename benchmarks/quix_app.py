"""A quixstreams Application's records/s with quixstreams' serializers and with serdes.quix's.

For each format (Avro, Protobuf, JSON Schema) confluent-kafka's serializers write ``--records``
orders to an input topic once; then, in this process, interleaved ``--repeats`` times per lane:

* ``app``: an Application reads the topic (value deserializer), doubles the amount and writes the
  record to an output topic (value serializer) on the local broker and registry. Records/s is the
  steady rate from the first record's transform to the last's (consumer-group join, topic creation
  and the final flush are outside it);
* ``serde``: the same deserialize -> transform -> serialize of the same frames with no broker
  (the serializers' share of a record), as ns/record.

Lanes: ``quix`` -- quixstreams.models.serializers' classes; ``serdes`` -- serdes.quix's, same
constructor arguments (a ``SchemaRegistryClientConfig``, so each builds its own client). Medians of
the repeats; ratios serdes/quix of the medians.

    python benchmarks/quix_app.py [--records 20000] [--repeats 3] [--bootstrap .. --registry ..]

Needs quixstreams (scripts/test-matrix.sh's quix venv). Writes benchmarks/results/quix_app.{json,md}.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._results import servers, write_results  # noqa: E402

from confluent_kafka import Consumer  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJSONSerializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from quixstreams import Application  # noqa: E402
from quixstreams.models import serializers as quix  # noqa: E402
from quixstreams.models.serializers import avro as quix_avro  # noqa: E402
from quixstreams.models.serializers import json as quix_json  # noqa: E402
from quixstreams.models.serializers import protobuf as quix_protobuf  # noqa: E402

import serdes.quix as sq  # noqa: E402
from serdes import _native  # noqa: E402
from serdes.demo.orders_pb2 import Order  # noqa: E402

# protobuf: quixstreams' default dict values (MessageToDict / ParseDict); protobuf-message: the
# messages themselves (ProtobufDeserializer(to_dict=False)), where the serializers are all the cost
FORMATS = ("avro", "protobuf", "protobuf-message", "json")
LANES = ("quix", "serdes")

AVRO = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "order_id", "type": "string"}, {"name": "customer", "type": "string"},
    {"name": "amount_cents", "type": "long"}, {"name": "currency", "type": "string"},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]}
JSON_SCHEMA = {"title": "Order", "type": "object", "properties": {
    "order_id": {"type": "string"}, "customer": {"type": "string"}, "amount_cents": {"type": "integer"},
    "currency": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["order_id", "customer", "amount_cents", "currency"]}


def _record(i: int) -> Dict[str, Any]:
    return {"order_id": f"order-{i:08d}", "customer": f"customer-{i % 97}", "amount_cents": 100 + 37 * i,
            "currency": "EUR", "tags": ["web", "eu"][: i % 3]}


def _value(fmt: str, i: int) -> Any:
    return Order(**_record(i)) if fmt.startswith("protobuf") else _record(i)


def _confluent_serializer(fmt: str, client: SchemaRegistryClient) -> Callable[[Any, SerializationContext], Any]:
    if fmt == "avro":
        return ConfluentAvroSerializer(client, json.dumps(AVRO))
    if fmt.startswith("protobuf"):
        return ConfluentProtobufSerializer(Order, client, {"use.deprecated.format": False})
    return ConfluentJSONSerializer(json.dumps(JSON_SCHEMA), client)


def _serdes_pair(lane: str, fmt: str, registry: str) -> Tuple[Any, Any]:
    """(deserializer, serializer) of ``lane`` for ``fmt``, with quixstreams' constructor arguments."""
    cfg = quix.SchemaRegistryClientConfig(url=registry)
    if fmt == "avro":
        mod: Any = quix_avro if lane == "quix" else sq
        return (mod.AvroDeserializer(schema_registry_client_config=cfg),
                mod.AvroSerializer(AVRO, schema_registry_client_config=cfg))
    if fmt.startswith("protobuf"):
        mod = quix_protobuf if lane == "quix" else sq
        return (mod.ProtobufDeserializer(Order, to_dict=fmt == "protobuf", schema_registry_client_config=cfg),
                mod.ProtobufSerializer(Order, schema_registry_client_config=cfg))
    mod = quix_json if lane == "quix" else sq
    return (mod.JSONDeserializer(schema=JSON_SCHEMA, schema_registry_client_config=cfg),
            mod.JSONSerializer(schema=JSON_SCHEMA, schema_registry_client_config=cfg))


def _double_order(msg: Order) -> Order:
    out = Order()
    out.CopyFrom(msg)
    out.amount_cents *= 2
    return out


def _transform(fmt: str) -> Callable[[Any], Any]:
    if fmt == "protobuf":  # quixstreams' protobuf dict: camelCase names, int64 as a string
        return lambda v: {**v, "amountCents": str(int(v["amountCents"]) * 2)}
    if fmt == "protobuf-message":
        return _double_order
    return lambda v: {**v, "amount_cents": v["amount_cents"] * 2}


def produce_input(bootstrap: str, registry: str, fmt: str, topic: str, n: int) -> List[bytes]:
    """Write ``n`` records to ``topic`` with confluent-kafka's serializer; returns their frames."""
    from confluent_kafka import Producer

    ser = _confluent_serializer(fmt, SchemaRegistryClient({"url": registry, "timeout": 30}))
    ctx = SerializationContext(topic, MessageField.VALUE)
    frames = [ser(_value(fmt, i), ctx) for i in range(n)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i, frame in enumerate(frames):
        producer.produce(topic, key=str(i).encode(), value=frame)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0, "input records not delivered"
    return frames


def run_app(lane: str, fmt: str, bootstrap: str, registry: str, topic: str, n: int, state_dir: str) -> float:
    """Records/s of one Application run over ``topic``, first transform to last."""
    de, ser = _serdes_pair(lane, fmt, registry)
    transform = _transform(fmt)
    marks: List[float] = []

    def timed(value: Any) -> Any:
        if not marks or len(marks) == 1:
            marks.append(time.perf_counter())
        else:
            marks[1] = time.perf_counter()
        return transform(value)

    app = Application(broker_address=bootstrap, consumer_group=f"bench-{lane}-{uuid.uuid4().hex[:8]}",
                      auto_offset_reset="earliest", state_dir=state_dir, loglevel="WARNING")
    src = app.topic(topic, value_deserializer=de)
    dst = app.topic(f"{topic}-out-{lane}-{uuid.uuid4().hex[:6]}", value_serializer=ser)
    app.dataframe(src).apply(timed).to_topic(dst)
    app.run(count=n, timeout=60, collect=False)
    if len(marks) < 2:
        raise RuntimeError(f"{lane}/{fmt}: the app processed {len(marks)} records, expected {n}")
    return (n - 1) / (marks[1] - marks[0])


def run_serde(lane: str, fmt: str, registry: str, topic: str, frames: List[bytes], reps: int) -> List[float]:
    """ns/record of deserialize -> transform -> serialize over ``frames``, ``reps`` timed passes."""
    de, ser = _serdes_pair(lane, fmt, registry)
    transform = _transform(fmt)
    ctx_in = quix.SerializationContext(topic, MessageField.VALUE)
    ctx_out = quix.SerializationContext(f"{topic}-serde-{lane}", MessageField.VALUE)
    for frame in frames[:200]:  # warm-up: schemas fetched and registered, caches filled
        ser(transform(de(frame, ctx_in)), ctx_out)
    out = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for frame in frames:
            ser(transform(de(frame, ctx_in)), ctx_out)
        out.append((time.perf_counter_ns() - t0) / len(frames))
    return out


def check_same_output(fmt: str, registry: str, topic: str, frames: List[bytes]) -> None:
    """Both lanes give the same bytes for the same records (what the benchmark compares is the same work)."""
    ctx_in = quix.SerializationContext(topic, MessageField.VALUE)
    ctx_out = quix.SerializationContext(f"{topic}-check", MessageField.VALUE)
    got = {}
    for lane in LANES:
        de, ser = _serdes_pair(lane, fmt, registry)
        transform = _transform(fmt)
        got[lane] = [ser(transform(de(f, ctx_in)), ctx_out) for f in frames[:50]]
    assert got["quix"] == got["serdes"], f"{fmt}: the lanes wrote different bytes"


def _wait_for_topic(bootstrap: str, topic: str) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-meta"})
    try:
        deadline = time.monotonic() + 30
        while topic not in c.list_topics(timeout=10).topics and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        c.close()


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--serde-repeats", type=int, default=5)
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--bootstrap")
    ap.add_argument("--registry")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    n = args.records
    formats = [f for f in args.formats.split(",") if f]
    load0 = os.getloadavg()[0]
    started = time.time()
    results: Dict[str, Any] = {}
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as state_dir:
        bootstrap, registry = servers(stack, args.bootstrap, args.registry)
        for fmt in formats:
            topic = f"bench-quix-{fmt}-{uuid.uuid4().hex[:6]}"  # its own subject per format
            frames = produce_input(bootstrap, registry, fmt, topic, n)
            _wait_for_topic(bootstrap, topic)
            check_same_output(fmt, registry, topic, frames)
            app: Dict[str, List[float]] = {lane: [] for lane in LANES}
            serde: Dict[str, List[float]] = {lane: [] for lane in LANES}
            for _ in range(args.repeats):  # interleaved: a load change hits both lanes
                for lane in LANES:
                    app[lane].append(run_app(lane, fmt, bootstrap, registry, topic, n, state_dir))
                    print(fmt, lane, "app records/s", round(app[lane][-1]), flush=True)
            for _ in range(args.serde_repeats):
                for lane in LANES:
                    serde[lane] += run_serde(lane, fmt, registry, topic, frames, 1)
            med_app = {lane: statistics.median(app[lane]) for lane in LANES}
            med_serde = {lane: statistics.median(serde[lane]) for lane in LANES}
            results[fmt] = {
                "app_records_per_s": {lane: [round(x) for x in app[lane]] for lane in LANES},
                "app_records_per_s_median": {lane: round(v) for lane, v in med_app.items()},
                "app_speedup_serdes_vs_quix": round(med_app["serdes"] / med_app["quix"], 2),
                "serde_ns_per_record": {lane: [round(x) for x in serde[lane]] for lane in LANES},
                "serde_ns_per_record_median": {lane: round(v) for lane, v in med_serde.items()},
                "serde_ratio_serdes_over_quix": round(med_serde["serdes"] / med_serde["quix"], 3),
            }
            print(fmt, json.dumps(results[fmt]), flush=True)
    out = {
        "benchmark": "quix_app",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(started)),
        "records": n, "repeats": args.repeats, "serde_repeats": args.serde_repeats,
        "cpus": os.cpu_count(), "python": platform.python_version(),
        "versions": {p: importlib.metadata.version(p) for p in ("quixstreams", "confluent-kafka", "fastavro", "protobuf")},
        "serdes_implementation": "native" if _native.active() is not None else "pure",
        "load_average": {"start": round(load0, 1), "end": round(os.getloadavg()[0], 1)},
        "seconds": round(time.time() - started, 1),
        "results": results,
    }
    v = out["versions"]
    md = [
        "# quix_app", "",
        f"{out['date']} · Python {out['python']} · {out['cpus']} CPUs · quixstreams {v['quixstreams']} · "
        f"confluent-kafka {v['confluent-kafka']} · fastavro {v['fastavro']} · protobuf {v['protobuf']} · "
        f"serdes {out['serdes_implementation']} · load average {out['load_average']['start']} at start, "
        f"{out['load_average']['end']} at end · run took {out['seconds']} s", "",
        f"A quixstreams Application, local Kafka + Apicurio: read {n:,} orders (written by confluent-kafka), "
        "double the amount, write them back; value deserializer and serializer from quixstreams "
        "(`quix`) or serdes.quix (`serdes`), same arguments. `app`: records/s from the first record's "
        f"transform to the last's, median of {args.repeats} interleaved runs. `serde`: the same deserialize -> "
        f"transform -> serialize with no broker, ns/record, median of {args.serde_repeats}. Higher records/s "
        "and lower ns are better.", "",
        "| format | app quix rec/s | app serdes rec/s | app serdes/quix | serde quix ns | serde serdes ns | serde serdes/quix |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for fmt, r in results.items():
        a, s = r["app_records_per_s_median"], r["serde_ns_per_record_median"]
        md.append(f"| {fmt} | {a['quix']:,} | {a['serdes']:,} | {r['app_speedup_serdes_vs_quix']}x | "
                  f"{s['quix']:,} | {s['serdes']:,} | {r['serde_ratio_serdes_over_quix']} |")
    write_results(args.out, "quix_app", out, md)


if __name__ == "__main__":
    main()
