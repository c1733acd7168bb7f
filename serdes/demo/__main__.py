"""``python -m serdes.demo``: Kafka -> PyFlink (decode, keyed state, encode) -> Kafka.

1. starts a local Kafka broker + schema registry (``serdes.testing``) unless ``--bootstrap`` and
   ``--registry`` point at running ones, and, at the same time, a standalone Flink cluster of
   local processes (one JobManager, two TaskManagers with two slots each, RocksDB);
2. produces sample orders as Avro, Protobuf and JSON Schema records (prefix framing) plus a
   couple of poison pills per topic;
3. submits the job in ``serdes/demo/_job.py`` with ``flink run --python`` (as a user submits
   one): per format ``read_kafka`` (dead-letter mode) -> key_by customer -> running count/sum in
   keyed ValueState -> ``write_kafka`` with the registry serializers, dead letters to one topic;
   ``--local`` runs the same job in this process on a MiniCluster instead;
4. prints the phases (cluster start, submission, task deployment, Python worker start-up, first
   records) and progress while the job runs, then a summary (in, out, dead-lettered, throughput).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, cast

from serdes import flink as sf
from serdes.demo._job import (  # noqa: F401 - re-exported: the schemas are the demo's public surface
    ORDER_AVRO,
    ORDER_JSON,
    POISON,
    TOTAL_AVRO,
    TOTAL_JSON,
    build_job,
)
from serdes.demo.orders_pb2 import Order
from serdes.flink._codecs import DEFAULT_REGISTRY_TIMEOUT
from serdes.flink._env import quiet_beam_gcs_warning

if TYPE_CHECKING:
    from confluent_kafka import Message

    from serdes.testing import LocalFlinkCluster

JOB_FILE = Path(__file__).with_name("_job.py")
OUT_ROLES = ("out-avro", "out-protobuf", "out-json")
#: shown instead of the message itself (dropped in this process, in the job's client, and written only
#: to the TaskManager logs by the cluster's Python workers)
GCS_NOTE = ("Beam's \"Failed to import GCSFileSystem\" warning is hidden: it means google-cloud-storage is "
            "not installed, so Beam skips its Google Cloud Storage filesystem, which this job never uses")


def log(msg: str) -> None:
    print(f"[demo] {msg}", flush=True)


def produce_inputs(bootstrap: str, registry: str, topics: Dict[str, str], n: int) -> int:
    from confluent_kafka import Producer
    # NewTopic is confluent-kafka's documented import path; the module re-exports it from cimpl without
    # declaring the export
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
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
            o: Dict[str, Any] = {"order_id": f"{fmt}-{i}", "customer": f"customer-{i % 10}", "amount_cents": 100 + i % 997,
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


class _Counter(threading.Thread):
    """Counts records on the output topics while the job runs (for progress lines)."""

    def __init__(self, bootstrap: str, out_topics: Iterable[str], dlq_topic: str) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Consumer

        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-{uuid.uuid4().hex[:6]}",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.c.subscribe(list(out_topics) + [dlq_topic])
        self.dlq_topic = dlq_topic
        self.out = 0
        self.dead: List[Message] = []
        self.first: Optional[float] = None
        self.last: Optional[float] = None
        self.stop = threading.Event()

    def run(self) -> None:
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


def _start_everything(stack: contextlib.ExitStack, args: argparse.Namespace, cluster: Optional[LocalFlinkCluster]
                      ) -> Tuple[str, str, Optional[LocalFlinkCluster]]:
    """Kafka + registry (unless given) and the Flink cluster (unless ``--local`` or given), in
    parallel: both are JVMs that take 10-30 s to come up."""
    failures: List[BaseException] = []
    threads: List[threading.Thread] = []
    result: Dict[str, Any] = {}

    def servers() -> None:
        from serdes.testing import LocalServers

        log("starting local Kafka + schema registry (first run downloads them with mvn) ...")
        t = time.monotonic()
        s = LocalServers()
        stack.callback(s.stop)
        s.start()
        result["servers"] = (s.bootstrap_servers, s.registry_url)
        log(f"Kafka + registry up in {time.monotonic() - t:.0f}s: kafka {s.bootstrap_servers}, "
            f"registry {s.registry_url}")

    def flink() -> None:
        from serdes.testing import LocalFlinkCluster

        log("starting a standalone Flink cluster: 1 JobManager + 2 TaskManagers x 2 slots (local processes) ...")
        c = LocalFlinkCluster(progress=lambda line: log(line))
        stack.callback(c.cleanup)
        c.start()
        result["cluster"] = c

    todo: List[Callable[[], None]] = []
    if not (args.bootstrap and args.registry):
        todo.append(servers)
    if not args.local and cluster is None:
        todo.append(flink)
    for fn in todo:
        def run(fn: Callable[[], None] = fn) -> None:
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                failures.append(exc)
        threads.append(threading.Thread(target=run, daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    bootstrap, registry = result.get("servers", (args.bootstrap, args.registry))
    return bootstrap, registry, result.get("cluster", cluster)


def _run_local(args: argparse.Namespace, bootstrap: str, registry: str, topics: Dict[str, str], counter: _Counter
               ) -> Tuple[Optional[BaseException], float]:
    """The job in this process on a MiniCluster; returns (failure or None, wall seconds)."""
    log("building the job and starting a MiniCluster in this process (--local) ...")
    quiet_beam_gcs_warning()
    env = sf.create_env(parallelism=args.parallelism)
    build_job(env, bootstrap, registry, topics)
    t0 = time.monotonic()
    failure: List[BaseException] = []

    def run_job() -> None:
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
            phase = "processing" if counter.out else "MiniCluster + Python workers starting"
            log(f"{time.monotonic() - t0:5.1f}s  [{phase}]  out {counter.out:>6}/{3 * args.records}  "
                f"dead-lettered {len(counter.dead)}")
    return (failure[0] if failure else None), time.monotonic() - t0


def _phase(info: Dict[str, Any], out: int) -> str:
    """What the job is doing, from its REST state (vertex statuses) and the output seen so far."""
    state: str = info.get("state", "?")
    if state != "RUNNING":
        return {"CREATED": "scheduling", "INITIALIZING": "scheduling"}.get(state, state.lower())
    statuses = [v["status"] for v in info.get("vertices", [])]
    running = sum(1 for st in statuses if st in ("RUNNING", "FINISHED"))
    if any(st in ("CREATED", "SCHEDULED", "DEPLOYING") for st in statuses):
        return f"deploying tasks to the TaskManagers ({running}/{len(statuses)} running)"
    if running < len(statuses):
        # a Python operator's open() starts its Python worker (Beam harness, imports, serdes)
        return f"tasks initializing: Python workers starting ({running}/{len(statuses)} running)"
    if out == 0:
        return "running, waiting for the first records"
    return "processing"


def _run_on_cluster(args: argparse.Namespace, cluster: LocalFlinkCluster, bootstrap: str, registry: str,
                    topics: Dict[str, str], counter: _Counter) -> Tuple[Optional[BaseException], float]:
    """Submit with ``flink run --python`` and follow the job; returns (failure or None, seconds)."""
    from serdes.flink import kafka_connector_jar, shim_jar

    connector = kafka_connector_jar()
    jars = [connector, shim_jar(connector)]
    t0 = time.monotonic()
    log(f"submitting: flink run --detached --python {JOB_FILE.name} (the client runs the script to build "
        f"the job graph and ships it with the connector + shim jars) ...")
    job_id = cluster.submit(JOB_FILE, ["--bootstrap", bootstrap, "--registry", registry,
                                       "--topics", json.dumps(topics), "--parallelism", str(args.parallelism)],
                            jars=jars)
    log(f"submitted job {job_id} in {time.monotonic() - t0:.0f}s ({cluster.rest_url}/#/job/running/{job_id})")
    log("job: decode (avro, protobuf, json) -> key_by customer + keyed state -> encode")
    phase: Optional[str] = None
    last_print, first_seen = 0.0, False
    while True:
        info = cluster.job(job_id)
        state = info["state"]
        if state in ("FINISHED", "FAILED", "CANCELED"):
            break
        now = time.monotonic()
        current = _phase(info, counter.out)
        if counter.out and not first_seen:
            first_seen = True
            log(f"first records out {now - t0:.1f}s after submission")
        if current != phase or now - last_print >= 2.0:
            log(f"{now - t0:5.1f}s  [{current}]  out {counter.out:>6}/{3 * args.records}  "
                f"dead-lettered {len(counter.dead)}")
            phase, last_print = current, now
        time.sleep(0.5)
    elapsed = time.monotonic() - t0
    if state == "FINISHED" and not first_seen:
        # all the output came between two polls (a quick job): the counter's clock says when it began
        deadline = time.monotonic() + 10.0
        while counter.first is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if counter.first is not None:
            log(f"first records out {counter.first - t0:.1f}s after submission "
                "(the job finished before the next progress line)")
    if state != "FINISHED":
        text = cluster.job_exception(job_id)
        err = sf.find_record_error(text)
        return (err or RuntimeError(f"job {job_id} {state}: {text[-3000:]}")), elapsed
    return None, elapsed


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m serdes.demo",
        description=(
            "Kafka -> PyFlink (decode, keyed state, encode) -> Kafka. Starts a local Kafka broker and "
            "Apicurio registry (fetched into ~/.cache/serdes on first use), produces Avro, Protobuf "
            "and JSON Schema orders with a few poison pills, runs one PyFlink job that keeps running "
            "totals per customer and routes the poison pills to a dead-letter topic, then prints a "
            "summary. The job runs on a standalone Flink cluster (1 JobManager, 2 TaskManagers, local processes) unless --local. Needs the flink extra: pip install 'serdes[flink]'."
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
    ap.add_argument("--local", action="store_true",
                    help="run the job in this process on a MiniCluster instead of submitting it with "
                         "flink run to a standalone cluster of local processes (default: the cluster)")
    return ap


def main(argv: Optional[Sequence[str]] = None, *, cluster: Optional[LocalFlinkCluster] = None) -> int:
    """Run the demo; ``cluster``: a started :class:`serdes.testing.LocalFlinkCluster` to use."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if bool(args.bootstrap) != bool(args.registry):
        ap.error("--bootstrap and --registry go together: give both to use running servers, "
                 "or neither to start local ones")

    with contextlib.ExitStack() as stack:
        bootstrap, registry, cluster = _start_everything(stack, args, cluster)

        run = uuid.uuid4().hex[:6]
        topics = {k: f"demo-{k}-{run}" for k in
                  ("in-avro", "in-protobuf", "in-json", "out-avro", "out-protobuf", "out-json", "dead-letters")}
        t = time.monotonic()
        produced = produce_inputs(bootstrap, registry, topics, args.records)
        log(f"produced {produced} records ({3 * args.records} good, {produced - 3 * args.records} poison) "
            f"in {time.monotonic() - t:.1f}s")

        counter = _Counter(bootstrap, [topics[k] for k in OUT_ROLES], topics["dead-letters"])
        counter.start()
        if args.local:
            failure, elapsed = _run_local(args, bootstrap, registry, topics, counter)
            where = "MiniCluster + Python worker start-up"
            ran_on = "MiniCluster (--local)"
        else:
            assert cluster is not None  # _start_everything starts one unless --local
            failure, elapsed = _run_on_cluster(args, cluster, bootstrap, registry, topics, counter)
            where = "submission, task deployment + Python worker start-up"
            ran_on = "standalone cluster " + cluster.rest_url
        if failure is not None:
            counter.stop.set()
            log(f"job failed: {failure}")
            return 1
        deadline = time.monotonic() + 15
        while (counter.out < 3 * args.records or len(counter.dead) < produced - 3 * args.records) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        counter.stop.set()
        counter.join(5)
        log("summary")
        print(f"  ran on           : {ran_on}")
        print(f"  records in       : {produced}")
        print(f"  records out      : {counter.out}  (3 topics: {', '.join(topics[k] for k in OUT_ROLES)})")
        print(f"  dead-lettered    : {len(counter.dead)}  ({topics['dead-letters']})")
        for m in counter.dead:
            # header values are bytes (None only for a header without a value; the job writes none)
            h = cast(Dict[str, bytes], dict(m.headers() or []))
            print(f"     {h.get('serdes.dlq.topic', b'').decode()}[{h.get('serdes.dlq.partition', b'').decode()}]"
                  f"@{h.get('serdes.dlq.offset', b'').decode()}: {h.get('serdes.dlq.reason', b'').decode()}")
        print(f"  job wall time    : {elapsed:.1f}s (includes {where})")
        print(f"  throughput       : {produced / elapsed:,.0f} records/s end to end (wall time)")
        if counter.first and counter.last and counter.last > counter.first:
            span = counter.last - counter.first
            print(f"                     {counter.out / span:,.0f} records/s while output flowed "
                  f"({span:.1f}s from first to last output record)")
        print(f"  note             : {GCS_NOTE}")
        ok = counter.out == 3 * args.records and len(counter.dead) == produced - 3 * args.records
        return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
