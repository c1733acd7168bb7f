"""Avro serialize, ns/record: serdes native vs serdes pure vs confluent-kafka, in one process.

    PYTHONPATH=. python benchmarks/avro_encode_native.py [--repeats 15] [--n 20000]

Each lane is a real serializer (``serdes.avro.AvroSerializer`` built with the extension active /
inside ``forced_pure()``, ``confluent_kafka.schema_registry.avro.AvroSerializer``) on one mock://
registry, called with a SerializationContext on the benchmark records of tests/support/avro_samples.py.
All lanes' frames are checked to decode to the same record first. Then, per repeat, the lanes run in
a shuffled order, each timing ``n`` calls; the report is the median ns/record per lane and the
median of the per-repeat ratios (so a noisy moment hits all lanes of one repeat alike).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import uuid
from typing import Any, Callable, Dict, List

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import _native
from serdes.avro import AvroSerializer
from tests.support.avro_samples import records


def _lanes(name: str) -> "tuple[Dict[str, Callable[[Any, Any], Any]], Any]":
    schema, rec = records()[name]
    client = SchemaRegistryClient.new_client({"url": f"mock://bench-enc-{uuid.uuid4().hex}"})
    ctx = SerializationContext(f"bench-{name}", MessageField.VALUE)
    text = json.dumps(schema)
    confluent = ConfluentAvroSerializer(client, text)
    confluent(rec, ctx)  # registers the schema
    native = AvroSerializer(client, text)
    native(rec, ctx)  # builds the encoder (lazily, on the first call)
    with _native.forced_pure():
        pure = AvroSerializer(client, text)
        pure(rec, ctx)
    lanes = {"native": native, "pure": pure, "confluent": confluent}
    de = ConfluentAvroDeserializer(client)
    want = de(confluent(rec, ctx), ctx)
    for lane, ser in lanes.items():
        assert de(ser(rec, ctx), ctx) == want, lane
    return lanes, (rec, ctx)


def _time(fn: Callable[[Any, Any], Any], rec: Any, ctx: Any, n: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn(rec, ctx)
    return (time.perf_counter_ns() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args()
    print(f"serdes native extension: {_native.implementation()}")
    for name in ("standard", "complex"):
        lanes, (rec, ctx) = _lanes(name)
        ns: Dict[str, List[float]] = {k: [] for k in lanes}
        ratios: Dict[str, List[float]] = {"native/confluent": [], "pure/confluent": [], "native/pure": []}
        order = list(lanes)
        for _ in range(args.repeats):
            random.shuffle(order)
            got = {k: _time(lanes[k], rec, ctx, args.n) for k in order}
            for k, v in got.items():
                ns[k].append(v)
            ratios["native/confluent"].append(got["native"] / got["confluent"])
            ratios["pure/confluent"].append(got["pure"] / got["confluent"])
            ratios["native/pure"].append(got["native"] / got["pure"])
        med = {k: statistics.median(v) for k, v in ns.items()}
        print(f"{name:9s} " + "  ".join(f"{k} {v:8.0f} ns" for k, v in med.items()) + "   "
              + "  ".join(f"{k} {statistics.median(v):.3f}" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
