"""ProtobufTypeInformation: messages cross (non-chained) operator boundaries and sit in keyed
state as protobuf wire bytes, while user functions see message objects.  No Kafka needed."""

from __future__ import annotations

import sys

import cloudpickle
import pytest
from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction, MapFunction

from serdes import flink as sf
from serdes.demo.orders_pb2 import CustomerTotal, Order
from tests.support.flink_sources import from_sequence

# The job's functions live in this test module, which the Flink workers cannot import
# (thread mode runs in the JVM's embedded interpreter): ship them by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = [pytest.mark.flink, pytest.mark.integration, pytest.mark.timeout(300)]

N = 60


def make_order(i):
    return Order(order_id=str(i), customer=f"c{i % 3}", amount_cents=i, currency="EUR").SerializeToString()


class Tenfold(MapFunction):
    def open(self, runtime_context):
        self.opened = True

    def map(self, o):
        assert isinstance(o, Order) and self.opened
        return Order(order_id=o.order_id, customer=o.customer, amount_cents=o.amount_cents * 10)


class Running(KeyedProcessFunction):
    def open(self, runtime_context):
        self.state = runtime_context.get_state(sf.ProtobufValueStateDescriptor("total", CustomerTotal))

    def process_element(self, order, ctx):
        assert isinstance(order, Order), type(order)
        assert isinstance(ctx.get_current_key(), str)
        t = self.state.value() or CustomerTotal(customer=order.customer)
        t.count += 1
        t.total_cents += order.amount_cents
        self.state.update(t)
        yield t


def expected():
    out = {}
    for i in range(N):
        c, s = out.get(f"c{i % 3}", (0, 0))
        out[f"c{i % 3}"] = (c + 1, s + i * 10)
    return out


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_protobuf_type_info_key_by_and_state_unchained(mode):
    env = sf.create_env(execution_mode=mode, chaining=False)
    order_t = sf.ProtobufTypeInformation(Order)
    total_t = sf.ProtobufTypeInformation(CustomerTotal)
    orders = sf.TypedStream(from_sequence(env, 0, N - 1).map(make_order, output_type=order_t), order_t)
    totals = (
        orders.map(Tenfold(), output_type=order_t)
        .filter(lambda o: o.amount_cents >= 0)
        .flat_map(lambda o: [o], output_type=order_t)
        .key_by(lambda o: o.customer, key_type=Types.STRING())
        .process(Running(), output_type=total_t)
    )
    # the Java-side type of every typed hop is byte[]
    assert str(totals.data_stream.get_type()).startswith("PrimitiveArrayTypeInfo")
    rows = list(
        totals.map(
            lambda t: (t.customer, t.count, t.total_cents),
            output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]),
        ).execute_and_collect()
    )
    assert len(rows) == N
    final = {}
    for c, n, s in rows:
        final[c] = max(final.get(c, (0, 0)), (n, s))
    assert final == expected()


def test_dynamic_descriptor_type_info():
    """Descriptor-bound variant: the worker rebuilds the class from a FileDescriptorSet."""
    env = sf.create_env(chaining=False)
    dyn = sf.DynamicProtobufTypeInformation(Order.DESCRIPTOR)
    stream = sf.TypedStream(from_sequence(env, 0, 9).map(make_order, output_type=dyn), dyn)
    out = stream.map(lambda m: (m.DESCRIPTOR.full_name, m.amount_cents),
                     output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
    rows = sorted(out.execute_and_collect())
    assert rows == [("serdes.demo.Order", i) for i in range(10)]
