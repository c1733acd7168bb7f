"""A savepoint taken on the standalone cluster (REST stop-with-savepoint) and restored with
``flink run --fromSavepoint``: with an incompatible state schema (``cluster.Acc.count`` int64 ->
string) the job fails on the first restored state access, naming the field and the rule, before
writing anything; with a compatible one (an added field) the running totals continue from the
v1 state."""

from __future__ import annotations

import uuid

import pytest

from serdes.testing import FlinkJobFailed

from tests.support.cluster_totals import Orders, read_totals, submit_totals, wait_for_committed

pytestmark = pytest.mark.timeout(600)


def test_savepoint_restored_across_state_schema_change(flink_cluster, cluster_jars, kafka_bootstrap,
                                                       registry_url, topics, tmp_path):
    in_topic, out_topic = topics("savepoint")
    orders = Orders(kafka_bootstrap, registry_url, in_topic)
    orders.produce(80)
    group = f"sp-{uuid.uuid4().hex[:6]}"
    registry = {"url": registry_url}

    v1 = submit_totals(flink_cluster, cluster_jars, kafka_bootstrap, registry, in_topic, out_topic, group,
                       parallelism=2, state_version="v1")
    try:
        flink_cluster.wait_for_job(v1, "RUNNING", running_tasks=True)
        wait_for_committed(kafka_bootstrap, out_topic, 80)
        savepoint = flink_cluster.stop_with_savepoint(v1, tmp_path / "savepoints")
    except BaseException:
        flink_cluster.cancel(v1)
        raise
    assert flink_cluster.job(v1)["state"] == "FINISHED"
    orders.produce(40)

    bad = submit_totals(flink_cluster, cluster_jars, kafka_bootstrap, registry, in_topic, out_topic, group,
                        parallelism=2, state_version="bad-type", restart_attempts=0, savepoint=savepoint)
    with pytest.raises(FlinkJobFailed) as failure:
        flink_cluster.wait_for_job(bad, "FINISHED")
    text = failure.value.exception_text
    assert "StateSchemaIncompatibleError" in text
    assert "cluster.Acc.count" in text and "field-type-changed" in text
    assert len(read_totals(kafka_bootstrap, registry_url, out_topic, 80, idle=1.0)) == 80   # nothing written

    v2 = submit_totals(flink_cluster, cluster_jars, kafka_bootstrap, registry, in_topic, out_topic, group,
                       parallelism=2, state_version="v2", savepoint=savepoint)
    try:
        flink_cluster.wait_for_job(v2, "RUNNING", running_tasks=True)
        totals = read_totals(kafka_bootstrap, registry_url, out_topic, 120)
    finally:
        flink_cluster.cancel(v2)
    assert totals == orders.expected_totals()     # counts continue from the v1 state
