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
