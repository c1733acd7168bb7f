"""Locate (or fetch from Maven Central) the Flink Kafka SQL connector jar.

``flink-sql-connector-kafka`` is a shaded fat jar that contains the Kafka
client, the DataStream ``KafkaSource``/``KafkaSink`` and the ``kafka`` table
connector.  It is copied with ``maven-dependency-plugin:copy`` into a cache
directory *outside* the repository (``~/.cache/serdes/maven`` or
``$SERDES_CACHE_DIR``).  ``$SERDES_FLINK_KAFKA_JAR`` points at a jar of your
own and skips Maven entirely.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .._errors import ConnectorJarError
from .._mvn import DEPENDENCY_PLUGIN_VERSION, ENV_CACHE, cache_dir, dependency_plugin_pom, mvn_package_command  # noqa: F401

# CONNECTOR_VERSION is verified with apache-flink 2.2.1 and 2.3.0 (KafkaSource/KafkaSink + table connector);
# defined with the shim's build, which compiles the shipped shim against it
from ._shim_build import CONNECTOR_ARTIFACT as CONNECTOR_ARTIFACT, CONNECTOR_VERSION as CONNECTOR_VERSION, connector_jar_name

CONNECTOR_GROUP = "org.apache.flink"

ENV_JAR = "SERDES_FLINK_KAFKA_JAR"




def _jar_name(version: str) -> str:
    return connector_jar_name(version)


def connector_dir(version: str = CONNECTOR_VERSION) -> Path:
    return cache_dir() / f"flink-connector-kafka-{version}"


def copy_jar_pom(out: Path, group: str, artifact: str, version: str) -> str:
    """A ``pom.xml`` whose ``package`` phase copies the jar ``group:artifact:version`` into ``out``."""
    config = f"""
        <outputDirectory>{out}</outputDirectory>
        <artifactItems><artifactItem>
          <groupId>{group}</groupId><artifactId>{artifact}</artifactId>
          <version>{version}</version><type>jar</type>
        </artifactItem></artifactItems>"""
    return dependency_plugin_pom("serdes.flink", "flink-kafka-connector", "copy", config)


def fetch_connector_jar(version: str = CONNECTOR_VERSION, quiet: bool = True) -> Path:
    """Run ``mvn dependency:copy`` for the connector; return the jar path."""
    home = connector_dir(version)
    jar = home / _jar_name(version)
    if jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ConnectorJarError(
            f"{CONNECTOR_GROUP}:{CONNECTOR_ARTIFACT}:{version} is not in {home} and `mvn` is not on "
            f"PATH to fetch it. Install Apache Maven (apt-get install maven) or download the jar "
            f"yourself and set {ENV_JAR}=/path/to/{_jar_name(version)}."
        )
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(copy_jar_pom(home, CONNECTOR_GROUP, CONNECTOR_ARTIFACT, version))
    cmd = mvn_package_command(mvn, home / "pom.xml", "-q" if quiet else "-ntp")
    log = home / "mvn.log"
    with open(log, "w") as fh:
        rc = subprocess.call(cmd, cwd=home, stdout=fh, stderr=subprocess.STDOUT)
    if rc != 0 or not jar.is_file():
        tail = "".join(log.read_text(errors="replace").splitlines(True)[-30:])
        raise ConnectorJarError(
            f"mvn could not fetch {CONNECTOR_GROUP}:{CONNECTOR_ARTIFACT}:{version} (exit {rc}); "
            f"set {ENV_JAR} to a local copy of the jar. Log {log}:\n{tail}"
        )
    return jar


def kafka_connector_jar(path: str | os.PathLike[str] | None = None, fetch: bool = True) -> Path:
    """Return the connector jar: explicit ``path`` > ``$SERDES_FLINK_KAFKA_JAR`` > cache/Maven."""
    explicit = path or os.environ.get(ENV_JAR)
    if explicit:
        p = Path(explicit).expanduser()
        if not p.is_file():
            src = "argument" if path else f"${ENV_JAR}"
            raise ConnectorJarError(f"Kafka connector jar given by {src} does not exist: {p}")
        return p.resolve()
    jar = connector_dir() / _jar_name(CONNECTOR_VERSION)
    if jar.is_file():
        return jar
    if not fetch:
        raise ConnectorJarError(
            f"Kafka connector jar not found at {jar}; call serdes.flink.kafka_connector_jar(fetch=True) "
            f"(needs mvn) or set {ENV_JAR}."
        )
    return fetch_connector_jar()


def jar_url(path: str | os.PathLike[str]) -> str:
    return Path(path).resolve().as_uri()
