"""End to end: real Kafka + real registry + PyFlink MiniCluster.

Each format: prefix-framed records are read with ``read_kafka``, keyed by customer with a
running count/sum in keyed ValueState, re-encoded with the registry serializers and written
with ``write_kafka``; a confluent-kafka consumer verifies every record.
"""

from __future__ import annotations

import json
import struct

import pytest
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import flink as sf

import sys  # noqa: E402

import cloudpickle  # noqa: E402
from tests.support.registry_client import registry_client

# The job's functions live in this test module, which the Flink workers cannot import
# (thread mode runs in the JVM's embedded interpreter): ship them by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = [pytest.mark.flink, pytest.mark.integration, pytest.mark.timeout(300)]

N = 120
CUSTOMERS = 4

ORDER_AVRO = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "serdes.test",
        "fields": [
            {"name": "order_id", "type": "string"},
            {"name": "customer", "type": "string"},
            {"name": "amount_cents", "type": "long"},
        ],
    }
)
TOTAL_AVRO = json.dumps(
    {
        "type": "record",
        "name": "CustomerTotal",
        "namespace": "serdes.test",
        "fields": [
            {"name": "customer", "type": "string"},
            {"name": "order_id", "type": "string"},
            {"name": "count", "type": "long"},
            {"name": "total_cents", "type": "long"},
        ],
    }
)
ORDER_JSON = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Order",
        "type": "object",
        "properties": {
            "order_id": {"type": "string"},
            "customer": {"type": "string"},
            "amount_cents": {"type": "integer"},
        },
        "required": ["order_id", "customer", "amount_cents"],
    }
)
TOTAL_JSON = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "CustomerTotal",
        "type": "object",
        "properties": {
            "customer": {"type": "string"},
            "order_id": {"type": "string"},
            "count": {"type": "integer"},
            "total_cents": {"type": "integer"},
        },
        "required": ["customer", "count", "total_cents"],
    }
)


def orders(n=N):
    return [
        {"order_id": f"o{i}", "customer": f"c{i % CUSTOMERS}", "amount_cents": 100 + i} for i in range(n)
    ]


def expected_totals(rows):
    totals = {}
    for o in rows:
        c, s = totals.get(o["customer"], (0, 0))
        totals[o["customer"]] = (c + 1, s + o["amount_cents"])
    return totals


def check_outputs(msgs, decode, inputs):
    """Every input order arrives once, keyed by customer, with correct running totals."""
    assert len(msgs) == len(inputs)
    seen = {}
    final = {}
    for m in msgs:
        t = decode(m.value())
        assert m.key().decode() == t["customer"]
        seen[t["order_id"]] = t
        c, s = final.get(t["customer"], (0, 0))
        final[t["customer"]] = max((c, s), (t["count"], t["total_cents"]))
    assert sorted(seen) == sorted(o["order_id"] for o in inputs)
    assert final == expected_totals(inputs)


def _ser(fmt, client, schema):
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    return AvroSerializer(client, schema) if fmt == "avro" else JSONSerializer(schema, client)


def _de(fmt, client, schema=None):
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer

    return AvroDeserializer(client) if fmt == "avro" else JSONDeserializer(schema, schema_registry_client=client)


# --- the job under test (module level: pickled by reference into the workers) ---------------

from pyflink.common import Types  # noqa: E402
from pyflink.datastream import KeyedProcessFunction  # noqa: E402
from pyflink.datastream.state import ValueStateDescriptor  # noqa: E402


class RunningTotal(KeyedProcessFunction):
    """dict orders -> dict totals, count/sum per customer in keyed ValueState."""

    def open(self, runtime_context):
        self.state = runtime_context.get_state(
            ValueStateDescriptor("total", Types.TUPLE([Types.LONG(), Types.LONG()]))
        )

    def process_element(self, order, ctx):
        count, total = self.state.value() or (0, 0)
        count, total = count + 1, total + order["amount_cents"]
        self.state.update((count, total))
        yield {"customer": order["customer"], "order_id": order["order_id"], "count": count, "total_cents": total}


def by_customer(o):
    return o["customer"]


def run_dict_job(fmt, bootstrap, registry, t_in, t_out, in_schema, out_schema, **read_kw):
    env = sf.create_env()
    spec = sf.avro(registry) if fmt == "avro" else sf.json_schema(registry, in_schema)
    out_spec = sf.avro_serializer(registry, out_schema) if fmt == "avro" else sf.json_serializer(registry, out_schema)
    decoded = sf.read_kafka(env, bootstrap, t_in, spec, bounded=True, **read_kw)
    totals = decoded.key_by(by_customer, key_type=Types.STRING()).process(RunningTotal())
    sf.write_kafka(totals, bootstrap, t_out, out_spec, key_fn=by_customer)
    return env


