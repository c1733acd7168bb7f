""":class:`LocalKafka`: a single-node KRaft Kafka (combined broker + controller) on 127.0.0.1."""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

from .._errors import ServerStartError
from . import _maven
from ._ports import free_port, free_ports
from ._process import DEFAULT_START_TIMEOUT, JavaServer

__all__ = ["LocalKafka"]

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


def _kafka_uuid(u: uuid.UUID) -> str:
    """A cluster id as Kafka writes it (URL-safe base64 of the 16 bytes, no padding)."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def _new_cluster_uuid() -> uuid.UUID:
    """A random cluster id whose text does not start with "-" (as Kafka's ``Uuid.randomUuid``
    ensures: a command-line tool would read such an id as an option)."""
    while True:
        u = uuid.uuid4()
        if not _kafka_uuid(u).startswith("-"):
            return u


class LocalKafka(JavaServer):
    """Single-node KRaft Kafka (combined broker + controller) on 127.0.0.1."""

    name = "kafka"
    java_version = 17

    def __init__(
        self,
        port: int | None = None,
        *,
        version: str = _maven.KAFKA_VERSION,
        workdir: str | os.PathLike[str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        heap: str = "512m",
        extra_properties: dict[str, str] | None = None,
    ) -> None:
        super().__init__(port, version=version, workdir=workdir, start_timeout=start_timeout, heap=heap,
                         extra_properties=extra_properties)
        self.controller_port: int | None = None
        self.cluster_id = _new_cluster_uuid()

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
        initial = min(128, int(self.heap.rstrip("m")) if self.heap.endswith("m") else 128)
        return self._jvm(
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.xml'}",
            f"-Dkafka.logs.dir={self.workdir}",
            "-cp",
            str(_maven.kafka_lib_dir(self.version) / "*"),
            main,
            *args,
            initial_heap=f"{initial}m",
        )

    def _properties(self) -> dict[str, str]:
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
        return props

    def _prepare(self) -> None:
        _maven.fetch_kafka(self.version)
        if self.port is None:
            self.port = free_port()
        if self.controller_port is None:
            self.controller_port = free_ports(1, avoid=(self.port,))[0]
        self.properties_file.write_text("".join(f"{k}={v}\n" for k, v in self._properties().items()))
        (self.workdir / "log4j2.xml").write_text(_LOG4J2.format(log=self.log_file))
        if not (self.workdir / "data" / "meta.properties").exists():
            self._format_storage()

    def _format_storage(self) -> None:
        """Format the log directory once; a restart (stop/start) keeps topics and ports."""
        fmt = subprocess.run(
            # --cluster-id=...: one argument even if a caller's id starts with "-"
            self._java("kafka.tools.StorageTool", "format", f"--cluster-id={_kafka_uuid(self.cluster_id)}",
                       "--config", str(self.properties_file), "--standalone"),
            cwd=self.workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
        )
        if fmt.returncode != 0:
            raise ServerStartError(f"kafka storage format failed (exit {fmt.returncode}):\n{fmt.stdout[-4000:]}")

    def _command(self) -> list[str]:
        return self._java("kafka.Kafka", str(self.properties_file))

    def _ready(self) -> bool:
        from confluent_kafka.admin import AdminClient

        assert self.port is not None
        with socket.create_connection(("127.0.0.1", self.port), timeout=2):
            pass  # cheap check first, keeps librdkafka from logging refused connects
        admin = AdminClient(
            {"bootstrap.servers": self.bootstrap_servers, "socket.timeout.ms": 3000, "log_level": 2}
        )
        md = admin.list_topics(timeout=3)
        return bool(md.brokers)
