"""Protobuf keyed jobs with one Python operator (``read_kafka_keyed`` + ``process_to_kafka``), in
process and thread mode: Protobuf values in, a ``ProtobufValueStateDescriptor`` state (with the
writer's descriptor kept per key), Protobuf values out.  Real Kafka + registry + PyFlink
MiniCluster jobs; the totals are checked against a plain-Python computation of the same input.
"""

from __future__ import annotations

import sys

import cloudpickle
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from pyflink.common import Types

from serdes import flink as sf
from serdes.demo._job import ProtoTotals  # the demo's running total: Order -> CustomerTotal, protobuf state
from serdes.demo.orders_pb2 import CustomerTotal, Order

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = [pytest.mark.flink, pytest.mark.integration, pytest.mark.timeout(300)]

N = 60
CUSTOMERS = 3


def by_customer(order):
    return order.customer


@pytest.mark.parametrize("mode", ["process", "thread"])
@pytest.mark.parametrize("shape", ["kafka", "value"])
def test_protobuf_keyed_job(shape, mode, kafka_bootstrap, registry_url, new_topic, produce, consume):
    from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

    client = SchemaRegistryClient({"url": registry_url})
    t_in, t_out = new_topic("pb-keyed-in"), new_topic("pb-keyed-out")
    ser = ProtobufSerializer(Order, client)
    inputs = [Order(order_id=f"o{i}", customer=f"c{i % CUSTOMERS}", amount_cents=100 + i) for i in range(N)]
    produce(t_in, [(o.customer.encode() if shape == "kafka" else None,
                    ser(o, SerializationContext(t_in, MessageField.VALUE)), None) for o in inputs])

    env = sf.create_env(execution_mode=mode, strict_types=True)
    keyed = sf.read_kafka_keyed(env, kafka_bootstrap, t_in, sf.protobuf(Order, registry_url),
                                key_type=Types.STRING(), bounded=True,
                                **({"key_by": by_customer} if shape == "value" else {}))
    keyed.process_to_kafka(ProtoTotals(), kafka_bootstrap, t_out,
                           sf.protobuf_serializer(CustomerTotal, registry_url), key_fn=by_customer)
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
