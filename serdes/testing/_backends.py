"""Choose and run the servers for the integration tests.

Backends (``SERDES_TEST_BACKEND`` forces one):

* ``external`` – ``SERDES_TEST_BOOTSTRAP`` + ``SERDES_TEST_REGISTRY_URL`` name
  servers that already run (chosen automatically when both are set);
* ``docker``   – testcontainers: ``confluentinc/cp-kafka`` (KRaft) +
  ``confluentinc/cp-schema-registry`` on one Docker network (chosen
  automatically when a Docker engine answers and ``testcontainers`` imports);
* ``local``    – :class:`~serdes.testing.LocalServers`: a Kafka broker and an
  Apicurio Registry (ccompat API) as local java processes (the fallback).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._errors import ServerStartError
from . import _maven
from ._http import REGISTRY_JSON, http_json, http_ok
from ._process import poll_until
from ._servers import LocalServers

if TYPE_CHECKING:  # testcontainers is a test extra, imported when the docker backend starts
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network
    from testcontainers.kafka import KafkaContainer

BACKENDS = ("local", "docker", "external")
ENV_BACKEND = "SERDES_TEST_BACKEND"
ENV_BOOTSTRAP = "SERDES_TEST_BOOTSTRAP"
ENV_REGISTRY = "SERDES_TEST_REGISTRY_URL"
CP_VERSION = os.environ.get("SERDES_TEST_CP_VERSION", "7.9.1")


def docker_available() -> bool:
    """True when ``testcontainers`` imports and a Docker engine answers a ping."""
    try:
        import docker  # installed with testcontainers
        import testcontainers.core.container  # noqa: F401
    except Exception:
        return False
    try:
        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


@dataclass
class Selection:
    backend: str
    reason: str


def select_backend() -> Selection:
    forced = os.environ.get(ENV_BACKEND, "").strip().lower()
    if forced and forced not in BACKENDS:
        raise ValueError(f"{ENV_BACKEND}={forced!r}; expected one of {', '.join(BACKENDS)}")
    if forced:
        return Selection(forced, f"forced by {ENV_BACKEND}")
    if os.environ.get(ENV_BOOTSTRAP) and os.environ.get(ENV_REGISTRY):
        return Selection("external", f"{ENV_BOOTSTRAP} and {ENV_REGISTRY} are set")
    if docker_available():
        return Selection("docker", "a Docker engine answered")
    return Selection("local", "no external servers configured and no Docker engine")


def describe(selection: Selection) -> str:
    if selection.backend == "external":
        return (
            f"external (bootstrap={os.environ.get(ENV_BOOTSTRAP)}, "
            f"registry={os.environ.get(ENV_REGISTRY)}; {selection.reason})"
        )
    if selection.backend == "docker":
        return f"docker/testcontainers (cp-kafka + cp-schema-registry {CP_VERSION}; {selection.reason})"
    return (
        f"local processes (kafka {_maven.KAFKA_VERSION} KRaft + apicurio-registry "
        f"{_maven.APICURIO_VERSION} ccompat; cache {_maven.cache_dir()}; {selection.reason})"
    )


class TestServers:
    """What the fixtures hand out: addresses plus (maybe) registry stop/start."""

    __test__ = False  # not a pytest test class
    backend = "?"
    can_restart_registry = False
    bootstrap_servers: str
    registry_url: str
    startup_seconds: float | None = None  # set by the pytest plugin once started

    def start(self) -> "TestServers":
        return self

    def stop(self) -> None:
        pass

    def stop_registry(self) -> None:
        raise NotImplementedError(f"the {self.backend} backend cannot stop the registry")

    def start_registry(self) -> None:
        raise NotImplementedError(f"the {self.backend} backend cannot start the registry")


class ExternalTestServers(TestServers):
    backend = "external"

    def __init__(self) -> None:
        self.bootstrap_servers = os.environ[ENV_BOOTSTRAP]
        self.registry_url = os.environ[ENV_REGISTRY].rstrip("/")


class LocalTestServers(TestServers):
    backend = "local"
    can_restart_registry = True

    def __init__(self) -> None:
        self.local = LocalServers()

    def start(self) -> "LocalTestServers":
        self.local.start()
        self.bootstrap_servers = self.local.bootstrap_servers
        self.registry_url = self.local.registry_url
        return self

    def stop(self) -> None:
        self.local.stop()

    def stop_registry(self) -> None:
        self.local.registry.stop()

    def start_registry(self) -> None:
        self.local.registry.start()  # same port; file-based H2 keeps schemas and ids

    @property
    def registry_running(self) -> bool:
        return self.local.registry.running


class DockerTestServers(TestServers):
    """cp-kafka (KRaft) + cp-schema-registry via testcontainers.

    Cannot run on the project's dev/CI machines (no Docker engine there); it is
    the path for developer laptops with Docker.
    """

    backend = "docker"

    def __init__(self, cp_version: str = CP_VERSION) -> None:
        self.cp_version = cp_version
        self._network: Network | None = None
        self._kafka: KafkaContainer | None = None
        self._registry: DockerContainer | None = None

    def start(self, timeout: float = 180.0) -> "DockerTestServers":
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.network import Network
        from testcontainers.kafka import KafkaContainer

        try:
            self._network = network = Network()
            network.create()
            self._kafka = kafka = (
                KafkaContainer(f"confluentinc/cp-kafka:{self.cp_version}")
                .with_kraft()
                .with_network(network)
                .with_network_aliases("kafka")
            )
            kafka.start(timeout=int(timeout))
            self.bootstrap_servers = kafka.get_bootstrap_server()
            self._registry = registry = (
                DockerContainer(f"confluentinc/cp-schema-registry:{self.cp_version}")
                .with_network(network)
                .with_network_aliases("schema-registry")
                .with_env("SCHEMA_REGISTRY_HOST_NAME", "schema-registry")
                .with_env("SCHEMA_REGISTRY_LISTENERS", "http://0.0.0.0:8081")
                # the KafkaContainer's in-network listener is BROKER://<container>:9092
                .with_env("SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS", "PLAINTEXT://kafka:9092")
                .with_exposed_ports(8081)
            )
            registry.start()
            host = registry.get_container_host_ip()
            self.registry_url = f"http://{host}:{registry.get_exposed_port(8081)}"
            url = self.registry_url + "/subjects"
            if poll_until(lambda: http_ok(url), time.monotonic() + timeout, interval=1) != "ready":
                raise ServerStartError(f"cp-schema-registry: {url} not answering 200 after {timeout:.0f}s")
            http_json(self.registry_url + "/config", "PUT", {"compatibility": "BACKWARD"},
                      content_type=REGISTRY_JSON)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for thing in (self._registry, self._kafka):
            if thing is not None:
                try:
                    thing.stop()
                except Exception:
                    pass
        if self._network is not None:
            try:
                self._network.remove()
            except Exception:
                pass
        self._registry = self._kafka = self._network = None


def make_test_servers(selection: Selection | None = None) -> TestServers:
    """Build (not start) the servers for ``selection`` (default: :func:`select_backend`).

    Raises :class:`~serdes.testing.MissingToolError` for the local backend when
    ``java`` (17+ for Kafka, 21+ for Apicurio) or ``mvn`` is missing.
    """
    selection = selection or select_backend()
    if selection.backend == "external":
        missing = [v for v in (ENV_BOOTSTRAP, ENV_REGISTRY) if not os.environ.get(v)]
        if missing:
            raise RuntimeError(f"backend 'external' needs {' and '.join(missing)}")
        return ExternalTestServers()
    if selection.backend == "docker":
        return DockerTestServers()
    missing = _maven.missing_tools()
    if missing:
        _maven.require_tool(missing[0])
    _maven.find_java(17)
    _maven.find_java(21)
    return LocalTestServers()
