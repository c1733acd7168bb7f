"""End-to-end Kafka -> decode -> keyed state -> encode -> Kafka, records/s, all pipelines in one run.

Pipelines (same input topic, same running total per customer, same output records):

* ``baseline``: what most PyFlink users write: ``KafkaSource`` with the value-only
  ``ByteArraySchema`` + confluent-kafka's ``AvroDeserializer``/``ProtobufDeserializer`` in a ``map``,
  ``key_by(customer)`` + the keyed running total, confluent-kafka's serializer in a ``map``, a
  ``KafkaSink`` with ``ByteArraySchema``;
* ``serdes``: the same shape with serdes (``read_kafka`` + ``key_by`` + ``write_kafka``): two
  Python operators (decode + key extraction, then keyed function + encode);
* ``kafka-keyed``: ``read_kafka_keyed`` keyed by the Kafka record key (= customer) in Java: one
  Python operator (decode + keyed function + encode);
* ``value-keyed``: ``read_kafka_keyed(key_by=customer)``: decode operator emits
  ``Row(key, record)``, Java keys by field 0, the keyed operator decodes again;
* ``field-keyed``: ``read_kafka_keyed(key_by="customer")``: the same key by field name; for
  Protobuf the Java shim reads the field from the record's bytes (one Python operator, like
  ``kafka-keyed``); for Avro it is ``value-keyed`` (the field read in the decode operator);
* ``floor-kafka-keyed`` / ``floor-value-keyed`` (format-independent): PyFlink's own per-record
  floor for the two keyed shapes: serdes' packed records, Java keying and sink, and Python
  functions that only do the state access every pipeline does (no decoding, encoding or
  registry); no implementation of these shapes on this PyFlink can be cheaper;
  ``floor-two-states``: the Kafka-keyed floor with a second keyed state, written once per key
  (what a ``ProtobufValueStateDescriptor``'s retained descriptor adds);
* ``sql`` (Avro only, ``--sql``): the JVM reference, the same running total as Flink SQL
  (``SUM/COUNT ... OVER (PARTITION BY customer ...)``) with Flink's Java ``avro-confluent``
  format (``flink-sql-avro-confluent-registry`` fetched from Maven Central into the serdes cache).

Parallelism 1, so records/s is per TaskManager slot.  Every Python pipeline runs the same keyed
function, which notes ``perf_counter()`` at its first and last record (written on ``close()``):
records/s = (N - 1) / (last - first).  That is the rate at which the whole pipeline pushes records
through (in steady state all its stages move at the same rate) without the job's start-up
(MiniCluster, Python workers: 5-15 s, very noisy on a shared machine, which made N-vs-N0 marginal
rates useless here).  A two-operator pipeline's keyed stage starts after the first upstream bundle,
so its span misses up to one bundle (<= 1 s, ``python.fn-execution.bundle.time``): that bias favours
the two-operator pipelines (the baseline).  The SQL job has no Python function: its rate is taken
between the broker append times (``LogAppendTime`` topic) of its first and last output record.

``--small N0`` also runs every pipeline on an N0-record topic and reports CPU µs per record:
(CPU(N) - CPU(N0)) / (N - N0), user + system time of this process (the Python workers run here in
process mode) and the MiniCluster JVM (and the Python workers in thread mode).  On a machine shared
with other jobs rates drop with everyone's load, while CPU per record mostly does not.

    python benchmarks/flink_e2e.py [--records 40000] [--small 4000] [--formats avro,protobuf]
        [--modes process,thread] [--jobs baseline,serdes,kafka-keyed,value-keyed] [--sql]
        [--speedups-off] [--name flink_e2e]
        [--repeats 3] [--config KEY=VALUE ...] [--bootstrap HOST:PORT --registry URL] [--cluster]
        (default servers: $SERDES_TEST_BOOTSTRAP/$SERDES_TEST_REGISTRY_URL, else serdes.testing)

``--cluster`` runs every job on a standalone cluster (``serdes.testing.LocalFlinkCluster``: one
TaskManager with 2 slots, RocksDB), submitted with ``flink run --python`` (this file, ``--run-job``);
parallelism 1, so records/s is per slot; the keyed function's timing line comes from the
TaskManager's Python worker.  No CPU figures there.

Every pipeline gets the same environment (``create_env`` defaults + ``--config``).  Each
repetition runs every pipeline back to back (the order rotates between repetitions) so load
drift on the machine hits all of them; the table reports medians over repetitions and the
per-repetition ratios to the baseline.

``--speedups-off`` adds, in process mode, each of serdes' keyed pipelines again with
``serdes.flink.speedups=off`` (PyFlink's own per-record wrapping and key change; docs/flink.md,
"The speedups switch"), interleaved with the others like any pipeline.

Writes benchmarks/results/<name>.{json,md} (``--name``, default ``flink_e2e``), naming the
apache-flink release it ran on.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import tempfile
import sys
import time
import uuid
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._results import servers, write_results  # noqa: E402

from pyflink.common import Types, WatermarkStrategy  # noqa: E402
from pyflink.common.serialization import ByteArraySchema  # noqa: E402
from pyflink.common import Row  # noqa: E402
from pyflink.datastream import KeyedProcessFunction, MapFunction, ProcessFunction  # noqa: E402
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

#: where the keyed function of the running job reports its first/last record time.  One path for
#: the whole run: a local PyFlink worker can hand a later job's function the attribute values of
#: an earlier job's instance of the same class (seen in process mode: the second job wrote to the
#: first job's per-job path), so the file is truncated before every job instead.
#: (``main`` sets it; other scripts importing these functions get no timing file.)
TIMING_FILE = None


class Timed:
    """Times the keyed function: perf_counter at its first and last record, written on close().

    Every pipeline runs the same keyed function, so (records - 1) / (last - first) is the rate at
    which each pipeline gets its records through, without job and Python worker start-up."""

    def __init__(self):
        self.timing_file = TIMING_FILE
        self.first = self.last = None
        self.n = 0

    def tick(self):
        self.last = time.perf_counter()
        if self.n == 0:
            self.first = self.last
        self.n += 1

    def close(self):
        if self.timing_file and self.n:
            with open(self.timing_file, "a") as fh:
                fh.write(f"{self.first} {self.last} {self.n}\n")


class DictTotals(Timed, KeyedProcessFunction):
    def open(self, runtime_context):
        self.state = runtime_context.get_state(
            ValueStateDescriptor("t", Types.TUPLE([Types.LONG(), Types.LONG()])))

    def process_element(self, o, ctx):
        self.tick()
        c, s = self.state.value() or (0, 0)
        c, s = c + 1, s + o["amount_cents"]
        self.state.update((c, s))
        yield {"customer": o["customer"], "count": c, "total_cents": s}


class ProtoTotalsPickled(Timed, KeyedProcessFunction):
    """Baseline protobuf: messages pickled between operators, state pickled."""

    def open(self, runtime_context):
        self.state = runtime_context.get_state(ValueStateDescriptor("t", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, o, ctx):
        self.tick()
        t = self.state.value() or CustomerTotal(customer=o.customer)
        t.count += 1
        t.total_cents += o.amount_cents
        self.state.update(t)
        yield t


class ProtoTotals(Timed, KeyedProcessFunction):
    def open(self, runtime_context):
        self.state = runtime_context.get_state(sf.ProtobufValueStateDescriptor("t", CustomerTotal))

    def process_element(self, o, ctx):
        self.tick()
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


def keyed_job(env, fmt, bootstrap, registry, t_in, t_out, key_by=None):
    """One Python operator after the shuffle: decode + keyed function + encode
    (``process_to_kafka``: the encoder runs inside the keyed operator, rows go to the sink)."""
    spec = sf.avro(registry) if fmt == "avro" else sf.protobuf(Order, registry)
    if key_by is True:
        key_by = dict_customer if fmt == "avro" else proto_customer
    keyed = sf.read_kafka_keyed(env, bootstrap, t_in, spec, key_type=Types.STRING(), key_by=key_by, bounded=True)
    out = sf.avro_serializer(registry, TOTAL_AVRO) if fmt == "avro" else sf.protobuf_serializer(CustomerTotal, registry)
    keyed.process_to_kafka(DictTotals() if fmt == "avro" else ProtoTotals(), bootstrap, t_out, out)


def kafka_keyed_job(env, fmt, bootstrap, registry, t_in, t_out):
    keyed_job(env, fmt, bootstrap, registry, t_in, t_out)


def value_keyed_job(env, fmt, bootstrap, registry, t_in, t_out):
    keyed_job(env, fmt, bootstrap, registry, t_in, t_out, key_by=True)


def field_keyed_job(env, fmt, bootstrap, registry, t_in, t_out):
    keyed_job(env, fmt, bootstrap, registry, t_in, t_out, key_by="customer")


# --- PyFlink's floor: the same job shapes with no decoding, encoding or registry ---------------


class FloorTotals(Timed, KeyedProcessFunction):
    """The least a keyed function of this job can do: read and update one byte[] ValueState per
    record and emit one (constant, pre-packed) output record."""

    def open(self, runtime_context):
        from serdes.flink import _pyflink
        from serdes.flink._packed import pack_producer_record

        self.state = runtime_context.get_state(ValueStateDescriptor("t", Types.PRIMITIVE_ARRAY(Types.BYTE())))
        _pyflink.bytes_state_as_bytes(self.state)  # thread mode: PyFlink 2.2.1's byte[] state converter fails on None
        self.out = pack_producer_record(None, None, b"\x00" * 24)

    def process_element(self, packed, ctx):
        self.tick()
        self.state.value()
        self.state.update(self.out)
        yield self.out


class FloorTotalsTwoStates(FloorTotals):
    """:class:`FloorTotals` with a second keyed state registered and written once per key: what
    ``ProtobufValueStateDescriptor``'s retained descriptor (``<name>.serdes-descriptor``) adds."""

    def open(self, runtime_context):
        from serdes.flink import _pyflink

        super().open(runtime_context)
        self.second = runtime_context.get_state(ValueStateDescriptor("d", Types.PRIMITIVE_ARRAY(Types.BYTE())))
        _pyflink.bytes_state_as_bytes(self.second)

    def process_element(self, packed, ctx):
        if self.state.value() is None:
            self.second.update(b"descriptor")
        yield from super().process_element(packed, ctx)


