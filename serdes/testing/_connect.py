""":class:`LocalKafkaConnect`: a Kafka Connect worker in standalone mode with the Debezium
PostgreSQL connector and Apicurio's registry converters on its ``plugin.path``.

Connect, the connector and the converters come from Maven Central (``_maven.fetch_cdc``, cached
outside the repository).  Connectors are created, checked and deleted over the worker's REST API
(:meth:`LocalKafkaConnect.create_connector`, :meth:`wait_running`, :meth:`delete_connector`);
source offsets go to a file in the work directory.
"""

from __future__ import annotations

import os
import time
import urllib.error
from typing import TYPE_CHECKING, Any, Iterable

from .._errors import ServerStartError
from . import _maven
from ._http import http_json
from ._ports import free_port
from ._process import DEFAULT_START_TIMEOUT, JavaServer, poll_until

if TYPE_CHECKING:
    from ._postgres import LocalPostgres

__all__ = ["LocalKafkaConnect", "ConnectorFailed", "apicurio_v2_url", "debezium_postgres_config"]

_CCOMPAT = "/apis/ccompat/v7"


def apicurio_v2_url(registry_url: str) -> str:
    """The Apicurio v2 API (what Apicurio's Kafka Connect converters talk to) of an Apicurio
    registry given by its Confluent-compatible URL (``.../apis/ccompat/v7``)."""
    url = registry_url.rstrip("/")
    if not url.endswith(_CCOMPAT):
        raise ValueError(f"Apicurio's Kafka Connect converters need an Apicurio registry; {registry_url} is not one")
    return url[: -len(_CCOMPAT)] + "/apis/registry/v2"


def debezium_postgres_config(
    pg: LocalPostgres, tables: Iterable[str], *, run_id: str, topic_prefix: str, registry_url: str,
    **overrides: str,
) -> dict[str, str]:
    """A Debezium PostgreSQL connector's config for ``tables`` (``public`` schema) of ``pg``:
    ``pgoutput``, a replication slot and publication named after ``run_id`` (dropped with the
    connector), snapshot then streaming, topics ``<topic_prefix>.public.<table>``; keys and values
    through Apicurio's Avro converter writing the Confluent wire format (magic byte + 4-byte
    content id in the payload, no headers), which ``registry_url``'s Confluent-compatible API
    serves by that id.  ``overrides`` add or replace keys (e.g. ``skipped.operations``)."""
    converter = {
        "converter": "io.apicurio.registry.utils.converter.AvroConverter",
        "converter.apicurio.registry.url": apicurio_v2_url(registry_url),
        "converter.apicurio.registry.auto-register": "true",
        "converter.apicurio.registry.find-latest": "true",
        "converter.apicurio.registry.headers.enabled": "false",  # the id in the payload, not a header
        "converter.apicurio.registry.as-confluent": "true",      # magic byte + 4-byte id
        "converter.apicurio.registry.use-id": "contentId",       # the id the ccompat API serves
    }
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "database.hostname": "127.0.0.1", "database.port": str(pg.port),
        "database.user": pg.user, "database.password": "unused (trust)", "database.dbname": pg.database,
        "topic.prefix": topic_prefix, "plugin.name": "pgoutput",
        "slot.name": f"slot_{run_id}", "slot.drop.on.stop": "true",
        "publication.name": f"pub_{run_id}", "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(f"public.{t}" for t in tables),
        "snapshot.mode": "initial",
        **{f"{side}.{k}": v for side in ("key", "value") for k, v in converter.items()},
        **overrides,
    }

_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<!-- written by serdes.testing -->
<Configuration status="WARN">
  <Appenders>
    <File name="file" fileName="{log}" append="true">
      <PatternLayout pattern="[%d] %p %X{{connector.context}}%m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="org.reflections" level="ERROR"/>
    <Logger name="org.apache.kafka.clients" level="WARN"/>
    <Logger name="org.apache.kafka.common" level="WARN"/>
    <Root level="INFO"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
