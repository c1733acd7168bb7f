"""The worker groups of scripts/test.sh (tests/support/xdist_groups.py) take effect: a pytest run
on two xdist workers sends every test of a group to one worker (the marks of pytest-xdist did not,
on pytest 9), and leaves the other tests to both."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.xdist_groups import group_of

ROOT = Path(__file__).resolve().parents[2]
TESTS = """
import os

import pytest


@pytest.mark.parametrize("i", range(8))
def test_where(i):
    with open(os.environ["WHERE_LOG"], "a") as f:
        f.write(f"{__name__} {os.environ['PYTEST_XDIST_WORKER']}\\n")
"""


def test_the_groups_by_path() -> None:
    assert group_of("tests/cluster/test_cluster_rescale.py::test_rescaled_from_savepoint_2_to_1_to_3") == "flink_cluster"
    assert group_of("tests/unit/test_benchmarks_smoke.py::test_batch_lanes") == "benchmarks_smoke"
    assert group_of("tests/integration/test_debezium_real.py::test_x[default]") == "debezium_real"
    assert group_of("tests/unit/test_wire.py::test_x") is None
    assert group_of("tests/unit/test_benchmarks_smoke_other.py::test_x") is None


def test_a_group_runs_in_one_worker(tmp_path: Path) -> None:
    for folder in ("cluster", "unit"):
        (tmp_path / "tests" / folder).mkdir(parents=True)
        (tmp_path / "tests" / folder / f"test_{folder}_where.py").write_text(TESTS)
    log = tmp_path / "where.log"
    env = {**os.environ, "WHERE_LOG": str(log), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.support.xdist_groups",
                          "-n", "2", "--dist", "loadgroup", "-q", "--rootdir", str(tmp_path), "tests"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    workers: dict = {}
    for line in log.read_text().splitlines():
        module, worker = line.split()
        workers.setdefault(module, []).append(worker)
    assert len(workers["test_cluster_where"]) == 8 and len(set(workers["test_cluster_where"])) == 1, workers
    assert len(workers["test_unit_where"]) == 8, workers