class FloorKey(ProcessFunction):
    """The least a value-keyed decode operator can do: read the key, pass the record on."""

    def process_element(self, packed, ctx):
        from serdes.flink._packed import unpack_record

        yield Row(unpack_record(packed)[4].decode(), packed)


def floor_job(env, fmt, bootstrap, registry, t_in, t_out, value_keyed=False, totals=FloorTotals):
    """PyFlink's per-record floor for the two keyed shapes: serdes' packed records, Java keying and
    sink, and Python functions that do nothing but the state access every pipeline does.  No
    implementation of these shapes on this PyFlink can be cheaper than this (format-independent)."""
    from serdes.flink import _connectors, _graph, _pyflink, _shim
    from serdes.flink._records import BYTES

    sf.configure(env)
    if value_keyed:
        source = _connectors.record_source(bootstrap, t_in, _pyflink.new_java_object(_shim.PACKED_DESERIALIZER_CLASS),
                                           bounded=True)
        raw = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka")
        rows = raw.process(FloorKey(), output_type=Types.ROW_NAMED(["key", "record"], [Types.STRING(), BYTES]))
    else:
        source = _connectors.record_source(
            bootstrap, t_in, _pyflink.new_java_object(_shim.KEYED_PACKED_DESERIALIZER_CLASS, "utf8"), bounded=True)
        rows = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka")
    out = _graph.keyed_by_field0(rows, Types.STRING(), BYTES).process(totals(), output_type=BYTES)
    out.sink_to(_connectors.kafka_record_sink(bootstrap, t_out, serializer_class=_shim.PACKED_SERIALIZER_CLASS))


