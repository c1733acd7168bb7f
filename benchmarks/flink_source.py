"""Which way should headers + coordinates reach the Python decoder?  Measured, not guessed.

(a) serdes' Java shim: ``KafkaSource`` + ``KafkaRecordDeserializationSchema`` emitting
    ``Row(topic, partition, offset, timestamp, key, value, headers)``  (what ``read_kafka`` uses)
(b) the Kafka *table* connector with ``'value.format'='raw'`` / ``'key.format'='raw'`` and the
    ``topic``/``partition``/``offset``/``headers`` metadata columns, turned into a DataStream
    with ``t_env.to_data_stream``

Both feed the same Python ``DecodeFunction`` (Avro, serdes' deserializer) and a discarding sink;
marginal records/s = (N - N0) / (T(N) - T(N0)).

    python benchmarks/flink_source.py [--records 100000] [--bootstrap .. --registry ..]

Writes benchmarks/results/flink_source.{json,md}.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._results import servers, write_results  # noqa: E402

from pyflink.common import Types  # noqa: E402

from serdes import flink as sf  # noqa: E402

from benchmarks.flink_e2e import produce  # noqa: E402
from benchmarks.flink_transport import discarding_sink  # noqa: E402


def table_source_rows(env, bootstrap, topic):
    from pyflink.table import StreamTableEnvironment

    t_env = StreamTableEnvironment.create(env)
    name = f"src_{uuid.uuid4().hex[:6]}"
    t_env.execute_sql(f"""
        CREATE TABLE {name} (
          `k` BYTES,
          `v` BYTES,
          `topic` STRING METADATA VIRTUAL,
          `partition` INT METADATA VIRTUAL,
          `offset` BIGINT METADATA VIRTUAL,
          `headers` MAP<STRING, BYTES> METADATA VIRTUAL
        ) WITH (
          'connector' = 'kafka',
          'topic' = '{topic}',
          'properties.bootstrap.servers' = '{bootstrap}',
          'properties.group.id' = 'bench-{uuid.uuid4().hex[:6]}',
          'scan.startup.mode' = 'earliest-offset',
          'scan.bounded.mode' = 'latest-offset',
          'key.format' = 'raw',
          'key.fields' = 'k',
          'value.format' = 'raw',
          'value.fields-include' = 'EXCEPT_KEY'
        )""")
    table = t_env.sql_query(
        f"SELECT `topic`, `partition`, `offset`, CAST(NULL AS BIGINT) AS ts, k, v, headers FROM {name}")
    return t_env.to_data_stream(table)


def run(kind, bootstrap, registry, topic, n):
    env = sf.create_env()
    if kind == "shim":
        rows = sf.read_records(env, bootstrap, topic, bounded=True)
    else:
        rows = table_source_rows(env, bootstrap, topic)
    decoded = rows.process(sf.DecodeFunction(sf.avro(registry)), output_type=Types.PICKLED_BYTE_ARRAY())
    decoded.flat_map(lambda v: (), output_type=Types.LONG()).sink_to(discarding_sink())
    t0 = time.perf_counter()
    env.execute(f"source-{kind}")
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=2_000)
    ap.add_argument("--bootstrap")
    ap.add_argument("--registry")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    n, n0 = args.records, args.small
    with contextlib.ExitStack() as stack:
        bootstrap, registry = servers(stack, args.bootstrap, args.registry)
        topics = {}
        for size in (n0, n):
            topics[size] = f"bench-src-{size}-{uuid.uuid4().hex[:6]}"
            produce(bootstrap, registry, "avro", topics[size], size)
        run("shim", bootstrap, registry, topics[n0], n0)  # warm-up
        results = {}
        for kind in ("shim", "table"):
            ts, tb = run(kind, bootstrap, registry, topics[n0], n0), run(kind, bootstrap, registry, topics[n], n)
            results[kind] = {"seconds_small": round(ts, 2), "seconds": round(tb, 2),
                             "records_per_s_marginal": round((n - n0) / (tb - ts))}
            print(kind, results[kind], flush=True)
    out = {"benchmark": "flink_source", "records": n, "small": n0, "cpus": os.cpu_count(),
           "python": platform.python_version(), "results": results}
    md = ["# flink_source", "",
          f"Kafka -> rows with coordinates + headers -> Python Avro decode -> discard; N={n:,}, N0={n0:,}, "
          f"parallelism 1, process mode, {os.cpu_count()} CPUs.", "",
          "| source | T(N) s | T(N0) s | records/s (marginal) |", "|---|---|---|---|"]
    for kind, label in (("shim", "Java shim KafkaRecordDeserializationSchema (read_kafka)"),
                        ("table", "Kafka table connector, raw format + metadata, to_data_stream")):
        r = results[kind]
        md.append(f"| {label} | {r['seconds']} | {r['seconds_small']} | {r['records_per_s_marginal']:,} |")
    write_results(args.out, "flink_source", out, md)


if __name__ == "__main__":
    main()