@pytest.mark.parametrize("fmt", ["avro", "json"])
def test_dict_formats_end_to_end(fmt, kafka_bootstrap, registry_url, new_topic, produce, consume):
    client = registry_client(registry_url)
    in_schema, out_schema = (ORDER_AVRO, TOTAL_AVRO) if fmt == "avro" else (ORDER_JSON, TOTAL_JSON)
    t_in, t_out = new_topic(f"{fmt}-in"), new_topic(f"{fmt}-out")
    ser = _ser(fmt, client, in_schema)
    inputs = orders()
    produce(t_in, [(o["customer"].encode(), ser(o, SerializationContext(t_in, MessageField.VALUE))) for o in inputs])

    env = run_dict_job(fmt, kafka_bootstrap, registry_url, t_in, t_out, in_schema, out_schema)
    env.execute(f"e2e-{fmt}")

    de = _de(fmt, client, out_schema)
    msgs = consume(t_out, len(inputs))
    check_outputs(msgs, lambda b: de(b, SerializationContext(t_out, MessageField.VALUE)), inputs)
    assert all(m.value()[0] == 0 for m in msgs)  # prefix framing: magic 0 + 4-byte id


class ProtoRunningTotal(KeyedProcessFunction):
    """Order messages in, CustomerTotal messages out; state kept as CustomerTotal wire bytes."""

    def open(self, runtime_context):
        from serdes.demo.orders_pb2 import CustomerTotal

        self.state = runtime_context.get_state(sf.ProtobufValueStateDescriptor("total", CustomerTotal))

    def process_element(self, order, ctx):
        from serdes.demo.orders_pb2 import CustomerTotal

        t = self.state.value() or CustomerTotal(customer=order.customer)
        t.count += 1
        t.total_cents += order.amount_cents
        self.state.update(t)
        # order_id travels in the key-less output through a side field: reuse customer/count
        yield CustomerTotal(customer=t.customer, count=t.count, total_cents=t.total_cents)


def test_protobuf_end_to_end(kafka_bootstrap, registry_url, new_topic, produce, consume):
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

    from serdes.demo.orders_pb2 import CustomerTotal, Order

    client = registry_client(registry_url)
    t_in, t_out = new_topic("pb-in"), new_topic("pb-out")
    ser = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
    inputs = orders()
    produce(
        t_in,
        [(None, ser(Order(**o), SerializationContext(t_in, MessageField.VALUE))) for o in inputs],
    )

    env = sf.create_env()
    order_t = sf.ProtobufTypeInformation(Order)
    total_t = sf.ProtobufTypeInformation(CustomerTotal)
    decoded = sf.read_kafka(env, kafka_bootstrap, t_in, sf.protobuf(Order, registry_url), bounded=True,
                            output_type=order_t)
    assert isinstance(decoded, sf.TypedStream)
    totals = decoded.key_by(lambda o: o.customer, key_type=Types.STRING()).process(
        ProtoRunningTotal(), output_type=total_t
    )
    sf.write_kafka(totals, kafka_bootstrap, t_out, sf.protobuf_serializer(CustomerTotal, registry_url),
                   key_fn=lambda t: t.customer)
    env.execute("e2e-protobuf")

    de = ProtobufDeserializer(CustomerTotal, {"use.deprecated.format": False})
    msgs = consume(t_out, len(inputs))
    assert len(msgs) == len(inputs)
    final = {}
    for m in msgs:
        t = de(m.value(), SerializationContext(t_out, MessageField.VALUE))
        assert m.key().decode() == t.customer
        final[t.customer] = max(final.get(t.customer, (0, 0)), (t.count, t.total_cents))
    assert final == expected_totals(inputs)
    # counts per customer arrive as 1..n exactly once each
    counts = sorted((t.customer, t.count) for t in (de(m.value(), None) for m in msgs))
    assert len(set(counts)) == len(inputs)


