""":class:`LocalPostgres`: a PostgreSQL server with logical decoding on, in a temporary data dir.

The binaries are the machine's (Debian's ``postgresql`` package: ``/usr/lib/postgresql/<N>/bin``,
or ``initdb``/``postgres`` on PATH); nothing is downloaded.  PostgreSQL refuses to run as root, so
under root the server runs as the ``postgres`` user (else ``nobody``), its data dir owned by it.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
from pathlib import Path

from .._errors import MissingToolError, ServerStartError
from ._ports import free_port
from ._process import DEFAULT_START_TIMEOUT, ManagedProcess, child_argv

__all__ = ["LocalPostgres", "find_postgres_bin"]

#: the users a root process hands the server to, in order
_SERVER_USERS = ("postgres", "nobody")


def find_postgres_bin() -> Path:
    """The directory holding ``initdb`` and ``postgres``: ``$SERDES_PG_BIN``, PATH, then the
    newest ``/usr/lib/postgresql/<N>/bin``."""
    env = os.environ.get("SERDES_PG_BIN")
    candidates = [Path(env)] if env else []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for cand in candidates:
        if (cand / "initdb").exists() and (cand / "postgres").exists():
            return cand
    raise MissingToolError(
        "PostgreSQL's `initdb` and `postgres` were not found (PATH, /usr/lib/postgresql/*/bin, "
        "$SERDES_PG_BIN); the CDC tests need a PostgreSQL server (Debian: apt-get install postgresql)"
    )


def _server_user() -> pwd.struct_passwd | None:
    """The user to run the server as: ``None`` (this one) unless this process is root."""
    if os.geteuid() != 0:
        return None
    for name in _SERVER_USERS:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise MissingToolError(
        f"running as root and none of the users {', '.join(_SERVER_USERS)} exists: PostgreSQL "
        "refuses to run as root"
    )


class LocalPostgres(ManagedProcess):
    """PostgreSQL on 127.0.0.1 with ``wal_level=logical`` (what Debezium's ``pgoutput`` plugin
    needs), trust authentication for ``user`` (superuser) and a database ``database``.

    ``dsn`` / ``connect_kwargs`` give the address; :meth:`psql` runs SQL through ``psql``.
    """

    name = "postgres"
    stop_signal = signal.SIGINT  # "fast" shutdown: SIGTERM ("smart") waits for replication clients

    def __init__(
        self,
        port: int | None = None,
        *,
        user: str = "postgres",
        database: str = "serdes",
        workdir: str | os.PathLike[str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        settings: dict[str, str] | None = None,
    ) -> None:
        super().__init__(workdir, start_timeout)
        self.port = port
        self.user = user
        self.database = database
        self.settings = dict(settings or {})
        self.bin_dir: Path | None = None
        self._owner = _server_user()
        self._database_created = False

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def connect_kwargs(self) -> dict[str, object]:
        """For ``pg8000.connect(**kwargs)`` / ``psycopg.connect(**kwargs)``."""
        if self.port is None:
            raise RuntimeError("LocalPostgres not started")
        return {"host": "127.0.0.1", "port": self.port, "user": self.user, "database": self.database}

    @property
    def dsn(self) -> str:
        if self.port is None:
            raise RuntimeError("LocalPostgres not started")
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.database}"

    def _run_as(self) -> tuple[int, int] | None:
        return None if self._owner is None else (self._owner.pw_uid, self._owner.pw_gid)

    def _tool(self, name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        assert self.bin_dir is not None
        return subprocess.run(
            child_argv([str(self.bin_dir / name), *args], run_as=self._run_as()),
            cwd=self.workdir, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
        )

    def _prepare(self) -> None:
        self.bin_dir = find_postgres_bin()
        if self.port is None:
            self.port = free_port()
        if self._owner is not None:
            os.chown(self.workdir, self._owner.pw_uid, self._owner.pw_gid)
        if not (self.data_dir / "PG_VERSION").exists():
            init = self._tool("initdb", "-D", str(self.data_dir), "-U", self.user, "--auth=trust",
                              "-E", "UTF8", "--locale=C", "--no-sync")
            if init.returncode != 0:
                raise ServerStartError(f"initdb failed (exit {init.returncode}):\n{init.stdout}{init.stderr}")

    def _command(self) -> list[str]:
        assert self.bin_dir is not None
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.workdir),
            "wal_level": "logical",
            "max_replication_slots": "8",
            "max_wal_senders": "8",
            "fsync": "off",                 # a throwaway test database: durability buys nothing
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "32MB",
            "max_connections": "40",
            "logging_collector": "off",
            "log_min_messages": "warning",
        }
        settings.update(self.settings)
        args = [str(self.bin_dir / "postgres"), "-D", str(self.data_dir)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        return args

    @property
    def log_file(self) -> Path:
        return self.stdout_file  # postgres logs to stderr, which ManagedProcess writes there

    def _ready(self) -> bool:
        assert self.port is not None
        with socket.create_connection(("127.0.0.1", self.port), timeout=2):
            pass
        probe = self._tool("pg_ctl", "status", "-D", str(self.data_dir), timeout=10)
        if probe.returncode != 0:
            return False
        return self.psql("SELECT 1", database="postgres").strip() == "1"

    def _after_ready(self) -> None:
        if self._database_created:
            return
        exists = self.psql(f"SELECT 1 FROM pg_database WHERE datname = '{self.database}'", database="postgres")
        if exists.strip() != "1":
            self.psql(f'CREATE DATABASE "{self.database}"', database="postgres")
        self._database_created = True

    def psql(self, sql: str, database: str | None = None, timeout: float = 60) -> str:
        """Run ``sql`` with ``psql`` (stops at the first error); returns its unaligned output."""
        psql = shutil.which("psql") or (str(self.bin_dir / "psql") if self.bin_dir else "psql")
        out = subprocess.run(
            [psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port),
             "-U", self.user, "-d", database or self.database, "-c", sql],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
        )
        if out.returncode != 0:
            raise RuntimeError(f"psql failed (exit {out.returncode}) running {sql[:200]!r}:\n{out.stderr}")
        return out.stdout
