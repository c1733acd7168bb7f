"""Fixtures for the tests on a standalone Flink cluster (``flink_cluster`` fixture, serdes.testing).

The job (``jobs/keyed_totals.py``) is submitted with ``flink run --python`` like a user's job: the
Kafka connector and serdes' shim jar in ``pipeline.jars``, the job directory in ``--pyFiles``
(``tests.support.cluster_totals`` drives it).  Everything here is marked ``cluster``, ``flink`` and
``integration``.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import List, Tuple

import pytest

pytest.importorskip("pyflink")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            for mark in ("cluster", "flink", "integration"):
                item.add_marker(getattr(pytest.mark, mark))


@pytest.fixture(autouse=True)
def _taskmanagers_survive(request):
    """A TaskManager that dies on its own during a test fails that test with its log tail (a
    crash is never hidden), and is replaced so the tests after it run on a whole cluster."""
    if "flink_cluster" not in request.fixturenames:
        yield
        return
    cluster = request.getfixturevalue("flink_cluster")
    cluster.replace_dead_taskmanagers()  # a failure before this test's start is reported there
    yield
    dead = cluster.dead_taskmanagers()
    if dead:
        cluster.replace_dead_taskmanagers()
        pytest.fail("a TaskManager died during the test:\n" + "\n".join(dead), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed cluster test's report carries the cluster's state: /overview, the TaskManagers
    and their log tails (the JobManager's too), so a CI failure can be read without the logs."""
    report = yield
    cluster = item.funcargs.get("flink_cluster") if hasattr(item, "funcargs") else None
    if report.failed and cluster is not None:
        try:
            state = f"overview: {cluster.overview()}\n"
        except OSError as e:
            state = f"overview: unavailable ({e})\n"
        report.sections.append(("Flink cluster", state + cluster.log_tail(60)))
    return report


@pytest.fixture(scope="session")
def cluster_jars() -> List[Path]:
    from serdes.flink import kafka_connector_jar, shim_jar

    connector = kafka_connector_jar()
    return [connector, shim_jar(connector)]


@pytest.fixture
def topics(kafka_bootstrap):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})

    def make(prefix: str) -> Tuple[str, str]:
        run = uuid.uuid4().hex[:8]
        names = (f"{prefix}-in-{run}", f"{prefix}-out-{run}")
        for fut in admin.create_topics([NewTopic(n, 4, 1) for n in names]).values():
            fut.result(30)
        return names

    return make