def floor_value_keyed_job(env, fmt, bootstrap, registry, t_in, t_out):
    floor_job(env, fmt, bootstrap, registry, t_in, t_out, value_keyed=True)


def floor_two_states_job(env, fmt, bootstrap, registry, t_in, t_out):
    floor_job(env, fmt, bootstrap, registry, t_in, t_out, totals=FloorTotalsTwoStates)


JOBS = {"baseline": baseline_job, "serdes": serdes_job, "kafka-keyed": kafka_keyed_job,
        "value-keyed": value_keyed_job, "field-keyed": field_keyed_job, "floor-kafka-keyed": floor_job, "floor-value-keyed": floor_value_keyed_job,
        "floor-two-states": floor_two_states_job}
#: the pipelines serdes' process-mode speedups act on (``--speedups-off`` runs them both ways)
SPED_UP = ("kafka-keyed", "value-keyed", "field-keyed")
LABELS = {
    "baseline": "ByteArraySchema + confluent-kafka serializers in maps, key_by",
    "serdes": "serdes read_kafka + key_by + write_kafka (2 Python operators)",
    "kafka-keyed": "serdes read_kafka_keyed, Kafka key (1 Python operator)",
    "value-keyed": "serdes read_kafka_keyed(key_by=customer) (decode+key, keyed)",
    "field-keyed": "serdes read_kafka_keyed(key_by=\"customer\") (Protobuf: field read in Java, 1 Python operator)",
    "sql": "Flink SQL, Java avro-confluent format (JVM reference)",
    "floor-kafka-keyed": "PyFlink floor, Kafka-keyed shape (no decode/encode, byte[] state)",
    "floor-value-keyed": "PyFlink floor, value-keyed shape (no decode/encode, byte[] state)",
    "floor-two-states": "PyFlink floor, Kafka-keyed, a second keyed state (as a retained descriptor)",
}

