"""A local Kafka broker and Apicurio Registry, started together (:class:`LocalServers`).

Both run as plain ``java`` child processes in their own process group, bound to 127.0.0.1 on free
ports chosen at start, logs and data in a per-instance temporary work directory (``server.log`` /
``stdout.log`` there). The pieces: ports in ``_ports``, the process supervisor in ``_process``,
the broker in ``_kafka``, the registry in ``_apicurio``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from . import _maven
from ._apicurio import LocalRegistry
from ._kafka import LocalKafka

__all__ = ["LocalServers", "local_servers"]


class LocalServers:
    """A :class:`LocalKafka` plus a :class:`LocalRegistry`, started in parallel."""

    def __init__(self, kafka: LocalKafka | None = None, registry: LocalRegistry | None = None) -> None:
        self.kafka = kafka or LocalKafka()
        self.registry = registry or LocalRegistry()

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka.bootstrap_servers

    @property
    def registry_url(self) -> str:
        return self.registry.url

    def start(self) -> LocalServers:
        _maven.fetch_all()
        try:
            self.registry.launch()
            self.kafka.launch()
            self.kafka.wait_ready_or_retry()
            self.registry.wait_ready_or_retry()
        except BaseException:
            self.stop(cleanup=False)  # keep the logs named in the error
            raise
        return self

    def stop(self, cleanup: bool = True) -> None:
        """Stop both; ``cleanup`` also deletes their temporary work directories
        (logs included) unless ``SERDES_KEEP_LOGS=1``."""
        errors: list[Exception] = []
        for server in (self.registry, self.kafka):
            try:
                server.cleanup() if cleanup else server.stop()
            except Exception as exc:  # pragma: no cover
                errors.append(exc)
        if errors:
            raise errors[0]

    def __enter__(self) -> LocalServers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def local_servers(kafka: LocalKafka | None = None, registry: LocalRegistry | None = None) -> Iterator[LocalServers]:
    """``with local_servers() as s: s.bootstrap_servers, s.registry_url``.

    Keyword arguments: ``kafka=LocalKafka(...)``, ``registry=LocalRegistry(...)``.
    """
    servers = LocalServers(kafka=kafka, registry=registry)
    servers.start()
    try:
        yield servers
    finally:
        servers.stop()

