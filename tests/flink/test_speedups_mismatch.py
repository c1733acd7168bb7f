"""The speedups meet PyFlink internals that do not match, in a real process-mode job: PyFlink's own
code runs, the results are exactly right, and each Python worker logs exactly one WARNING naming
the apache-flink release and what did not match.

The job (tests/support/speedups_mismatch_job.py) runs in a child process: its own gateway JVM and
MiniCluster, whose log (the TaskManager's, which Beam's logging service writes the Python workers'
log records into) goes to a directory of this test (``FLINK_LOG_DIR``); ``_python_worker_execution_mode=
process`` makes the MiniCluster start its Python workers as separate processes instead of PyFlink's
loopback workers inside the job's process (where a monkeypatch would reach them).  The mismatch
reaches the workers through their path: ``python.pythonpath`` starts with
tests/support/mismatched_pyflink, whose ``sitecustomize`` changes the worker's PyFlink at start-up
(a subclassed state backend and input handler, or another reported release), and the workers
inherit the switch (``SERDES_FLINK_SPEEDUPS``) from the job's environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List

import pytest

from serdes.flink import _pyflink

from tests.support.flink_env import client_env
from tests.support.speedups_mismatch_job import WORDS

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "tests" / "support" / "mismatched_pyflink"
WARNING = "serdes' process-mode speedups are not applied on apache-flink"


def _expected(installed: bool = False) -> List[str]:
    """What the job gives: counts 1..n per key, and whether the speedups were installed."""
    return sorted(f"{w}:{n}:{installed}:{installed}" for w, total in Counter(WORDS).items() for n in range(1, total + 1))


def _run_job(tmp_path: Path, mismatch: str, switch: str | None) -> tuple[List[str], List[str], Dict[str, List[str]]]:
    """(job results, the TaskManager log's speedups warnings, per keyed worker process (one that
    built a keyed state backend) the warnings of serdes' logger in it)."""
    logs, marks = tmp_path / "log", tmp_path / "marks"
    logs.mkdir()
    marks.mkdir()
    env = client_env(drop={_pyflink.SPEEDUPS_ENV})
    env.update({
        "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "FLINK_LOG_DIR": str(logs),
        "_python_worker_execution_mode": "process",
        "SERDES_TEST_WORKER_PATH": os.pathsep.join([str(HOOK), str(ROOT)]),
        "SERDES_TEST_PYFLINK_MISMATCH": mismatch,
        "SERDES_TEST_PYFLINK_MARKS": str(marks),
    })
    if switch is not None:
        env[_pyflink.SPEEDUPS_ENV] = switch
    result = tmp_path / "result.json"
    done = subprocess.run([sys.executable, "-m", "tests.support.speedups_mismatch_job", str(result)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    log_text = "\n".join(p.read_text(errors="replace") for p in sorted(logs.glob("*.log")))
    assert "python" in log_text.lower(), f"no MiniCluster log in {logs}: {sorted(logs.iterdir())}"
    warnings = [line for line in log_text.splitlines() if WARNING in line]
    workers = {}
    for mark in marks.glob("backend-*"):
        said = marks / f"warnings-{mark.name.split('-', 1)[1]}"
        workers[mark.name] = said.read_text().splitlines() if said.exists() else []
    return json.loads(result.read_text()), warnings, workers


@pytest.mark.flink
@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("mismatch, switch, release, what", [
    # the switch on: the installers look, and each finds a class it was not checked against (the
    # per-record one second: not warned of again)
    ("internals", "on", _pyflink.pyflink_version(),
     "key change: the keyed state backend is a SubclassedRemoteKeyedStateBackend, not PyFlink's "
     "RemoteKeyedStateBackend"),
    # the switch at auto (unset): a release not verified is not tried at all
    ("release", None, "2.99.0", "release not verified, verified: " + ", ".join(_pyflink.SPEEDUPS_VERIFIED)),
])
def test_mismatch_in_the_workers_falls_back_with_one_warning_each(tmp_path, mismatch, switch, release, what):
    results, warnings, workers = _run_job(tmp_path, mismatch, switch)
    # exactly the right results, from PyFlink's code: no key change, no per-record wrapper installed
    assert results == _expected(installed=False)
    assert len(workers) >= 2, f"parallelism 2: two keyed Python worker processes expected, got {workers}"
    for worker, said in workers.items():
        assert len(said) == 1, (worker, said)
        assert f"apache-flink {release} ({what}" in said[0], (worker, said)
    # the TaskManager's log: the same warnings, one per worker
    assert len(warnings) == len(workers), warnings
    for line in warnings:
        assert f"apache-flink {release} ({what}" in line, line
        assert re.search(r"\bWARN\b", line), line


@pytest.mark.flink
@pytest.mark.integration
@pytest.mark.timeout(300)
def test_switch_on_tries_a_release_not_verified_and_the_internals_match(tmp_path):
    """The other side of the "release" case: with ``SERDES_FLINK_SPEEDUPS=on`` (which so reaches the
    workers) the installers run on the reported 2.99.0, find what they check, install, say nothing."""
    results, warnings, workers = _run_job(tmp_path, "release", "on")
    assert results == _expected(installed=True)
    assert len(workers) >= 2 and all(said == [] for said in workers.values()), workers
    assert warnings == []
