"""End-to-end Kafka -> decode -> key_by + keyed state -> encode -> Kafka, records/s.

serdes (``read_kafka`` with the record shim + serdes' serializers in the Python worker,
``write_kafka``) vs the baseline most PyFlink users write: ``KafkaSource`` with the value-only
``ByteArraySchema`` + confluent-kafka's ``AvroDeserializer``/``ProtobufDeserializer`` in a
``map``, the same keyed running total, confluent-kafka's serializer in a ``map`` and a
``KafkaSink`` with ``ByteArraySchema``.  Both: parallelism 1, process mode, default chaining.

Fixed costs (MiniCluster, Python worker start-up, topic metadata) are removed by running each
pipeline with N and with N0 records:  marginal records/s = (N - N0) / (T(N) - T(N0)).

    python benchmarks/flink_e2e.py [--records 100000] [--formats avro,protobuf] [--repeats 3]
        [--config KEY=VALUE ...] [--bootstrap HOST:PORT --registry URL]
        (default: start serdes.testing servers)

Both pipelines get the same environment (``create_env`` defaults + ``--config``).  Each repetition
runs baseline and serdes back to back (order alternating between repetitions) so load drift on
the machine hits both; the table reports medians over repetitions.

Writes benchmarks/results/flink_e2e.{json,md}.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyflink.common import Types, WatermarkStrategy  # noqa: E402
from pyflink.common.serialization import ByteArraySchema  # noqa: E402
from pyflink.datastream import KeyedProcessFunction, MapFunction  # noqa: E402
from pyflink.datastream.connectors.kafka import (  # noqa: E402
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from pyflink.datastream.state import ValueStateDescriptor  # noqa: E402

from serdes import flink as sf  # noqa: E402
from serdes.demo.orders_pb2 import CustomerTotal, Order  # noqa: E402

ORDER_AVRO = json.dumps({
    "type": "record", "name": "Order", "namespace": "serdes.bench",
    "fields": [{"name": "order_id", "type": "string"}, {"name": "customer", "type": "string"},
               {"name": "amount_cents", "type": "long"}, {"name": "currency", "type": "string"},
               {"name": "tags", "type": {"type": "array", "items": "string"}}],
})
TOTAL_AVRO = json.dumps({
    "type": "record", "name": "CustomerTotal", "namespace": "serdes.bench",
    "fields": [{"name": "customer", "type": "string"}, {"name": "count", "type": "long"},
               {"name": "total_cents", "type": "long"}],
})


def order_dict(i):
    return {"order_id": f"order-{i}", "customer": f"customer-{i % 97}", "amount_cents": i % 10000,
            "currency": "EUR", "tags": ["a", "b"]}


# --- shared keyed logic -----------------------------------------------------------------------

class DictTotals(KeyedProcessFunction):
    def open(self, runtime_context):
        self.state = runtime_context.get_state(
            ValueStateDescriptor("t", Types.TUPLE([Types.LONG(), Types.LONG()])))

    def process_element(self, o, ctx):
        c, s = self.state.value() or (0, 0)
        c, s = c + 1, s + o["amount_cents"]
        self.state.update((c, s))
        yield {"customer": o["customer"], "count": c, "total_cents": s}


class ProtoTotalsPickled(KeyedProcessFunction):
    """Baseline protobuf: messages pickled between operators, state pickled."""

    def open(self, runtime_context):
        self.state = runtime_context.get_state(ValueStateDescriptor("t", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, o, ctx):
        t = self.state.value() or CustomerTotal(customer=o.customer)
        t.count += 1
        t.total_cents += o.amount_cents
        self.state.update(t)
        yield t


class ProtoTotals(KeyedProcessFunction):
    def open(self, runtime_context):
        self.state = runtime_context.get_state(sf.ProtobufValueStateDescriptor("t", CustomerTotal))

    def process_element(self, o, ctx):
        t = self.state.value() or CustomerTotal(customer=o.customer)
        t.count += 1
        t.total_cents += o.amount_cents
        self.state.update(t)
        yield t


def dict_customer(o):
    return o["customer"]


def proto_customer(o):
    return o.customer


# --- baseline: ByteArraySchema + confluent-kafka serializers in maps ----------------------------

class ConfluentDecode(MapFunction):
    def __init__(self, fmt, registry, topic):
        self.fmt, self.registry, self.topic = fmt, registry, topic

    def open(self, runtime_context):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.serialization import MessageField, SerializationContext

        client = SchemaRegistryClient({"url": self.registry})
        if self.fmt == "avro":
            from confluent_kafka.schema_registry.avro import AvroDeserializer
            self.de = AvroDeserializer(client)
        else:
            from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
            self.de = ProtobufDeserializer(Order, {"use.deprecated.format": False})
        self.ctx = SerializationContext(self.topic, MessageField.VALUE)

    def map(self, value):
        return self.de(value, self.ctx)


class ConfluentEncode(MapFunction):
    def __init__(self, fmt, registry, topic):
        self.fmt, self.registry, self.topic = fmt, registry, topic

    def open(self, runtime_context):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.serialization import MessageField, SerializationContext

        client = SchemaRegistryClient({"url": self.registry})
        if self.fmt == "avro":
            from confluent_kafka.schema_registry.avro import AvroSerializer
            self.ser = AvroSerializer(client, TOTAL_AVRO)
        else:
            from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
            self.ser = ProtobufSerializer(CustomerTotal, client)
        self.ctx = SerializationContext(self.topic, MessageField.VALUE)

    def map(self, value):
        return self.ser(value, self.ctx)


def baseline_job(env, fmt, bootstrap, registry, t_in, t_out):
    source = (KafkaSource.builder().set_bootstrap_servers(bootstrap).set_topics(t_in)
              .set_group_id(f"bench-{uuid.uuid4().hex[:6]}")
              .set_starting_offsets(KafkaOffsetsInitializer.earliest())
              .set_bounded(KafkaOffsetsInitializer.latest())
              .set_value_only_deserializer(ByteArraySchema()).build())
    raw = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka")
    decoded = raw.map(ConfluentDecode(fmt, registry, t_in), output_type=Types.PICKLED_BYTE_ARRAY())
    if fmt == "avro":
        totals = decoded.key_by(dict_customer, key_type=Types.STRING()).process(DictTotals())
    else:
        totals = decoded.key_by(proto_customer, key_type=Types.STRING()).process(ProtoTotalsPickled())
    encoded = totals.map(ConfluentEncode(fmt, registry, t_out),
                         output_type=Types.PRIMITIVE_ARRAY(Types.BYTE()))
    sink = (KafkaSink.builder().set_bootstrap_servers(bootstrap)
            .set_record_serializer(KafkaRecordSerializationSchema.builder().set_topic(t_out)
                                   .set_value_serialization_schema(ByteArraySchema()).build())
            .build())
    encoded.sink_to(sink)


def serdes_job(env, fmt, bootstrap, registry, t_in, t_out):
    if fmt == "avro":
        decoded = sf.read_kafka(env, bootstrap, t_in, sf.avro(registry), bounded=True)
        totals = decoded.key_by(dict_customer, key_type=Types.STRING()).process(DictTotals())
        sf.write_kafka(totals, bootstrap, t_out, sf.avro_serializer(registry, TOTAL_AVRO))
    else:
        ot, tt = sf.ProtobufTypeInformation(Order), sf.ProtobufTypeInformation(CustomerTotal)
        decoded = sf.read_kafka(env, bootstrap, t_in, sf.protobuf(Order, registry), bounded=True, output_type=ot)
        totals = decoded.key_by(proto_customer, key_type=Types.STRING()).process(ProtoTotals(), output_type=tt)
        sf.write_kafka(totals, bootstrap, t_out, sf.protobuf_serializer(CustomerTotal, registry))


def produce(bootstrap, registry, fmt, topic, n):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    client = SchemaRegistryClient({"url": registry})
    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroSerializer
        ser, mk = AvroSerializer(client, ORDER_AVRO), order_dict
    else:
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
        ser, mk = ProtobufSerializer(Order, client), lambda i: Order(**order_dict(i))
    ctx = SerializationContext(topic, MessageField.VALUE)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 1000000})
    for i in range(n):
        p.produce(topic, ser(mk(i), ctx))
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(120) == 0


def count_topic(bootstrap, topic):
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-count"})
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    c.close()
    return hi - lo


MODE = "process"
CONFIG: dict = {}


def run(kind, fmt, bootstrap, registry, t_in, expected):
    env = sf.create_env(execution_mode=MODE, config=CONFIG)  # jars + python.executable for both (the baseline needs the connector too)
    t_out = f"bench-out-{kind}-{fmt}-{uuid.uuid4().hex[:6]}"
    (baseline_job if kind == "baseline" else serdes_job)(env, fmt, bootstrap, registry, t_in, t_out)
    t0 = time.perf_counter()
    env.execute(f"e2e-{kind}-{fmt}")
    elapsed = time.perf_counter() - t0
    got = count_topic(bootstrap, t_out)
    assert got == expected, (kind, fmt, got, expected)
    return elapsed


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=2_000)
    ap.add_argument("--formats", default="avro,protobuf")
    ap.add_argument("--bootstrap")
    ap.add_argument("--registry")
    ap.add_argument("--mode", default="process", choices=["process", "thread"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--config", action="append", default=[], help="extra Flink KEY=VALUE for both pipelines")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    n, n0 = args.records, args.small
    global MODE
    MODE = args.mode
    CONFIG.update(kv.split("=", 1) for kv in args.config)

    with contextlib.ExitStack() as stack:
        bootstrap = args.bootstrap or os.environ.get("SERDES_TEST_BOOTSTRAP")
        registry = args.registry or os.environ.get("SERDES_TEST_REGISTRY_URL")
        if not (bootstrap and registry):
            from serdes.testing import local_servers
            s = stack.enter_context(local_servers())
            bootstrap, registry = s.bootstrap_servers, s.registry_url
        results = {}
        for fmt in args.formats.split(","):
            topics = {}
            for size in (n0, n):
                topics[size] = f"bench-in-{fmt}-{size}-{uuid.uuid4().hex[:6]}"
                produce(bootstrap, registry, fmt, topics[size], size)
            run("serdes", fmt, bootstrap, registry, topics[n0], n0)  # warm-up (schemas, JIT, caches)
            runs = {"baseline": [], "serdes": []}
            for rep in range(args.repeats):
                for kind in (("baseline", "serdes") if rep % 2 == 0 else ("serdes", "baseline")):
                    t_small = run(kind, fmt, bootstrap, registry, topics[n0], n0)
                    t_big = run(kind, fmt, bootstrap, registry, topics[n], n)
                    marginal = (n - n0) / (t_big - t_small)
                    runs[kind].append((t_small, t_big, marginal))
                    print(f"{fmt:8} {kind:8} rep {rep}: N={n} {t_big:.1f}s, N0={n0} {t_small:.1f}s -> "
                          f"{marginal:,.0f} records/s marginal, {n / t_big:,.0f} wall", flush=True)
            for kind, rs in runs.items():
                t_small = statistics.median(r[0] for r in rs)
                t_big = statistics.median(r[1] for r in rs)
                results[f"{fmt}/{kind}"] = {
                    "seconds_small": round(t_small, 2), "seconds": round(t_big, 2),
                    "records_per_s_wall": round(n / t_big),
                    "records_per_s_marginal": round(statistics.median(r[2] for r in rs)),
                    "records_per_s_marginal_all": [round(r[2]) for r in rs],
                }
            b, o = results[f"{fmt}/baseline"], results[f"{fmt}/serdes"]
            results[f"{fmt}/speedup"] = round(o["records_per_s_marginal"] / b["records_per_s_marginal"], 2)
            results[f"{fmt}/speedup_per_repeat"] = [
                round(so[2] / bo[2], 2) for bo, so in zip(runs["baseline"], runs["serdes"])]

    out = {"benchmark": "flink_e2e", "records": n, "small": n0, "python": platform.python_version(),
           "cpus": os.cpu_count(), "parallelism": 1, "mode": args.mode, "repeats": args.repeats,
           "config": {"python.fn-execution.bundle.size": sf.DEFAULT_BUNDLE_SIZE, **CONFIG}, "results": results,
           "target": "serdes >= 2x baseline records/s"}
    d = Path(args.out)
    d.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.mode == "process" else f"_{args.mode}"
    (d / f"flink_e2e{suffix}.json").write_text(json.dumps(out, indent=2) + "\n")
    md = ["# flink_e2e", "",
          f"Kafka -> decode -> key_by customer + keyed ValueState running total -> encode -> Kafka; "
          f"N={n:,} records (marginal rate against N0={n0:,} to remove start-up), parallelism 1, "
          f"`python.execution-mode={args.mode}`, {os.cpu_count()} CPUs, Python {platform.python_version()}, local KRaft broker + registry. "
          f"Medians of {args.repeats} interleaved repetitions; config for both pipelines: "
          f"{json.dumps(out['config'])}.",
          "", "| format | pipeline | T(N) s | T(N0) s | records/s (wall, N) | records/s (marginal) |",
          "|---|---|---|---|---|---|"]
    for fmt in args.formats.split(","):
        for kind, label in (("baseline", "ByteArraySchema + confluent-kafka serializers in maps"),
                            ("serdes", "serdes.flink read_kafka/write_kafka")):
            r = results[f"{fmt}/{kind}"]
            md.append(f"| {fmt} | {label} | {r['seconds']} | {r['seconds_small']} | "
                      f"{r['records_per_s_wall']:,} | {r['records_per_s_marginal']:,} |")
        md.append(f"| {fmt} | **speedup (marginal, median)** | | | | **{results[f'{fmt}/speedup']}x** "
                  f"(per repetition: {', '.join(str(x) for x in results[f'{fmt}/speedup_per_repeat'])}) |")
    (d / f"flink_e2e{suffix}.md").write_text("\n".join(md) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