"""


class ConnectorFailed(ServerStartError):
    """A connector or one of its tasks is ``FAILED`` (the message carries the worker's trace)."""


class LocalKafkaConnect(JavaServer):
    """Kafka Connect (``ConnectStandalone``) on 127.0.0.1, writing to ``bootstrap_servers``.

    The worker's default converters are Connect's JSON ones; a connector picks its own
    (``key.converter`` / ``value.converter`` in its config, e.g. Apicurio's
    ``io.apicurio.registry.utils.converter.AvroConverter``)."""

    name = "connect"
    java_version = 17

    def __init__(
        self,
        bootstrap_servers: str,
        port: int | None = None,
        *,
        workdir: str | os.PathLike[str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        heap: str = "384m",
        extra_properties: dict[str, str] | None = None,
    ) -> None:
        super().__init__(port, version=_maven.KAFKA_VERSION, workdir=workdir, start_timeout=start_timeout,
                         heap=heap, extra_properties=extra_properties)
        self.bootstrap_servers = bootstrap_servers

    def _forget_ports(self) -> None:
        self.port = None

    @property
    def url(self) -> str:
        """The worker's REST API."""
        if self.port is None:
            raise RuntimeError("LocalKafkaConnect not started")
        return f"http://127.0.0.1:{self.port}"

    def _properties(self) -> dict[str, str]:
        props = {
            "bootstrap.servers": self.bootstrap_servers,
            "listeners": f"http://127.0.0.1:{self.port}",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "offset.storage.file.filename": str(self.workdir / "offsets.dat"),
            "offset.flush.interval.ms": "1000",
            "plugin.path": str(_maven.connect_plugin_dir()),
            # the plugins here ship no ServiceLoader manifests for everything: scan the jars
            "plugin.discovery": "only_scan",
        }
        props.update(self.extra_properties)
        return props

    def _prepare(self) -> None:
        _maven.fetch_cdc()
        if self.port is None:
            self.port = free_port()
        (self.workdir / "worker.properties").write_text(
            "".join(f"{k}={v}\n" for k, v in self._properties().items()))
        (self.workdir / "log4j2.xml").write_text(_LOG4J2.format(log=self.log_file))

    def _command(self) -> list[str]:
        return self._jvm(
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.xml'}",
            "-cp", str(_maven.connect_lib_dir() / "*"),
            "org.apache.kafka.connect.cli.ConnectStandalone",
            str(self.workdir / "worker.properties"),
            initial_heap="96m",
        )

    def _ready(self) -> bool:
        info = http_json(self.url + "/", timeout=3)
        return isinstance(info, dict) and "version" in info

    # -- connectors -------------------------------------------------------------
    def plugins(self) -> list[str]:
        """Class names of the connector plugins the worker found."""
        return [p["class"] for p in http_json(self.url + "/connector-plugins", timeout=30)]

    def create_connector(self, name: str, config: dict[str, str]) -> None:
        try:
            http_json(self.url + "/connectors", "POST", {"name": name, "config": config}, timeout=60)
        except urllib.error.HTTPError as exc:
            raise ConnectorFailed(f"creating connector {name!r}: HTTP {exc.code} {exc.read()[:4000]!r}") from None

    def status(self, name: str) -> dict[str, Any]:
        got: dict[str, Any] = http_json(f"{self.url}/connectors/{name}/status", timeout=10)
        return got

    def wait_running(self, name: str, timeout: float = 120.0, tasks: int = 1) -> dict[str, Any]:
        """Wait for the connector and ``tasks`` tasks to be ``RUNNING``; a ``FAILED`` one raises
        :class:`ConnectorFailed` with its trace."""
        last: dict[str, Any] = {}

        def check() -> bool:
            nonlocal last
            last = self.status(name)
            states = [last["connector"]] + list(last.get("tasks", []))
            failed = [s for s in states if s.get("state") == "FAILED"]
            if failed:
                raise ConnectorFailed(f"connector {name!r} failed:\n{failed[0].get('trace', '')[:6000]}")
            return last["connector"].get("state") == "RUNNING" and len(last.get("tasks", [])) >= tasks and all(
                t.get("state") == "RUNNING" for t in last["tasks"])

        outcome = poll_until(check, time.monotonic() + timeout, ignore=(OSError, KeyError, ValueError),
                             abort=lambda: not self.running)
        if outcome != "ready":
            raise ConnectorFailed(f"connector {name!r} not running after {timeout:.0f}s ({outcome}): {last}\n"
                                  f"{self.log_tail(80)}")
        return last

    def delete_connector(self, name: str) -> None:
        try:
            http_json(f"{self.url}/connectors/{name}", "DELETE", timeout=60)
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
