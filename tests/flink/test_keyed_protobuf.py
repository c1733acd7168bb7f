"""Protobuf keyed jobs with one Python operator (``read_kafka_keyed`` + ``process_to_kafka``), in
process and thread mode, keyed by the Kafka key, by a function of the value or by a field name
(read from the bytes in Java): Protobuf values in, a ``ProtobufValueStateDescriptor`` state (with the
writer's descriptor kept per key), Protobuf values out.  Real Kafka + registry + PyFlink
MiniCluster jobs; the totals are checked against a plain-Python computation of the same input.
"""

from __future__ import annotations

import json
import sys

import cloudpickle
import pytest
from confluent_kafka.serialization import MessageField, SerializationContext
from pyflink.common import Types

from serdes import flink as sf
from serdes.demo._job import ProtoTotals  # the demo's running total: Order -> CustomerTotal, protobuf state
from serdes.demo.orders_pb2 import CustomerTotal, Order
from tests.support.registry_client import registry_client

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = [pytest.mark.flink, pytest.mark.integration, pytest.mark.timeout(300)]

N = 60
CUSTOMERS = 3


def by_customer(order):
    return order.customer


@pytest.mark.parametrize("mode", ["process", "thread"])
@pytest.mark.parametrize("shape", ["kafka", "value", "field"])
def test_protobuf_keyed_job(shape, mode, kafka_bootstrap, registry_url, new_topic, produce, consume):
    from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

    client = registry_client(registry_url)
    t_in, t_out = new_topic("pb-keyed-in"), new_topic("pb-keyed-out")
    ser = ProtobufSerializer(Order, client)
    inputs = [Order(order_id=f"o{i}", customer=f"c{i % CUSTOMERS}", amount_cents=100 + i) for i in range(N)]
    produce(t_in, [(o.customer.encode() if shape == "kafka" else None,
                    ser(o, SerializationContext(t_in, MessageField.VALUE)), None) for o in inputs])

    env = sf.create_env(execution_mode=mode, strict_types=True)
    keyed = sf.read_kafka_keyed(env, kafka_bootstrap, t_in, sf.protobuf(Order, registry_url),
                                key_type=Types.STRING(), bounded=True,
                                **({"key_by": by_customer} if shape == "value" else
                                   {"key_by": "customer"} if shape == "field" else {}))
    keyed.process_to_kafka(ProtoTotals(), kafka_bootstrap, t_out,
                           sf.protobuf_serializer(CustomerTotal, registry_url), key_fn=by_customer)
    nodes = [n["type"] for n in json.loads(env.get_execution_plan())["nodes"]]
    # the Kafka key and a Protobuf field are read in Java: no Python operator before the shuffle
    assert any(n.startswith("serdes-decode-key") for n in nodes) == (shape == "value"), nodes
    sf.execute(env, f"pb-keyed-{shape}-{mode}")

    acc, expected = {}, []
    for o in inputs:
        c, s = acc.get(o.customer, (0, 0))
        acc[o.customer] = (c + 1, s + o.amount_cents)
        expected.append((o.customer,) + acc[o.customer])
    de = ProtobufDeserializer(CustomerTotal, {"use.deprecated.format": False}, schema_registry_client=client)
    msgs = consume(t_out, N)
    got = []
    for m in msgs:
        t = de(m.value(), SerializationContext(t_out, MessageField.VALUE))
        assert m.key().decode() == t.customer
        got.append((t.customer, t.count, t.total_cents))
    assert sorted(got) == sorted(expected)


def test_field_keyed_poison_pills_are_dead_letters(kafka_bootstrap, registry_url, new_topic, produce, consume):
    """Bytes the Java key reader cannot read are keyed by the default key and fail to decode in
    the keyed operator, which dead-letters them (``on_error``) without calling the function."""
    from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

    client = registry_client(registry_url)
    t_in, t_out, t_dlq = new_topic("pbf-in"), new_topic("pbf-out"), new_topic("pbf-dlq")
    ser = ProtobufSerializer(Order, client)
    inputs = [Order(order_id=f"o{i}", customer=f"c{i % CUSTOMERS}", amount_cents=100 + i) for i in range(12)]
    values = [ser(o, SerializationContext(t_in, MessageField.VALUE)) for o in inputs]
    bad = [b"\x00\x00\x00", values[0][:-3] + b"\x0a\x7f"]  # truncated frame; a string running past the end
    produce(t_in, [(None, v, None) for v in values[:5] + bad + values[5:]])

    env = sf.create_env(strict_types=True)
    keyed = sf.read_kafka_keyed(env, kafka_bootstrap, t_in, sf.protobuf(Order, registry_url), key_by="customer",
                                bounded=True, on_error="dead_letter")
    keyed.process_to_kafka(ProtoTotals(), kafka_bootstrap, t_out,
                           sf.protobuf_serializer(CustomerTotal, registry_url), key_fn=by_customer)
    sf.write_dead_letters(keyed, kafka_bootstrap, t_dlq)
    sf.execute(env, "pb-field-dlq")

    de = ProtobufDeserializer(CustomerTotal, {"use.deprecated.format": False}, schema_registry_client=client)
    totals = [de(m.value(), SerializationContext(t_out, MessageField.VALUE)) for m in consume(t_out, len(inputs))]
    final = {}
    for t in totals:
        final[t.customer] = max(final.get(t.customer, (0, 0)), (t.count, t.total_cents))
    expected = {}
    for o in inputs:
        c, s = expected.get(o.customer, (0, 0))
        expected[o.customer] = (c + 1, s + o.amount_cents)
    assert final == expected
    dead = consume(t_dlq, len(bad))
    assert sorted(m.value() for m in dead) == sorted(bad)
