""":class:`LocalRegistry`: Apicurio Registry 3 with its Confluent-compatible API on 127.0.0.1."""

from __future__ import annotations

import os
import time
import urllib.error
from pathlib import Path
from typing import Any

from .._errors import ServerStartError
from . import _maven
from ._http import REGISTRY_JSON, http_json, http_ok
from ._ports import free_port, wait_port_free
from ._process import DEFAULT_START_TIMEOUT, JavaServer

__all__ = ["LocalRegistry"]


class LocalRegistry(JavaServer):
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
        workdir: str | os.PathLike[str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        heap: str = "512m",
        compatibility: str | None = "BACKWARD",
        persistent: bool = True,
        extra_properties: dict[str, str] | None = None,
    ) -> None:
        super().__init__(port, version=version, workdir=workdir, start_timeout=start_timeout, heap=heap,
                         extra_properties=extra_properties)
        self.compatibility = compatibility
        self.persistent = persistent
        self._app_dir: Path | None = None
        self.management_port: int | None = None

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
            wait_port_free(self.port, 30)  # a restart: the stopped registry's socket may still close

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
        return self._jvm(
            *(f"-D{k}={v}" for k, v in self._properties().items()),
            "-jar",
            str(self._app_dir / "quarkus-run.jar"),
        )

    def _cwd(self) -> Path:
        assert self._app_dir is not None
        return self._app_dir

    def _ready(self) -> bool:
        return http_ok(self.url + "/subjects")

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
    def _request(self, method: str, url: str, body: object | None = None, timeout: float = 10) -> Any:
        return http_json(url, method, body, timeout=timeout, content_type=REGISTRY_JSON)

    def set_compatibility(self, level: str) -> None:
        """Set the global compatibility rule (ccompat ``PUT /config``) and verify it."""
        self._request("PUT", self.url + "/config", {"compatibility": level})
        got = self._request("GET", self.url + "/config") or {}
        actual = got.get("compatibilityLevel") or got.get("compatibility")
        if actual != level:
            raise ServerStartError(f"registry global compatibility is {actual!r}, wanted {level!r}")
