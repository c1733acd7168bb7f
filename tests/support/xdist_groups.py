"""Which tests share one pytest-xdist worker (``scripts/test.sh``: ``-n 3 --dist loadgroup``).

A session or module fixture is set up once per worker that runs a test needing it. The tests
below share an expensive one, so each group is sent to one worker as a whole: the standalone
Flink cluster (``flink_cluster``, a JobManager and two TaskManagers), the benchmark run of the
benchmark smoke tests, and the PostgreSQL -> Debezium pipeline. Every other test is scheduled
on its own, as ``--dist load`` does.

The groups are named by path here instead of by ``xdist_group`` marks: pytest-xdist 3.8 tags a
marked test by rewriting ``item._nodeid``, which pytest 9 no longer reads, so the marks group
nothing there. This plugin uses xdist's public ``pytest_xdist_make_scheduler`` hook and keeps
its loadgroup scheduler for everything but the choice of group.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import pytest

#: nodeid prefix -> the group its tests run in
GROUPS: Dict[str, str] = {
    "tests/cluster/": "flink_cluster",
    "tests/unit/test_benchmarks_smoke.py::": "benchmarks_smoke",
    "tests/integration/test_debezium_real.py::": "debezium_real",
}


def group_of(nodeid: str) -> Optional[str]:
    """The group a test runs in, or None: scheduled alone."""
    return next((group for prefix, group in GROUPS.items() if nodeid.startswith(prefix)), None)


@pytest.hookimpl(optionalhook=True)  # pytest without xdist (-p no:xdist) has no such hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class PathGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid) or super()._split_scope(nodeid)

    return PathGroupScheduling(config, log)
