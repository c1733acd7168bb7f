"""Debezium change events for the CDC tests, in the connector's exact shape.

Table ``public.accounts (id int primary key, owner varchar not null, balance bigint not null)``
captured by the PostgreSQL connector with ``topic.prefix=dbserver1``: Avro names
``dbserver1.public.accounts.{Key,Value,Envelope}``, source ``io.debezium.connector.postgresql.Source``,
transaction ``event.block`` (what Confluent's AvroConverter / JsonSchemaConverter /
ProtobufConverter produce from Debezium's Connect schemas; shape from Debezium's PostgreSQL
connector documentation, "Data change events").  Version 2 of the table adds a nullable column
``email`` (``ALTER TABLE accounts ADD COLUMN email varchar``) -> a new registry version whose
``Value`` has ``email: ["null", "string"]``, default null.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Optional, Tuple

SERVER, SCHEMA, TABLE = "dbserver1", "public", "accounts"
NS = f"{SERVER}.{SCHEMA}.{TABLE}"


def _opt(t: Any) -> List[Any]:
    return ["null", t]


AVRO_SOURCE = {
    "type": "record",
    "name": "Source",
    "namespace": "io.debezium.connector.postgresql",
    "fields": [
        {"name": "version", "type": "string"},
        {"name": "connector", "type": "string"},
        {"name": "name", "type": "string"},
        {"name": "ts_ms", "type": "long"},
        {"name": "snapshot", "type": [
            {"type": "string", "connect.version": 1,
             "connect.parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
             "connect.default": "false", "connect.name": "io.debezium.data.Enum"},
            "null"], "default": "false"},
        {"name": "db", "type": "string"},
        {"name": "sequence", "type": _opt("string"), "default": None},
        {"name": "ts_us", "type": _opt("long"), "default": None},
        {"name": "ts_ns", "type": _opt("long"), "default": None},
        {"name": "schema", "type": "string"},
        {"name": "table", "type": "string"},
        {"name": "txId", "type": _opt("long"), "default": None},
        {"name": "lsn", "type": _opt("long"), "default": None},
        {"name": "xmin", "type": _opt("long"), "default": None},
    ],
    "connect.name": "io.debezium.connector.postgresql.Source",
}

AVRO_BLOCK = {
    "type": "record",
    "name": "block",
    "namespace": "event",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "total_order", "type": "long"},
        {"name": "data_collection_order", "type": "long"},
    ],
    "connect.version": 1,
    "connect.name": "event.block",
}


def avro_value(with_email: bool = False) -> Dict[str, Any]:
    fields: List[Dict[str, Any]] = [
        {"name": "id", "type": "int"},
        {"name": "owner", "type": "string"},
        {"name": "balance", "type": "long"},
    ]
    if with_email:
        fields.append({"name": "email", "type": _opt("string"), "default": None})
    return {"type": "record", "name": "Value", "namespace": NS, "fields": fields,
            "connect.name": f"{NS}.Value"}


def avro_envelope(with_email: bool = False) -> str:
    return json.dumps({
        "type": "record",
        "name": "Envelope",
        "namespace": NS,
        "fields": [
            {"name": "before", "type": _opt(avro_value(with_email)), "default": None},
            {"name": "after", "type": _opt("Value"), "default": None},
            {"name": "source", "type": AVRO_SOURCE},
            {"name": "transaction", "type": _opt(AVRO_BLOCK), "default": None},
            {"name": "op", "type": "string"},
            {"name": "ts_ms", "type": _opt("long"), "default": None},
            {"name": "ts_us", "type": _opt("long"), "default": None},
            {"name": "ts_ns", "type": _opt("long"), "default": None},
        ],
        "connect.version": 2,
        "connect.name": f"{NS}.Envelope",
    })


AVRO_KEY = json.dumps({"type": "record", "name": "Key", "namespace": NS,
                       "fields": [{"name": "id", "type": "int"}], "connect.name": f"{NS}.Key"})


# -- JSON Schema (JsonSchemaConverter: optional -> oneOf [null, T], connect.index/type kept) ------

def _j(t: str, connect: Optional[str] = None, index: Optional[int] = None) -> Dict[str, Any]:
    s: Dict[str, Any] = {"type": t}
    if connect:
        s["connect.type"] = connect
    if index is not None:
        s["connect.index"] = index
    return s


def _jopt(inner: Dict[str, Any], index: int) -> Dict[str, Any]:
    return {"oneOf": [{"type": "null"}, inner], "connect.index": index}


def json_value(with_email: bool = False) -> Dict[str, Any]:
    props: Dict[str, Any] = {
        "id": _j("integer", "int32", 0),
        "owner": _j("string", None, 1),
        "balance": _j("integer", "int64", 2),
    }
    if with_email:
        props["email"] = _jopt({"type": "string"}, 3)
    return {"type": "object", "title": f"{NS}.Value", "properties": props,
            "required": ["id", "owner", "balance"]}


JSON_SOURCE = {
    "type": "object",
    "title": "io.debezium.connector.postgresql.Source",
    "properties": {
        "version": _j("string", None, 0),
        "connector": _j("string", None, 1),
        "name": _j("string", None, 2),
        "ts_ms": _j("integer", "int64", 3),
        "snapshot": _jopt({"type": "string", "title": "io.debezium.data.Enum", "default": "false"}, 4),
        "db": _j("string", None, 5),
        "sequence": _jopt({"type": "string"}, 6),
        "ts_us": _jopt({"type": "integer", "connect.type": "int64"}, 7),
        "ts_ns": _jopt({"type": "integer", "connect.type": "int64"}, 8),
        "schema": _j("string", None, 9),
        "table": _j("string", None, 10),
        "txId": _jopt({"type": "integer", "connect.type": "int64"}, 11),
        "lsn": _jopt({"type": "integer", "connect.type": "int64"}, 12),
        "xmin": _jopt({"type": "integer", "connect.type": "int64"}, 13),
    },
    "required": ["version", "connector", "name", "ts_ms", "db", "schema", "table"],
    "connect.index": 2,
}

JSON_BLOCK = {
    "type": "object",
    "title": "event.block",
    "properties": {
        "id": _j("string", None, 0),
        "total_order": _j("integer", "int64", 1),
        "data_collection_order": _j("integer", "int64", 2),
    },
    "required": ["id", "total_order", "data_collection_order"],
}


def json_envelope(with_email: bool = False) -> str:
    return json.dumps({
        "type": "object",
        "title": f"{NS}.Envelope",
        "properties": {
            "before": _jopt(json_value(with_email), 0),
            "after": _jopt(json_value(with_email), 1),
            "source": JSON_SOURCE,
            "transaction": _jopt(JSON_BLOCK, 3),
            "op": _j("string", None, 4),
            "ts_ms": _jopt({"type": "integer", "connect.type": "int64"}, 5),
            "ts_us": _jopt({"type": "integer", "connect.type": "int64"}, 6),
            "ts_ns": _jopt({"type": "integer", "connect.type": "int64"}, 7),
        },
        "required": ["source", "op"],
    })


JSON_KEY = json.dumps({"type": "object", "title": f"{NS}.Key",
                       "properties": {"id": _j("integer", "int32", 0)}, "required": ["id"]})


# -- events ---------------------------------------------------------------------------------------

BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def source(seq: int, snapshot: str = "false") -> Dict[str, Any]:
    return {
        "version": "3.3.1.Final", "connector": "postgresql", "name": SERVER,
        "ts_ms": BASE_TS + seq, "snapshot": snapshot, "db": "inventory",
        "sequence": json.dumps([None, str(24_000_000 + seq * 100)]),
        "ts_us": (BASE_TS + seq) * 1000, "ts_ns": (BASE_TS + seq) * 1_000_000,
        "schema": SCHEMA, "table": TABLE, "txId": 700 + seq, "lsn": 24_000_000 + seq * 100, "xmin": None,
    }


def envelope(op: str, before: Optional[dict], after: Optional[dict], seq: int,
             snapshot: str = "false", transaction: Optional[dict] = None) -> Dict[str, Any]:
    return {
        "before": before, "after": after, "source": source(seq, snapshot),
        "transaction": transaction, "op": op, "ts_ms": BASE_TS + seq + 5,
        "ts_us": (BASE_TS + seq + 5) * 1000, "ts_ns": (BASE_TS + seq + 5) * 1_000_000,
    }


def row(i: int, owner: str, balance: int, email: Any = "absent") -> Dict[str, Any]:
    r = {"id": i, "owner": owner, "balance": balance}
    if email != "absent":
        r["email"] = email
    return r


def history() -> Tuple[List[Tuple[Optional[dict], Optional[dict]]], Dict[str, int]]:
    """A snapshot, inserts, updates (one moves an account to another owner), deletes each
    followed by a tombstone.  Returns ``([(key, envelope or None), ...], expected SUM(balance)
    per owner of the final table)``."""
    ev: List[Tuple[Optional[dict], Optional[dict]]] = []
    seq = 0

    def add(op, before, after, snapshot="false", tx=None):
        nonlocal seq
        seq += 1
        key = {"id": (after or before)["id"]}
        ev.append((key, envelope(op, before, after, seq, snapshot, tx)))

    # snapshot of the existing table
    add("r", None, row(1, "alice", 100), "first")
    add("r", None, row(2, "bob", 200), "true")
    add("r", None, row(3, "alice", 50), "last")
    # live changes
    add("c", None, row(4, "carol", 70))
    add("c", None, row(5, "bob", 30), tx={"id": "701:24000500", "total_order": 1, "data_collection_order": 1})
    add("u", row(1, "alice", 100), row(1, "alice", 150))
    add("u", row(2, "bob", 200), row(2, "carol", 210))      # moves to another owner
    add("d", row(3, "alice", 50), None)
    ev.append(({"id": 3}, None))                              # tombstone
    add("u", row(4, "carol", 70), row(4, "carol", 75))
    add("d", row(5, "bob", 30), None)
    ev.append(({"id": 5}, None))
    add("c", None, row(6, "dave", 10))
    final = {1: ("alice", 150), 2: ("carol", 210), 4: ("carol", 75), 6: ("dave", 10)}
    totals: Dict[str, int] = {}
    for owner, bal in final.values():
        totals[owner] = totals.get(owner, 0) + bal
    return ev, totals


def to_proto(env: Optional[dict]):
    """The same event as a ``dbserver1.public.accounts.Envelope`` message (``serdes_test`` from tests/protos, on pytest's pythonpath)."""
    if env is None:
        return None
    from serdes_test.dbz_accounts_pb2 import Envelope

    e = copy.deepcopy(env)
    msg = Envelope(op=e["op"], ts_ms=e["ts_ms"], ts_us=e["ts_us"], ts_ns=e["ts_ns"])
    for part in ("before", "after"):
        if e[part] is not None:
            getattr(msg, part).CopyFrom(type(msg.after)(**e[part]))
    msg.source.CopyFrom(type(msg.source)(**{k: v for k, v in e["source"].items() if v is not None}))
    if e["transaction"] is not None:
        msg.transaction.CopyFrom(type(msg.transaction)(**e["transaction"]))
    return msg
