"""`python -m serdes.testing run` then the README quick start, as a newcomer runs them: the quick
start reads the variables `run` prints and produces + consumes through the servers it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.unit.test_docs_examples import run_block

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _quick_start() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("## Quick start", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


def test_quick_start_runs_with_the_exports_of_serdes_testing_run(monkeypatch):
    # ports 0: free ones, so the test never collides with servers on 9092/8081
    proc = subprocess.Popen(
        [sys.executable, "-m", "serdes.testing", "run", "--kafka-port", "0", "--registry-port", "0", "--in-memory"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        exported: dict[str, str] = {}
        seen = []
        deadline = time.monotonic() + 600
        while "KAFKA_BOOTSTRAP" not in exported:
            line = proc.stdout.readline()
            assert line and time.monotonic() < deadline, "serdes.testing run exited early:\n" + "".join(seen)
            seen.append(line)
            if line.startswith("export KAFKA_BOOTSTRAP="):
                exported.update(kv.split("=", 1) for kv in line.split()[1:])
        assert exported["SCHEMA_REGISTRY_URL"].endswith("/apis/ccompat/v7")
        for name, value in exported.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("TOPIC", f"quickstart-{uuid.uuid4().hex[:8]}")
        out = run_block(_quick_start())
        assert "'name': 'user-0', 'age': 30" in out and "'name': 'user-2', 'age': 32" in out, out
        assert proc.poll() is None  # still serving
    finally:
        proc.send_signal(signal.SIGTERM)  # `run` stops both servers on SIGTERM
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:  # pragma: no cover - stop hung: do not leak the JVMs
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert proc.returncode == 0
