"""Sample schemas and documents for the JSON benchmarks and tests (``standard`` and ``complex``)."""

from __future__ import annotations

from typing import Any, Dict

__all__ = ["STANDARD_SCHEMA", "STANDARD_DOC", "COMPLEX_SCHEMA", "COMPLEX_DOC"]

# ~10 scalar fields
STANDARD_SCHEMA: Dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "User",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "email": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "score": {"type": "number"},
        "active": {"type": "boolean"},
        "country": {"type": "string", "maxLength": 2},
        "created_at": {"type": "integer"},
        "balance": {"type": "number"},
        "nickname": {"type": ["string", "null"]},
    },
    "required": ["id", "name", "email"],
}

STANDARD_DOC: Dict[str, Any] = {
    "id": 123456789,
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "age": 36,
    "score": 98.5,
    "active": True,
    "country": "GB",
    "created_at": 1700000000000,
    "balance": -12.75,
    "nickname": None,
}

# nested objects, arrays, enums, formats, $defs
COMPLEX_SCHEMA: Dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Order",
    "type": "object",
    "$defs": {
        "money": {
            "type": "object",
            "properties": {
                "amount": {"type": "number", "minimum": 0},
                "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY"]},
            },
            "required": ["amount", "currency"],
            "additionalProperties": False,
        },
        "address": {
            "type": "object",
            "properties": {
                "street": {"type": "string", "minLength": 1},
                "city": {"type": "string"},
                "zip": {"type": "string", "pattern": "^[0-9A-Z -]{3,10}$"},
                "country": {"type": "string", "enum": ["DE", "FR", "GB", "US", "JP"]},
            },
            "required": ["street", "city", "country"],
        },
    },
    "properties": {
        "order_id": {"type": "string", "format": "uuid"},
        "placed_at": {"type": "string", "format": "date-time"},
        "status": {"type": "string", "enum": ["NEW", "PAID", "SHIPPED", "CANCELLED"]},
        "customer": {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "email": {"type": "string", "format": "email"},
                "vip": {"type": "boolean"},
                "shipping": {"$ref": "#/$defs/address"},
                "billing": {"$ref": "#/$defs/address"},
            },
            "required": ["id", "email", "shipping"],
        },
        "lines": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string"},
                    "qty": {"type": "integer", "minimum": 1},
                    "price": {"$ref": "#/$defs/money"},
                    "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                },
                "required": ["sku", "qty", "price"],
            },
        },
        "total": {"$ref": "#/$defs/money"},
        "notes": {"type": ["string", "null"]},
        "attributes": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
    },
    "required": ["order_id", "placed_at", "status", "customer", "lines", "total"],
}

COMPLEX_DOC: Dict[str, Any] = {
    "order_id": "0b9e7a52-4c1e-4b8e-9a55-3f2d6f1c2a10",
    "placed_at": "2024-05-17T10:21:33.120Z",
    "status": "PAID",
    "customer": {
        "id": 42,
        "email": "ada@example.com",
        "vip": True,
        "shipping": {"street": "12 Analytical Way", "city": "London", "zip": "NW1 6XE", "country": "GB"},
        "billing": {"street": "1 Engine Rd", "city": "Paris", "zip": "75001", "country": "FR"},
    },
    "lines": [
        {"sku": "SKU-%d" % i, "qty": i + 1, "price": {"amount": 9.99 + i, "currency": "EUR"}, "tags": ["a", "b%d" % i]}
        for i in range(5)
    ],
    "total": {"amount": 99.5, "currency": "EUR"},
    "notes": None,
    "attributes": {"gift": True, "channel": "web", "priority": 2},
}
