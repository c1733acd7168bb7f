"""The package build's one step beyond pyproject.toml: ship serdes' Flink record shim compiled.

``build_py`` also compiles ``serdes/flink/java`` into ``serdes/flink/_jars/serdes-flink-shim.jar``
in the build directory (so in the wheel, never in the source tree: jars are not committed), so an
install from the wheel needs neither a JDK nor Maven at run time (docs/flink.md, "What a worker
needs"). The compile classpath (the Kafka connector, flink-core, flink-annotations) is fetched with
Maven into serdes' cache (~/.cache/serdes, or $SERDES_CACHE_DIR). Without javac or mvn, or when
the fetch or compile fails, the build goes on without the jar, says so in one line, and serdes
compiles the shim with javac at first use as before. Editable installs skip the step: their .java
sources change, and the first use compiles them.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    """A serdes module by file path: importing the package would import its dependencies, which
    the isolated build environment does not have (both modules use the standard library only)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compile_classpath(mvn: str, mvn_helpers: ModuleType, build: ModuleType) -> list[Path]:
    """The jars the shim compiles against, copied by maven-dependency-plugin into the cache."""
    out = mvn_helpers.cache_dir() / f"shim-classpath-{build.CONNECTOR_VERSION}-{build.FLINK_VERSION}"
    artifacts = [(build.CONNECTOR_ARTIFACT, build.CONNECTOR_VERSION),
                 # the shim's Flink types (TypeInformation, Row, Collector); flink-annotations only
                 # spares javac's warnings about the annotations on them
                 ("flink-core", build.FLINK_VERSION), ("flink-annotations", build.FLINK_VERSION)]
    jars = [out / f"{a}-{v}.jar" for a, v in artifacts]
    if all(j.is_file() for j in jars):
        return jars
    items = "".join(
        f"\n          <artifactItem><groupId>org.apache.flink</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version><type>jar</type></artifactItem>" for a, v in artifacts)
    config = f"\n        <outputDirectory>{out}</outputDirectory>\n        <artifactItems>{items}\n        </artifactItems>"
    out.mkdir(parents=True, exist_ok=True)
    pom = out / "pom.xml"
    pom.write_text(mvn_helpers.dependency_plugin_pom("serdes.build", "shim-classpath", "copy", config))
    log = out / "mvn.log"
    with open(log, "w") as fh:
        rc = subprocess.call(mvn_helpers.mvn_package_command(mvn, pom, "-q"), cwd=out, stdout=fh,
                             stderr=subprocess.STDOUT)
    missing = [j.name for j in jars if not j.is_file()]
    if rc != 0 or missing:
        raise RuntimeError(f"mvn could not fetch {', '.join(missing) or 'the classpath'} (exit {rc}, log {log})")
    return jars


class BuildPyWithShim(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        t0 = time.monotonic()
        try:
            note = self._build_shim()
        except Exception as exc:  # any failure: the package is still usable, compiling at first use
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            note = f"not built ({first_line})"
        print(f"serdes: Flink shim jar {note} [{time.monotonic() - t0:.1f}s]"
              + ("" if note.startswith("built") else "; serdes compiles it with javac at first use"),
              file=sys.stderr, flush=True)

    def _build_shim(self) -> str:
        build = _load("_serdes_shim_build", HERE / "serdes" / "flink" / "_shim_build.py")
        mvn_helpers = _load("_serdes_mvn", HERE / "serdes" / "_mvn.py")
        javac, mvn = shutil.which("javac"), shutil.which("mvn")
        if javac is None or mvn is None:
            return f"not built (no {'javac' if javac is None else 'mvn'} on PATH)"
        classpath = _compile_classpath(mvn, mvn_helpers, build)
        out = Path(self.build_lib) / "serdes" / "flink" / build.PACKAGED_JAR_NAME
        info = {"sources": build.sources_hash(), "connector": build.CONNECTOR_VERSION,
                "flink": build.FLINK_VERSION}
        build.compile_jar(javac, [str(j) for j in classpath], out, info)
        return f"built: {out.relative_to(self.build_lib)} ({info})"


setup(cmdclass={"build_py": BuildPyWithShim})
