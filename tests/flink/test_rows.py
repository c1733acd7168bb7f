"""Avro / JSON Schema -> Flink Row with a RowTypeInfo derived from the schema (Table API)."""

from __future__ import annotations

import json
import sys

import cloudpickle
import pytest
from pyflink.common import Row, Types

from serdes import flink as sf

from tests.support.flink_sources import from_sequence

cloudpickle.register_pickle_by_value(sys.modules[__name__])

SCHEMA = json.dumps({
    "type": "record", "name": "Order", "namespace": "t",
    "fields": [
        {"name": "order_id", "type": "string"},
        {"name": "customer", "type": ["null", "string"]},
        {"name": "amount_cents", "type": "long"},
        {"name": "price", "type": "double"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "payload", "type": "bytes"},
        {"name": "address", "type": ["null", {"type": "record", "name": "Address",
                                               "fields": [{"name": "city", "type": "string"}]}]},
    ],
})


def test_avro_row_type_info_and_converter():
    ti = sf.avro_row_type_info(SCHEMA)
    assert ti.get_field_names() == ["order_id", "customer", "amount_cents", "price", "status", "tags",
                                    "attrs", "payload", "address"]
    types = ti.get_field_types()
    assert types[2] == Types.LONG() and types[3] == Types.DOUBLE() and types[4] == Types.STRING()
    assert types[8].get_field_names() == ["city"]
    conv = sf.avro_row_converter(SCHEMA)
    row = conv({"order_id": "1", "customer": None, "amount_cents": 5, "price": 1.5, "status": "NEW",
                "tags": ["a"], "attrs": {"x": 1}, "payload": b"\x00", "address": {"city": "Oslo"}})
    assert isinstance(row, Row) and row.order_id == "1" and row.address.city == "Oslo"
    with pytest.raises(ValueError, match="union"):
        sf.avro_row_type_info(json.dumps({"type": "record", "name": "X", "fields": [
            {"name": "u", "type": ["int", "string"]}]}))


def test_json_schema_row_type_info():
    schema = {"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"},
                                               "x": {"type": ["number", "null"]},
                                               "sub": {"type": "object", "properties": {"a": {"type": "boolean"}}}}}
    ti = sf.json_schema_row_type_info(schema)
    assert ti.get_field_names() == ["id", "n", "x", "sub"]
    row = sf.json_schema_row_converter(schema)({"id": "a", "n": 2, "x": 3, "sub": {"a": True}})
    assert row.x == 3.0 and row.sub.a is True


def make_dict(i):
    return {"order_id": str(i), "customer": f"c{i % 2}", "amount_cents": i, "price": 0.5, "status": "NEW",
            "tags": ["t"], "attrs": {"k": i}, "payload": b"p", "address": None}


@pytest.mark.flink
@pytest.mark.integration
@pytest.mark.timeout(300)
def test_avro_rows_into_table_api():
    from pyflink.table import StreamTableEnvironment

    env = sf.create_env()
    t_env = StreamTableEnvironment.create(env)
    rows = from_sequence(env, 0, 19).map(make_dict).map(
        sf.avro_row_converter(SCHEMA), output_type=sf.avro_row_type_info(SCHEMA)
    )
    t_env.create_temporary_view("orders", t_env.from_data_stream(rows))
    result = t_env.sql_query(
        "SELECT customer, COUNT(*) AS n, SUM(amount_cents) AS total FROM orders GROUP BY customer"
    )
    with result.execute().collect() as it:
        final = {}
        for r in it:
            final[r[0]] = (r[1], r[2])
    assert final == {"c0": (10, sum(range(0, 20, 2))), "c1": (10, sum(range(1, 20, 2)))}


MICROS = {"type": "record", "name": "Reading", "fields": [
    {"name": "n", "type": "long"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "local_at", "type": ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]},
    {"name": "tod", "type": {"type": "long", "logicalType": "time-micros"}},
]}


def make_micros(i):
    import datetime

    return {"n": i, "at": datetime.datetime(2024, 1, 2, 3, 4, 5, 123456 + i, tzinfo=datetime.timezone.utc),
            "local_at": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999 - i) if i % 2 else None,
            "tod": datetime.time(3, 4, 5, 654321 + i)}


@pytest.mark.flink
@pytest.mark.integration
@pytest.mark.timeout(300)
def test_avro_micros_columns_keep_their_microseconds_through_flink():
    """timestamp-micros / local-timestamp-micros / time-micros rows cross Flink's serializers
    (a rebalance) with every microsecond: PyFlink's SQL_TIMESTAMP/SQL_TIME coders would keep
    milliseconds, so these columns get the java.time types."""
    import datetime

    env = sf.create_env()
    rows = (from_sequence(env, 0, 3).map(make_micros)
            .map(sf.avro_row_converter(MICROS), output_type=sf.avro_row_type_info(MICROS))
            .rebalance()
            .map(lambda r: (r.n, r.at, r.local_at, r.tod), output_type=Types.PICKLED_BYTE_ARRAY()))
    with rows.execute_and_collect() as it:
        got = sorted(it)
    assert got == [(i, make_micros(i)["at"].replace(tzinfo=None), make_micros(i)["local_at"], make_micros(i)["tod"])
                   for i in range(4)]
    assert got[1][1] == datetime.datetime(2024, 1, 2, 3, 4, 5, 123457)