# --- JVM reference: Flink SQL with the avro-confluent format ------------------------------------

# 2.2.x is not served by the Maven mirror used here; the 2.1.0 format jar runs on Flink 2.2.1
AVRO_CONFLUENT = ("org.apache.flink", "flink-sql-avro-confluent-registry", "2.1.0")


def avro_confluent_jar() -> Path:
    """flink-sql-avro-confluent-registry from Maven Central, cached like the Kafka connector."""
    import subprocess

    from serdes._mvn import mvn_package_command
    from serdes.flink import _jars

    group, artifact, version = AVRO_CONFLUENT
    home = _jars.cache_dir() / f"{artifact}-{version}"
    jar = home / f"{artifact}-{version}.jar"
    if jar.is_file():
        return jar
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(_jars.copy_jar_pom(home, group, artifact, version))
    subprocess.run(mvn_package_command("mvn", home / "pom.xml", "-q"), cwd=home, check=True)
    return jar


def sql_job(env, fmt, bootstrap, registry, t_in, t_out):
    from pyflink.table import StreamTableEnvironment

    from serdes.flink._jars import jar_url

    assert fmt == "avro", "the SQL reference is Avro only (Flink has no protobuf-confluent format)"
    env.add_jars(jar_url(avro_confluent_jar()))
    t_env = StreamTableEnvironment.create(env)
    t_env.execute_sql(f"""
        CREATE TEMPORARY TABLE orders (
            order_id STRING NOT NULL, customer STRING NOT NULL, amount_cents BIGINT NOT NULL,
            currency STRING NOT NULL, tags ARRAY<STRING NOT NULL> NOT NULL, pt AS PROCTIME()
        ) WITH ('connector' = 'kafka', 'topic' = '{t_in}', 'properties.bootstrap.servers' = '{bootstrap}',
                'properties.group.id' = 'bench-sql-{uuid.uuid4().hex[:6]}',
                'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
                'value.format' = 'avro-confluent', 'value.avro-confluent.url' = '{registry}')""")
    t_env.execute_sql(f"""
        CREATE TEMPORARY TABLE totals (customer STRING NOT NULL, `count` BIGINT NOT NULL,
                                       total_cents BIGINT NOT NULL)
        WITH ('connector' = 'kafka', 'topic' = '{t_out}', 'properties.bootstrap.servers' = '{bootstrap}',
              'value.format' = 'avro-confluent', 'value.avro-confluent.url' = '{registry}')""")
    return t_env.execute_sql("""
        INSERT INTO totals
        SELECT customer,
               COUNT(*) OVER w,
               SUM(amount_cents) OVER w
        FROM orders
        WINDOW w AS (PARTITION BY customer ORDER BY pt ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)""")


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
        p.produce(topic, ser(mk(i), ctx), key=f"customer-{i % 97}".encode())
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(120) == 0


