"""serdes.testing's process supervisor on a plain Python child (no Java): start, health check,
the log tail in start-up errors, stop of the whole process group, kill, work directory cleanup."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from serdes.testing import ServerStartError
from serdes.testing import _ports, _process


class _Child(_process.ManagedProcess):
    """Writes ``ready`` into its work dir after ``delay`` seconds (or exits with ``exit_code``),
    prints a line to stdout, and keeps a grandchild in its process group."""

    name = "child"

    def __init__(self, workdir, *, delay: float = 0.2, exit_code: int | None = None, start_timeout: float = 30):
        super().__init__(workdir, start_timeout)
        self.delay, self.exit_code = delay, exit_code

    def _command(self) -> list[str]:
        code = (
            "import os, subprocess, sys, time\n"
            "print('child says hello', flush=True)\n"
            f"time.sleep({self.delay})\n"
            f"rc = {self.exit_code!r}\n"
            "if rc is not None: sys.exit(rc)\n"
            "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
            "open('grandchild', 'w').write(str(g.pid))\n"
            "open('ready', 'w').write('1')\n"
            "time.sleep(120)\n"
        )
        return [sys.executable, "-c", code]

    def _ready(self) -> bool:
        return (self.workdir / "ready").exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_start_health_check_and_stop_of_the_group(tmp_path):
    child = _Child(tmp_path / "w")
    with child:
        assert child.running and child.startup_seconds is not None and child.pid
        grandchild = int((child.workdir / "grandchild").read_text())
        assert _alive(grandchild)
        assert "child says hello" in child.log_tail()
    assert not child.running
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(grandchild)  # the whole process group was stopped
    assert (tmp_path / "w").exists()  # the caller's work dir is kept


def test_exit_during_start_up_names_the_exit_code_and_shows_the_log(tmp_path):
    child = _Child(tmp_path / "w", delay=0, exit_code=3)
    with pytest.raises(ServerStartError, match=r"child exited during start-up \(exit code 3\)") as err:
        child.start()
    assert "child says hello" in str(err.value)
    assert not child.running


def test_not_ready_in_time(tmp_path):
    child = _Child(tmp_path / "w", delay=60, start_timeout=1)
    with pytest.raises(ServerStartError, match="child not ready after 1s"):
        child.start()
    assert not child.running


def test_kill_and_cleanup_of_an_own_work_dir(monkeypatch):
    monkeypatch.delenv("SERDES_KEEP_LOGS", raising=False)
    child = _Child(None).start()
    workdir = child.workdir
    assert workdir.name.startswith("serdes-child-")
    pid = child.kill()
    assert not child.running and not _alive(pid)
    with pytest.raises(RuntimeError, match="not running"):
        child.kill()
    child.cleanup()
    assert not workdir.exists()


def test_keep_logs_keeps_an_own_work_dir(monkeypatch):
    monkeypatch.setenv("SERDES_KEEP_LOGS", "1")
    wd = _process.WorkDir(None, prefix="serdes-keep-")
    wd.remove()
    assert wd.path.exists()
    monkeypatch.delenv("SERDES_KEEP_LOGS")
    wd.remove()
    assert not wd.path.exists()


def test_poll_until_outcomes():
    calls = []

    def flaky() -> bool:
        calls.append(1)
        if len(calls) < 3:
            raise OSError("not yet")
        return True

    assert _process.poll_until(flaky, time.monotonic() + 5, interval=0.01) == "ready" and len(calls) == 3
    assert _process.poll_until(lambda: False, time.monotonic() + 0.05, interval=0.01) == "timeout"
    assert _process.poll_until(lambda: False, time.monotonic() + 5, abort=lambda: True) == "aborted"
    with pytest.raises(ValueError):  # not in ignore: propagates
        _process.poll_until(lambda: int("x") > 0, time.monotonic() + 5, ignore=(OSError,))


def test_problems_are_the_last_warn_and_error_lines_of_a_log(tmp_path):
    log = tmp_path / "taskexecutor.log"
    lines = [f"2026-12-06 23:48:{i:02d},000 INFO  org.x.Y [] - fine {i}" for i in range(30)]
    lines[3] = "2026-12-06 23:48:03,000 WARN  org.x.Y [] - early warning"
    lines[20] = "2026-12-06 23:48:20,000 ERROR org.x.TaskManagerRunner [] - Fatal error: " + "m" * 900
    lines[21] = "\tat org.x.Y.run(Y.java:1)"                        # a stack frame: not a problem
    lines[25] = "2026-12-06 23:48:25,000 WARN  org.x.Z [] - late warning"
    log.write_text("\n".join(lines) + "\n")
    assert _process.problems(log) == lines[3] + "\n" + lines[20][:500] + "\n" + lines[25] + "\n"
    assert _process.problems(log, lines=1) == lines[25] + "\n"      # the last ones
    assert _process.problems(tmp_path / "missing.log").startswith("<no log at")


def test_ports():
    ports = _ports.free_ports(3, avoid=(1,))
    assert len(set(ports)) == 3 and 1 not in ports
    assert all(_ports.port_free(p) for p in ports)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        assert not _ports.port_free(taken)
        assert _ports.wait_port_free(taken, 0.2) is False
    assert _ports.wait_port_free(taken, 5) is True


def test_child_argv_runs_the_command_itself_unless_a_user_or_parent_death_is_asked():
    assert _process.child_argv(["java", "-version"]) == ["java", "-version"]
    argv = _process.child_argv(["java", "-version"], run_as=(70, 71), parent_death=True)
    assert argv[0] == sys.executable and argv[-5:] == ["70", "71", str(os.getpid()), "java", "-version"]


def test_launcher_switches_user_and_sets_the_parent_death_signal(tmp_path):
    import subprocess

    probe = ["/bin/sh", "-c", 'echo "$(id -u) $(id -g) $(id -G) $PPID"']
    # under root, a user that cannot read root's files (as postgres is run): the launcher must
    # have all it needs before the switch
    import pwd

    uid, gid = (pwd.getpwnam("nobody").pw_uid, pwd.getpwnam("nobody").pw_gid) if os.getuid() == 0 \
        else (os.getuid(), os.getgid())
    out = subprocess.run(_process.child_argv(probe, run_as=(uid, gid), parent_death=True),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # no supplementary groups left (id -G lists the primary one only); the parent is this process
    assert out.stdout.split() == [str(uid), str(gid), str(gid), str(os.getpid())]


# A child started with fork() runs every pthread_atfork child handler before exec; gRPC's (loaded
# with PyFlink) can block there for ever. Here a handler that blocks in pause() stands in for it:
# the servers must still start, so nothing may start them with fork().
_FORK_TRAP = r'''
import ctypes, os, sys, time
sys.path[:0] = [{root!r}, {tests!r}]
libc = ctypes.CDLL("libc.so.6")
# pthread_atfork itself is in glibc's static libc_nonshared; this is the exported function behind it
libc["__register_atfork"](None, None, ctypes.cast(libc.pause, ctypes.c_void_p), None)
from test_testing_process import _Child
child = _Child({workdir!r}, start_timeout=60)
child._run_as = lambda: (os.getuid(), os.getgid())   # the user switch postgres gets under root
with child:
    print("started", child.pid, flush=True)
'''


def test_servers_start_in_a_process_whose_fork_handlers_block(tmp_path):
    import subprocess

    root = Path(__file__).resolve().parents[2]
    code = _FORK_TRAP.format(root=str(root), tests=str(Path(__file__).parent), workdir=str(tmp_path / "w"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired as exc:  # what a fork() start does: the child never execs
        os.killpg(proc.pid, signal.SIGKILL)   # with the forked child stuck in its handler
        proc.communicate()
        raise AssertionError("the server's start hung in a fork() child") from exc
    assert proc.returncode == 0 and stdout.startswith("started"), stderr[-3000:]
