"""JSON serdes micro-benchmark against confluent-kafka, in one process.

    python -m serdes.json._bench [--number N] [--repeat R]

Prints ns per record for the ``standard`` and ``complex`` documents of
:mod:`serdes.json._samples`, validation on (the default of both libraries), and the ratios
serdes / confluent-kafka and serdes / raw floor (``orjson.loads`` + jsonschema-rs ``is_valid``
for deserialize; ``is_valid`` + ``orjson.dumps`` for serialize), per call and per record of
``serialize_batch`` / ``deserialize_batch`` (100 records).

The candidates are timed interleaved (serdes, floor, confluent-kafka, next repeat, ...) with
timeit, R repeats of N calls each; the reported figure is the median of the repeats, and the
``best`` columns the minimum (the least disturbed repeat: use those on a shared, noisy machine).
"""

from __future__ import annotations

import argparse
import statistics
import timeit
import uuid
from typing import Any, Callable, Dict, List

import jsonschema_rs
import orjson
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJSONDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CJSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes.json import JSONDeserializer, JSONSerializer
from serdes.json._samples import COMPLEX_DOC, COMPLEX_SCHEMA, STANDARD_DOC, STANDARD_SCHEMA


def _interleaved(fns: Dict[str, Callable[[], Any]], numbers: Dict[str, int], repeat: int) -> Dict[str, List[float]]:
    out: Dict[str, List[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            out[k].append(timeit.timeit(fn, number=numbers[k]) / numbers[k] * 1e9)
    return out


def run(number: int = 2000, repeat: int = 40) -> Dict[str, Dict[str, float]]:
    results: Dict[str, Dict[str, float]] = {}
    for name, schema, doc in (("standard", STANDARD_SCHEMA, STANDARD_DOC), ("complex", COMPLEX_SCHEMA, COMPLEX_DOC)):
        client = SchemaRegistryClient.new_client({"url": f"mock://bench-{uuid.uuid4().hex}"})
        schema_str = orjson.dumps(schema).decode()
        ctx = SerializationContext(f"bench-{name}", MessageField.VALUE)
        ours_ser = JSONSerializer(schema_str, client)
        conf_ser = CJSONSerializer(schema_str, client)
        ours_de = JSONDeserializer(None, schema_registry_client=client)
        conf_de = CJSONDeserializer(None, schema_registry_client=client)
        data = ours_ser(doc, ctx)
        assert conf_ser(doc, ctx) == data and ours_de(data, ctx) == doc and conf_de(data, ctx) == doc
        rs = jsonschema_rs.validator_for(schema, validate_formats=False)
        payload = data[5:]
        loads, dumps, is_valid = orjson.loads, orjson.dumps, rs.is_valid
        slow_n = max(number // 100, 20)
        batch_docs, batch_data = [doc] * 100, [data] * 100
        fns = {
            "de_batch": lambda: ours_de.deserialize_batch(batch_data, ctx),
            "ser_batch": lambda: ours_ser.serialize_batch(batch_docs, ctx),
            "de_serdes": lambda: ours_de(data, ctx),
            "de_floor": lambda: is_valid(loads(payload)),
            "de_confluent": lambda: conf_de(data, ctx),
            "ser_serdes": lambda: ours_ser(doc, ctx),
            "ser_floor": lambda: is_valid(doc) and dumps(doc),
            "ser_confluent": lambda: conf_ser(doc, ctx),
        }
        numbers = {k: (slow_n if k.endswith("confluent") else number // 100 if k.endswith("batch") else number)
                   for k in fns}
        times = _interleaved(fns, numbers, repeat)
        for k in ("de_batch", "ser_batch"):
            times[k] = [t / 100 for t in times[k]]  # per record
        r: Dict[str, float] = {}
        for k, v in times.items():
            r[k] = statistics.median(v)
            r[k + "_best"] = min(v)
        for op in ("de", "ser"):
            r[op + "_vs_confluent"] = r[op + "_serdes"] / r[op + "_confluent"]
            r[op + "_vs_floor"] = r[op + "_serdes"] / r[op + "_floor"]
            r[op + "_vs_floor_best"] = r[op + "_serdes_best"] / r[op + "_floor_best"]
            r[op + "_batch_vs_floor"] = r[op + "_batch"] / r[op + "_floor"]
            r[op + "_batch_vs_floor_best"] = r[op + "_batch_best"] / r[op + "_floor_best"]
        results[name] = r
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=40)
    args = ap.parse_args()
    for name, r in run(args.number, args.repeat).items():
        print(f"{name}:")
        for op in ("de", "ser"):
            print(
                f"  {op:3s} serdes {r[op + '_serdes']:8.0f} ns (best {r[op + '_serdes_best']:6.0f})  "
                f"confluent {r[op + '_confluent']:9.0f} ns  floor {r[op + '_floor']:7.0f} ns "
                f"(best {r[op + '_floor_best']:6.0f})  | vs confluent {r[op + '_vs_confluent']:.4f}x  "
                f"vs floor {r[op + '_vs_floor']:.2f}x (best/best {r[op + '_vs_floor_best']:.2f}x)"
            )
            print(
                f"      batch of 100: {r[op + '_batch']:8.0f} ns/record (best {r[op + '_batch_best']:6.0f})  "
                f"vs floor {r[op + '_batch_vs_floor']:.2f}x (best/best {r[op + '_batch_vs_floor_best']:.2f}x)"
            )


if __name__ == "__main__":
    main()
