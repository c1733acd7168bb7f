"""The shim jar the package build ships (setup.py), and the connector jar taken from pipeline.jars.

* unit: a packaged jar is used only when it was built from these sources, for this connector and
  this PyFlink; a connector jar in the configured ``pipeline.jars`` is used, not fetched;
* end to end: the wheel, installed in a fresh venv with neither javac nor mvn on PATH and an empty
  serdes cache, runs a MiniCluster job that reads and writes Kafka through serdes' shim.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from serdes import flink as sf
from serdes.flink import _env, _pyflink, _shim, _shim_build

from tests.support.flink_env import client_env
from tests.support.registry_client import registry_client

REPO = Path(__file__).resolve().parents[2]
CONNECTOR_NAME = _shim_build.connector_jar_name()


def _fake_packaged_jar(path: Path, **overrides: str) -> Path:
    """A jar holding only the build record, as if built from the installed sources unless overridden."""
    import pyflink.version

    info = {"sources": _shim_build.sources_hash(), "connector": _shim_build.CONNECTOR_VERSION,
            "flink": pyflink.version.__version__, **overrides}
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(_shim_build.BUILD_INFO_ENTRY, json.dumps(info))
    return path


def test_packaged_jar_built_from_these_sources_is_used(tmp_path):
    jar = _fake_packaged_jar(tmp_path / "shim.jar")
    assert _shim.packaged_shim_jar(CONNECTOR_NAME, jar) == jar


@pytest.mark.parametrize("field, value", [("sources", "0123456789abcdef"), ("flink", "2.1.0"),
                                          ("connector", "4.0.1-2.0")])
def test_packaged_jar_built_from_something_else_is_not_used(tmp_path, field, value):
    jar = _fake_packaged_jar(tmp_path / "shim.jar", **{field: value})
    assert _shim.packaged_shim_jar(CONNECTOR_NAME, jar) is None


def test_packaged_jar_without_a_build_record_is_not_used(tmp_path):
    jar = tmp_path / "shim.jar"
    with zipfile.ZipFile(jar, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    assert _shim.packaged_shim_jar(CONNECTOR_NAME, jar) is None


def test_shim_jar_skips_a_stale_packaged_jar(tmp_path, monkeypatch):
    """Sources changed since the build: shim_jar() goes to the compile path (here: no javac)."""
    connector = tmp_path / CONNECTOR_NAME
    connector.write_bytes(b"PK")
    monkeypatch.setenv("SERDES_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_shim.shutil, "which", lambda name: None)
    stale = _fake_packaged_jar(tmp_path / "pkg" / "shim.jar", sources="0123456789abcdef")
    monkeypatch.setattr(_shim, "PACKAGED_JAR", stale)
    with pytest.raises(sf.ConnectorJarError, match="javac"):
        _shim.shim_jar(connector)
    fresh = _fake_packaged_jar(tmp_path / "pkg" / "shim.jar")
    assert _shim.shim_jar(connector) == fresh  # the same call, matching jar: no javac needed


def test_packaged_flink_version_is_the_flink_extras_floor():
    text = (REPO / "pyproject.toml").read_text()
    assert f'"apache-flink>={_shim_build.FLINK_VERSION},' in text


def test_create_env_takes_the_connector_from_pipeline_jars(monkeypatch):
    connector = sf.kafka_connector_jar()  # fetched (or cached) before fetching is forbidden

    def no_fetch(*args, **kwargs):
        raise AssertionError("create_env fetched a connector although pipeline.jars has one")

    monkeypatch.setattr(_env, "kafka_connector_jar", no_fetch)
    env = sf.create_env(config={"pipeline.jars": connector.as_uri()})
    from pyflink.common import Configuration

    jars = Configuration.parse_list_value(_env._env_config(env).toMap().get("pipeline.jars"))
    assert [j for j in jars if CONNECTOR_NAME in j] == [connector.as_uri()]  # not added twice
    assert any("serdes-flink-shim" in j for j in jars)


def test_configured_connector_jar_must_be_local(tmp_path, monkeypatch):
    monkeypatch.setattr(_env, "kafka_connector_jar", lambda *a, **k: pytest.fail("fetched"))
    with pytest.raises(sf.ConnectorJarError, match="not a local file"):
        sf.create_env(config={"pipeline.jars": (tmp_path / CONNECTOR_NAME).as_uri()})


# --- end to end: the wheel without a JDK or Maven -------------------------------------------------

AVRO_IN = json.dumps({"type": "record", "name": "Reading", "namespace": "serdes.test", "fields": [
    {"name": "sensor", "type": "string"}, {"name": "value", "type": "long"}]})
AVRO_OUT = json.dumps({"type": "record", "name": "Doubled", "namespace": "serdes.test", "fields": [
    {"name": "sensor", "type": "string"}, {"name": "doubled", "type": "long"}]})

JOB = """
import json, shutil, sys
import serdes
from serdes import flink as sf

