"""The process supervisor behind every local server of serdes.testing (Kafka, Apicurio, Flink).

A :class:`ManagedProcess` is one child process in its own process group: started, polled until a
health check passes (the log tail goes into the error when it does not), stopped with SIGTERM then
SIGKILL of the whole group, and stopped at interpreter exit if the caller forgot. Its logs and data
live in a :class:`WorkDir`. :class:`JavaServer` adds what the Kafka broker and the registry share:
a JVM command line, a port picked at start and one retry on new ports when another process took one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Callable, Literal, TypeVar

from .._errors import ServerStartError
from ._maven import find_java

__all__ = [
    "DEFAULT_START_TIMEOUT", "DEFAULT_STOP_TIMEOUT", "JavaServer", "ManagedProcess", "WorkDir",
    "child_argv", "poll_until", "tail",
]

DEFAULT_START_TIMEOUT = 180.0
DEFAULT_STOP_TIMEOUT = 20.0

_P = TypeVar("_P", bound="ManagedProcess")
_J = TypeVar("_J", bound="JavaServer")

_LIVE: set[ManagedProcess] = set()  # started and not yet stopped (for the atexit hook)


def tail(path: Path, lines: int = 60) -> str:
    """The last ``lines`` lines of a log file (at most 12,000 characters), for error messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"<no log at {path}>"
    out = "".join(text.splitlines(True)[-lines:])
    return out[-12000:]


def problems(path: Path, lines: int = 20) -> str:
    """The last ``lines`` WARN and ERROR lines of a log4j log (each cut to 500 characters): what
    a process said went wrong, which a plain tail often loses behind a page of stack frames."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"<no log at {path}>"
    found = [line[:500] for line in text.splitlines() if " WARN " in line or " ERROR " in line]
    return "".join(line + "\n" for line in found[-lines:])


def poll_until(
    check: Callable[[], bool],
    deadline: float,
    *,
    interval: float = 0.5,
    ignore: tuple[type[BaseException], ...] = (Exception,),
    abort: Callable[[], bool] | None = None,
) -> Literal["ready", "timeout", "aborted"]:
    """Call ``check`` every ``interval`` seconds until it returns True (``"ready"``), the
    ``time.monotonic()`` ``deadline`` passes (``"timeout"``) or ``abort()`` is true (``"aborted"``,
    e.g. the process died). An exception of ``ignore`` from ``check`` counts as not ready yet."""
    while True:
        if abort is not None and abort():
            return "aborted"
        try:
            if check():
                return "ready"
        except ignore:
            pass
        if time.monotonic() > deadline:
            return "timeout"
        time.sleep(interval)


class WorkDir:
    """A server's directory for config, logs and data: the caller's, or a temporary one this
    object created and :meth:`remove` deletes (kept when ``SERDES_KEEP_LOGS=1``)."""

    def __init__(self, path: str | os.PathLike[str] | None, prefix: str) -> None:
        self.owned = path is None
        self.path = Path(path or tempfile.mkdtemp(prefix=prefix))
        self.path.mkdir(parents=True, exist_ok=True)

    def remove(self) -> None:
        if self.owned and os.environ.get("SERDES_KEEP_LOGS") != "1":
            shutil.rmtree(self.path, ignore_errors=True)


# The child's start: no ``preexec_fn`` and no ``user=``/``group=`` on ``Popen``.  Either makes
# Python start the child with fork() rather than vfork(), and fork() runs every library's
# pthread_atfork child handler in the child: gRPC's (loaded by PyFlink and Beam in a test process
# that ran a Flink job) can block there forever, before exec, so the server never starts and the
# caller waits in Popen.  The child is therefore started through this tiny launcher -- a fresh,
# single-threaded interpreter started with vfork() -- which switches user, asks Linux for the
# parent-death signal, checks the parent is still there and execs the server (same pid).
_LAUNCHER = """\
import ctypes, os, signal, sys  # before the user switch: the new user may not read the stdlib
uid, gid, parent, cmd = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
libc = ctypes.CDLL(None, use_errno=True)
if gid >= 0:
    os.setgroups([])
    os.setgid(gid)
