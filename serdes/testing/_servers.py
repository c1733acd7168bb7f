"""Local Kafka (KRaft) broker and Apicurio Registry processes for tests/demos.

Both run as plain ``java`` child processes in their own process group, bound to
127.0.0.1 on free ports chosen at start.  Logs and data go to a per-instance
temporary work directory (``server.log`` / ``stdout.log`` there).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .._errors import ServerStartError
from . import _maven
from ._maven import MissingToolError, find_java

DEFAULT_START_TIMEOUT = 180.0
DEFAULT_STOP_TIMEOUT = 20.0

_LIVE: "set[_JavaServer]" = set()  # started and not yet stopped (for the atexit hook)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # like the JVM's server sockets: TIME_WAIT leftovers do not block a listener
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _tail(path: Path, lines: int = 60) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"<no log at {path}>"
    out = "".join(text.splitlines(True)[-lines:])
    return out[-12000:]


class _JavaServer:
    """Common process handling: start/stop a java child in its own process group."""

    name = "server"

    def __init__(self, workdir: str | os.PathLike | None, start_timeout: float) -> None:
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"serdes-{self.name}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.start_timeout = start_timeout
        self._proc: subprocess.Popen | None = None
        self._stdout = None
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

    def _ready(self) -> bool:  # pragma: no cover - abstract
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
            f"--- {self.log_file} ---\n{_tail(self.log_file, lines)}"
            f"--- {self.stdout_file} ---\n{_tail(self.stdout_file, lines)}"
        )

    # -- lifecycle ------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def launch(self) -> None:
        """Spawn the process without waiting for readiness (see :meth:`wait_ready`)."""
        if self.running:
            return
        self._prepare()
        self._launch_started = time.monotonic()
        self._stdout = open(self.stdout_file, "ab")
        self._proc = subprocess.Popen(
            self._command(),
            cwd=self._cwd(),
            env=self._environ(),
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group -> killpg on stop
            preexec_fn=_parent_death_signal() if threading.current_thread() is threading.main_thread() else None,
        )
        _LIVE.add(self)

    def wait_ready(self) -> None:
        deadline = self._launch_started + self.start_timeout
        while True:
            if self._proc is None or self._proc.poll() is not None:
                rc = None if self._proc is None else self._proc.returncode
                self.stop()
                raise ServerStartError(
                    f"{self.name} exited during start-up (exit code {rc}).\n{self.log_tail()}"
                )
            try:
                if self._ready():
                    break
            except Exception:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise ServerStartError(
                    f"{self.name} not ready after {self.start_timeout:.0f}s.\n{self.log_tail()}"
                )
            time.sleep(0.5)
        self._after_ready()
        self.startup_seconds = time.monotonic() - self._launch_started

    def start(self) -> "_JavaServer":
        """Start (or restart, on the same ports) and block until healthy."""
        self.launch()
        try:
            self.wait_ready()
        except ServerStartError as exc:
            if not self._retry_with_new_ports(exc):
                raise
            self.launch()
            self.wait_ready()
        return self

    _auto_ports = False

    def _retry_with_new_ports(self, exc: Exception) -> bool:
        """First start only, ports picked by us, and another process took one in
        between: forget the ports (and fresh data) so the next launch picks new ones."""
        if not self._auto_ports or self.startup_seconds is not None:
            return False
        text = str(exc)
        if not any(m in text for m in ("Address already in use", "in use by another process")):
            return False
        self._auto_ports = False  # once
        self._forget_ports()
        return True

    def _forget_ports(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        """SIGTERM the process group, SIGKILL after ``timeout`` seconds."""
        proc, self._proc = self._proc, None
        _LIVE.discard(self)
        if proc is not None and proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
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
        if self._own_workdir and os.environ.get("SERDES_KEEP_LOGS") != "1":
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _parent_death_signal():
    """preexec_fn: ask Linux to SIGTERM the child if the parent thread dies (best effort)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return None

    def _set() -> None:
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    return _set


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        try:
            server.stop(timeout=5.0)
        except Exception:
            pass


_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<!-- written by serdes.testing -->
<Configuration status="WARN">
  <Appenders>
    <File name="file" fileName="{log}" append="true">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="kafka" level="INFO"/>
    <Logger name="org.apache.kafka" level="INFO"/>
    <Logger name="state.change.logger" level="WARN"/>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Root level="INFO"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
