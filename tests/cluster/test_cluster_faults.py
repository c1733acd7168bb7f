"""Faults on a standalone Flink cluster (local processes, ``flink run --python``).

* a TaskManager that runs the job's subtasks killed with SIGKILL mid-job: the exactly-once
  Avro -> keyed state -> Protobuf job at parallelism 2 restarts from its last checkpoint on the
  surviving TaskManager and the output, read with read_committed, holds every running total
  exactly once;
* the registry restarted mid-job: cached schemas keep decoding, a new schema id fails with
  RegistryUnavailableError naming topic/partition/offset, the job recovers when the registry is
  back;
* a savepoint taken on the cluster (REST stop-with-savepoint) restored with an incompatible and
  a compatible state schema change.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from serdes.flink import find_record_error
from serdes.testing import LocalRegistry

from tests.support.cluster_totals import Orders, read_totals, submit_totals, wait_for_committed
from tests.support.registry_client import registry_client

pytestmark = pytest.mark.timeout(600)


def test_taskmanager_killed_mid_job(flink_cluster, cluster_jars, kafka_bootstrap, registry_url, topics):
    in_topic, out_topic = topics("tm-kill")
    orders = Orders(kafka_bootstrap, registry_url, in_topic)
    orders.produce(400)
    job = submit_totals(flink_cluster, cluster_jars, kafka_bootstrap, {"url": registry_url},
                        in_topic, out_topic, f"tm-kill-{uuid.uuid4().hex[:6]}", parallelism=2)
    killed = False
    try:
        flink_cluster.wait_for_job(job, "RUNNING", running_tasks=True)
        wait_for_committed(kafka_bootstrap, out_topic, 400)
        # 2 subtasks in 2 TaskManagers x 2 slots: both may sit on one TaskManager, so the victim
        # is one that runs the job's subtasks (the one running the most)
        hosts = flink_cluster.job_taskmanagers(job)
        assert hosts, f"no TaskManager runs a subtask of {job}"
        victim = next(iter(hosts))
        orders.produce(200)                        # in flight (in an open transaction) at the kill
        # counted from here: on a cluster other tests have used, the job may already have
        # restarted once before the kill (a slot still being released, a slow checkpoint)
        restarts_before = flink_cluster.restarts(job)
        victim_pid = flink_cluster.kill_taskmanager(victim)
        killed = True
        deadline = time.monotonic() + 120
        # the restart that counts is the one after the JobManager has dropped the victim, so that
        # the subtasks of the new attempt can only be on a surviving TaskManager
        while (victim in flink_cluster.registered_taskmanagers()
               or flink_cluster.restarts(job) <= restarts_before):
            if time.monotonic() > deadline:
                ov = flink_cluster.overview()
                raise AssertionError(
                    f"the job did not restart in 120 s after {victim} died: job "
                    f"{flink_cluster.job(job)['state']}, {ov.get('taskmanagers')} TaskManagers "
                    f"{sorted(flink_cluster.registered_taskmanagers())}, subtasks on "
                    f"{flink_cluster.job_taskmanagers(job)}, restarts {flink_cluster.restarts(job)} "
                    f"(before the kill {restarts_before}); last failure:\n"
                    f"{flink_cluster.job_exception(job)[-3000:]}")
            time.sleep(1)
        # the surviving TaskManager's 2 slots are enough for parallelism 2
        flink_cluster.wait_for_job(job, "RUNNING", running_tasks=True)
        moved_to = flink_cluster.job_taskmanagers(job)
        orders.produce(200)                        # after the restart
        totals = read_totals(kafka_bootstrap, registry_url, out_topic, 800)
        restarts = flink_cluster.restarts(job) - restarts_before
    finally:
        flink_cluster.cancel(job)
        if killed:
            flink_cluster.add_taskmanager()        # the tests after this one get all 4 slots back
    print(f"killed {victim} (pid {victim_pid}) running {hosts[victim]} subtask(s) of {hosts}; "
          f"restarted {restarts} time(s), now on {moved_to}")
    assert victim not in moved_to
    assert totals == orders.expected_totals()      # every running total once: no loss, no duplicate
    assert restarts >= 1


def test_registry_restarted_mid_job(flink_cluster, cluster_jars, kafka_bootstrap, topics, tmp_path):

    from serdes.avro import AvroSerializer
    from serdes.demo.__main__ import ORDER_AVRO

    # a registry of this test's own (the session's must not be restarted), file-based storage
    registry = LocalRegistry(workdir=tmp_path / "registry", persistent=True).start()
    try:
        in_topic, out_topic = topics("reg-restart")
        orders = Orders(kafka_bootstrap, registry.url, in_topic)
        orders.produce(80)
        # the same order shape under a second schema (an added optional field): a new schema id
        # the job has not seen yet, registered now, produced while the registry is down
        v2 = json.loads(ORDER_AVRO)
        v2["fields"].append({"name": "note", "type": ["null", "string"], "default": None})
        v2_ser = AvroSerializer(registry_client(registry.url), json.dumps(v2))
        conf = {"url": registry.url, "max.retries": 1, "retries.wait.ms": 200, "timeout": 5}
        job = submit_totals(flink_cluster, cluster_jars, kafka_bootstrap, conf, in_topic, out_topic,
                            f"reg-{uuid.uuid4().hex[:6]}", parallelism=4, restart_attempts=200)
        try:
            flink_cluster.wait_for_job(job, "RUNNING", running_tasks=True)
            wait_for_committed(kafka_bootstrap, out_topic, 80)
            v2_ser({**orders.sent[0], "note": "warm-up"}, _ctx(in_topic))   # registers v2, caches its id
            registry.stop()
            orders.produce(40)                                     # the serializer's cached id
            wait_for_committed(kafka_bootstrap, out_topic, 120)   # the job's cached schema: still decoded
            (partition, offset), = orders.produce(1, serializer=lambda o, ctx: v2_ser({**o, "note": "v2"}, ctx))
            failure = _wait_for_failure(flink_cluster, job, in_topic, offset)
            registry.start()                                       # same port, same ids
            totals = read_totals(kafka_bootstrap, registry.url, out_topic, 121)
        finally:
            flink_cluster.cancel(job)
    finally:
        registry.cleanup()
    print(f"failure while the registry was down: {failure}")
    assert failure.error_type == "RegistryUnavailableError"
    assert (failure.topic, failure.partition, failure.offset) == (in_topic, partition, offset)
    assert totals == orders.expected_totals()


def _ctx(topic):
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.VALUE)


def _wait_for_failure(cluster, job, topic, offset, timeout=120.0):
    """The job's exception history entry caused by the record at ``offset`` (parsed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hist = (cluster.rest(f"/jobs/{job}/exceptions") or {}).get("exceptionHistory", {}).get("entries", [])
        for entry in reversed(hist):                  # oldest first
            err = find_record_error(entry.get("stacktrace", ""))
            if err is not None:
                return err
        time.sleep(1)
    raise AssertionError(f"job {job} did not fail on {topic}@{offset} while the registry was down")
