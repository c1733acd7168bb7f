"""Hostile Debezium records and a null schema-id header, in real PyFlink MiniCluster jobs on the real
broker and registry (issue 21, findings 1, 2 and 12).

* A value its column's Flink type cannot hold (a JSON ``integer`` of 2**63 in a BIGINT column, a
  ``source.lsn`` of 2**64 in the BIGINT metadata column, a Protobuf ``uint64``/``fixed64`` above
  2**63-1) used to reach PyFlink's coder, which raised outside serdes' ``try`` and failed the job
  even with ``on_error="skip"``.  Now it is a ``ColumnValueError`` inside the decode operator:
  ``skip`` drops it (the job finishes, the other rows are exact), ``dead_letter`` routes it,
  ``fail`` fails the job with the error naming the column and the record's offset.
* A row with missing columns (``"after": {}`` under a permissive schema) used to become a row of
  NULLs, and an upsert delete whose key has other field names a ``DELETE(None, None)`` that deletes
  nothing downstream: both are ``MalformedEnvelopeError`` now.
* A null ``__value_schema_id`` header: a plain consumer reads the schema id from the payload's
  prefix (no header); the Flink shim used to turn the null into ``b""`` (``TruncatedFrameError``).
  Plain consumer, ``read_kafka`` (row shim) and ``read_kafka_keyed`` (packed records) now decode
  the same records to the same values.

The per-type bounds are unit-tested in tests/flink/test_column_checks.py.
"""

from __future__ import annotations

import json
import sys

import cloudpickle
import pytest
from confluent_kafka.serialization import MessageField, SerializationContext
from pyflink.datastream import KeyedProcessFunction

from serdes import flink as sf

from tests.support import debezium_samples as ds
from tests.support.registry_client import registry_client

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = [pytest.mark.flink, pytest.mark.integration, pytest.mark.timeout(600)]

_ROW = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}
#: a permissive envelope: nothing required, so {"after": {}} passes JSON Schema validation
ENVELOPE = json.dumps({"type": "object", "title": "dbserver1.public.people.Envelope", "properties": {
    "before": {"oneOf": [{"type": "null"}, _ROW]}, "after": {"oneOf": [{"type": "null"}, _ROW]},
    "source": ds.JSON_SOURCE, "op": {"type": "string"}, "ts_ms": {"type": "integer"}}})
KEY = json.dumps({"type": "object", "properties": {"pk": {"type": "integer"}}})
LSN = ds.source(1)["lsn"]


def _event(op, before, after, **source):
    return {"op": op, "before": before, "after": after, "source": dict(ds.source(1), **source), "ts_ms": 1}


def produce_json(produce, topic, registry_url, events, keys=None):
    """Each event as a registry-framed JSON record written byte by byte (the serializer would refuse
    some of them; the deserializer must face them): the frame of a registered envelope + the JSON."""
    from serdes.json import JSONSerializer

    client = registry_client(registry_url)
    ctx = SerializationContext(topic, MessageField.VALUE)
    prefix = JSONSerializer(ENVELOPE, client)(_event("c", None, {"id": 0, "name": "x"}), ctx)[:5]
    key_ser = JSONSerializer(KEY, client)
    recs = []
    for i, e in enumerate(events):
        k = b"%d" % i if keys is None else key_ser(keys[i], SerializationContext(topic, MessageField.KEY))
        recs.append((k, prefix + json.dumps(e).encode()))
    produce(topic, recs)


HOSTILE = [
    _event("c", None, {"id": 1, "name": "a"}),                       # 0
    _event("c", None, {"id": 9223372036854775808, "name": "big"}),   # 1: BIGINT overflow
    _event("c", None, {}),                                           # 2: no columns at all
    _event("c", None, {"id": 2, "name": "b"}, lsn=1 << 64),          # 3: the lsn metadata column overflows
    _event("c", None, {"id": 3.0, "name": "c"}),                     # 4: JSON's integer 3.0 is 3
    _event("u", {"id": 1, "name": "a"}, {"id": 1, "name": "a2"}),    # 5
    _event("c", None, {"id": 4}),                                    # 6: a column missing
    _event("d", {"id": 3, "name": "c"}, None),                       # 7
]
GOOD_ROWS = [("INSERT", (1, "a", LSN)), ("INSERT", (3, "c", LSN)), ("UPDATE_BEFORE", (1, "a", LSN)),
             ("UPDATE_AFTER", (1, "a2", LSN)), ("DELETE", (3, "c", LSN))]


def _read(env, kafka_bootstrap, topic, registry_url, on_error, **kw):
    return sf.read_debezium(env, kafka_bootstrap, topic, value=sf.json_schema(registry_url, ENVELOPE),
                            metadata=["lsn"], on_error=on_error, bounded=True, **kw)


def _kinds(rows):
    return [(r.get_row_kind().name, tuple(r)) for r in rows]


