"""JSON serdes micro-benchmark against confluent-kafka, in one process.

    python -m serdes.json._bench [--number N] [--repeat R]

Prints median ns per record (timeit, R repeats of N calls) for the ``standard`` and ``complex``
documents of :mod:`serdes.json._samples`, validation on (the default of both libraries), and the
ratios: serdes / confluent-kafka, and serdes / raw floor (``orjson.loads`` + jsonschema-rs
``is_valid`` for deserialize; ``is_valid`` + ``orjson.dumps`` for serialize).
"""

from __future__ import annotations

import argparse
import statistics
import timeit
import uuid
from typing import Any, Callable, Dict

import jsonschema_rs
import orjson
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJSONDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CJSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes.json import JSONDeserializer, JSONSerializer
from serdes.json._samples import COMPLEX_DOC, COMPLEX_SCHEMA, STANDARD_DOC, STANDARD_SCHEMA


def _median_ns(fn: Callable[[], Any], number: int, repeat: int) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e9


def run(number: int = 20000, repeat: int = 7) -> Dict[str, Dict[str, float]]:
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
        slow_n = max(number // 50, 200)
        r = {
            "de_serdes": _median_ns(lambda: ours_de(data, ctx), number, repeat),
            "de_confluent": _median_ns(lambda: conf_de(data, ctx), slow_n, repeat),
            "de_floor": _median_ns(lambda: is_valid(loads(payload)), number, repeat),
            "ser_serdes": _median_ns(lambda: ours_ser(doc, ctx), number, repeat),
            "ser_confluent": _median_ns(lambda: conf_ser(doc, ctx), slow_n, repeat),
            "ser_floor": _median_ns(lambda: is_valid(doc) and dumps(doc), number, repeat),
        }
        r["de_vs_confluent"] = r["de_serdes"] / r["de_confluent"]
        r["de_vs_floor"] = r["de_serdes"] / r["de_floor"]
        r["ser_vs_confluent"] = r["ser_serdes"] / r["ser_confluent"]
        r["ser_vs_floor"] = r["ser_serdes"] / r["ser_floor"]
        results[name] = r
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--number", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    for name, r in run(args.number, args.repeat).items():
        print(f"{name}:")
        for op in ("de", "ser"):
            print(
                f"  {op:3s} serdes {r[op + '_serdes']:9.0f} ns  confluent {r[op + '_confluent']:10.0f} ns  "
                f"floor {r[op + '_floor']:8.0f} ns  | vs confluent {r[op + '_vs_confluent']:.4f}x  "
                f"vs floor {r[op + '_vs_floor']:.2f}x"
            )


if __name__ == "__main__":
    main()
