"""The workers' interpreter chosen at submission is kept: ``flink run --pyExecutable PY`` (a
remote cluster's Python is not the client's) must reach the job, not serdes' ``sys.executable``
default.  The job prints its effective ``python.executable`` from the client process."""

from __future__ import annotations

import os
import subprocess
import sys


PROBE = """
import sys
from serdes import flink as sf
from serdes.flink._env import _env_config
env = sf.create_env()
print("PROBE", _env_config(env).toMap().get("python.executable"), flush=True)
"""


def test_flink_run_py_executable_is_kept(flink_cluster, tmp_path):
    job = tmp_path / "probe.py"
    job.write_text(PROBE)
    workers_python = tmp_path / "bin" / "python-on-the-workers"
    workers_python.parent.mkdir()
    os.symlink(sys.executable, workers_python)
    cmd = [*flink_cluster.flink_command(), "run", "--pyClientExecutable", sys.executable,
           "--pyExecutable", str(workers_python), "--python", str(job)]
    proc = subprocess.run(cmd, env=flink_cluster.environ(), capture_output=True, text=True, timeout=300)
    probe = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("PROBE")]
    assert probe == [f"PROBE {workers_python}"], proc.stdout[-3000:] + proc.stderr[-3000:]


def test_create_env_default_is_this_interpreter():
    from serdes import flink as sf
    from serdes.flink._env import _env_config

    env = sf.create_env()
    assert _env_config(env).toMap().get("python.executable") == sys.executable