def test_skip_drops_values_the_columns_cannot_hold_and_missing_columns(kafka_bootstrap, registry_url, new_topic,
                                                                        produce):
    topic = new_topic("hostile-cdc-skip")
    produce_json(produce, topic, registry_url, HOSTILE)
    env = sf.create_env()
    stream = _read(env, kafka_bootstrap, topic, registry_url, "skip")
    rows = list(stream.execute_and_collect())             # the job finishes
    assert _kinds(rows) == GOOD_ROWS
    assert all(type(r[0]) is int for r in rows)


def test_dead_letter_routes_them_with_their_typed_errors(kafka_bootstrap, registry_url, new_topic, produce):
    from pyflink.common import Types

    topic = new_topic("hostile-cdc-dlq")
    produce_json(produce, topic, registry_url, HOSTILE)
    env = sf.create_env()
    stream = _read(env, kafka_bootstrap, topic, registry_url, "dead_letter")
    rows = stream.map(lambda r: json.dumps(["row", r.get_row_kind().name, list(r)]), output_type=Types.STRING())
    dead = sf.dead_letters(stream).map(lambda d: json.dumps(["dlq", d[2], d[8], d[7]]), output_type=Types.STRING())
    out = [json.loads(s) for s in rows.union(dead).execute_and_collect()]    # one job, both outputs
    assert [(k, tuple(v)) for _, k, v in (o for o in out if o[0] == "row")] == GOOD_ROWS
    rejected = sorted((o[1], o[2], o[3]) for o in out if o[0] == "dlq")
    assert [(off, typ) for off, typ, _ in rejected] == [
        (1, "ColumnValueError"), (2, "MalformedEnvelopeError"), (3, "ColumnValueError"), (6, "MalformedEnvelopeError")]
    reasons = {off: reason for off, _, reason in rejected}
    assert "column 'id': 9223372036854775808 is outside BIGINT's range" in reasons[1]
    assert "'after' has no column 'id', 'name'" in reasons[2]
    assert "column 'lsn': 18446744073709551616 is outside BIGINT's range" in reasons[3]
    assert "'after' has no column 'name'" in reasons[6]


@pytest.mark.parametrize("case", ["overflow", "missing", "key"])
def test_fail_fails_the_job_with_the_typed_error(case, kafka_bootstrap, registry_url, new_topic, produce):
    topic = new_topic(f"hostile-cdc-fail-{case}")
    kw = {}
    keys = None
    if case == "overflow":
        events = HOSTILE[:2]
        expect = ("ColumnValueError", "column 'id': 9223372036854775808 is outside BIGINT's range")
    elif case == "missing":
        events = [HOSTILE[0], HOSTILE[2]]
        expect = ("MalformedEnvelopeError", "'after' has no column 'id', 'name'")
    else:  # an upsert delete by a record key whose fields are no columns of the table
        events = [HOSTILE[0], _event("d", None, None)]
        keys = [{"pk": 1}, {"pk": 1}]
        kw = {"changelog_mode": "upsert", "key": sf.json_schema(registry_url, KEY)}
        expect = ("MalformedEnvelopeError", "key field 'pk' is not a column of the table")
    produce_json(produce, topic, registry_url, events, keys)
    env = sf.create_env()
    _read(env, kafka_bootstrap, topic, registry_url, "fail", **kw).map(lambda r: r[0]).print()
    with pytest.raises(sf.FlinkJobError) as info:
        sf.execute(env, f"hostile-cdc-{case}")
    err = info.value
    assert err.error_type == expect[0], err
    assert (err.topic, err.partition, err.offset) == (topic, 0, 1)
    assert expect[1] in str(err)


# -- Protobuf uint64 / fixed64 columns (BIGINT) ---------------------------------------------------

def _produce_counters(produce, topic, registry_url, values):
    from serdes.protobuf import ProtobufSerializer
    from serdes_test.dbz_counters_pb2 import Envelope, Value

    ser = ProtobufSerializer(Envelope, registry_client(registry_url))
    ctx = SerializationContext(topic, MessageField.VALUE)
    produce(topic, [(b"%d" % v["id"], ser(Envelope(op="c", after=Value(**v), ts_ms=1), ctx)) for v in values])


