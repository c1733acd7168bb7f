"""``python -m serdes.demo``: Kafka -> PyFlink (decode, keyed state, encode) -> Kafka.

1. starts a local Kafka broker + schema registry (``serdes.testing``) unless ``--bootstrap`` and
   ``--registry`` point at running ones;
2. produces sample orders as Avro, Protobuf and JSON Schema records (prefix framing) plus a
   couple of poison pills per topic;
3. runs one PyFlink job: per format ``read_kafka`` (dead-letter mode) -> key_by customer ->
   running count/sum in keyed ValueState -> ``write_kafka`` with the registry serializers;
   the three dead-letter side outputs go to one dead-letter topic;
4. prints progress while the job runs and a summary (in, out, dead-lettered, throughput).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
import uuid

from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction
from pyflink.datastream.state import ValueStateDescriptor

from serdes import flink as sf
from serdes.flink._codecs import DEFAULT_REGISTRY_TIMEOUT
from serdes.demo.orders_pb2 import CustomerTotal, Order

ORDER_AVRO = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "serdes.demo",
        "fields": [
            {"name": "order_id", "type": "string"},
            {"name": "customer", "type": "string"},
            {"name": "amount_cents", "type": "long"},
            {"name": "currency", "type": "string"},
        ],
    }
)
TOTAL_AVRO = json.dumps(
    {
        "type": "record",
        "name": "CustomerTotal",
        "namespace": "serdes.demo",
        "fields": [
            {"name": "customer", "type": "string"},
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
            "currency": {"type": "string"},
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
            "count": {"type": "integer"},
            "total_cents": {"type": "integer"},
        },
        "required": ["customer", "count", "total_cents"],
    }
)
POISON = [b"\x07definitely not a registry frame", b"\x00\x00\x00"]


def log(msg: str) -> None:
    print(f"[demo] {msg}", flush=True)


class DictTotals(KeyedProcessFunction):
    """dict order -> dict running total per customer (state: (count, total) tuple)."""

    def open(self, runtime_context):
        self.state = runtime_context.get_state(
            ValueStateDescriptor("total", Types.TUPLE([Types.LONG(), Types.LONG()]))
        )

    def process_element(self, order, ctx):
        count, total = self.state.value() or (0, 0)
        count, total = count + 1, total + order["amount_cents"]
        self.state.update((count, total))
        yield {"customer": order["customer"], "count": count, "total_cents": total}


class ProtoTotals(KeyedProcessFunction):
    """Order -> CustomerTotal; both travel and sit in state as protobuf bytes."""

    def open(self, runtime_context):
        self.state = runtime_context.get_state(sf.ProtobufValueStateDescriptor("total", CustomerTotal))

    def process_element(self, order, ctx):
        t = self.state.value() or CustomerTotal(customer=order.customer)
        t.count += 1
        t.total_cents += order.amount_cents
        self.state.update(t)
        yield t


def _customer(o):
    return o["customer"]


def _proto_customer(o):
    return o.customer


def produce_inputs(bootstrap, registry, topics, n):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    from serdes.avro import AvroSerializer
    from serdes.json import JSONSerializer
    from serdes.protobuf import ProtobufSerializer

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(t, 1, 1) for t in topics.values()]).values():
        fut.result(30)
    # confluent-kafka's client waits forever by default; a request timeout turns a stalled
    # registry into a retried request (max.retries) instead of a hung demo
    client = SchemaRegistryClient({"url": registry, "timeout": DEFAULT_REGISTRY_TIMEOUT})
    sers = {
        "avro": AvroSerializer(client, ORDER_AVRO),
        "json": JSONSerializer(ORDER_JSON, client),
        "protobuf": ProtobufSerializer(Order, client, {"use.deprecated.format": False}),
    }
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000})
    total = 0
    for fmt in ("avro", "protobuf", "json"):
        topic = topics[f"in-{fmt}"]
        ctx = SerializationContext(topic, MessageField.VALUE)
        for i in range(n):
            o = {"order_id": f"{fmt}-{i}", "customer": f"customer-{i % 10}", "amount_cents": 100 + i % 997,
                 "currency": "EUR"}
            value = sers[fmt](Order(**o) if fmt == "protobuf" else o, ctx)
            p.produce(topic, value=value, key=o["customer"].encode())
            if i in (n // 3, 2 * n // 3):  # a couple of poison pills in the middle of each topic
                p.produce(topic, value=POISON[0 if i == n // 3 else 1], key=b"poison")
                total += 1
            total += 1
            if i % 5000 == 0:
                p.poll(0)
        p.flush(60)
    return total


def build_job(env, bootstrap, registry, topics):
    dead = []
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


class _Counter(threading.Thread):
    """Counts records on the output topics while the job runs (for progress lines)."""

    def __init__(self, bootstrap, out_topics, dlq_topic):
        super().__init__(daemon=True)
        from confluent_kafka import Consumer

        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-{uuid.uuid4().hex[:6]}",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.c.subscribe(list(out_topics) + [dlq_topic])
        self.dlq_topic = dlq_topic
        self.out = 0
        self.dead = []
        self.first = None
        self.last = None
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for m in self.c.consume(1000, 0.2):
                if m.error():
                    continue
                if m.topic() == self.dlq_topic:
                    self.dead.append(m)
                else:
                    self.out += 1
                    now = time.monotonic()
                    self.first = self.first or now
                    self.last = now
        self.c.close()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m serdes.demo",
        description=(
            "Kafka -> PyFlink (decode, keyed state, encode) -> Kafka. Starts a local Kafka broker and "
            "Apicurio registry (fetched into ~/.cache/serdes on first use), produces Avro, Protobuf "
            "and JSON Schema orders with a few poison pills, runs one PyFlink job that keeps running "
            "totals per customer and routes the poison pills to a dead-letter topic, then prints a "
            "summary. Needs the flink extra: pip install 'serdes[flink]'."
        ),
    )
    ap.add_argument("-n", "--records", type=int, default=5000, metavar="N",
                    help="good records produced per format (default: 5000)")
    ap.add_argument("--bootstrap", metavar="HOST:PORT",
                    help="use this Kafka broker instead of starting one; needs --registry too "
                         "(default: start a local broker)")
    ap.add_argument("--registry", metavar="URL",
                    help="use this Confluent-compatible schema registry URL instead of starting one; "
                         "needs --bootstrap too (default: start a local Apicurio registry)")
    ap.add_argument("--parallelism", type=int, default=1, metavar="N",
                    help="parallelism of the PyFlink job (default: 1)")
    return ap


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if bool(args.bootstrap) != bool(args.registry):
        ap.error("--bootstrap and --registry go together: give both to use running servers, "
                 "or neither to start local ones")

    with contextlib.ExitStack() as stack:
        if args.bootstrap and args.registry:
            bootstrap, registry = args.bootstrap, args.registry
        else:
            from serdes.testing import local_servers

            log("starting local Kafka + schema registry (first run downloads them with mvn)...")
            t = time.monotonic()
            s = stack.enter_context(local_servers())
            bootstrap, registry = s.bootstrap_servers, s.registry_url
            log(f"servers up in {time.monotonic() - t:.0f}s: kafka {bootstrap}, registry {registry}")

        run = uuid.uuid4().hex[:6]
        topics = {k: f"demo-{k}-{run}" for k in
                  ("in-avro", "in-protobuf", "in-json", "out-avro", "out-protobuf", "out-json", "dead-letters")}
        t = time.monotonic()
        produced = produce_inputs(bootstrap, registry, topics, args.records)
        log(f"produced {produced} records ({3 * args.records} good, {produced - 3 * args.records} poison) "
            f"in {time.monotonic() - t:.1f}s")

        env = sf.create_env(parallelism=args.parallelism)
        build_job(env, bootstrap, registry, topics)
        counter = _Counter(bootstrap, [topics[k] for k in ("out-avro", "out-protobuf", "out-json")],
                           topics["dead-letters"])
        counter.start()
        t0 = time.monotonic()
        failure = []

        def run_job():
            try:
                sf.execute(env, "serdes demo")
            except BaseException as exc:  # noqa: BLE001 - reported below
                failure.append(exc)

        job = threading.Thread(target=run_job, daemon=True)
        job.start()
        log("job running: decode (avro, protobuf, json) -> key_by customer + keyed state -> encode")
        while job.is_alive():
            job.join(2.0)
            if job.is_alive():
                log(f"{time.monotonic() - t0:5.1f}s  out {counter.out:>6}/{3 * args.records}  "
                    f"dead-lettered {len(counter.dead)}")
        elapsed = time.monotonic() - t0
        if failure:
            counter.stop.set()
            log(f"job failed: {failure[0]}")
            return 1
        deadline = time.monotonic() + 15
        while (counter.out < 3 * args.records or len(counter.dead) < produced - 3 * args.records) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        counter.stop.set()
        counter.join(5)
        log("summary")
        print(f"  records in       : {produced}")
        print(f"  records out      : {counter.out}  (3 topics: {', '.join(topics[k] for k in ('out-avro', 'out-protobuf', 'out-json'))})")
        print(f"  dead-lettered    : {len(counter.dead)}  ({topics['dead-letters']})")
        for m in counter.dead:
            h = dict(m.headers() or [])
            print(f"     {h.get('serdes.dlq.topic', b'').decode()}[{h.get('serdes.dlq.partition', b'').decode()}]"
                  f"@{h.get('serdes.dlq.offset', b'').decode()}: {h.get('serdes.dlq.reason', b'').decode()}")
        print(f"  job wall time    : {elapsed:.1f}s (includes MiniCluster + Python worker start-up)")
        print(f"  throughput       : {produced / elapsed:,.0f} records/s end to end (wall time)")
        if counter.first and counter.last and counter.last > counter.first:
            span = counter.last - counter.first
            print(f"                     {counter.out / span:,.0f} records/s while output flowed "
                  f"({span:.1f}s from first to last output record)")
        ok = counter.out == 3 * args.records and len(counter.dead) == produced - 3 * args.records
        return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