def count_topic(bootstrap, topic):
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-count"})
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    c.close()
    return hi - lo


def create_log_append_topic(bootstrap, topic):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"message.timestamp.type": "LogAppendTime"})])[topic].result(30)


def output_span_s(bootstrap, topic):
    """Seconds between the broker append times of the first and the last record of ``topic``."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-span-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        stamps = []
        for offset in (lo, hi - 1):
            c.assign([TopicPartition(topic, 0, offset)])
            m = None
            while m is None or m.error():
                m = c.poll(10)
            stamps.append(m.timestamp()[1])
            c.unassign()
        return (stamps[1] - stamps[0]) / 1000
    finally:
        c.close()


CONFIG: dict = {}


def cpu_seconds():
    """(this process, the gateway JVM) CPU time so far, user + system, each with its finished
    children's.  The JVM holds the MiniCluster (Kafka source/sink, Flink runtime; the Python
    workers too in thread mode).  In process mode the Python workers run either in this process
    ("loopback") or as processes the MiniCluster starts per task and ends with the job (seen
    here: ``java -> bash -> python``); their CPU reaches the JVM's children's time once they are
    reaped, so the two numbers hold every pipeline's work except the broker's."""
    from pyflink.java_gateway import get_gateway

    tick = os.sysconf("SC_CLK_TCK")
    out = []
    for pid in (os.getpid(), get_gateway().jvm.ProcessHandle.current().pid()):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        out.append(sum(int(f) for f in fields[11:15]) / tick)  # utime stime cutime cstime
    return tuple(out)


#: a pipeline name ending in this runs the pipeline with serdes' process-mode speedups switched off
SPEEDUPS_OFF = "@speedups-off"


def job_config(kind):
    """``(pipeline, Flink config)`` for a pipeline name of the run (``kafka-keyed@speedups-off``:
    the ``kafka-keyed`` pipeline with ``serdes.flink.speedups=off``)."""
    if kind.endswith(SPEEDUPS_OFF):
        return kind[: -len(SPEEDUPS_OFF)], {**CONFIG, "serdes.flink.speedups": "off"}
    return kind, CONFIG


def label(kind):
    base, config = job_config(kind)
    return LABELS[base] + (", speedups off" if config.get("serdes.flink.speedups") == "off" else "")


def run(kind, fmt, mode, bootstrap, registry, t_in, expected):
    """Run one pipeline; returns (records/s through the keyed function, net runtime s, CPU s)."""
    if CLUSTER is not None:
        return run_on_cluster(kind, fmt, mode, bootstrap, registry, t_in, expected)
    kind, config = job_config(kind)
    env = sf.create_env(execution_mode=mode, config=config)  # jars + python.executable for all (the baseline needs the connector too)
    cpu0 = cpu_seconds()
    t_out = f"bench-out-{kind}-{fmt}-{uuid.uuid4().hex[:6]}"
    timing = Path(TIMING_FILE)
    timing.write_text("")
    if kind == "sql":
        create_log_append_topic(bootstrap, t_out)
        result = sql_job(env, fmt, bootstrap, registry, t_in, t_out)
        result.wait()
        net_ms = result.get_job_client().get_job_execution_result().result().get_net_runtime()
        rate = (expected - 1) / output_span_s(bootstrap, t_out)
    else:
        JOBS[kind](env, fmt, bootstrap, registry, t_in, t_out)
        net_ms = env.execute(f"e2e-{kind}-{fmt}").get_net_runtime()
        (line,) = timing.read_text().split("\n")[:-1]
        first, last, count = line.split()
        assert int(count) == expected, (kind, count, expected)
        rate = (expected - 1) / (float(last) - float(first))
    cpu = tuple(b - a for a, b in zip(cpu0, cpu_seconds(), strict=True))
    got = count_topic(bootstrap, t_out)
    assert got == expected, (kind, fmt, got, expected)
    return rate, net_ms / 1000, cpu


#: the standalone cluster (``--cluster``): jobs are submitted with ``flink run --python`` instead
CLUSTER = None


def run_on_cluster(kind, fmt, mode, bootstrap, registry, t_in, expected):
    """``flink run --python flink_e2e.py --run-job SPEC`` on the standalone cluster, parallelism 1;
    the keyed function runs in a TaskManager's Python worker (process mode: a process of its own;
    thread mode: inside the TaskManager JVM) and writes the same timing line.  No CPU figures."""
    from serdes.flink import kafka_connector_jar, shim_jar

    t_out = f"bench-out-{kind}-{fmt}-{uuid.uuid4().hex[:6]}"
    timing = Path(TIMING_FILE)
    timing.write_text("")
    kind, config = job_config(kind)
    spec = {"kind": kind, "fmt": fmt, "mode": mode, "bootstrap": bootstrap, "registry": registry,
            "t_in": t_in, "t_out": t_out, "timing": TIMING_FILE, "config": config}
    connector = kafka_connector_jar()
    jars = [connector, shim_jar(connector)] + ([avro_confluent_jar()] if kind == "sql" else [])
    if kind == "sql":
        create_log_append_topic(bootstrap, t_out)
    job_id = CLUSTER.submit(Path(__file__), ["--run-job", json.dumps(spec)], jars=jars)
    CLUSTER.wait_for_job(job_id, "FINISHED")
    net = CLUSTER.job(job_id).get("duration", 0) / 1000
    if kind == "sql":
        rate = (expected - 1) / output_span_s(bootstrap, t_out)
    else:
        (line,) = timing.read_text().split("\n")[:-1]
        first, last, count = line.split()
        assert int(count) == expected, (kind, count, expected)
        rate = (expected - 1) / (float(last) - float(first))
    got = count_topic(bootstrap, t_out)
    assert got == expected, (kind, fmt, got, expected)
    return rate, net, (0.0, 0.0)


def run_job(spec_json):
    """The job side of :func:`run_on_cluster` (``flink run --python`` runs this file)."""
    global TIMING_FILE
    spec = json.loads(spec_json)
    TIMING_FILE = spec["timing"]
    CONFIG.update(spec["config"])
    env = sf.create_env(execution_mode=spec["mode"], config=CONFIG)
    kind = spec["kind"]
    args = (env, spec["fmt"], spec["bootstrap"], spec["registry"], spec["t_in"], spec["t_out"])
    if kind == "sql":
        sql_job(*args)  # executeSql submits the INSERT job
        return
    JOBS[kind](*args)
    env.execute(f"e2e-{kind}-{spec['fmt']}-{spec['mode']}")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=40_000)
    ap.add_argument("--small", type=int, default=0,
                    help="also run every pipeline with this many records for CPU µs/record (marginal)")
    ap.add_argument("--formats", default="avro,protobuf")
    ap.add_argument("--bootstrap")
    ap.add_argument("--registry")
    ap.add_argument("--modes", default="process,thread")
    ap.add_argument("--jobs", default="baseline,serdes,kafka-keyed,value-keyed")
    ap.add_argument("--sql", action="store_true", help="add the Flink SQL avro-confluent reference (Avro)")
    ap.add_argument("--speedups-off", action="store_true",
                    help="also run every serdes pipeline with serdes.flink.speedups=off (process mode; "
                         "thread mode has no speedups)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--config", action="append", default=[], help="extra Flink KEY=VALUE for every pipeline")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--name", default="flink_e2e", help="result file name (<out>/<name>.json and .md)")
    ap.add_argument("--cluster", action="store_true",
                    help="run every job on a standalone Flink cluster (serdes.testing.LocalFlinkCluster, "
                         "1 TaskManager, 2 slots), submitted with flink run --python, parallelism 1")
    ap.add_argument("--run-job", help=argparse.SUPPRESS)  # the job side of --cluster
    args = ap.parse_args(argv)
    if args.run_job:
        return run_job(args.run_job)
    if args.cluster and args.small:
        ap.error("--small (CPU per record) measures the client's processes: not with --cluster")
    n, n0 = args.records, args.small
    global TIMING_FILE
    TIMING_FILE = os.path.join(tempfile.gettempdir(), f"serdes-flink-e2e-{os.getpid()}.timing")
    CONFIG.update(kv.split("=", 1) for kv in args.config)
    kinds = args.jobs.split(",")
    modes = args.modes.split(",")

    results = {}
    global CLUSTER
    with contextlib.ExitStack() as stack:
        bootstrap, registry = servers(stack, args.bootstrap, args.registry)
        if args.cluster:
            from serdes.testing import LocalFlinkCluster

            CLUSTER = stack.enter_context(LocalFlinkCluster(taskmanagers=1, slots=2))
        for fmt in args.formats.split(","):
            t_in = f"bench-in-{fmt}-{n}-{uuid.uuid4().hex[:6]}"
            produce(bootstrap, registry, fmt, t_in, n)
            t_small = None
            if n0:
                t_small = f"bench-in-{fmt}-{n0}-{uuid.uuid4().hex[:6]}"
                produce(bootstrap, registry, fmt, t_small, n0)
            fmt_kinds = kinds + (["sql"] if args.sql and fmt == "avro" else [])
            for mode in modes:
                mode_kinds = [k for k in fmt_kinds if k != "sql" or mode == modes[0]]  # SQL has no Python mode
                if args.speedups_off and mode == "process":
                    mode_kinds += [k + SPEEDUPS_OFF for k in mode_kinds if k in SPED_UP]
                # warm-up: the first job of a process pays JVM class loading and JIT
                run(mode_kinds[0], fmt, mode, bootstrap, registry, t_small or t_in, n0 or n)
                runs = {k: [] for k in mode_kinds}
                for rep in range(args.repeats):
                    order = mode_kinds[rep % len(mode_kinds):] + mode_kinds[:rep % len(mode_kinds)]
                    for kind in order:
                        cpu_us = None
                        if n0:
                            cpu_small = run(kind, fmt, mode, bootstrap, registry, t_small, n0)[2]
                        rate, net, cpu = run(kind, fmt, mode, bootstrap, registry, t_in, n)
                        if n0:
                            split = [(b - a) / (n - n0) * 1e6 for a, b in zip(cpu_small, cpu, strict=True)]
                            cpu_us = sum(split)
                        runs[kind].append((rate, net, cpu_us, split if n0 else None))
                        print(f"{fmt:8} {mode:7} {kind:12} rep {rep}: {rate:,.0f} records/s, net runtime {net:.1f}s"
                              + (f", {cpu_us:.0f} CPU µs/record (python process {split[0]:.0f}, JVM {split[1]:.0f})"
                                 if n0 else ""), flush=True)
                for kind, rs in runs.items():
                    r = {
                        "records_per_s": round(statistics.median(x[0] for x in rs)),
                        "records_per_s_all": [round(x[0]) for x in rs],
                        "net_runtime_s": round(statistics.median(x[1] for x in rs), 2),
                    }
                    if "baseline" in runs and kind != "baseline":
                        per = [x[0] / b[0] for x, b in zip(rs, runs["baseline"], strict=False)]
                        r["speedup_per_repeat"] = [round(x, 2) for x in per]
                        r["speedup"] = round(statistics.median(per), 2)
                    if n0:
                        r["cpu_us_per_record"] = round(statistics.median(x[2] for x in rs), 1)
                        r["cpu_us_per_record_all"] = [round(x[2], 1) for x in rs]
                        r["cpu_us_python_process_jvm_all"] = [[round(v, 1) for v in x[3]] for x in rs]
                        if "baseline" in runs and kind != "baseline":
                            per = [b[2] / x[2] for x, b in zip(rs, runs["baseline"], strict=False)]
                            r["cpu_speedup_per_repeat"] = [round(x, 2) for x in per]
                            r["cpu_speedup"] = round(statistics.median(per), 2)
                    results[f"{fmt}/{mode}/{kind}"] = r

    Path(TIMING_FILE).unlink(missing_ok=True)
    out = {"benchmark": "flink_e2e", "apache_flink": version("apache-flink"), "records": n, "method": "(N - 1) / (last - first record time in the keyed function); SQL: output LogAppendTime span", "python": platform.python_version(),
           "cpus": os.cpu_count(), "parallelism": 1,
           "where": "standalone cluster (1 TaskManager, flink run --python)" if args.cluster else "MiniCluster",
           "load_average": [round(x, 2) for x in os.getloadavg()], "modes": modes, "repeats": args.repeats,
           "config": {"python.fn-execution.bundle.size": sf.DEFAULT_BUNDLE_SIZE, **CONFIG}, "results": results,
           "targets": {"kafka-keyed": ">= 2.5x baseline", "value-keyed": ">= 1.8x baseline", "field-keyed": ">= 1.8x baseline (a value-keyed job)"}}
    md = ["# flink_e2e", "",
          f"Kafka -> decode -> keyed ValueState running total per customer -> encode -> Kafka; "
          f"apache-flink {out['apache_flink']}, N={n:,} records, 97 keys, parallelism 1 (records/s = per slot), {out['where']}, "
          f"load average at the end {out['load_average']}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, local KRaft broker + registry. "
          f"records/s = (N - 1) / (time of the last - time of the first record in the keyed function, "
          f"the same function in every Python pipeline); SQL: between the broker append times of the first "
          f"and last output record. Start-up is not counted. CPU µs/record (with --small N0): (CPU(N) - "
          f"CPU(N0)) / (N - N0), user + system time of this process and the MiniCluster JVM, which "
          f"loaded machines distort much less than rates. Medians of {args.repeats} interleaved repetitions; "
          f"speedup = median of the per-repetition ratios to the baseline; config for every pipeline: "
          f"{json.dumps(out['config'])}.",
          "", "| format | mode | pipeline | records/s | vs baseline (per repetition) | net runtime s (incl. start-up) "
          "| CPU µs/record (marginal) | baseline CPU / CPU (per repetition) |",
          "|---|---|---|---|---|---|---|---|"]
    for key, r in results.items():
        fmt, mode, kind = key.split("/")
        ratio = f"**{r['speedup']}x** ({', '.join(str(x) for x in r['speedup_per_repeat'])})" if "speedup" in r else ""
        md.append(f"| {fmt} | {mode if kind != 'sql' else '(JVM)'} | {label(kind)} | {r['records_per_s']:,} | "
                  f"{ratio} | {r['net_runtime_s']} | {r.get('cpu_us_per_record', '')} | "
                  + (f"**{r['cpu_speedup']}x** ({', '.join(str(x) for x in r['cpu_speedup_per_repeat'])})"
                     if "cpu_speedup" in r else "") + " |")
    write_results(args.out, args.name, out, md)


if __name__ == "__main__":
    main()
