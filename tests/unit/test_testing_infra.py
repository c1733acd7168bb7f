"""serdes.testing without servers: backend selection, tool checks, config generation."""

import uuid

import pytest

from serdes.testing import MissingToolError, _backends, _maven
from serdes.testing import LocalKafka, LocalRegistry, free_port
from serdes.testing._kafka import _kafka_uuid, _new_cluster_uuid


@pytest.fixture
def clean_env(monkeypatch):
    for var in ("SERDES_TEST_BACKEND", "SERDES_TEST_BOOTSTRAP", "SERDES_TEST_REGISTRY_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(_backends, "docker_available", lambda: False)
    return monkeypatch


def test_external_backend_when_both_env_vars_set(clean_env):
    clean_env.setenv("SERDES_TEST_BOOTSTRAP", "127.0.0.1:9092")
    clean_env.setenv("SERDES_TEST_REGISTRY_URL", "http://127.0.0.1:8081/")
    assert _backends.select_backend().backend == "external"
    servers = _backends.make_test_servers()
    assert servers.registry_url == "http://127.0.0.1:8081"
    assert not servers.can_restart_registry


def test_local_is_the_fallback_and_docker_is_preferred(clean_env):
    assert _backends.select_backend().backend == "local"
    clean_env.setattr(_backends, "docker_available", lambda: True)
    assert _backends.select_backend().backend == "docker"
    clean_env.setenv("SERDES_TEST_BACKEND", "local")
    assert _backends.select_backend().backend == "local"


def test_bad_backend_name(clean_env):
    clean_env.setenv("SERDES_TEST_BACKEND", "kubernetes")
    with pytest.raises(ValueError, match="local, docker, external"):
        _backends.select_backend()


def test_missing_maven_is_named(clean_env):
    real_which = _maven.shutil.which
    clean_env.setattr(_maven.shutil, "which", lambda n: None if n == "mvn" else real_which(n))
    with pytest.raises(MissingToolError, match="`mvn`"):
        _backends.make_test_servers(_backends.Selection("local", "test"))


def test_cache_dir_override(clean_env, tmp_path):
    clean_env.setenv("SERDES_CACHE_DIR", str(tmp_path))
    assert _maven.kafka_lib_dir("4.1.1") == tmp_path / "kafka-2.13-4.1.1" / "lib"


def test_kafka_cluster_id_format():

    cid = _kafka_uuid(uuid.uuid4())
    assert len(cid) == 22 and "=" not in cid
    # 1 in 64 random ids starts with "-", which kafka-storage's "-t ID" read as an option
    assert _kafka_uuid(uuid.UUID(bytes=b"\xf8" + bytes(15))).startswith("-")
    assert not any(_kafka_uuid(_new_cluster_uuid()).startswith("-") for _ in range(2000))


def test_kafka_storage_format_passes_the_cluster_id_as_one_argument(tmp_path, monkeypatch):
    import subprocess

    import serdes.testing._kafka as kafka_mod

    kafka = LocalKafka(port=free_port(), workdir=tmp_path / "k")
    kafka.cluster_id = uuid.UUID(bytes=b"\xf8" + bytes(15))  # text starts with "-"
    seen = {}

    def fake_run(cmd, **kwargs):
        seen["cmd"] = cmd
        return subprocess.CompletedProcess(cmd, 0, "")

    monkeypatch.setattr(kafka_mod.subprocess, "run", fake_run)
    monkeypatch.setattr(LocalKafka, "_jvm", lambda self, *args, initial_heap=None: ["java", *args])
    kafka._format_storage()
    assert f"--cluster-id={_kafka_uuid(kafka.cluster_id)}" in seen["cmd"]


def test_server_objects_need_no_process(tmp_path):
    kafka = LocalKafka(port=free_port(), workdir=tmp_path / "k")
    registry = LocalRegistry(port=free_port(), workdir=tmp_path / "r")
    assert kafka.bootstrap_servers.startswith("127.0.0.1:")
    assert registry.url.endswith("/apis/ccompat/v7")
    assert not kafka.running and not registry.running
    kafka.stop()  # stopping a never-started server is a no-op
    registry.stop()


def test_maven_repository_is_under_the_serdes_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("SERDES_MAVEN_REPO_LOCAL", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert _maven.maven_repo_local() == (tmp_path / ".cache" / "serdes" / "m2").resolve()  # not ~/.m2
    monkeypatch.setenv("SERDES_MAVEN_REPO_LOCAL", str(tmp_path / "shared"))
    assert _maven.maven_repo_local() == (tmp_path / "shared").resolve()


# -- the CDC servers: LocalPostgres, LocalKafkaConnect (configuration only; the real ones run in
# tests/integration/test_debezium_real.py) -----------------------------------------------------

def test_postgres_runs_with_logical_decoding_on_loopback(tmp_path, monkeypatch):
    from serdes.testing import _postgres

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("initdb", "postgres"):
        (bin_dir / tool).write_text("")
    monkeypatch.setenv("SERDES_PG_BIN", str(bin_dir))
    assert _postgres.find_postgres_bin() == bin_dir
    pg = _postgres.LocalPostgres(port=5999, workdir=tmp_path / "w", settings={"max_wal_senders": "3"})
    pg.bin_dir = bin_dir
    cmd = pg._command()
    settings = dict(cmd[i + 1].split("=", 1) for i, a in enumerate(cmd) if a == "-c")
    assert settings["wal_level"] == "logical" and settings["listen_addresses"] == "127.0.0.1"
    assert settings["port"] == "5999" and settings["max_wal_senders"] == "3"
    assert pg.dsn == "postgresql://postgres@127.0.0.1:5999/serdes"


def test_postgres_under_root_runs_as_another_user(monkeypatch):
    from serdes.testing import _postgres

    monkeypatch.setattr(_postgres.os, "geteuid", lambda: 0)
    user = _postgres._server_user()
    assert user is not None and user.pw_uid != 0 and user.pw_name in _postgres._SERVER_USERS
    monkeypatch.setattr(_postgres.pwd, "getpwnam", lambda name: (_ for _ in ()).throw(KeyError(name)))
    with pytest.raises(MissingToolError, match="refuses to run as root"):
        _postgres._server_user()
    monkeypatch.setattr(_postgres.os, "geteuid", lambda: 1000)
    assert _postgres._server_user() is None


def test_postgres_missing_binaries_is_a_missing_tool_error(tmp_path, monkeypatch):
    from serdes.testing import _postgres

    monkeypatch.setenv("SERDES_PG_BIN", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(_postgres.glob, "glob", lambda pattern: [])
    with pytest.raises(MissingToolError, match="apt-get install postgresql"):
        _postgres.find_postgres_bin()


def test_connect_worker_config(tmp_path):
    from serdes.testing import LocalKafkaConnect

    c = LocalKafkaConnect("127.0.0.1:1234", port=8083, workdir=tmp_path, extra_properties={"a.b": "c"})
    props = c._properties()
    assert props["bootstrap.servers"] == "127.0.0.1:1234" and props["listeners"] == "http://127.0.0.1:8083"
    assert props["plugin.path"] == str(_maven.connect_plugin_dir())
    assert props["offset.storage.file.filename"].startswith(str(tmp_path)) and props["a.b"] == "c"
    assert c.url == "http://127.0.0.1:8083"


def test_cdc_artifacts_share_the_broker_kafka_version():
    sets = _maven._CDC_SETS
    assert ("org.apache.kafka", "connect-runtime", _maven.KAFKA_VERSION) in sets["connect"][1]
    assert all(v == _maven.DEBEZIUM_VERSION for _, _, v in sets["debezium"][1])
    assert str(_maven.cdc_home()).startswith(str(_maven.cache_dir()))  # outside the repository


def test_flink_cluster_processes_leave_out_what_a_local_pyflink_job_left(tmp_path, monkeypatch):
    """A process that ran a local PyFlink job has its loopback workers' settings in os.environ;
    a LocalFlinkCluster started there must not hand them to its JobManager, TaskManagers and
    ``flink`` CLI (a TaskManager would run its Python functions in this process)."""
    from serdes.testing import LocalFlinkCluster
    from serdes.testing._flink_cluster import PYFLINK_PROCESS_ENV

    assert {"PYTHON_LOOPBACK_SERVER_ADDRESS", "PYFLINK_GATEWAY_DISABLED"} <= PYFLINK_PROCESS_ENV
    for name in PYFLINK_PROCESS_ENV:
        monkeypatch.setenv(name, "left by a local job")
    monkeypatch.setenv("SERDES_TEST_KEPT", "yes")
    cluster = LocalFlinkCluster(workdir=tmp_path)
    env = cluster.environ()
    left = {k for k, v in env.items() if v == "left by a local job"}
    assert not left, sorted(left)
    assert env["SERDES_TEST_KEPT"] == "yes"
    assert env["FLINK_CONF_DIR"] == str(cluster.conf_dir)