"""


class LocalKafka(_JavaServer):
    """Single-node KRaft Kafka (combined broker + controller) on 127.0.0.1."""

    name = "kafka"
    java_version = 17

    def __init__(
        self,
        port: int | None = None,
        *,
        version: str = _maven.KAFKA_VERSION,
        workdir: str | os.PathLike | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        heap: str = "512m",
        extra_properties: dict[str, str] | None = None,
    ) -> None:
        super().__init__(workdir, start_timeout)
        self.version = version
        self.port = port
        self.controller_port: int | None = None
        self.heap = heap
        self.extra_properties = dict(extra_properties or {})
        self.cluster_id = uuid.uuid4()
        self._auto_ports = port is None

    def _forget_ports(self) -> None:
        self.port = self.controller_port = None
        shutil.rmtree(self.workdir / "data", ignore_errors=True)  # the format records the controller port

    @property
    def bootstrap_servers(self) -> str:
        if self.port is None:
            raise RuntimeError("LocalKafka not started")
        return f"127.0.0.1:{self.port}"

    @property
    def properties_file(self) -> Path:
        return self.workdir / "server.properties"

    def _java(self, main: str, *args: str) -> list[str]:
        lib = _maven.kafka_lib_dir(self.version)
        return [
            find_java(self.java_version),
            f"-Xmx{self.heap}",
            f"-Xms{min(128, int(self.heap.rstrip('m')) if self.heap.endswith('m') else 128)}m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.xml'}",
            f"-Dkafka.logs.dir={self.workdir}",
            "-cp",
            str(lib / "*"),
            main,
            *args,
        ]

    def _prepare(self) -> None:
        _maven.fetch_kafka(self.version)
        if self.port is None:
            self.port = free_port()
        if self.controller_port is None:
            self.controller_port = free_port()
            while self.controller_port == self.port:
                self.controller_port = free_port()
        data = self.workdir / "data"
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
            "log.flush.interval.messages": "10000",
        }
        props.update(self.extra_properties)
        self.properties_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.workdir / "log4j2.xml").write_text(_LOG4J2.format(log=self.log_file))
        if not (data / "meta.properties").exists():
            # format storage once; a restart (stop/start) keeps topics and ports
            fmt = subprocess.run(
                self._java(
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    _kafka_uuid(self.cluster_id),
                    "-c",
                    str(self.properties_file),
                    "--standalone",
                ),
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=120,
            )
            if fmt.returncode != 0:
                raise ServerStartError(
                    f"kafka storage format failed (exit {fmt.returncode}):\n{fmt.stdout[-4000:]}"
                )

    def _command(self) -> list[str]:
        return self._java("kafka.Kafka", str(self.properties_file))

    def _ready(self) -> bool:
        from confluent_kafka.admin import AdminClient

        with socket.create_connection(("127.0.0.1", self.port), timeout=2):
            pass  # cheap check first, keeps librdkafka from logging refused connects
        admin = AdminClient(
            {"bootstrap.servers": self.bootstrap_servers, "socket.timeout.ms": 3000, "log_level": 2}
        )
        md = admin.list_topics(timeout=3)
        return bool(md.brokers)


def _kafka_uuid(u: uuid.UUID) -> str:
    import base64

    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


class LocalRegistry(_JavaServer):
    """Apicurio Registry 3 with its Confluent-compatible API (``/apis/ccompat/v7``).

    Storage is a file-based H2 database in the work directory, so subjects and
    schema ids survive ``stop()``/``start()`` (same port).  Pass
    ``persistent=False`` for the in-memory default (everything lost on restart).
    """

    name = "registry"
    java_version = 21  # Apicurio Registry 3.3 is compiled for Java 21
    CCOMPAT_PATH = "/apis/ccompat/v7"

    def __init__(
        self,
        port: int | None = None,
        *,
        version: str = _maven.APICURIO_VERSION,
        workdir: str | os.PathLike | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        heap: str = "512m",
        compatibility: str | None = "BACKWARD",
        persistent: bool = True,
        extra_properties: dict[str, str] | None = None,
    ) -> None:
        super().__init__(workdir, start_timeout)
        self.version = version
        self.port = port
        self.heap = heap
        self.compatibility = compatibility
        self.persistent = persistent
        self.extra_properties = dict(extra_properties or {})
        self._app_dir: Path | None = None
        self.management_port: int | None = None
        self._auto_ports = port is None

    def _forget_ports(self) -> None:
        self.port = self.management_port = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("LocalRegistry not started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """Confluent-compatible Schema Registry URL (for ``SchemaRegistryClient``)."""
        return self.base_url + self.CCOMPAT_PATH

    def _prepare(self) -> None:
        self._app_dir = _maven.fetch_apicurio(self.version)
        if self.management_port is None:
            self.management_port = free_port()
        if self.port is None:
            self.port = free_port()
        else:
            deadline = time.monotonic() + 30
            while not _port_free(self.port) and time.monotonic() < deadline:
                time.sleep(0.5)

    def _properties(self) -> dict[str, str]:
        props = {
            "quarkus.http.port": str(self.port),
            "quarkus.http.host": "127.0.0.1",
            "quarkus.log.file.enabled": "true",
            "quarkus.log.file.path": str(self.log_file),
            "quarkus.log.file.json.enabled": "false",
            "quarkus.log.file.format": "%d{HH:mm:ss,SSS} %-5p [%c{2.}] (%t) %s%e%n",
            # the management interface (health/metrics) defaults to 0.0.0.0:9000
            "quarkus.management.host": "127.0.0.1",
            "quarkus.management.port": str(self.management_port),
            "quarkus.log.console.enabled": "false",
            "quarkus.http.access-log.enabled": "false",
            # Confluent semantics: schema id == content id (not global id)
            "apicurio.ccompat.legacy-id-mode.enabled": "false",
            # lookup/dedupe by canonical form, like Confluent's parsed comparison
            "apicurio.ccompat.use-canonical-hash": "true",
            "apicurio.ccompat.max-subjects": "100000",
            # Confluent clients may delete subjects/versions
            "apicurio.rest.deletion.group.enabled": "true",
            "apicurio.rest.deletion.artifact.enabled": "true",
            "apicurio.rest.deletion.artifact-version.enabled": "true",
            "apicurio.datasource.jdbc.initial-size": "2",
            "apicurio.datasource.jdbc.min-size": "2",
            "apicurio.datasource.jdbc.max-size": "20",
        }
        if self.persistent:
            db = self.workdir / "h2" / "registry"
            props["apicurio.datasource.url"] = f"jdbc:h2:file:{db};DB_CLOSE_ON_EXIT=FALSE"
        props.update(self.extra_properties)
        return props

    def _command(self) -> list[str]:
        assert self._app_dir is not None
        return [
            find_java(self.java_version),
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            *(f"-D{k}={v}" for k, v in self._properties().items()),
            "-jar",
            str(self._app_dir / "quarkus-run.jar"),
        ]

    def _cwd(self) -> Path:
        assert self._app_dir is not None
        return self._app_dir

    def _ready(self) -> bool:
        with urllib.request.urlopen(self.url + "/subjects", timeout=3) as resp:
            return resp.status == 200

    def _after_ready(self) -> None:
        if self.compatibility:
            self.set_compatibility(self.compatibility)
        self._warm_up()

    def _warm_up(self) -> None:
        """Send the first request of each kind a client sends (confluent-kafka's default subject
        strategy asks the associations API, which Apicurio answers with 404) with a short timeout
        and retries, so a first-request stall of a just-started registry is absorbed here rather
        than by a client with no request timeout (confluent-kafka's default)."""
        url = self.url + "/associations/resources/-/serdes-warm-up?resourceType=topic&associationType=value"
        for attempt in range(5):
            try:
                self._request("GET", url, timeout=10)
                return
            except urllib.error.HTTPError:
                return  # an answer (404 on Apicurio) is all this waits for
            except OSError:
                time.sleep(1 + attempt)
        raise ServerStartError(f"registry does not answer {url} after start-up:\n{self.log_tail()}")

    # -- helpers --------------------------------------------------------------
    def _request(self, method: str, url: str, body: object | None = None, timeout: float = 10) -> object:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        req.add_header("Accept", "application/json")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def set_compatibility(self, level: str) -> None:
        """Set the global compatibility rule (ccompat ``PUT /config``) and verify it."""
        self._request("PUT", self.url + "/config", {"compatibility": level})
        got = self._request("GET", self.url + "/config")
        actual = (got or {}).get("compatibilityLevel") or (got or {}).get("compatibility")
        if actual != level:
            raise ServerStartError(f"registry global compatibility is {actual!r}, wanted {level!r}")


class LocalServers:
    """A :class:`LocalKafka` plus a :class:`LocalRegistry`, started in parallel."""

    def __init__(self, kafka: LocalKafka | None = None, registry: LocalRegistry | None = None):
        self.kafka = kafka or LocalKafka()
        self.registry = registry or LocalRegistry()

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka.bootstrap_servers

    @property
    def registry_url(self) -> str:
        return self.registry.url

    def start(self) -> "LocalServers":
        _maven.fetch_all()
        try:
            self.registry.launch()
            self.kafka.launch()
            for server in (self.kafka, self.registry):
                try:
                    server.wait_ready()
                except ServerStartError as exc:
                    if not server._retry_with_new_ports(exc):
                        raise
                    server.start()
        except BaseException:
            self.stop(cleanup=False)  # keep the logs named in the error
            raise
        return self

    def stop(self, cleanup: bool = True) -> None:
        """Stop both; ``cleanup`` also deletes their temporary work directories
        (logs included) unless ``SERDES_KEEP_LOGS=1``."""
        errors = []
        for server in (self.registry, self.kafka):
            try:
                server.cleanup() if cleanup else server.stop()
            except Exception as exc:  # pragma: no cover
                errors.append(exc)
        if errors:
            raise errors[0]

    def __enter__(self) -> "LocalServers":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@contextmanager
def local_servers(**kwargs) -> Iterator[LocalServers]:
    """``with local_servers() as s: s.bootstrap_servers, s.registry_url``.

    Keyword arguments: ``kafka=LocalKafka(...)``, ``registry=LocalRegistry(...)``.
    """
    servers = LocalServers(**kwargs)
    servers.start()
    try:
        yield servers
    finally:
        servers.stop()


__all__ = [
    "LocalKafka",
    "LocalRegistry",
    "LocalServers",
    "MissingToolError",
    "ServerStartError",
    "free_port",
    "local_servers",
]
