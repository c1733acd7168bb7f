"""pytest fixtures for tests that need a Kafka broker and a schema registry.

Loaded by ``tests/conftest.py`` (``pytest_plugins``).  Servers start lazily,
once per session, only when a test asks for one of these fixtures.

* ``kafka_bootstrap`` (str)  – ``host:port`` for confluent-kafka clients
* ``registry_url`` (str)     – Confluent-compatible Schema Registry URL
* ``servers``                – :class:`serdes.testing._backends.TestServers`
  (``.bootstrap_servers``, ``.registry_url``, ``.backend``,
  ``.can_restart_registry``, ``.stop_registry()``, ``.start_registry()``)
* ``flink_cluster``          – :class:`serdes.testing.LocalFlinkCluster`: a standalone Flink
  cluster (1 JobManager, 2 TaskManagers x 2 slots, RocksDB) as local processes, once per session
* ``postgres``               – :class:`serdes.testing.LocalPostgres` (logical decoding on)
* ``kafka_connect``          – :class:`serdes.testing.LocalKafkaConnect`: Connect standalone with
  Debezium's PostgreSQL connector and Apicurio's converters, on ``kafka_bootstrap``
* ``apicurio_v2_url`` (str)  – the registry's Apicurio v2 API (the converters' URL)
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Iterator

import pytest

from .._errors import MissingToolError
from . import _backends

if TYPE_CHECKING:
    from ._connect import LocalKafkaConnect
    from ._flink_cluster import LocalFlinkCluster
    from ._postgres import LocalPostgres
    from ._process import ManagedProcess


def pytest_report_header(config: pytest.Config) -> str:
    try:
        sel = _backends.select_backend()
        return f"serdes integration backend: {_backends.describe(sel)}"
    except Exception as exc:  # pragma: no cover - header must never break the run
        return f"serdes integration backend: <error: {exc}>"


@pytest.fixture(scope="session")
def _serdes_servers() -> Iterator[_backends.TestServers]:
    selection = _backends.select_backend()
    problem: str | None = None  # failed outside the except: no chained traceback in the report
    try:
        servers = _backends.make_test_servers(selection)
    except MissingToolError as exc:
        problem = str(exc)
    if problem is not None:
        pytest.fail(
            f"integration tests need the local servers but: {problem}  "
            "(deselect them with -m 'not integration', or set SERDES_TEST_BOOTSTRAP/"
            "SERDES_TEST_REGISTRY_URL)",
            pytrace=False,
        )
    t0 = time.monotonic()
    servers.start()
    servers.startup_seconds = time.monotonic() - t0
    try:
        yield servers
    finally:
        servers.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(_serdes_servers: _backends.TestServers) -> str:
    return _serdes_servers.bootstrap_servers


@pytest.fixture(scope="session")
def registry_url(_serdes_servers: _backends.TestServers) -> str:
    return _serdes_servers.registry_url


@pytest.fixture
def servers(_serdes_servers: _backends.TestServers) -> Iterator[_backends.TestServers]:
    """The session's servers; if a test stopped the registry, it is restarted afterwards."""
    yield _serdes_servers
    if _serdes_servers.can_restart_registry and not getattr(
        _serdes_servers, "registry_running", True
    ):
        _serdes_servers.start_registry()


@pytest.fixture(scope="session")
def flink_cluster() -> Iterator[LocalFlinkCluster]:
    """A started :class:`~serdes.testing.LocalFlinkCluster`, stopped (logs deleted unless
    ``SERDES_KEEP_LOGS=1``) at the end of the session.  A test that kills TaskManagers leaves
    the others; the fixture tops the cluster up again only through the test (``add_taskmanager``)."""
    pytest.importorskip("pyflink")
    from ._flink_cluster import LocalFlinkCluster

    cluster = LocalFlinkCluster(progress=lambda line: print(f"[flink-cluster] {line}", flush=True))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.cleanup()


def _start_or_fail(server: ManagedProcess, what: str) -> None:
    problem: str | None = None
    try:
        server.start()
    except MissingToolError as exc:
        problem = str(exc)
    if problem is not None:
        pytest.fail(f"{what} needs {problem}", pytrace=False)


@pytest.fixture(scope="session")
def postgres() -> Iterator[LocalPostgres]:
    """A started :class:`~serdes.testing.LocalPostgres` (``wal_level=logical``), once per session."""
    from ._postgres import LocalPostgres

    server = LocalPostgres()
    _start_or_fail(server, "the postgres fixture")
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def apicurio_v2_url(registry_url: str) -> str:
    """The session registry's Apicurio v2 API (what Apicurio's Kafka Connect converters talk to);
    the CDC tests skip on a registry that is not Apicurio."""
    from ._connect import apicurio_v2_url as v2_url

    try:
        return v2_url(registry_url)
    except ValueError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def kafka_connect(kafka_bootstrap: str) -> Iterator[LocalKafkaConnect]:
    """A started :class:`~serdes.testing.LocalKafkaConnect` (standalone) on the session's broker, with
    the Debezium PostgreSQL connector and Apicurio's converters; once per session."""
    from ._connect import LocalKafkaConnect

    server = LocalKafkaConnect(kafka_bootstrap)
    _start_or_fail(server, "the kafka_connect fixture")
    try:
        yield server
    finally:
        server.cleanup()
