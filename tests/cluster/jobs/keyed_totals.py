"""The cluster tests' job, submitted with ``flink run --python`` (never imported by pytest).

Avro orders (``serdes.demo`` schema) from Kafka -> key by customer -> running count/total in
keyed state (a Protobuf ``cluster.Acc`` message whose version is chosen on the command line, for
the savepoint tests) -> Protobuf ``CustomerTotal`` records written exactly-once (transactional
KafkaSink, checkpoints every ``--checkpoint-ms``).

    flink run --python keyed_totals.py --bootstrap B --registry URL --input T --output T ...
"""

from __future__ import annotations

import argparse
import json

from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction
from pyflink.datastream.connectors.base import DeliveryGuarantee

from serdes import flink as sf
from serdes.demo.orders_pb2 import CustomerTotal


def state_fds(version: str) -> bytes:
    """FileDescriptorSet of ``cluster.Acc``: "v1"; "v2" adds a field; "bad-type" makes
    ``count`` a string (incompatible with v1's int64)."""
    from google.protobuf import descriptor_pb2

    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name="cluster/acc.proto", package="cluster", syntax="proto3")
    acc = fd.message_type.add(name="Acc")
    acc.field.add(name="customer", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    count_type = F.TYPE_STRING if version == "bad-type" else F.TYPE_INT64
    acc.field.add(name="count", number=2, type=count_type, label=F.LABEL_OPTIONAL)
    acc.field.add(name="total_cents", number=3, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    if version == "v2":
        acc.field.add(name="last_order", number=4, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    return descriptor_pb2.FileDescriptorSet(file=[fd]).SerializeToString()


def acc_descriptor(fds: bytes):
    from google.protobuf import descriptor_pb2, descriptor_pool

    pool = descriptor_pool.DescriptorPool()
    for fd in descriptor_pb2.FileDescriptorSet.FromString(fds).file:
        pool.Add(fd)
    return pool.FindMessageTypeByName("cluster.Acc")


class RunningTotals(KeyedProcessFunction):
    """order dict -> CustomerTotal with the customer's running count and sum."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.fds = state_fds(version)

    def open(self, ctx):
        from google.protobuf import message_factory

        desc = acc_descriptor(self.fds)
        self.cls = message_factory.GetMessageClass(desc)
        self.state = sf.get_typed_state(
            ctx, sf.ProtobufValueStateDescriptor("acc", sf.DynamicProtobufTypeInformation(desc)))

    def process_element(self, order, ctx):
        acc = self.state.value() or self.cls(customer=order["customer"])
        acc.count += 1
        acc.total_cents += order["amount_cents"]
        if self.version == "v2":
            acc.last_order = order["order_id"]
        self.state.update(acc)
        yield CustomerTotal(customer=acc.customer, count=acc.count, total_cents=acc.total_cents)


def customer_of(order):
    return order["customer"]


def total_key(total):
    return total.customer


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--registry", required=True, help="JSON SchemaRegistryClient conf")
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--parallelism", type=int, default=4)
    ap.add_argument("--checkpoint-ms", type=int, default=1000)
    # generous: after a TaskManager dies, restarts fail fast until a new one registered its slots
    ap.add_argument("--restart-attempts", type=int, default=60)
    ap.add_argument("--state-version", default="v1")
    args = ap.parse_args(argv)
    registry = json.loads(args.registry)

    env = sf.create_env(parallelism=args.parallelism, config={
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(args.restart_attempts),
        "restart-strategy.fixed-delay.delay": "2 s",
    })
    env.enable_checkpointing(args.checkpoint_ms)
    orders = sf.read_kafka(env, args.bootstrap, args.input, sf.avro(registry), group_id=args.group).uid("orders")
    totals = (orders.key_by(customer_of, key_type=Types.STRING())
              .process(RunningTotals(args.state_version), output_type=sf.ProtobufTypeInformation(CustomerTotal))
              .uid("running-totals"))
    sf.write_kafka(totals, args.bootstrap, args.output, sf.protobuf_serializer(CustomerTotal, registry),
                   key_fn=total_key, delivery_guarantee=DeliveryGuarantee.EXACTLY_ONCE,
                   transactional_id_prefix=f"cluster-{args.group}",
                   properties={"transaction.timeout.ms": "60000"})
    env.execute(f"keyed-totals {args.state_version}")


if __name__ == "__main__":
    main()
