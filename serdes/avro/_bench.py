"""Avro micro-benchmark: ``python -m serdes.avro._bench [--quick]``.

Compares, in one process, per record (median of several ``timeit`` repeats):

* decode: serdes ``AvroDeserializer`` (framed), the bare generated decoder, fastavro
  ``schemaless_reader`` (+ ``BytesIO``, the floor confluent-kafka pays), confluent-kafka's
  ``AvroDeserializer``;
* encode: serdes ``AvroSerializer``, fastavro ``schemaless_writer`` (+ ``BytesIO``), confluent-kafka's
  ``AvroSerializer``.
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import statistics
import sys
import timeit
import uuid
from typing import Any, Callable, Dict, List, Tuple

TRIVIAL = {"type": "record", "name": "Trivial", "fields": [{"name": "s", "type": "string"}]}

STANDARD = {
    "type": "record",
    "name": "Standard",
    "namespace": "bench",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "count", "type": "int"},
        {"name": "total", "type": "long"},
        {"name": "ratio", "type": "float"},
        {"name": "score", "type": "double"},
        {"name": "active", "type": "boolean"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "blob", "type": "bytes"},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}

COMPLEX = {
    "type": "record",
    "name": "Complex",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [
                    {"name": "street", "type": "string"},
                    {"name": "city", "type": "string"},
                    {"name": "zip", "type": "int"},
                ],
            },
        },
        {
            "name": "items",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Item",
                    "fields": [
                        {"name": "sku", "type": "string"},
                        {"name": "qty", "type": "int"},
                        {"name": "price", "type": "double"},
                    ],
                },
            },
        },
        {"name": "counters", "type": {"type": "map", "values": "long"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "billing", "type": ["null", "Address"], "default": None},
    ],
}

_UTC = datetime.timezone.utc


def records() -> Dict[str, Tuple[dict, dict]]:
    addr = {"street": "1 Main Street", "city": "Springfield", "zip": 12345}
    return {
        "trivial": (TRIVIAL, {"s": "hello world"}),
        "standard": (
            STANDARD,
            {
                "name": "widget-42",
                "count": 42,
                "total": 1_234_567_890_123,
                "ratio": 0.5,
                "score": 98.25,
                "active": True,
                "note": "some note",
                "color": "GREEN",
                "blob": b"\x00\x01\x02\x03\x04\x05",
                "ts": datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=_UTC),
            },
        ),
        "complex": (
            COMPLEX,
            {
                "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
                "address": addr,
                "items": [{"sku": f"SKU-{i}", "qty": i, "price": 9.99 + i} for i in range(3)],
                "counters": {"a": 1, "b": 2, "c": 300000},
                "amount": decimal.Decimal("1234.56"),
                "day": datetime.date(2024, 5, 6),
                "at": datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=_UTC),
                "billing": dict(addr),
            },
        ),
    }


def _median_ns(fn: Callable[[], Any], number: int, repeat: int) -> float:
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e9


def run(number: int = 20000, repeat: int = 7) -> List[Dict[str, Any]]:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer as CDeser
    from confluent_kafka.schema_registry.avro import AvroSerializer as CSer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from fastavro import parse_schema, schemaless_reader, schemaless_writer

    from serdes.avro import AvroDeserializer, AvroSerializer
    from serdes.avro._codegen import compile_decoder

    results = []
    for name, (schema, rec) in records().items():
        client = SchemaRegistryClient.new_client({"url": f"mock://bench-{name}-{uuid.uuid4().hex}"})
        ctx = SerializationContext(f"bench-{name}", MessageField.VALUE)
        s = json.dumps(schema)
        cser = CSer(client, s)
        ours_ser = AvroSerializer(client, s)
        framed = cser(rec, ctx)
        assert ours_ser(rec, ctx) == framed
        cdes = CDeser(client)
        ours = AvroDeserializer(client)
        assert ours(framed, ctx) == cdes(framed, ctx)
        parsed = parse_schema(schema)
        payload = framed[5:]
        gen = compile_decoder(schema, with_ctx=False)
        assert gen(payload) == schemaless_reader(io.BytesIO(payload), parsed)

        def fa_read() -> Any:
            return schemaless_reader(io.BytesIO(payload), parsed)

        def fa_write() -> Any:
            fo = io.BytesIO()
            schemaless_writer(fo, parsed, rec)
            return fo.getvalue()

        row = {
            "record": name,
            "decode_serdes": _median_ns(lambda: ours(framed, ctx), number, repeat),
            "decode_codegen": _median_ns(lambda: gen(payload), number, repeat),
            "decode_fastavro": _median_ns(fa_read, number, repeat),
            "decode_confluent": _median_ns(lambda: cdes(framed, ctx), number // 4, repeat),
            "encode_serdes": _median_ns(lambda: ours_ser(rec, ctx), number, repeat),
            "encode_fastavro": _median_ns(fa_write, number, repeat),
            "encode_confluent": _median_ns(lambda: cser(rec, ctx), number // 4, repeat),
        }
        results.append(row)
    return results


def main(argv: List[str]) -> None:
    quick = "--quick" in argv
    rows = run(number=3000 if quick else 20000, repeat=5 if quick else 7)
    print(f"{'record':9} {'op':6} {'serdes':>9} {'codegen':>9} {'fastavro':>9} {'confluent':>10} "
          f"{'vs conf':>8} {'vs fa':>7}")
    for r in rows:
        print(f"{r['record']:9} decode {r['decode_serdes']:9.0f} {r['decode_codegen']:9.0f} "
              f"{r['decode_fastavro']:9.0f} {r['decode_confluent']:10.0f} "
              f"{r['decode_serdes'] / r['decode_confluent']:8.3f} {r['decode_serdes'] / r['decode_fastavro']:7.3f}")
        print(f"{r['record']:9} encode {r['encode_serdes']:9.0f} {'':>9} "
              f"{r['encode_fastavro']:9.0f} {r['encode_confluent']:10.0f} "
              f"{r['encode_serdes'] / r['encode_confluent']:8.3f} {r['encode_serdes'] / r['encode_fastavro']:7.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
