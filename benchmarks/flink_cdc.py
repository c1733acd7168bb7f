"""Records/s of a Debezium changelog job beside the plain keyed job, same aggregation.

Both jobs: Kafka (Avro, registry-framed) -> Python decode -> Table API
``SELECT owner, SUM(balance) ... GROUP BY owner`` -> blackhole sink, on one MiniCluster
(``create_env`` defaults, process mode).

* **changelog**: ``read_debezium`` over a Debezium topic -> ``from_changelog_stream``.  By default
  (``--source debezium``) the topic is real: PostgreSQL (``serdes.testing.LocalPostgres``) ->
  Debezium 3.6.1's PostgreSQL connector in Kafka Connect (``LocalKafkaConnect``, Apicurio's Avro
  converter writing the Confluent wire format) -> Kafka, for a table ``accounts (id int primary
  key, owner varchar not null, balance bigint not null)`` under ``REPLICA IDENTITY FULL``, changed
  by SQL statements.  ``--source constructed`` writes envelopes of the same shape with serdes'
  serializer instead (``tests/support/debezium_samples.py``).  Either way the changes over 500 rows
  are the same: an insert for each new key, then updates (each a -U/+U pair; 4 in 10 move the row
  to another owner) and 1 in 10 deletes, each followed by a tombstone (skipped);
* **plain keyed**: ``read_kafka`` of the bare rows (``Value`` records, one per Kafka record)
  with ``avro_row_converter`` -> ``from_data_stream`` (insert-only).

Times are the jobs' net run times from the JobManager (client start-up excluded; task and
Python worker start-up included).  records/s = Kafka records / net run time of the large run;
"marginal" = (large - small records) / (difference of net run times), which cancels the fixed
start-up but needs a quiet machine; repetitions interleaved, medians reported.

    python benchmarks/flink_cdc.py [--records 20000] [--small 2000] [--reps 3] [--source debezium|constructed]
        [--bootstrap .. --registry ..]

``--bootstrap`` / ``--registry``: a running broker and Apicurio registry (its ccompat URL); without
them, ``$SERDES_TEST_BOOTSTRAP`` / ``$SERDES_TEST_REGISTRY_URL``, else ``serdes.testing`` starts both
for the run.

Writes benchmarks/results/flink_cdc.{json,md}.
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

from benchmarks._results import RESULTS, servers, write_results  # noqa: E402

from tests.support import debezium_samples as ds  # noqa: E402

from serdes import flink as sf  # noqa: E402

KEYS = 500
SOURCES = {"debezium": "a real Debezium topic (PostgreSQL -> Debezium 3.6.1 -> Kafka)",
           "constructed": "envelopes written by serdes' serializer"}


def changes(n):
    """The changes over ``KEYS`` rows that make ``n`` Kafka records (a delete makes two: its event
    and a tombstone), in order: ``(op, before, after)`` with ``op`` in ``c``/``u``/``d``."""
    out, live, seq, records = [], {}, 0, 0
    while records < n:
        seq += 1
        i = seq % KEYS
        r = seq % 10
        if i not in live or r < 4:
            row = ds.row(i, f"owner-{seq % 37}", seq % 1000)
            out.append(("c" if i not in live else "u", live.get(i), row))
            live[i] = row
        elif r < 9:
            row = dict(live[i], balance=seq % 1000)
            out.append(("u", live[i], row))
            live[i] = row
        else:
            out.append(("d", live.pop(i), None))
            records += 1
        records += 1
    return out


def debezium_events(n):
    """``n`` Kafka records of constructed envelopes and tombstones for :func:`changes`."""
    out = []
    for seq, (op, before, after) in enumerate(changes(n), 1):
        key = {"id": (after or before)["id"]}
        out.append((key, ds.envelope(op, before, after, seq)))
        if op == "d":
            out.append((key, None))
    return out[:n]


def debezium_topics(stack, bootstrap, registry, sizes, run_id):
    """Real Debezium topics: one table per size, changed by :func:`changes` while the connector
    streams; returns ``{size: topic}`` once each topic holds its records.  PostgreSQL and Connect
    run until ``stack`` (an ``ExitStack``) closes."""
    import pg8000.native
    from confluent_kafka import Consumer, TopicPartition

    from serdes.testing import LocalKafkaConnect, LocalPostgres, debezium_postgres_config

    pg = stack.enter_context(LocalPostgres())
    connect = stack.enter_context(LocalKafkaConnect(bootstrap))
    tables = {size: f"accounts_{run_id}_{size}" for size in sizes}
    db = pg8000.native.Connection(**pg.connect_kwargs)
    for t in tables.values():
        db.run(f"CREATE TABLE {t} (id int PRIMARY KEY, owner varchar NOT NULL, balance bigint NOT NULL)")
        db.run(f"ALTER TABLE {t} REPLICA IDENTITY FULL")   # updates and deletes carry the old row
    prefix = f"bench{run_id}"
    connect.create_connector(f"bench-pg-{run_id}", debezium_postgres_config(
        pg, tables.values(), run_id=run_id, topic_prefix=prefix, registry_url=registry))
    connect.wait_running(f"bench-pg-{run_id}")
    t0 = time.perf_counter()
    expected = {}
    for size, t in tables.items():
        sql = {"c": f"INSERT INTO {t} (id, owner, balance) VALUES (:id, :owner, :balance)",
               "u": f"UPDATE {t} SET owner = :owner, balance = :balance WHERE id = :id",
               "d": f"DELETE FROM {t} WHERE id = :id"}
        batch = changes(size)
        expected[size] = len(batch) + sum(op == "d" for op, _, _ in batch)
        for start in range(0, len(batch), 1000):   # transactions of 1,000 statements
            db.run("BEGIN")
            for op, before, after in batch[start:start + 1000]:
                db.run(sql[op], **(after if after is not None else {"id": before["id"]}))
            db.run("COMMIT")
    db.close()
    print(f"{sum(expected.values()):,} Kafka records' worth of SQL in {time.perf_counter() - t0:.1f}s", flush=True)
    topics = {size: f"{prefix}.public.{t}" for size, t in tables.items()}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{run_id}"})
    deadline = time.monotonic() + 600
    try:
        for size, topic in topics.items():
            while True:
                known = consumer.list_topics(timeout=10).topics
                high = (consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
                        if topic in known and not known[topic].error else 0)
                if high >= expected[size]:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Debezium wrote {high} of {expected[size]} records to {topic} in 600 s")
                time.sleep(1)
    finally:
        consumer.close()
    print(f"Debezium wrote them all in {time.perf_counter() - t0:.1f}s", flush=True)
    return topics


def produce(bootstrap, registry, topic, records, schema):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    from serdes.avro import AvroSerializer

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    ser = AvroSerializer(SchemaRegistryClient({"url": registry}), schema)
    ctx = SerializationContext(topic, MessageField.VALUE)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for key, value in records:
        p.produce(topic, key=str(key["id"]).encode(), value=None if value is None else ser(value, ctx))
        p.poll(0)
    assert p.flush(60) == 0


def _aggregate(env, table):
    from pyflink.table import StreamTableEnvironment

    t_env = StreamTableEnvironment.create(env)
    t_env.create_temporary_view("accounts", table(t_env))
    t_env.execute_sql("CREATE TABLE sink (owner STRING, total BIGINT) WITH ('connector' = 'blackhole')")
    result = t_env.sql_query("SELECT owner, SUM(balance) AS total FROM accounts GROUP BY owner").execute_insert("sink")
    result.wait()
    # the job's own run time (from the JobManager): client-side start-up is not in it
    return result.get_job_client().get_job_execution_result().result().get_net_runtime() / 1000.0


def changelog_job(bootstrap, registry, topic):
    env = sf.create_env()
    stream = sf.read_debezium(env, bootstrap, topic, sf.avro(registry), bounded=True)
    return _aggregate(env, lambda t_env: t_env.from_changelog_stream(stream))


def plain_job(bootstrap, registry, topic):
    schema = json.dumps(ds.avro_value())
    env = sf.create_env()
    stream = sf.read_kafka(env, bootstrap, topic, sf.avro(registry), bounded=True,
                           convert=sf.avro_row_converter(schema), output_type=sf.avro_row_type_info(schema))
    return _aggregate(env, lambda t_env: t_env.from_data_stream(stream))


def timed(fn, *args):
    """(wall seconds, the job's net run time in seconds)."""
    t0 = time.perf_counter()
    net = fn(*args)
    return time.perf_counter() - t0, net


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--small", type=int, default=2_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--source", choices=("debezium", "constructed"), default="debezium",
                    help="debezium: a real PostgreSQL -> Debezium -> Kafka pipeline (default); "
                         "constructed: envelopes written by serdes' serializer")
    ap.add_argument("--bootstrap")
    ap.add_argument("--registry")
    ap.add_argument("--out", default=str(RESULTS), help="the results directory")
    a = ap.parse_args(argv)
    with contextlib.ExitStack() as stack:
        a.bootstrap, a.registry = servers(stack, a.bootstrap, a.registry)
        run(a, stack)


