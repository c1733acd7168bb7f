"""Avro sample schemas and records shared by the Avro unit and integration tests."""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Dict, Tuple

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
