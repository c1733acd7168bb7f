"""Compile the Java record shim into a jar, and read back what a jar was built from.

Shared by the package build (``setup.py`` builds the jar shipped in the wheel) and by
``_shim.py`` (compiles at first use where no packaged jar fits). Standard library only and no
relative imports: ``setup.py`` loads this file by path, before serdes' dependencies exist.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

JAVA_DIR = Path(__file__).parent / "java"
#: where the package build puts the jar, relative to the ``serdes/flink`` package directory
PACKAGED_JAR_NAME = "_jars/serdes-flink-shim.jar"
#: the JSON entry inside the jar naming what it was compiled from (sources, connector, Flink)
BUILD_INFO_ENTRY = "META-INF/serdes-shim-build.json"
#: the Kafka connector serdes is verified with (apache-flink 2.2.1 and 2.3.0: no build for Flink 2.3
#: is published); the package build compiles against this version, and _jars fetches it
CONNECTOR_VERSION = "5.0.0-2.2"
CONNECTOR_ARTIFACT = "flink-sql-connector-kafka"
#: the Flink the package build compiles against: the floor of pyproject.toml's apache-flink range
#: (flink extra). On another installed release (2.3.x) the packaged jar's record does not match and
#: shim_jar() compiles the sources against that release's flink-dist at first use
FLINK_VERSION = "2.2.1"


def connector_jar_name(version: str = CONNECTOR_VERSION) -> str:
    return f"{CONNECTOR_ARTIFACT}-{version}.jar"


def java_sources(java_dir: Path = JAVA_DIR) -> List[Path]:
    return sorted(java_dir.rglob("*.java"))


def sources_hash(java_dir: Path = JAVA_DIR) -> str:
    """A hash of the shim's ``.java`` files (paths relative to ``java_dir``, and contents)."""
    h = hashlib.sha256()
    for src in java_sources(java_dir):
        h.update(src.relative_to(java_dir).as_posix().encode() + b"\0")
        h.update(src.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def compile_jar(javac: str, classpath: List[str], out: Path, build_info: Optional[Dict[str, str]] = None,
                java_dir: Path = JAVA_DIR) -> None:
    """``javac --release 17`` the sources against ``classpath`` into the jar ``out`` (written
    atomically), with ``build_info`` as :data:`BUILD_INFO_ENTRY`. Raises ``RuntimeError`` with
    javac's output when it fails."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="serdes-shim-") as tmp:
        cmd = [javac, "--release", "17", "-nowarn", "-d", tmp, "-cp", os.pathsep.join(classpath)]
        cmd += [str(s) for s in java_sources(java_dir)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip() or f"javac exited {proc.returncode}")
        part = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: serdes\n\n")
            if build_info is not None:
                zf.writestr(BUILD_INFO_ENTRY, json.dumps(build_info, sort_keys=True))
            for cls in sorted(Path(tmp).rglob("*.class")):
                zf.write(cls, cls.relative_to(tmp).as_posix())
        os.replace(part, out)


def read_build_info(jar: Path) -> Optional[Dict[str, str]]:
    """The jar's :data:`BUILD_INFO_ENTRY`, or ``None`` when it has none (or is no readable jar)."""
    try:
        with zipfile.ZipFile(jar) as zf:
            info = json.loads(zf.read(BUILD_INFO_ENTRY))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None
    if not isinstance(info, dict):
        return None
    return {str(k): str(v) for k, v in info.items()}