if uid >= 0:
    os.setuid(uid)
if parent > 0:  # after the user switch, which clears the parent-death signal
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        sys.exit("serdes.testing launcher: the parent exited before the server started")
os.execvp(cmd[0], cmd)
"""


def child_argv(cmd: list[str], *, run_as: tuple[int, int] | None = None,
               parent_death: bool = False) -> list[str]:
    """The argv that starts ``cmd`` as ``run_as`` (``(uid, gid)``) and, with ``parent_death``,
    SIGTERMed by Linux when the calling thread exits: ``cmd`` itself when neither is asked (or
    off Linux), else ``cmd`` behind the launcher above.  Pass the result to ``Popen`` / ``run``
    without ``preexec_fn``, ``user`` or ``group``."""
    parent_death = parent_death and sys.platform.startswith("linux")
    if run_as is None and not parent_death:
        return list(cmd)
    uid, gid = run_as if run_as is not None else (-1, -1)
    return [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(uid), str(gid),
            str(os.getpid() if parent_death else 0), *cmd]


class ManagedProcess:
    """Start/stop one child in its own process group, with a health check and its logs.

    Subclasses give :meth:`_command` and :meth:`_ready`; the others have defaults."""

    name = "server"
    #: what :meth:`stop` sends the process group first (PostgreSQL: SIGINT, its "fast" shutdown)
    stop_signal = signal.SIGTERM

    def __init__(self, workdir: str | os.PathLike[str] | None, start_timeout: float) -> None:
        self._workdir = WorkDir(workdir, prefix=f"serdes-{self.name}-")
        self.workdir = self._workdir.path
        self.start_timeout = start_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdout: IO[bytes] | None = None
        self._launch_started = 0.0
        self.startup_seconds: float | None = None

    # -- to implement -------------------------------------------------------
    def _command(self) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _cwd(self) -> Path:
        return self.workdir

    def _environ(self) -> dict[str, str] | None:
        """Environment of the child (``None``: inherit this process's)."""
        return None

    def _prepare(self) -> None:
        """Fetch artifacts, pick ports, write config (called before each launch)."""

    def _run_as(self) -> tuple[int, int] | None:
        """``(uid, gid)`` to run the child as (``None``: this process's user)."""
        return None

    def _ready(self) -> bool:  # pragma: no cover - abstract
        """The health check: True once the process serves (an exception counts as not yet)."""
        raise NotImplementedError

    def _after_ready(self) -> None:
        """Post-start configuration."""

    # -- logs -----------------------------------------------------------------
    @property
    def log_file(self) -> Path:
        return self.workdir / "server.log"

    @property
    def stdout_file(self) -> Path:
        return self.workdir / "stdout.log"

    def log_tail(self, lines: int = 60) -> str:
        return (
            f"--- {self.log_file} ---\n{tail(self.log_file, lines)}"
            f"--- {self.stdout_file} ---\n{tail(self.stdout_file, lines)}"
        )

    # -- lifecycle ------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def launch(self) -> None:
        """Spawn the process without waiting for readiness (see :meth:`wait_ready`)."""
        if self.running:
            return
        self._prepare()
        self._launch_started = time.monotonic()
        self._stdout = open(self.stdout_file, "ab")
        # the parent-death signal follows the thread that started the child: only the main
        # thread lives as long as the process
        on_main = threading.current_thread() is threading.main_thread()
        self._proc = subprocess.Popen(
            child_argv(self._command(), run_as=self._run_as(), parent_death=on_main),
            cwd=self._cwd(),
            env=self._environ(),
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group -> killpg on stop
        )
        _LIVE.add(self)

    def wait_ready(self) -> None:
        """Block until the health check passes; stop the process and raise
        :class:`~serdes.ServerStartError` (with the log tail) if it exits or times out first."""
        outcome = poll_until(self._ready, self._launch_started + self.start_timeout,
                             abort=lambda: not self.running)
        if outcome == "aborted":
            rc = None if self._proc is None else self._proc.returncode
            self.stop()
            raise ServerStartError(f"{self.name} exited during start-up (exit code {rc}).\n{self.log_tail()}")
        if outcome == "timeout":
            self.stop()
            raise ServerStartError(f"{self.name} not ready after {self.start_timeout:.0f}s.\n{self.log_tail()}")
        self._after_ready()
        self.startup_seconds = time.monotonic() - self._launch_started

    def start(self: _P) -> _P:
        """Start (or restart) and block until healthy."""
        self.launch()
        self.wait_ready()
        return self

    def kill(self) -> int:
        """SIGKILL the process itself (not a clean stop: a crash, for fault tests); returns its PID."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            raise RuntimeError(f"{self.name} is not running")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        self.stop()  # reap the group, close the log handle
        return proc.pid

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        """SIGTERM the process group, SIGKILL after ``timeout`` seconds."""
        proc, self._proc = self._proc, None
        _LIVE.discard(self)
        if proc is not None and proc.poll() is None:
            for sig, wait in ((self.stop_signal, timeout), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if proc is not None:
            # make sure no straggler of the group survives
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self._stdout is not None:
            self._stdout.close()
            self._stdout = None

    def cleanup(self) -> None:
        """Stop and delete the work directory if this object created it.

        Kept when ``SERDES_KEEP_LOGS=1`` (logs stay in ``/tmp/serdes-<name>-*``).
        """
        self.stop()
        self._workdir.remove()

    def __enter__(self: _P) -> _P:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class JavaServer(ManagedProcess):
    """A JVM server on a port of 127.0.0.1 (Kafka, Apicurio): the settings and JVM options they
    share, and ports picked at the first start when the caller gave none."""

    java_version = 17

    def __init__(
        self,
        port: int | None,
        *,
        version: str,
        workdir: str | os.PathLike[str] | None,
        start_timeout: float,
        heap: str,
        extra_properties: dict[str, str] | None,
    ) -> None:
        super().__init__(workdir, start_timeout)
        self.version = version
        self.port = port
        self.heap = heap
        self.extra_properties = dict(extra_properties or {})
        self._auto_ports = port is None

    def _jvm(self, *args: str, initial_heap: str | None = None) -> list[str]:
        """``java`` with the options every server here runs with (small heap, serial GC, C1 only:
        a 2-core machine that starts several JVMs), then ``args``."""
        return [
            find_java(self.java_version),
            f"-Xmx{self.heap}",
            *([f"-Xms{initial_heap}"] if initial_heap else []),
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            *args,
        ]

    def start(self: _J) -> _J:
        """Start (or restart, on the same ports) and block until healthy."""
        self.launch()
        self.wait_ready_or_retry()
        return self

    def wait_ready_or_retry(self) -> None:
        """:meth:`wait_ready`; on the first start with ports picked here, if another process took
        one in between, once more on new ports."""
        try:
            self.wait_ready()
        except ServerStartError as exc:
            if not self._retry_with_new_ports(exc):
                raise
            self.launch()
            self.wait_ready()

    def _retry_with_new_ports(self, exc: Exception) -> bool:
        if not self._auto_ports or self.startup_seconds is not None:
            return False
        text = str(exc)
        if not any(m in text for m in ("Address already in use", "in use by another process")):
            return False
        self._auto_ports = False  # once
        self._forget_ports()
        return True

    def _forget_ports(self) -> None:  # pragma: no cover - abstract
        """Drop the ports picked at start (and whatever data records them)."""
        raise NotImplementedError


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        try:
            server.stop(timeout=5.0)
        except Exception:
            pass