def run(a, stack):
    tag = uuid.uuid4().hex[:6]
    topics = {}
    if a.source == "debezium":
        for size, topic in debezium_topics(stack, a.bootstrap, a.registry, (a.small, a.records), tag).items():
            topics[("changelog", size)] = topic
    for size in (a.small, a.records):
        if a.source == "constructed":
            topics[("changelog", size)] = t = f"bench-cdc-{tag}-{size}"
            produce(a.bootstrap, a.registry, t, debezium_events(size), ds.avro_envelope())
        topics[("plain", size)] = t = f"bench-plain-{tag}-{size}"
        rows = [({"id": i % KEYS}, ds.row(i % KEYS, f"owner-{i % 37}", i % 1000)) for i in range(size)]
        produce(a.bootstrap, a.registry, t, rows, json.dumps(ds.avro_value()))

    jobs = {"changelog": changelog_job, "plain": plain_job}
    rates = {k: [] for k in jobs}          # marginal, from the jobs' net run times
    gross = {k: [] for k in jobs}          # records of the large run / its net run time
    for kind in jobs:          # warm-up (connector jar, shim, worker imports), not timed
        jobs[kind](a.bootstrap, a.registry, topics[(kind, a.small)])
    for rep in range(a.reps):
        order = list(jobs) if rep % 2 == 0 else list(reversed(jobs))
        for kind in order:
            (ws, small) = timed(jobs[kind], a.bootstrap, a.registry, topics[(kind, a.small)])
            (wl, large) = timed(jobs[kind], a.bootstrap, a.registry, topics[(kind, a.records)])
            rates[kind].append((a.records - a.small) / (large - small) if large > small else float("nan"))
            gross[kind].append(a.records / large)
            print(f"rep {rep} {kind}: net small {small:.1f}s large {large:.1f}s (wall {ws:.1f}s, {wl:.1f}s) -> "
                  f"marginal {rates[kind][-1]:,.0f} records/s, gross {gross[kind][-1]:,.0f} records/s", flush=True)

    def median(xs):
        xs = [x for x in xs if x == x]
        return statistics.median(xs) if xs else float("nan")

    med = {k: median(v) for k, v in rates.items()}
    med_gross = {k: median(v) for k, v in gross.items()}
    result = {
        "source": a.source, "records": a.records, "small": a.small, "reps": a.reps, "keys": KEYS,
        "marginal": rates, "gross": gross, "median_marginal": med, "median_gross": med_gross,
        "ratio_marginal": med["changelog"] / med["plain"],
        "ratio_gross": med_gross["changelog"] / med_gross["plain"],
        "python": platform.python_version(), "load_avg": os.getloadavg(),
    }
    per = ", ".join(f"{c / p:.2f}" for c, p in zip(gross["changelog"], gross["plain"], strict=False))
    md = (
        "# flink_cdc\n\n"
        "| job (%d Kafka records, median of %d) | records/s (records / job net run time) | marginal records/s (%d-%d) |\n"
        "|---|---|---|\n"
        "| plain keyed (read_kafka rows, insert-only, SUM per owner) | %s | %s |\n"
        "| changelog (read_debezium over %s, +I/-U/+U/-D, SUM per owner) | %s | %s |\n"
        "| ratio changelog / plain | **%.2f** (per repetition: %s) | %.2f |\n"
    ) % (a.records, a.reps, a.small, a.records, f"{med_gross['plain']:,.0f}", f"{med['plain']:,.0f}",
         SOURCES[a.source], f"{med_gross['changelog']:,.0f}", f"{med['changelog']:,.0f}", result["ratio_gross"], per,
         result["ratio_marginal"])
    write_results(a.out, "flink_cdc", result, [md])


if __name__ == "__main__":
    main()