bootstrap, registry, t_in, t_out, schema = sys.argv[1:6]
env = sf.create_env()
readings = sf.read_kafka(env, bootstrap, t_in, sf.avro(registry), bounded=True)
doubled = readings.map(lambda r: {"sensor": r["sensor"], "doubled": 2 * r["value"]})
sf.write_kafka(doubled, bootstrap, t_out, sf.avro_serializer(registry, schema))
env.execute("shim-from-the-wheel")
print("RESULT " + json.dumps({"serdes": serdes.__file__, "shim": str(sf.shim_jar()),
                              "javac": shutil.which("javac"), "mvn": shutil.which("mvn")}))
"""


def _path_without(names: set[str], farm: Path) -> str:
    """PATH with ``names`` hidden: each PATH directory holding one of them is replaced by a
    directory of symlinks to its other executables, so everything else stays where it was."""
    dirs: list[str] = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or not os.path.isdir(d):
            continue
        if not any(os.path.exists(os.path.join(d, n)) for n in names):
            dirs.append(d)
            continue
        link_dir = farm / f"bin{len(dirs)}"
        link_dir.mkdir(parents=True)
        for entry in os.scandir(d):
            if entry.name not in names:
                (link_dir / entry.name).symlink_to(entry.path)
        dirs.append(str(link_dir))
    return os.pathsep.join(dirs)


def _build_wheel(tmp: Path) -> Path:
    """``pip wheel`` of the checkout's tracked files; cargo and rustc hidden from PATH so the
    optional Rust extension is skipped (this test is about the jar, and the Rust build takes
    minutes). javac and mvn stay visible: the build machine has them."""
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    src = tmp / "src"
    src.mkdir()
    subprocess.run(["tar", "--null", "-T", "-", "-cf", str(tmp / "src.tar")], input=files, cwd=REPO, check=True)
    subprocess.run(["tar", "-xf", str(tmp / "src.tar"), "-C", str(src)], check=True)
    env = {**os.environ, "PATH": _path_without({"cargo", "rustc"}, tmp / "nocargo"),
           "CARGO_HOME": "/nonexistent", "RUSTUP_HOME": "/nonexistent"}
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--disable-pip-version-check", "--no-deps",
                          "-w", str(tmp / "wheels"), str(src)], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    built = re.search(r"serdes: Flink shim jar .*", out.stdout + out.stderr)
    print(built.group(0) if built else "no 'serdes: Flink shim jar' line in the build output")
    (wheel,) = (tmp / "wheels").glob("serdes-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "serdes/flink/_jars/serdes-flink-shim.jar" in names, built.group(0) if built else out.stderr[-2000:]
    return wheel


@pytest.mark.flink
@pytest.mark.integration
@pytest.mark.timeout(1500)
def test_wheel_runs_a_kafka_job_without_jdk_or_maven(tmp_path, kafka_bootstrap, registry_url, new_topic, produce,
                                                     consume):
    installed = _pyflink.pyflink_version()
    if installed != _shim_build.FLINK_VERSION:
        pytest.skip(f"the wheel's shim is compiled against apache-flink {_shim_build.FLINK_VERSION} (the flink "
                    f"extra's floor); on {installed} shim_jar() compiles it with javac at first use (as every "
                    f"other test here does from the checkout), so a job without a JDK cannot run")
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    connector = sf.kafka_connector_jar()  # the client's copy, handed over as SERDES_FLINK_KAFKA_JAR
    wheel = _build_wheel(tmp_path)
    venv = tmp_path / "venv"
    # system site-packages: apache-flink and the other dependencies are reused, not installed
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-index",
                    str(wheel)], check=True, timeout=300)

    client = registry_client(registry_url)
    t_in, t_out = new_topic("shim-in"), new_topic("shim-out")
    ser = AvroSerializer(client, AVRO_IN)
    readings = [{"sensor": f"s{i % 3}", "value": i * 7} for i in range(25)]
    produce(t_in, [(None, ser(r, SerializationContext(t_in, MessageField.VALUE))) for r in readings])

    cache = tmp_path / "cache"
    cache.mkdir()
    run = tmp_path / "run"  # cwd: no serdes checkout next to the job
    run.mkdir()
    env = client_env(drop={"PYTHONPATH", "SERDES_FLINK_SPEEDUPS"})
    env.update(PATH=_path_without({"javac", "mvn"}, tmp_path / "nojdk"), SERDES_CACHE_DIR=str(cache),
               SERDES_FLINK_KAFKA_JAR=str(connector))
    out = subprocess.run([str(py), "-c", JOB, kafka_bootstrap, registry_url, t_in, t_out, AVRO_OUT], cwd=run,
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    (line,) = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    result = json.loads(line[len("RESULT "):])
    site = str(venv / "lib")
    assert result["serdes"].startswith(site), result  # the wheel's serdes, not the editable checkout
    assert result["shim"].startswith(site) and result["shim"].endswith("serdes-flink-shim.jar"), result
    assert result["javac"] is None and result["mvn"] is None, result
    assert not (cache / "serdes-flink-shim").exists()  # nothing compiled at first use

    de = AvroDeserializer(client)
    got = [de(m.value(), SerializationContext(t_out, MessageField.VALUE)) for m in consume(t_out, len(readings))]
    expected = [{"sensor": r["sensor"], "doubled": 2 * r["value"]} for r in readings]
    assert sorted(got, key=lambda d: (d["sensor"], d["doubled"])) == sorted(
        expected, key=lambda d: (d["sensor"], d["doubled"]))
