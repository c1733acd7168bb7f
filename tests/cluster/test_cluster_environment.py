"""The standalone cluster's processes start from this process's environment without what a local
PyFlink job leaves in it (``serdes.testing._flink_cluster.PYFLINK_PROCESS_ENV``): with
``PYTHON_LOOPBACK_SERVER_ADDRESS`` a TaskManager would run its jobs' Python functions inside the
test process, over gRPC, instead of in Python workers of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from serdes.testing._flink_cluster import PYFLINK_PROCESS_ENV

#: the loopback workers' own settings (the distribution's directories, also in that list, the
#: cluster's scripts set for themselves)
WORKER_SETTINGS = {k for k in PYFLINK_PROCESS_ENV if not k.startswith("FLINK_")}


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def test_the_cluster_processes_inherit_no_local_job_settings(flink_cluster):
    if not Path("/proc/self/environ").exists():
        pytest.skip("reads the processes' environment from /proc (Linux)")
    processes = [flink_cluster.jobmanager, *flink_cluster.taskmanagers]
    for proc in processes:
        assert proc is not None and proc.pid is not None
        environ = _environ(proc.pid)
        assert not WORKER_SETTINGS & environ.keys(), (proc.name, sorted(WORKER_SETTINGS & environ.keys()))
        assert environ.get("FLINK_CONF_DIR") == str(flink_cluster.conf_dir), proc.name
