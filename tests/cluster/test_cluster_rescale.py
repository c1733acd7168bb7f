"""Rescaling on the standalone cluster: the exactly-once keyed job (``jobs/keyed_totals.py``) at
parallelism 2 on a 4-partition topic, stopped with a savepoint, restored at parallelism 1,
stopped with a savepoint again and restored at parallelism 3.

Flink redistributes the keyed state by key group (each customer's accumulator moves to the
subtask that owns its key group at the new parallelism) and the Kafka source's partition
offsets with it, so every running total continues from the last savepoint: the output, read
read_committed, holds each running total exactly once across both restores.

Scaling down leaves no transaction open that would hold read_committed consumers back until
``transaction.timeout.ms``: stop-with-savepoint commits every subtask's transaction with the
savepoint, and on restore the sink (flink-connector-kafka 5.0, default ``INCREMENTING``
transaction naming with the ``PROBING`` abort strategy) aborts, from each remaining subtask,
the ids ``<prefix>-<subtask + k * new parallelism>-<checkpoint>`` too, i.e. those of the
subtasks that no longer exist, as long as the same ``transactional_id_prefix`` is kept.
"""

from __future__ import annotations

import time
import uuid

import pytest

from tests.support.cluster_totals import Orders, read_totals, submit_totals, wait_for_committed

pytestmark = pytest.mark.timeout(900)


def test_rescaled_from_savepoint_2_to_1_to_3(flink_cluster, cluster_jars, kafka_bootstrap, registry_url,
                                             topics, tmp_path):
    in_topic, out_topic = topics("rescale")
    orders = Orders(kafka_bootstrap, registry_url, in_topic)
    # the same group and so the same transactional id prefix in every run: the restored sink
    # aborts the previous runs' transactions by that prefix
    group = f"rescale-{uuid.uuid4().hex[:6]}"
    registry = {"url": registry_url}
    ran_at = {}
    savepoint = None
    orders.produce(60)
    for step, (parallelism, more) in enumerate([(2, 40), (1, 40), (3, None)]):
        t0 = time.monotonic()
        job = submit_totals(flink_cluster, cluster_jars, kafka_bootstrap, registry, in_topic, out_topic, group,
                            parallelism=parallelism, savepoint=savepoint)
        try:
            flink_cluster.wait_for_job(job, "RUNNING", running_tasks=True)
            ran_at[parallelism] = flink_cluster.vertex_parallelism(job)
            if more is None:
                totals = read_totals(kafka_bootstrap, registry_url, out_topic, len(orders.sent))
            else:
                wait_for_committed(kafka_bootstrap, out_topic, len(orders.sent))
                savepoint = flink_cluster.stop_with_savepoint(job, tmp_path / f"savepoints-{step}")
        finally:
            flink_cluster.cancel(job)   # no-op once stopped with a savepoint
        print(f"parallelism {parallelism}: {len(orders.sent)} orders committed in "
              f"{time.monotonic() - t0:.0f}s; vertices {ran_at[parallelism]}")
        if more is not None:
            orders.produce(more)

    for parallelism, vertices in ran_at.items():   # the restores really ran rescaled
        assert vertices and set(vertices.values()) == {parallelism}, (parallelism, vertices)
    assert totals == orders.expected_totals()      # every running total once, continued across restores
