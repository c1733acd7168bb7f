"""A Debezium envelope whose columns carry every semantic type serdes maps, in the shape a registry
Avro converter (Apicurio's, Confluent's) writes Debezium's Connect schemas: ``connect.name`` /
``connect.parameters`` on the physical type, Connect's own Date/Time/Timestamp/Decimal with their
Avro logical types too, ``VariableScaleDecimal`` a record defined once and referenced by name,
optional columns ``["null", T]`` with default null.

``PHYSICAL``: one row as a producer writes it (and the Avro decoder gives it back);
``FLINK``: the same row as ``read_debezium(semantic_types=True)`` emits it; ``FLINK_TYPES``: the
row type.  Shared by tests/flink/test_debezium_semantic_units.py (no cluster) and
tests/flink/test_debezium.py (a MiniCluster job on the broker and registry).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from decimal import Decimal
from typing import Any, Dict, List, Optional, Tuple

NS = "pg.public.kinds"
UTC = dt.timezone.utc


def sem(physical: Any, name: str, **extra: Any) -> Dict[str, Any]:
    params = extra.pop("params", None)
    t = {"type": physical, "connect.version": 1, "connect.name": name, **extra}
    if params:
        t["connect.parameters"] = params
    return t


VSD = {"type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
       "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
       "connect.version": 1, "connect.name": "io.debezium.data.VariableScaleDecimal",
       "connect.doc": "Variable scaled decimal"}
DECIMAL_10_2 = sem("bytes", "org.apache.kafka.connect.data.Decimal", logicalType="decimal", precision=10, scale=2,
                   params={"scale": "2", "connect.decimal.precision": "10"})

#: (column, Avro type without the null branch); every column is optional (["null", T])
COLUMNS: List[Tuple[str, Any]] = [
    ("born", sem("int", "io.debezium.time.Date")),
    ("at_ms", sem("int", "io.debezium.time.Time")),
    ("at", sem("long", "io.debezium.time.MicroTime")),
    ("at_ns", sem("long", "io.debezium.time.NanoTime")),
    ("at_tz", sem("string", "io.debezium.time.ZonedTime")),
    ("seen_ms", sem("long", "io.debezium.time.Timestamp")),
    ("seen", sem("long", "io.debezium.time.MicroTimestamp")),
    ("seen_ns", sem("long", "io.debezium.time.NanoTimestamp")),
    ("seen_tz", sem("string", "io.debezium.time.ZonedTimestamp")),
    ("span", sem("long", "io.debezium.time.MicroDuration")),
    ("year", sem("int", "io.debezium.time.Year")),
    ("iso_span", sem("string", "io.debezium.time.Interval")),
    ("ratio", VSD),
    ("ratio2", "io.debezium.data.VariableScaleDecimal"),          # a reference to the named type
    ("amount", DECIMAL_10_2),
    ("uid", sem("string", "io.debezium.data.Uuid")),
    ("doc", sem("string", "io.debezium.data.Json")),
    ("mood", sem("string", "io.debezium.data.Enum", params={"allowed": "sad,ok,happy"})),
    ("moods", sem("string", "io.debezium.data.EnumSet", params={"allowed": "a,b,c"})),
    ("page", sem("string", "io.debezium.data.Xml")),
    ("path", sem("string", "io.debezium.data.Ltree")),
    ("bits", sem("bytes", "io.debezium.data.Bits", params={"length": "12"})),
    ("c_date", sem("int", "org.apache.kafka.connect.data.Date", logicalType="date")),
    ("c_time", sem("int", "org.apache.kafka.connect.data.Time", logicalType="time-millis")),
    ("c_ts", sem("long", "org.apache.kafka.connect.data.Timestamp", logicalType="timestamp-millis")),
    ("days", {"type": "array", "items": ["null", sem("int", "io.debezium.time.Date")]}),
    ("uids", {"type": "array", "items": ["null", sem("string", "io.debezium.data.Uuid")]}),
    ("name", "string"),
]


def value_schema(columns: Optional[List[Tuple[str, Any]]] = None) -> Dict[str, Any]:
    cols = COLUMNS if columns is None else columns
    return {"type": "record", "name": "Value", "namespace": NS, "connect.name": f"{NS}.Value",
            "fields": [{"name": "id", "type": "int"}]
            + [{"name": n, "type": ["null", copy.deepcopy(t)], "default": None} for n, t in cols]}


def envelope_schema(columns: Optional[List[Tuple[str, Any]]] = None) -> str:
    """The envelope (``before`` defines ``Value``, ``after`` references it) as JSON text."""
    source = {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql",
              "fields": [{"name": "connector", "type": "string"}, {"name": "table", "type": "string"},
                         {"name": "lsn", "type": ["null", "long"], "default": None}],
              "connect.name": "io.debezium.connector.postgresql.Source"}
    return json.dumps({"type": "record", "name": "Envelope", "namespace": NS, "connect.name": f"{NS}.Envelope",
                       "fields": [{"name": "before", "type": ["null", value_schema(columns)], "default": None},
                                  {"name": "after", "type": ["null", "Value"], "default": None},
                                  {"name": "source", "type": source},
                                  {"name": "op", "type": "string"},
                                  {"name": "ts_ms", "type": ["null", "long"], "default": None}]})


KEY_SCHEMA = json.dumps({"type": "record", "name": "Key", "namespace": NS, "fields": [{"name": "id", "type": "int"}]})

UID = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"


def vsd(unscaled: int, scale: int) -> Dict[str, Any]:
    n = max(1, (unscaled.bit_length() + 8) // 8)
    return {"scale": scale, "value": unscaled.to_bytes(n, "big", signed=True)}


#: one row as Debezium writes it (the Avro decoder gives the same back)
PHYSICAL: Dict[str, Any] = {
    "id": 1, "born": 19782, "at_ms": 47_655_500, "at": 47_655_500_000, "at_ns": 47_655_500_000_000,
    "at_tz": "13:14:15.5Z", "seen_ms": 1_704_164_645_123, "seen": 1_704_164_645_123_456,
    "seen_ns": 1_704_164_645_123_456_000, "seen_tz": "2024-01-02T01:04:05.123456Z", "span": -90_061_000_001,
    "year": 2024, "iso_span": "P1Y2M", "ratio": vsd(314159, 5), "ratio2": vsd(-42, 0), "amount": Decimal("12.34"),
    "uid": UID, "doc": '{"k": [1, 2.5, null]}', "mood": "happy", "moods": "a,c", "page": "<a>x</a>", "path": "a.b.c",
    "bits": b"\x0a\xbc", "c_date": dt.date(2024, 2, 29), "c_time": dt.time(13, 14, 15, 500000),
    "c_ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=UTC), "days": [0, -1, 19782],
    "uids": [UID, "00000000-0000-0000-0000-000000000000"], "name": "alice",
}


def instant(seconds: int, nanos: int) -> Any:
    from pyflink.common.time import Instant

    return Instant(seconds, nanos)


def flink_row() -> Dict[str, Any]:
    """PHYSICAL as read_debezium(semantic_types=True) emits it."""
    return {
        "id": 1, "born": dt.date(2024, 2, 29), "at_ms": dt.time(13, 14, 15, 500000), "at": dt.time(13, 14, 15, 500000),
        "at_ns": dt.time(13, 14, 15, 500000), "at_tz": "13:14:15.5Z",
        "seen_ms": dt.datetime(2024, 1, 2, 3, 4, 5, 123000), "seen": dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
        "seen_ns": dt.datetime(2024, 1, 2, 3, 4, 5, 123456), "seen_tz": instant(1_704_157_445, 123_456_000),
        "span": -90_061_000_001, "year": 2024, "iso_span": "P1Y2M", "ratio": Decimal("3.14159"),
        "ratio2": Decimal("-42"), "amount": Decimal("12.34"), "uid": UID, "doc": '{"k": [1, 2.5, null]}',
        "mood": "happy", "moods": "a,c", "page": "<a>x</a>", "path": "a.b.c", "bits": b"\x0a\xbc",
        "c_date": dt.date(2024, 2, 29), "c_time": dt.time(13, 14, 15, 500000),
        "c_ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123000),
        "days": [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2024, 2, 29)],
        "uids": [UID, "00000000-0000-0000-0000-000000000000"], "name": "alice",
    }


def flink_types() -> Dict[str, Any]:
    """The Flink type of each column (``LocalTimeTypeInfo``: java.time, Flink DATE/TIME/TIMESTAMP(9))."""
    from pyflink.common import Types
    from pyflink.common.typeinfo import LocalTimeTypeInfo as L

    date, time_, ts = (L(L.TimeType.LOCAL_DATE), L(L.TimeType.LOCAL_TIME), L(L.TimeType.LOCAL_DATE_TIME))
    by_byte = Types.PRIMITIVE_ARRAY(Types.BYTE())
    return {
        "id": Types.INT(), "born": date, "at_ms": time_, "at": time_, "at_ns": time_, "at_tz": Types.STRING(),
        "seen_ms": ts, "seen": ts, "seen_ns": ts, "seen_tz": Types.INSTANT(), "span": Types.LONG(),
        "year": Types.INT(), "iso_span": Types.STRING(), "ratio": Types.BIG_DEC(), "ratio2": Types.BIG_DEC(),
        "amount": Types.BIG_DEC(), "uid": Types.STRING(), "doc": Types.STRING(), "mood": Types.STRING(),
        "moods": Types.STRING(), "page": Types.STRING(), "path": Types.STRING(), "bits": by_byte,
        "c_date": date, "c_time": time_, "c_ts": ts, "days": Types.LIST(date), "uids": Types.LIST(Types.STRING()),
        "name": Types.STRING(),
    }


def change(op: str, before: Optional[dict], after: Optional[dict], lsn: int = 1) -> Dict[str, Any]:
    return {"before": before, "after": after, "source": {"connector": "postgresql", "table": "kinds", "lsn": lsn},
            "op": op, "ts_ms": lsn}
