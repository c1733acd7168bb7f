"""Benchmark cases: schemas, message classes and deterministic records for every format and size.

Three sizes per format, with the same logical content across formats:

* ``trivial``  -- one ``long`` id: the per-record overhead of the serializer itself.
* ``standard`` -- ten scalar fields (strings, ints, a double, a float, a bool, a nullable string).
* ``complex``  -- nested records, arrays of records, maps, enums and logical types
  (Avro: uuid, decimal, date, timestamp-millis; Protobuf: enum, maps, ``google.protobuf.Timestamp``;
  JSON Schema: ``$ref``/``$defs``, enum, ``additionalProperties`` maps, ``format: date-time``).

Protobuf message classes are built at run time from a ``FileDescriptorProto`` assembled in Python
(no ``protoc``, no generated ``_pb2`` files), so they always match the installed protobuf runtime.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import uuid
from decimal import Decimal
from typing import Any, Callable, Dict, List

SIZES = ("trivial", "standard", "complex")
FORMATS = ("avro", "protobuf", "json")

_COUNTRIES = ["DE", "FR", "US", "GB", "JP", "BR", "IN", "NL", "SE", "ES"]
_WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
          "kilo", "lima", "mike", "november", "oscar", "papa"]
_STATUSES = ["NEW", "PAID", "SHIPPED", "CANCELLED"]
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


# --------------------------------------------------------------------------------------------------
# logical records (format-neutral python values); each format converts from these
# --------------------------------------------------------------------------------------------------
def _logical(size: str, rng: random.Random, i: int) -> Dict[str, Any]:
    if size == "trivial":
        return {"id": rng.randrange(1, 1 << 40)}
    if size == "standard":
        name = rng.choice(_WORDS) + str(i)
        return {
            "id": rng.randrange(1, 1 << 40),
            "user": name,
            "email": f"{name}@example.com",
            "age": rng.randrange(18, 90),
            "score": round(rng.uniform(0, 1000), 3),
            "ratio": 0.5 + rng.randrange(0, 64) / 128.0,  # exactly representable as float32
            "active": rng.random() < 0.5,
            "country": rng.choice(_COUNTRIES),
            "created": 1_700_000_000_000 + rng.randrange(0, 10**9),
            "tag": rng.choice(_WORDS) if rng.random() < 0.7 else None,
        }
    if size == "complex":
        n_items = rng.randrange(1, 6)
        created_ms = 1_700_000_000_000 + rng.randrange(0, 10**9)
        return {
            "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "status": rng.choice(_STATUSES),
            "customer": {
                "name": rng.choice(_WORDS).title() + " " + rng.choice(_WORDS).title(),
                "address": {
                    "street": f"{rng.randrange(1, 999)} {rng.choice(_WORDS).title()} St",
                    "city": rng.choice(_WORDS).title(),
                    "zip": f"{rng.randrange(10000, 99999)}",
                    "geo": {"lat": round(rng.uniform(-90, 90), 6), "lon": round(rng.uniform(-180, 180), 6)},
                },
            },
            "items": [
                {
                    "sku": f"SKU-{rng.randrange(100000, 999999)}",
                    "qty": rng.randrange(1, 10),
                    "price_cents": rng.randrange(100, 100000),
                }
                for _ in range(n_items)
            ],
            "tags": rng.sample(_WORDS, rng.randrange(0, 5)),
            "attributes": {rng.choice(_WORDS): rng.choice(_WORDS) for _ in range(rng.randrange(0, 5))},
            "counters": {rng.choice(_WORDS): rng.randrange(0, 1 << 31) for _ in range(rng.randrange(0, 4))},
            "created_ms": created_ms,
            "birthday_days": rng.randrange(0, 20000),
            "note": rng.choice(_WORDS) if rng.random() < 0.5 else None,
        }
    raise ValueError(size)


def logical_records(size: str, count: int, seed: int = 42) -> List[Dict[str, Any]]:
    rng = random.Random(f"{seed}-{size}")
    return [_logical(size, rng, i) for i in range(count)]


# --------------------------------------------------------------------------------------------------
# Avro
# --------------------------------------------------------------------------------------------------
AVRO_SCHEMAS: Dict[str, Dict[str, Any]] = {
    "trivial": {"type": "record", "name": "Trivial", "namespace": "bench", "fields": [{"name": "id", "type": "long"}]},
    "standard": {
        "type": "record",
        "name": "Standard",
        "namespace": "bench",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "user", "type": "string"},
            {"name": "email", "type": "string"},
            {"name": "age", "type": "int"},
            {"name": "score", "type": "double"},
            {"name": "ratio", "type": "float"},
            {"name": "active", "type": "boolean"},
            {"name": "country", "type": "string"},
            {"name": "created", "type": "long"},
            {"name": "tag", "type": ["null", "string"], "default": None},
        ],
    },
    "complex": {
        "type": "record",
        "name": "Order",
        "namespace": "bench",
        "fields": [
            {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": _STATUSES}},
            {
                "name": "customer",
                "type": {
                    "type": "record",
                    "name": "Customer",
                    "fields": [
                        {"name": "name", "type": "string"},
                        {
                            "name": "address",
                            "type": {
                                "type": "record",
                                "name": "Address",
                                "fields": [
                                    {"name": "street", "type": "string"},
                                    {"name": "city", "type": "string"},
                                    {"name": "zip", "type": "string"},
                                    {
                                        "name": "geo",
                                        "type": {
                                            "type": "record",
                                            "name": "Geo",
                                            "fields": [
                                                {"name": "lat", "type": "double"},
                                                {"name": "lon", "type": "double"},
                                            ],
                                        },
                                    },
                                ],
                            },
                        },
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
                            {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
                        ],
                    },
                },
            },
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "attributes", "type": {"type": "map", "values": "string"}},
            {"name": "counters", "type": {"type": "map", "values": "long"}},
            {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "birthday", "type": {"type": "int", "logicalType": "date"}},
            {"name": "note", "type": ["null", "string"], "default": None},
        ],
    },
}


def avro_record(size: str, rec: Dict[str, Any]) -> Dict[str, Any]:
    if size != "complex":
        return dict(rec)
    out = dict(rec)
    out["id"] = uuid.UUID(rec["id"])
    out["items"] = [
        {"sku": it["sku"], "qty": it["qty"], "price": Decimal(it["price_cents"]).scaleb(-2)} for it in rec["items"]
    ]
    out["created_at"] = _EPOCH + _dt.timedelta(milliseconds=rec["created_ms"])
    out["birthday"] = _dt.date(1970, 1, 1) + _dt.timedelta(days=rec["birthday_days"])
    del out["created_ms"], out["birthday_days"]
    return out


# --------------------------------------------------------------------------------------------------
# JSON Schema
# --------------------------------------------------------------------------------------------------
JSON_SCHEMAS: Dict[str, Dict[str, Any]] = {
    "trivial": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Trivial",
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "required": ["id"],
    },
    "standard": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Standard",
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "user": {"type": "string"},
            "email": {"type": "string"},
            "age": {"type": "integer", "minimum": 0},
            "score": {"type": "number"},
            "ratio": {"type": "number"},
            "active": {"type": "boolean"},
            "country": {"type": "string", "maxLength": 2},
            "created": {"type": "integer"},
            "tag": {"type": ["string", "null"]},
        },
        "required": ["id", "user", "email", "age", "score", "ratio", "active", "country", "created"],
        "additionalProperties": False,
    },
    "complex": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Order",
        "type": "object",
        "definitions": {
            "Geo": {
                "type": "object",
                "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                "required": ["lat", "lon"],
            },
            "Address": {
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string"},
                    "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                    "geo": {"$ref": "#/definitions/Geo"},
                },
                "required": ["street", "city", "zip", "geo"],
            },
            "Item": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string"},
                    "qty": {"type": "integer", "minimum": 1},
                    "price_cents": {"type": "integer", "minimum": 0},
                },
                "required": ["sku", "qty", "price_cents"],
            },
        },
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "status": {"type": "string", "enum": _STATUSES},
            "customer": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/definitions/Address"}},
                "required": ["name", "address"],
            },
            "items": {"type": "array", "items": {"$ref": "#/definitions/Item"}, "minItems": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
            "attributes": {"type": "object", "additionalProperties": {"type": "string"}},
            "counters": {"type": "object", "additionalProperties": {"type": "integer"}},
            "created_ms": {"type": "integer"},
            "birthday_days": {"type": "integer"},
            "note": {"type": ["string", "null"]},
        },
        "required": ["id", "status", "customer", "items", "tags", "attributes", "counters", "created_ms", "birthday_days"],
    },
}


def json_record(size: str, rec: Dict[str, Any]) -> Dict[str, Any]:
    return json.loads(json.dumps(rec))  # a plain JSON value, independent of the logical record


# --------------------------------------------------------------------------------------------------
# Protobuf (classes built at run time from a FileDescriptorProto)
# --------------------------------------------------------------------------------------------------
PROTO_FILE = "serdes_bench/bench.proto"
PROTO_PACKAGE = "serdes_bench"
PROTO_MESSAGES = {"trivial": "Trivial", "standard": "Standard", "complex": "Order"}

_proto_classes: Dict[str, Any] = {}


def _build_file_descriptor_proto() -> Any:
    from google.protobuf import descriptor_pb2, timestamp_pb2  # noqa: F401  (Timestamp in the pool)

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name=PROTO_FILE, package=PROTO_PACKAGE, syntax="proto3")
    fdp.dependency.append("google/protobuf/timestamp.proto")

    def msg(name: str, fields: List[tuple], parent: Any = None) -> Any:
        m = (parent.nested_type if parent is not None else fdp.message_type).add(name=name)
        for num, (fname, ftype, extra) in enumerate(fields, start=1):
            f = m.field.add(name=fname, number=num, type=ftype, label=extra.get("label", F.LABEL_OPTIONAL))
            if "type_name" in extra:
                f.type_name = extra["type_name"]
            f.json_name = "".join(p if k == 0 else p.title() for k, p in enumerate(fname.split("_")))
        return m

    def map_entry(parent: Any, entry_name: str, value_type: int) -> None:
        e = msg(entry_name, [("key", F.TYPE_STRING, {}), ("value", value_type, {})], parent)
        e.options.map_entry = True

    rep = {"label": F.LABEL_REPEATED}
    msg("Trivial", [("id", F.TYPE_INT64, {})])
    msg(
        "Standard",
        [
            ("id", F.TYPE_INT64, {}),
            ("user", F.TYPE_STRING, {}),
            ("email", F.TYPE_STRING, {}),
            ("age", F.TYPE_INT32, {}),
            ("score", F.TYPE_DOUBLE, {}),
            ("ratio", F.TYPE_FLOAT, {}),
            ("active", F.TYPE_BOOL, {}),
            ("country", F.TYPE_STRING, {}),
            ("created", F.TYPE_INT64, {}),
            ("tag", F.TYPE_STRING, {}),
        ],
    )
    status = fdp.enum_type.add(name="Status")
    for n, s in enumerate(_STATUSES):
        status.value.add(name=f"STATUS_{s}", number=n)
    msg("Geo", [("lat", F.TYPE_DOUBLE, {}), ("lon", F.TYPE_DOUBLE, {})])
    msg(
        "Address",
        [
            ("street", F.TYPE_STRING, {}),
            ("city", F.TYPE_STRING, {}),
            ("zip", F.TYPE_STRING, {}),
            ("geo", F.TYPE_MESSAGE, {"type_name": f".{PROTO_PACKAGE}.Geo"}),
        ],
    )
    msg("Customer", [("name", F.TYPE_STRING, {}), ("address", F.TYPE_MESSAGE, {"type_name": f".{PROTO_PACKAGE}.Address"})])
    msg("Item", [("sku", F.TYPE_STRING, {}), ("qty", F.TYPE_INT32, {}), ("price_cents", F.TYPE_INT64, {})])
    order = msg(
        "Order",
        [
            ("id", F.TYPE_STRING, {}),
            ("status", F.TYPE_ENUM, {"type_name": f".{PROTO_PACKAGE}.Status"}),
            ("customer", F.TYPE_MESSAGE, {"type_name": f".{PROTO_PACKAGE}.Customer"}),
            ("items", F.TYPE_MESSAGE, {"type_name": f".{PROTO_PACKAGE}.Item", **rep}),
            ("tags", F.TYPE_STRING, rep),
            ("attributes", F.TYPE_MESSAGE, {"type_name": f".{PROTO_PACKAGE}.Order.AttributesEntry", **rep}),
            ("counters", F.TYPE_MESSAGE, {"type_name": f".{PROTO_PACKAGE}.Order.CountersEntry", **rep}),
            ("created_at", F.TYPE_MESSAGE, {"type_name": ".google.protobuf.Timestamp"}),
            ("birthday_days", F.TYPE_INT32, {}),
            ("note", F.TYPE_STRING, {}),
        ],
    )
    map_entry(order, "AttributesEntry", F.TYPE_STRING)
    map_entry(order, "CountersEntry", F.TYPE_INT64)
    return fdp


def proto_classes() -> Dict[str, Any]:
    """size -> generated message class (registered once in the default descriptor pool)."""
    if _proto_classes:
        return _proto_classes
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(PROTO_FILE)
    except KeyError:
        pool.Add(_build_file_descriptor_proto())
    for size, name in PROTO_MESSAGES.items():
        _proto_classes[size] = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PROTO_PACKAGE}.{name}"))
    return _proto_classes


def proto_record(size: str, rec: Dict[str, Any]) -> Any:
    cls = proto_classes()[size]
    if size != "complex":
        return cls(**{k: v for k, v in rec.items() if v is not None})
    m = cls(
        id=rec["id"],
        status=_STATUSES.index(rec["status"]),
        tags=rec["tags"],
        birthday_days=rec["birthday_days"],
    )
    c = rec["customer"]
    m.customer.name = c["name"]
    a = c["address"]
    m.customer.address.street = a["street"]
    m.customer.address.city = a["city"]
    m.customer.address.zip = a["zip"]
    m.customer.address.geo.lat = a["geo"]["lat"]
    m.customer.address.geo.lon = a["geo"]["lon"]
    for it in rec["items"]:
        m.items.add(sku=it["sku"], qty=it["qty"], price_cents=it["price_cents"])
    m.attributes.update(rec["attributes"])
    m.counters.update(rec["counters"])
    m.created_at.FromMilliseconds(rec["created_ms"])
    if rec["note"] is not None:
        m.note = rec["note"]
    return m


# --------------------------------------------------------------------------------------------------
RECORD_MAKERS: Dict[str, Callable[[str, Dict[str, Any]], Any]] = {
    "avro": avro_record,
    "protobuf": proto_record,
    "json": json_record,
}


def records(fmt: str, size: str, count: int, seed: int = 42) -> List[Any]:
    make = RECORD_MAKERS[fmt]
    return [make(size, r) for r in logical_records(size, count, seed)]
