"""The demo's PyFlink job: per format ``read_kafka`` (dead-letter mode) -> key_by customer ->
running count/sum in keyed ValueState -> ``write_kafka`` with the registry serializers; the three
dead-letter side outputs go to one dead-letter topic.

``python -m serdes.demo`` submits this file to a standalone cluster as a user would:

    flink run --detached --python serdes/demo/_job.py --pyExecutable PY \
        -Dpipeline.jars=<connector jar>;<serdes shim jar> -- --bootstrap B --registry URL --topics JSON

(``--local`` builds the same job in-process on a MiniCluster instead.)
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from pyflink.common import Types
from pyflink.datastream import DataStream, KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from pyflink.datastream.state import ValueStateDescriptor

from serdes import flink as sf
from serdes.demo.orders_pb2 import CustomerTotal, Order
from serdes.flink._env import quiet_beam_gcs_warning

def _avro_record(name: str, fields: Dict[str, str]) -> str:
    """An Avro record schema of the demo's namespace: ``fields`` maps each field name to its type."""
    return json.dumps({"type": "record", "name": name, "namespace": "serdes.demo",
                       "fields": [{"name": field, "type": kind} for field, kind in fields.items()]})


def _json_object(title: str, properties: Dict[str, str], required: List[str]) -> str:
    """A JSON Schema (draft 7) object: ``properties`` maps each property name to its type."""
    return json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": title, "type": "object",
                       "properties": {name: {"type": kind} for name, kind in properties.items()},
                       "required": required})


# one record (Order) and its running total (CustomerTotal) per format; orders.proto has the Protobuf ones
ORDER_AVRO = _avro_record(
    "Order", {"order_id": "string", "customer": "string", "amount_cents": "long", "currency": "string"})
TOTAL_AVRO = _avro_record("CustomerTotal", {"customer": "string", "count": "long", "total_cents": "long"})
ORDER_JSON = _json_object(
    "Order", {"order_id": "string", "customer": "string", "amount_cents": "integer", "currency": "string"},
    required=["order_id", "customer", "amount_cents"])
TOTAL_JSON = _json_object(
    "CustomerTotal", {"customer": "string", "count": "integer", "total_cents": "integer"},
    required=["customer", "count", "total_cents"])
POISON = [b"\x07definitely not a registry frame", b"\x00\x00\x00"]


class DictTotals(KeyedProcessFunction):
    """dict order -> dict running total per customer (state: (count, total) tuple)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(
            ValueStateDescriptor("total", Types.TUPLE([Types.LONG(), Types.LONG()]))
        )

    def process_element(self, order: Dict[str, Any], ctx: KeyedProcessFunction.Context) -> Iterator[Dict[str, Any]]:
        count, total = self.state.value() or (0, 0)
        count, total = count + 1, total + order["amount_cents"]
        self.state.update((count, total))
        yield {"customer": order["customer"], "count": count, "total_cents": total}


class ProtoTotals(KeyedProcessFunction):
    """Order -> CustomerTotal; both travel and sit in state as protobuf bytes."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(sf.ProtobufValueStateDescriptor("total", CustomerTotal))

    def process_element(self, order: Order, ctx: KeyedProcessFunction.Context) -> Iterator[CustomerTotal]:
        t = self.state.value() or CustomerTotal(customer=order.customer)
        t.count += 1
        t.total_cents += order.amount_cents
        self.state.update(t)
        yield t


def _customer(o: Dict[str, Any]) -> Any:
    return o["customer"]


def _proto_customer(o: Union[Order, CustomerTotal]) -> str:
    return o.customer


def build_job(env: StreamExecutionEnvironment, bootstrap: str, registry: str, topics: Dict[str, str]) -> None:
    dead: List[DataStream] = []
    # Avro
    avro_in = sf.read_kafka(env, bootstrap, topics["in-avro"], sf.avro(registry), bounded=True, on_error="dead_letter")
    dead.append(sf.dead_letters(avro_in))
    avro_totals = avro_in.key_by(_customer, key_type=Types.STRING()).process(DictTotals())
    sf.write_kafka(avro_totals, bootstrap, topics["out-avro"], sf.avro_serializer(registry, TOTAL_AVRO),
                   key_fn=_customer)
    # JSON Schema
    json_in = sf.read_kafka(env, bootstrap, topics["in-json"], sf.json_schema(registry, ORDER_JSON), bounded=True,
                            on_error="dead_letter")
    dead.append(sf.dead_letters(json_in))
    json_totals = json_in.key_by(_customer, key_type=Types.STRING()).process(DictTotals())
    sf.write_kafka(json_totals, bootstrap, topics["out-json"], sf.json_serializer(registry, TOTAL_JSON),
                   key_fn=_customer)
    # Protobuf: messages travel between operators and sit in state as protobuf bytes
    proto_in = sf.read_kafka(env, bootstrap, topics["in-protobuf"], sf.protobuf(Order, registry), bounded=True,
                             on_error="dead_letter", output_type=sf.ProtobufTypeInformation(Order))
    dead.append(sf.dead_letters(proto_in))
    proto_totals = proto_in.key_by(_proto_customer, key_type=Types.STRING()).process(
        ProtoTotals(), output_type=sf.ProtobufTypeInformation(CustomerTotal)
    )
    sf.write_kafka(proto_totals, bootstrap, topics["out-protobuf"],
                   sf.protobuf_serializer(CustomerTotal, registry), key_fn=_proto_customer)
    # dead letters of all three -> one topic (raw bytes, reason + coordinates in headers)
    rows = dead[0].union(*dead[1:]).map(sf.DeadLetterToProducerRow(topics["dead-letters"]),
                                        output_type=sf.PRODUCER_ROW_TYPE)
    rows.sink_to(sf.kafka_record_sink(bootstrap, topics["dead-letters"])).name("dead-letters")



def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point under ``flink run --python``: build the job and submit it."""
    ap = argparse.ArgumentParser(prog="serdes/demo/_job.py")
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--topics", required=True, help="JSON object: role -> topic name")
    ap.add_argument("--parallelism", type=int, default=1)
    args = ap.parse_args(argv)
    quiet_beam_gcs_warning()
    env = sf.create_env(parallelism=args.parallelism)
    build_job(env, args.bootstrap, args.registry, json.loads(args.topics))
    env.execute("serdes demo")


if __name__ == "__main__":
    main()
