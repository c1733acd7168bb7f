"""A standalone Flink cluster (one JobManager, N TaskManagers) as local processes.

The apache-flink wheel ships the Flink distribution (``pyflink/bin``, ``conf``, ``lib``, ``opt``).
:class:`LocalFlinkCluster` starts ``jobmanager.sh start-foreground`` and
``taskmanager.sh start-foreground`` as child processes in their own process groups (the scripts
``exec`` the JVM, so a child's PID is the JVM's PID and ``kill -9 <pid>`` kills that process),
with a private ``FLINK_CONF_DIR`` (a copy of the wheel's ``conf`` with a generated
``config.yaml``), logs, pid files, temp files and checkpoints in one temporary work directory.
Nothing is written into site-packages.  Every address is 127.0.0.1; ports are free ports.

Jobs are submitted as a user submits them, with the distribution's ``flink run --python``
(:meth:`LocalFlinkCluster.submit`), not through a MiniCluster in the calling process.

    from serdes.testing import LocalFlinkCluster
    with LocalFlinkCluster() as cluster:          # 1 JobManager + 2 TaskManagers x 2 slots
        job_id = cluster.submit("job.py", args=[...], py_files=["jobs/"])
        cluster.wait_for_job(job_id, "RUNNING")
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .._errors import FlinkJobFailed, FlinkSubmitError, ServerStartError
from ._http import http_json
from ._ports import free_ports
from ._process import DEFAULT_START_TIMEOUT, ManagedProcess, WorkDir, poll_until, problems, tail

FLINK_JOB_TIMEOUT = 180.0

#: progress callback: one line of text ("starting JobManager ...")
Progress = Callable[[str], None]


#: what PyFlink leaves in ``os.environ`` of a process that ran a job on a local MiniCluster: its
#: loopback Python workers copy their environment into the process, among them the address of
#: the process's own worker pool (``PYTHON_LOOPBACK_SERVER_ADDRESS``: a TaskManager that sees it
#: runs its Python functions in that process, over gRPC, instead of in a Python worker of its
#: own), ``PYFLINK_GATEWAY_DISABLED`` (a child Python process then starts no JVM), and the
#: distribution's directories. None of it may reach another process's JVM or Python workers.
PYFLINK_PROCESS_ENV = frozenset((
    "PYFLINK_GATEWAY_DISABLED", "PYFLINK_GATEWAY_PORT", "PYTHON_LOOPBACK_SERVER_ADDRESS", "BOOT_LOG_DIR",
    "SEMI_PERSISTENT_DIRECTORY", "_PYFLINK_CONN_INFO_PATH", "_PYTHON_WORKER_MEMORY_LIMIT", "_PYTHON_WORKING_DIR",
    "TABLE_LOCAL_TIME_ZONE", "FLINK_HOME", "FLINK_BIN_DIR", "FLINK_CONF_DIR", "FLINK_LIB_DIR", "FLINK_OPT_DIR",
    "FLINK_PLUGINS_DIR", "FLINK_LOG_DIR", "python",
))


def flink_home() -> Path:
    """The Flink distribution inside the installed apache-flink wheel."""
    import pyflink

    home = Path(pyflink.__file__).resolve().parent
    if not (home / "bin" / "jobmanager.sh").is_file():
        raise ServerStartError(f"{home} holds no Flink distribution (bin/jobmanager.sh missing)")
    return home


def _base_java_opts() -> str:
    """``env.java.opts.all`` of the wheel's own config.yaml (the --add-opens Flink needs on 17+)."""
    import yaml

    conf = yaml.safe_load((flink_home() / "conf" / "config.yaml").read_text()) or {}
    opts = conf.get("env", {}).get("java", {}).get("opts", {}).get("all", "")
    return str(opts or "")


class _FlinkProcess(ManagedProcess):
    """One JobManager or TaskManager: a ``*.sh start-foreground`` child with its own log dir."""

    def __init__(self, cluster: "LocalFlinkCluster", name: str, script: str, args: Sequence[str]) -> None:
        self.name = name
        self.cluster = cluster
        super().__init__(cluster.workdir / name, cluster.start_timeout)
        self.script = script
        self.args = list(args)

    @property
    def log_file(self) -> Path:  # Flink names it flink-<user>-<service>-<n>-<host>.log
        logs = sorted((self.workdir / "log").glob("*.log"))
        return logs[-1] if logs else self.workdir / "log" / "<none yet>.log"

    def _environ(self) -> dict[str, str]:
        return self.cluster.environ(log_dir=self.workdir / "log", pid_dir=self.workdir)

    def _command(self) -> list[str]:
        return ["bash", str(flink_home() / "bin" / self.script), "start-foreground", *self.args]

    def _ready(self) -> bool:
        return self.cluster._process_ready(self)