def test_header_framed_input(kafka_bootstrap, registry_url, new_topic, produce, consume):
    """Schema id in the ``__value_schema_id`` header, bare Avro payload."""
    from confluent_kafka.schema_registry import Schema
    from fastavro import parse_schema, schemaless_writer
    import io

    client = registry_client(registry_url)
    t_in, t_out = new_topic("hdr-in"), new_topic("hdr-out")
    schema_id = client.register_schema(f"{t_in}-value", Schema(ORDER_AVRO, "AVRO"))
    parsed = parse_schema(json.loads(ORDER_AVRO))
    inputs = orders(40)
    records = []
    for o in inputs:
        buf = io.BytesIO()
        schemaless_writer(buf, parsed, o)
        header = b"\x00" + struct.pack(">I", schema_id)
        records.append((None, buf.getvalue(), [("__value_schema_id", header)]))
    produce(t_in, records)

    env = run_dict_job("avro", kafka_bootstrap, registry_url, t_in, t_out, ORDER_AVRO, TOTAL_AVRO)
    env.execute("e2e-header-framing")

    de = _de("avro", client)
    msgs = consume(t_out, len(inputs))
    check_outputs(msgs, lambda b: de(b, SerializationContext(t_out, MessageField.VALUE)), inputs)


def _poison_input(registry_url, t_in, produce, bad_at=(5, 17)):
    client = registry_client(registry_url)
    ser = _ser("avro", client, ORDER_AVRO)
    inputs = orders(30)
    records = []
    good = []
    for i, o in enumerate(inputs):
        if i in bad_at:
            records.append((b"k", b"\x07not-avro" if i == bad_at[0] else b"\x00\x00\x00\x7f\xff\x01\x02", None))
        else:
            records.append((o["customer"].encode(), ser(o, SerializationContext(t_in, MessageField.VALUE)), None))
            good.append(o)
    produce(t_in, records)
    return good


def test_poison_pill_fails_job_with_coordinates(kafka_bootstrap, registry_url, new_topic, produce):
    t_in, t_out = new_topic("poison-in"), new_topic("poison-out")
    _poison_input(registry_url, t_in, produce)
    env = run_dict_job("avro", kafka_bootstrap, registry_url, t_in, t_out, ORDER_AVRO, TOTAL_AVRO)
    with pytest.raises(sf.FlinkJobError) as info:
        sf.execute(env, "poison-fail")
    msg = str(info.value)
    assert f"topic={t_in!r}" in msg and "partition=0" in msg and "offset=5" in msg, msg
    assert info.value.error_type in ("InvalidMagicByteError", "RecordDecodeError"), info.value.error_type


def test_poison_pill_dead_letter(kafka_bootstrap, registry_url, new_topic, produce, consume):
    t_in, t_out, t_dlq = new_topic("dlq-in"), new_topic("dlq-out"), new_topic("dlq")
    good = _poison_input(registry_url, t_in, produce)
    env = sf.create_env()
    decoded = sf.read_kafka(env, kafka_bootstrap, t_in, sf.avro(registry_url), bounded=True, on_error="dead_letter")
    totals = decoded.key_by(by_customer, key_type=Types.STRING()).process(RunningTotal())
    sf.write_kafka(totals, kafka_bootstrap, t_out, sf.avro_serializer(registry_url, TOTAL_AVRO), key_fn=by_customer)
    sf.write_dead_letters(decoded, kafka_bootstrap, t_dlq)
    sf.execute(env, "poison-dead-letter")

    client = registry_client(registry_url)
    de = _de("avro", client)
    check_outputs(consume(t_out, len(good)), lambda b: de(b, SerializationContext(t_out, MessageField.VALUE)), good)
    dead = consume(t_dlq, 2)
    assert len(dead) == 2
    got = []
    for m in dead:
        h = dict(m.headers())
        got.append((int(h["serdes.dlq.offset"]), m.value()))
        assert h["serdes.dlq.topic"].decode() == t_in
        assert h["serdes.dlq.partition"] == b"0"
        assert h["serdes.dlq.reason"]
        assert m.key() == b"k"
    assert sorted(got) == [(5, b"\x07not-avro"), (17, b"\x00\x00\x00\x7f\xff\x01\x02")]


def test_read_kafka_convert_to_rows(kafka_bootstrap, registry_url, new_topic, produce):
    """``convert=avro_row_converter`` + ``output_type=avro_row_type_info``: Rows in one operator."""
    client = registry_client(registry_url)
    t_in = new_topic("rows-in")
    ser = _ser("avro", client, ORDER_AVRO)
    inputs = orders(20)
    produce(t_in, [(None, ser(o, SerializationContext(t_in, MessageField.VALUE))) for o in inputs])
    env = sf.create_env()
    rows = sf.read_kafka(env, kafka_bootstrap, t_in, sf.avro(registry_url), bounded=True,
                         convert=sf.avro_row_converter(ORDER_AVRO), output_type=sf.avro_row_type_info(ORDER_AVRO))
    got = sorted(r.order_id for r in rows.execute_and_collect())
    assert got == sorted(o["order_id"] for o in inputs)