@pytest.mark.parametrize("on_error", ["skip", "fail"])
def test_protobuf_unsigned_64_bit_columns(on_error, kafka_bootstrap, registry_url, new_topic, produce):
    from serdes_test.dbz_counters_pb2 import Envelope

    topic = new_topic(f"hostile-cdc-pb-{on_error}")
    top = (1 << 63) - 1
    _produce_counters(produce, topic, registry_url, [
        {"id": 1, "hits": top, "total": 5}, {"id": 2, "hits": 1 << 63, "total": 5},
        {"id": 3, "hits": 1, "total": (1 << 64) - 1}, {"id": 4, "hits": 0, "total": top}])
    env = sf.create_env()
    stream = sf.read_debezium(env, kafka_bootstrap, topic, value=sf.protobuf(Envelope, registry_url),
                              on_error=on_error, bounded=True)
    if on_error == "skip":
        assert [tuple(r) for r in stream.execute_and_collect()] == [(1, top, 5), (4, 0, top)]
        return
    stream.map(lambda r: r[0]).print()
    with pytest.raises(sf.FlinkJobError) as info:
        sf.execute(env, "hostile-cdc-protobuf")
    err = info.value
    assert err.error_type == "ColumnValueError" and (err.topic, err.offset) == (topic, 1), err
    assert "column 'hits': 9223372036854775808 is outside BIGINT's range" in str(err)


# -- a null schema-id header: plain consumer and Flink decode alike ---------------------------------

ORDER = json.dumps({"type": "record", "name": "Order", "namespace": "hostile", "fields": [
    {"name": "id", "type": "int"}, {"name": "item", "type": "string"}]})


def test_null_value_schema_id_header_plain_and_flink(kafka_bootstrap, registry_url, new_topic, produce, consume):
    """Records framed in the payload (magic byte + id) carrying ``__value_schema_id: null`` (and one
    with the null header first and a junk one after it: the first occurrence wins everywhere)."""
    from pyflink.common import Types

    from serdes.avro import AvroDeserializer, AvroSerializer

    topic = new_topic("null-schema-id-header")
    client = registry_client(registry_url)
    ser = AvroSerializer(client, ORDER)
    ctx = SerializationContext(topic, MessageField.VALUE)
    orders = [{"id": i, "item": f"item-{i}"} for i in range(3)]
    headers = [[("__value_schema_id", None)], [("__value_schema_id", None), ("other", b"x")],
               [("__value_schema_id", None), ("__value_schema_id", b"\x07junk")]]
    produce(topic, [(b"%d" % o["id"], ser(o, ctx), h) for o, h in zip(orders, headers, strict=True)])

    # a plain confluent-kafka consumer: the header list holds None, which is no header
    msgs = consume(topic, expected=3)
    assert [m.headers()[0] for m in msgs] == [("__value_schema_id", None)] * 3
    de = AvroDeserializer(client)
    assert [de(m.value(), SerializationContext(topic, MessageField.VALUE, m.headers())) for m in msgs] == orders

    # read_kafka (the row shim) and read_kafka_keyed (packed records) in one job
    env = sf.create_env()
    plain = sf.read_kafka(env, kafka_bootstrap, topic, sf.avro(registry_url), bounded=True)
    keyed = sf.read_kafka_keyed(env, kafka_bootstrap, topic, sf.avro(registry_url), key_type=Types.STRING(),
                                bounded=True).process(Tagged())
    out = plain.map(lambda o: json.dumps(["rows", o]), output_type=Types.STRING()).union(
        keyed.map(lambda s: s, output_type=Types.STRING()))
    got = sorted(json.dumps(json.loads(s), sort_keys=True) for s in out.execute_and_collect())
    assert got == sorted(json.dumps(x, sort_keys=True) for x in [["rows", o] for o in orders] + [["packed", o] for o in orders])


class Tagged(KeyedProcessFunction):
    def process_element(self, order, ctx):
        yield json.dumps(["packed", order])


class KeyAndCustomer(KeyedProcessFunction):
    def process_element(self, order, ctx):
        yield json.dumps([ctx.get_current_key(), order.customer, order.order_id])


def test_null_value_schema_id_header_protobuf_keyed_by_field(kafka_bootstrap, registry_url, new_topic, produce):
    """``read_kafka_keyed(key_by="customer")`` reads the key field in Java: a null header means
    payload framing there too (it used to count as header framing, so the key was read from the
    frame's bytes and the record failed its key check)."""
    from pyflink.common import Types

    from serdes.demo.orders_pb2 import Order
    from serdes.protobuf import ProtobufSerializer

    topic = new_topic("null-schema-id-header-pb")
    ser = ProtobufSerializer(Order, registry_client(registry_url))
    ctx = SerializationContext(topic, MessageField.VALUE)
    orders = [Order(order_id=f"o{i}", customer=f"c{i % 2}", amount_cents=i) for i in range(4)]
    produce(topic, [(None, ser(o, ctx), [("__value_schema_id", None)]) for o in orders])
    env = sf.create_env()
    keyed = sf.read_kafka_keyed(env, kafka_bootstrap, topic, sf.protobuf(Order, registry_url), key_by="customer",
                                key_type=Types.STRING(), bounded=True)
    out = keyed.process(KeyAndCustomer()).map(lambda s: s, output_type=Types.STRING())
    got = sorted(json.loads(s) for s in out.execute_and_collect())
    assert got == sorted([o.customer, o.customer, o.order_id] for o in orders)