class LocalFlinkCluster:
    """One JobManager and ``taskmanagers`` TaskManagers with ``slots`` slots each.

    RocksDB state backend, checkpoints and savepoints under ``<workdir>/checkpoints`` and
    ``<workdir>/savepoints``.  Heartbeats every 2 s, so a killed TaskManager is noticed in seconds
    (two refused heartbeats), not after the default 50 s timeout.  ``config`` adds or overrides config.yaml keys.
    """

    def __init__(
        self,
        taskmanagers: int = 2,
        slots: int = 2,
        *,
        workdir: str | os.PathLike[str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        jobmanager_memory: str = "800m",
        taskmanager_memory: str = "1280m",
        state_backend: str = "rocksdb",
        python: str | None = None,
        config: dict[str, object] | None = None,
        progress: Progress | None = None,
    ) -> None:
        self._workdir = WorkDir(workdir, prefix="serdes-flink-")
        self.workdir = self._workdir.path
        self.start_timeout = start_timeout
        self.taskmanager_count = taskmanagers
        self.slots = slots
        self.jobmanager_memory = jobmanager_memory
        self.taskmanager_memory = taskmanager_memory
        self.state_backend = state_backend
        self.python = python or sys.executable
        self.extra_config = dict(config or {})
        self.progress = progress or (lambda line: None)
        self.rest_port: int | None = None
        self.rpc_port: int | None = None
        self.jobmanager: _FlinkProcess | None = None
        self.taskmanagers: list[_FlinkProcess] = []
        self._tm_serial = 0
        self.startup_seconds: float | None = None

    # -- addresses ---------------------------------------------------------------------------
    @property
    def lib_dir(self) -> Path:
        """``FLINK_LIB_DIR``: the wheel's ``lib/`` jars plus ``opt/flink-python-*.jar`` (symlinks).

        With flink-python (and so pemja) on the TaskManagers' own classpath, as in Flink's PyFlink
        Docker images, thread mode works for every job: loaded per job from the job's jars, pemja
        loads libpython in each job's class loader, and the second thread-mode job on a
        TaskManager fails (``UnsatisfiedLinkError`` caught by pemja, then
        ``NoSuchFieldException: loadedLibraryNames`` on JDK 17)."""
        return self.workdir / "lib"

    @property
    def conf_dir(self) -> Path:
        return self.workdir / "conf"

    @property
    def checkpoint_dir(self) -> Path:
        return self.workdir / "checkpoints"

    @property
    def savepoint_dir(self) -> Path:
        return self.workdir / "savepoints"

    @property
    def rest_url(self) -> str:
        if self.rest_port is None:
            raise RuntimeError("LocalFlinkCluster not started")
        return f"http://127.0.0.1:{self.rest_port}"

    def environ(self, log_dir: Path | None = None, pid_dir: Path | None = None) -> dict[str, str]:
        """The environment for the cluster's scripts and the ``flink`` CLI: this process's, without
        what a local PyFlink job left in it (:data:`PYFLINK_PROCESS_ENV`)."""
        env = {k: v for k, v in os.environ.items() if k not in PYFLINK_PROCESS_ENV}
        env["FLINK_CONF_DIR"] = str(self.conf_dir)
        env["FLINK_LIB_DIR"] = str(self.lib_dir)
        env["FLINK_LOG_DIR"] = str(log_dir or self.workdir / "client-log")
        env["FLINK_PID_DIR"] = str(pid_dir or self.workdir)
        # find-flink-home.sh asks this Python for pyflink's location
        env["PYFLINK_PYTHON"] = self.python
        env.setdefault("PYFLINK_CLIENT_EXECUTABLE", self.python)
        return env

    # -- config ------------------------------------------------------------------------------
    def _config(self) -> dict[str, object]:
        conf: dict[str, object] = {
            "env.java.opts.all": _base_java_opts(),
            "jobmanager.rpc.address": "127.0.0.1",
            "jobmanager.rpc.port": self.rpc_port,
            "jobmanager.bind-host": "127.0.0.1",
            "jobmanager.memory.process.size": self.jobmanager_memory,
            "jobmanager.execution.failover-strategy": "region",
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "rest.port": self.rest_port,
            "blob.server.port": "0",
            "taskmanager.host": "127.0.0.1",
            "taskmanager.bind-host": "127.0.0.1",
            "taskmanager.rpc.port": "0",
            "taskmanager.data.port": "0",
            "taskmanager.numberOfTaskSlots": self.slots,
            # small: 2 cores / shared machine; ~270 MiB task heap per TaskManager.  Metaspace is
            # generous: every job loads the Kafka connector's classes in its own class loader, and
            # 160 MiB ran out (OutOfMemoryError: Metaspace) after about six jobs on one TaskManager
            "taskmanager.memory.process.size": self.taskmanager_memory,
            "taskmanager.memory.jvm-metaspace.size": "384m",
            "taskmanager.memory.jvm-overhead.min": "128m",
            "taskmanager.memory.framework.off-heap.size": "64m",
            "taskmanager.memory.managed.fraction": "0.3",
            "parallelism.default": "1",
            "state.backend.type": self.state_backend,
            "execution.checkpointing.dir": self.checkpoint_dir.as_uri(),
            "execution.checkpointing.savepoint-dir": self.savepoint_dir.as_uri(),
            "io.tmp.dirs": str(self.workdir / "tmp"),
            # a killed process is noticed after heartbeat.rpc-failure-threshold (2) refused heartbeats,
            # i.e. ~4 s; the timeout only covers a live but unresponsive one, and stays generous
            # because a loaded 2-core machine can stall a JVM for seconds
            "heartbeat.interval": "2000",
            "heartbeat.timeout": "30000",
            # pemja (thread mode) from the TaskManager's classpath, never from a job's jars: see lib_dir
            "classloader.parent-first-patterns.additional": "pemja.",
            "python.executable": self.python,
            "python.client.executable": self.python,
        }
        conf.update(self.extra_config)
        return conf

    def _write_conf(self) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        src = flink_home() / "conf"
        for f in src.iterdir():
            if f.is_file() and f.name != "config.yaml":
                shutil.copy2(f, self.conf_dir / f.name)
        (self.workdir / "tmp").mkdir(exist_ok=True)
        self.lib_dir.mkdir(exist_ok=True)
        for jar in [*sorted((flink_home() / "lib").glob("*.jar")), *sorted((flink_home() / "opt").glob("flink-python-*.jar"))]:
            link = self.lib_dir / jar.name
            if not link.is_symlink():
                link.symlink_to(jar)
        lines = ["# written by serdes.testing.LocalFlinkCluster (flat keys; YAML 1.2 + JSON scalars)"]
        lines += [f"{key}: {json.dumps(str(value))}" for key, value in self._config().items()]
        (self.conf_dir / "config.yaml").write_text("\n".join(lines) + "\n")

    # -- health ------------------------------------------------------------------------------
    def rest(self, path: str, method: str = "GET", body: object | None = None, timeout: float = 10) -> Any:
        """A JobManager REST call (``/overview``, ``/jobs/<id>``, ...); returns the decoded JSON."""
        return http_json(self.rest_url + path, method, body, timeout=timeout)

    def overview(self) -> dict[str, Any]:
        """The JobManager's ``/overview`` (TaskManagers, slots, jobs)."""
        ov: dict[str, Any] = self.rest("/overview", timeout=3)
        return ov

    def registered_taskmanagers(self) -> set[str]:
        """The resource ids of the TaskManagers registered with the JobManager (``/taskmanagers``)."""
        tms = self.rest("/taskmanagers", timeout=3) or {}
        return {tm["id"] for tm in tms.get("taskmanagers", [])}

    def _process_ready(self, proc: _FlinkProcess) -> bool:
        if proc is self.jobmanager:
            self.overview()
            return True
        return proc.name in self.registered_taskmanagers()

    # -- lifecycle ---------------------------------------------------------------------------
    def _new_taskmanager(self) -> _FlinkProcess:
        self._tm_serial += 1
        name = f"taskmanager-{self._tm_serial}"
        return _FlinkProcess(self, name, "taskmanager.sh", [f"-Dtaskmanager.resource-id={name}"])

    def start(self) -> "LocalFlinkCluster":
        """Start the JobManager and the TaskManagers; block until /overview shows them all."""
        t0 = time.monotonic()
        self.rest_port, self.rpc_port = free_ports(2)
        self._write_conf()
        try:
            self.progress(f"starting Flink JobManager (REST {self.rest_url}) ...")
            self.jobmanager = _FlinkProcess(self, "jobmanager", "jobmanager.sh", [])
            self.jobmanager.start()
            self.progress(
                f"JobManager up in {time.monotonic() - t0:.0f}s; starting {self.taskmanager_count} "
                f"TaskManagers x {self.slots} slots ..."
            )
            for _ in range(self.taskmanager_count):
                tm = self._new_taskmanager()
                tm.launch()
                self.taskmanagers.append(tm)
            for tm in self.taskmanagers:
                tm.wait_ready()
            self.wait_for_slots(self.taskmanager_count * self.slots)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        ov = self.overview()
        self.progress(
            f"Flink cluster up in {self.startup_seconds:.0f}s: {ov['taskmanagers']} TaskManagers, "
            f"{ov['slots-total']} slots ({self.rest_url})"
        )
        return self

    def wait_for_slots(self, slots: int, timeout: float | None = None) -> None:
        """Block until /overview reports ``slots`` total slots and as many TaskManagers as run."""
        deadline = time.monotonic() + (timeout or self.start_timeout)
        want_tms = len([tm for tm in self.taskmanagers if tm.running])
        ov: dict[str, Any] = {}

        def settled() -> bool:
            nonlocal ov
            ov = self.overview()
            return bool(ov.get("slots-total") == slots and ov.get("taskmanagers") == want_tms)

        if poll_until(settled, deadline, ignore=(OSError,)) == "ready":
            return
        raise ServerStartError(
            f"Flink cluster: /overview shows {ov.get('taskmanagers')} TaskManagers / "
            f"{ov.get('slots-total')} slots after {timeout or self.start_timeout:.0f}s, wanted "
            f"{want_tms} / {slots}.\n{self.log_tail()}"
        )

    def kill_taskmanager(self, which: int | str = -1) -> int:
        """``kill -9`` one TaskManager JVM (by PID) and return that PID; ``which`` is an index
        into :attr:`taskmanagers` or a TaskManager's name (its resource id, as
        :meth:`job_taskmanagers` returns it)."""
        if isinstance(which, str):
            named = [tm for tm in self.taskmanagers if tm.name == which]
            if not named:
                raise KeyError(f"no running TaskManager {which!r} (have {[tm.name for tm in self.taskmanagers]})")
            tm = named[0]
        else:
            tm = self.taskmanagers[which]
        pid = tm.kill()
        self.taskmanagers.remove(tm)
        self.progress(f"killed {tm.name} (pid {pid}) with SIGKILL")
        return pid

    def add_taskmanager(self) -> _FlinkProcess:
        """Start one more TaskManager (a new resource id) and wait until it registered."""
        tm = self._new_taskmanager()
        self.taskmanagers.append(tm)
        tm.start()
        self.progress(f"started {tm.name} (pid {tm.pid})")
        return tm

    def dead_taskmanagers(self) -> list[str]:
        """What ended each TaskManager that is no longer running though nobody stopped it
        (:meth:`kill_taskmanager` removes the ones it kills): its exit code, its log's last
        warnings and errors, and its log tail."""
        reports = []
        for tm in self.taskmanagers:
            if not tm.running:
                code = tm._proc.returncode if tm._proc is not None else None
                reports.append(f"{tm.name} exited with {code}; its last warnings and errors:\n"
                               f"{problems(tm.log_file)}{tm.log_tail(80)}")
        return reports

    def replace_dead_taskmanagers(self) -> None:
        """Start a new TaskManager for each one that ended, and wait for all slots."""
        for tm in [tm for tm in self.taskmanagers if not tm.running]:
            tm.stop()  # reap the group, close the log handle
            self.taskmanagers.remove(tm)
            self.add_taskmanager()
        self.wait_for_slots(len(self.taskmanagers) * self.slots)

    def stop(self) -> None:
        for proc in [*self.taskmanagers, self.jobmanager]:
            if proc is not None:
                proc.stop()

    def cleanup(self) -> None:
        """Stop, and delete the work directory unless ``SERDES_KEEP_LOGS=1``."""
        self.stop()
        self._workdir.remove()

    def __enter__(self) -> "LocalFlinkCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def log_tail(self, lines: int = 40) -> str:
        parts = []
        for proc in [self.jobmanager, *self.taskmanagers]:
            if proc is not None:
                parts.append(f"=== {proc.name} ===\n{proc.log_tail(lines)}")
        return "\n".join(parts)

    # -- jobs --------------------------------------------------------------------------------
    def flink_command(self) -> list[str]:
        return ["bash", str(flink_home() / "bin" / "flink")]

    def submit(
        self,
        job: str | os.PathLike[str],
        args: Sequence[str] = (),
        *,
        py_files: Iterable[str | os.PathLike[str]] = (),
        jars: Iterable[str | os.PathLike[str]] = (),
        python: str | None = None,
        config: dict[str, object] | None = None,
        savepoint: str | None = None,
        timeout: float = FLINK_JOB_TIMEOUT,
    ) -> str:
        """``flink run -d --python job [args]`` against this cluster; returns the job id.

        ``jars`` go to ``pipeline.jars`` (shipped with the job to the TaskManagers),
        ``py_files`` to ``--pyFiles`` (put on the Python workers' path), ``python`` is both the
        client interpreter (``-pyclientexec``) and the workers' (``--pyExecutable``).
        """
        python = python or self.python
        cmd = [*self.flink_command(), "run", "--detached"]
        if savepoint:
            cmd += ["--fromSavepoint", str(savepoint)]
        jar_list = [Path(j).resolve().as_uri() for j in jars]
        if jar_list:
            cmd.append("-Dpipeline.jars=" + ";".join(jar_list))
        for key, value in (config or {}).items():
            cmd.append(f"-D{key}={value}")
        cmd += ["--pyClientExecutable", python, "--pyExecutable", python]
        files = [str(Path(f).resolve()) for f in py_files]
        if files:
            cmd += ["--pyFiles", ",".join(files)]
        cmd += ["--python", str(Path(job).resolve()), *args]
        env = self.environ(log_dir=self.workdir / "client-log")
        proc = subprocess.run(cmd, env=env, cwd=self.workdir, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)
        out = proc.stdout + proc.stderr
        m = re.search(r"JobID ([0-9a-f]{32})", out)
        if proc.returncode != 0 or m is None:
            logs = sorted((self.workdir / "client-log").glob("*.log"))
            tail_text = tail(logs[-1], 40) if logs else "<no client log>"
            raise FlinkSubmitError(
                f"flink run exited {proc.returncode}:\n{' '.join(cmd)}\n{out[-6000:]}\n--- client log ---\n{tail_text}"
            )
        return m.group(1)

    def job(self, job_id: str) -> dict[str, Any]:
        """``/jobs/<id>``: the job's state and its vertices."""
        info: dict[str, Any] = self.rest(f"/jobs/{job_id}")
        return info

    def job_exception(self, job_id: str) -> str:
        try:
            exc = self.rest(f"/jobs/{job_id}/exceptions") or {}
        except OSError:
            return ""
        root = exc.get("rootException") or ""
        hist = exc.get("exceptionHistory", {}).get("entries", [])
        return str(root or (hist[0].get("stacktrace", "") if hist else ""))

    def wait_for_job(self, job_id: str, *states: str, timeout: float = FLINK_JOB_TIMEOUT,
                     running_tasks: bool = False) -> str:
        """Wait until the job's state is one of ``states`` (and, with ``running_tasks``, every
        task of it RUNNING); a terminal state not asked for raises :class:`FlinkJobFailed`."""
        terminal = {"FAILED", "CANCELED", "FINISHED"}
        deadline = time.monotonic() + timeout
        state = "?"
        while time.monotonic() < deadline:
            info = self.job(job_id)
            state = str(info["state"])
            if state in states:
                if not running_tasks or all(v["status"] == "RUNNING" for v in info["vertices"]):
                    return state
            elif state in terminal:
                text = self.job_exception(job_id)
                raise FlinkJobFailed(f"job {job_id} is {state}, wanted {'/'.join(states)}:\n{text[-6000:]}",
                                     job_id, state, text)
            time.sleep(0.5)
        ov = self.overview()
        raise TimeoutError(
            f"job {job_id} still {state} after {timeout:.0f}s, wanted {'/'.join(states)}"
            f"{' with every task RUNNING' if running_tasks else ''} "
            f"({ov.get('taskmanagers')} TaskManagers, {ov.get('slots-available')}/{ov.get('slots-total')} "
            f"slots free); last failure:\n{self.job_exception(job_id)[-4000:]}")

    def vertex_parallelism(self, job_id: str) -> dict[str, int]:
        """The parallelism each vertex of the job runs at (``/jobs/<id>``), by vertex name."""
        return {str(v["name"]): int(v["parallelism"]) for v in self.job(job_id)["vertices"]}

    def job_taskmanagers(self, job_id: str) -> dict[str, int]:
        """Which TaskManagers run the job's RUNNING subtasks: TaskManager name (resource id) ->
        how many subtasks it runs (``/jobs/<id>/vertices/<vid>``, every vertex), most first."""
        hosts: dict[str, int] = {}
        for vertex in self.job(job_id)["vertices"]:
            detail = self.rest(f"/jobs/{job_id}/vertices/{vertex['id']}")
            for sub in detail.get("subtasks", []):
                if sub.get("status") == "RUNNING":
                    tm = str(sub["taskmanager-id"])
                    hosts[tm] = hosts.get(tm, 0) + 1
        return dict(sorted(hosts.items(), key=lambda kv: (-kv[1], kv[0])))

    def completed_checkpoints(self, job_id: str) -> int:
        info = self.rest(f"/jobs/{job_id}/checkpoints") or {}
        return int(info.get("counts", {}).get("completed", 0))

    def restarts(self, job_id: str) -> int:
        """How many times the job restarted: the ``numRestarts`` job metric, or the highest
        subtask attempt number in the execution graph when that is higher.  The metric is served
        through the JobManager's metric fetcher, which on a loaded machine can lag or come back
        empty; the attempt numbers come from the job's own execution graph."""
        got = self.rest(f"/jobs/{job_id}/metrics?get=numRestarts") or []
        metric = int(float(got[0]["value"])) if got else 0
        attempts = 0
        for vertex in self.job(job_id)["vertices"]:
            detail = self.rest(f"/jobs/{job_id}/vertices/{vertex['id']}")
            attempts = max([attempts, *(int(sub.get("attempt", 0)) for sub in detail.get("subtasks", []))])
        return max(metric, attempts)

    def cancel(self, job_id: str, timeout: float = 60.0) -> None:
        """Cancel the job and wait until it is in a terminal state (its slots are released)."""
        try:
            self.rest(f"/jobs/{job_id}", method="PATCH")
        except urllib.error.HTTPError:
            pass
        def ended() -> bool:
            try:
                return self.job(job_id)["state"] in ("CANCELED", "FAILED", "FINISHED")
            except OSError:
                return True  # the JobManager forgot it (or is gone): nothing left to wait for

        poll_until(ended, time.monotonic() + timeout, interval=0.3, ignore=())

    def wait_for_free_slots(self, slots: int, timeout: float = 60.0) -> None:
        """Block until ``slots`` slots are free (a finished job releases its slots asynchronously)."""
        ov: dict[str, Any] = {}

        def free() -> bool:
            nonlocal ov
            ov = self.overview()
            return bool(ov["slots-available"] >= slots)

        if poll_until(free, time.monotonic() + timeout, interval=0.3, ignore=()) == "timeout":
            raise TimeoutError(f"only {ov['slots-available']} of {ov['slots-total']} slots free "
                               f"after {timeout:.0f}s, wanted {slots}")

    def stop_with_savepoint(self, job_id: str, target: str | os.PathLike[str] | None = None,
                            timeout: float = FLINK_JOB_TIMEOUT) -> str:
        """Stop the job with a savepoint (REST ``/jobs/<id>/stop``), wait until it is FINISHED
        and return the savepoint's path."""
        body = {"targetDirectory": str(target or self.savepoint_dir), "drain": False}
        trigger = self.rest(f"/jobs/{job_id}/stop", method="POST", body=body)
        request_id = trigger["request-id"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.rest(f"/jobs/{job_id}/savepoints/{request_id}") or {}
            if status.get("status", {}).get("id") == "COMPLETED":
                op = status.get("operation", {})
                if "location" in op:
                    self.wait_for_job(job_id, "FINISHED", timeout=timeout)  # stopped, slots released
                    return str(op["location"])
                raise FlinkJobFailed(f"savepoint of {job_id} failed: {op.get('failure-cause')}",
                                     job_id, "SAVEPOINT_FAILED", json.dumps(op))
            time.sleep(0.5)
        raise TimeoutError(f"savepoint of job {job_id} not done after {timeout:.0f}s")


__all__ = ["FlinkJobFailed", "FlinkSubmitError", "LocalFlinkCluster", "flink_home"]
