"""Environment set-up: jars on the classpath, the Python executable, serdes on the workers."""

from __future__ import annotations

import functools
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional
from urllib.parse import unquote, urlparse

from .._errors import ConnectorJarError
from . import _pyflink
from ._jars import CONNECTOR_ARTIFACT, jar_url, kafka_connector_jar
from ._shim import shim_jar

if TYPE_CHECKING:  # pyflink is imported where it is used (create_env)
    from pyflink.datastream import StreamExecutionEnvironment

_CONFIGURED_ATTR = "_serdes_configured"
DEFAULT_BUNDLE_SIZE = 10_000


class _DropBeamGcsWarning(logging.Filter):
    """Beam logs "Failed to import GCSFileSystem" when ``google.cloud`` exists without
    google-cloud-storage (another google-cloud package is installed): Beam then skips its GCS
    filesystem, which a Kafka job never uses.  Only that one message is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to import GCSFileSystem")


def quiet_beam_gcs_warning() -> None:
    """Hide Beam's harmless GCSFileSystem import warning in this process (``create_env`` calls it
    before PyFlink builds a job: the warning comes from ``apache_beam.io.filesystems`` at import,
    in the client process or, on a MiniCluster, in its loopback Python worker)."""
    logger = logging.getLogger("apache_beam.io.filesystems")
    if not any(isinstance(f, _DropBeamGcsWarning) for f in logger.filters):
        logger.addFilter(_DropBeamGcsWarning())


@functools.lru_cache(maxsize=4)
def _fresh_interpreter_finds(pkg: Path) -> bool:
    """Does a fresh ``sys.executable`` (no PYTHONPATH, cwd=/) import this very serdes package?

    Asked once per process (an interpreter start, ~0.2 s, was paid by every ``create_env``); the
    argument is this process's own serdes, so the cache holds one entry."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        out = subprocess.run(
            [sys.executable, "-c", "import serdes, os; print(os.path.dirname(os.path.abspath(serdes.__file__)))"],
            cwd="/", env=env, capture_output=True, text=True, timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and Path(out.stdout.strip()).resolve() == pkg


def _worker_pythonpath() -> Optional[Path]:
    """A stable directory holding only a ``serdes`` symlink, or ``None`` when serdes is installed.

    The workers must import the same serdes as the client.  Shipping a copy with
    ``add_python_file`` breaks thread mode across jobs (the embedded interpreter keeps
    ``serdes`` in ``sys.modules`` while the per-job copy is deleted) and shipping the package
    directory itself would shadow top-level modules (``serdes/avro`` as ``avro``), so a source
    checkout is put on the workers' path with ``python.pythonpath`` instead.
    """
    import hashlib

    import serdes

    pkg = Path(serdes.__file__).resolve().parent
    if _fresh_interpreter_finds(pkg):
        return None
    from .._mvn import cache_dir

    root = cache_dir() / "pythonpath" / hashlib.sha256(str(pkg).encode()).hexdigest()[:12]
    link = root / "serdes"
    if not (link.is_symlink() and link.resolve() == pkg):
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f".serdes.{os.getpid()}"
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(pkg, target_is_directory=True)
        os.replace(tmp, link)
    return root


def _env_config(env: StreamExecutionEnvironment) -> Any:
    return _pyflink.env_config(env)


def configured_connector_jar(env: StreamExecutionEnvironment) -> Optional[str]:
    """The first ``flink-sql-connector-kafka-*.jar`` entry of the environment's ``pipeline.jars``
    (as configured: a ``file:`` URL or a path), or ``None``."""
    from pyflink.common import Configuration

    value = _env_config(env).toMap().get("pipeline.jars")
    for entry in Configuration.parse_list_value(value or ""):
        name = urlparse(str(entry).strip()).path.rsplit("/", 1)[-1]
        if name.startswith(f"{CONNECTOR_ARTIFACT}-") and name.endswith(".jar"):
            return str(entry).strip()
    return None


def _url_path(entry: str) -> Path:
    """The local path of a ``pipeline.jars`` entry (a ``file:`` URL or a plain path)."""
    url = urlparse(entry)
    return Path(unquote(url.path)) if url.scheme == "file" else Path(entry)


def configure(env: StreamExecutionEnvironment, connector_jar: str | os.PathLike[str] | None = None,
              ship_serdes: bool = True) -> StreamExecutionEnvironment:
    """Prepare a ``StreamExecutionEnvironment`` for serdes' Kafka sources/sinks.

    * adds the Kafka connector jar (``connector_jar``, else ``$SERDES_FLINK_KAFKA_JAR``, else
      fetched via mvn) and the record shim with ``env.add_jars``; a connector jar already in the
      environment's ``pipeline.jars`` (e.g. ``create_env(config={"pipeline.jars": ...})``) is used
      instead when ``connector_jar`` is not given: not fetched, not added twice;
    * sets ``python.executable`` to ``sys.executable`` unless one is configured already (local
      runs otherwise spawn ``python`` from PATH, which may lack serdes/pyflink; under
      ``flink run --pyExecutable PY`` or ``-Dpython.executable=PY`` the workers' interpreter,
      which on a remote cluster is not the client's, is kept);
    * puts a source checkout of serdes on the Python workers' path (``python.pythonpath``).

    Idempotent per environment. Returns ``env``.
    """
    if getattr(env, _CONFIGURED_ATTR, False):
        return env
    configured = None if connector_jar else configured_connector_jar(env)
    if configured is not None:
        # in pipeline.jars already (shipped with the job); the client's JVM loads it too, as
        # env.add_jars would, for the KafkaSource/KafkaSink builders
        connector = _url_path(configured)
        if not connector.is_file():
            # the client builds the KafkaSource/KafkaSink with it, so it must be here too
            raise ConnectorJarError(f"the Kafka connector jar in pipeline.jars is not a local file: {configured}")
        _pyflink.load_jars_in_client([jar_url(connector)])
        env.add_jars(jar_url(shim_jar(connector)))
    else:
        connector = kafka_connector_jar(connector_jar)
        env.add_jars(jar_url(connector), jar_url(shim_jar(connector)))
    if not _env_config(env).toMap().get("python.executable"):
        env.set_python_executable(sys.executable)
    if ship_serdes:
        root = _worker_pythonpath()
        if root is not None:
            conf = _env_config(env)
            current = conf.toMap().get("python.pythonpath")
            paths = [p for p in (current or "").split(os.pathsep) if p]
            if str(root) not in paths:
                conf.setString("python.pythonpath", os.pathsep.join(paths + [str(root)]))
    setattr(env, _CONFIGURED_ATTR, True)
    return env


def create_env(
    parallelism: int = 1,
    connector_jar: str | os.PathLike[str] | None = None,
    execution_mode: str | None = None,
    chaining: bool = True,
    config: Dict[str, Any] | None = None,
    strict_types: bool = False,
    speedups: str | None = None,
) -> StreamExecutionEnvironment:
    """A configured ``StreamExecutionEnvironment`` (``execution_mode``: "process" or "thread").

    ``execution_mode="thread"`` (or ``python.execution-mode: thread`` in ``config``): building the
    job (``execute``, ``execute_async``, ``get_execution_plan``) raises
    :class:`~serdes.flink.ThreadModeError` naming every Python operator that PyFlink would run in
    process mode instead (it falls back silently otherwise).

    ``strict_types=True`` (the counterpart of Flink's ``pipeline.generic-types: false``): building
    the job raises :class:`~serdes.flink.StrictTypeError` naming every operator whose output type
    is, or contains, pickled bytes (``PickledByteArrayTypeInfo``, PyFlink's default when no
    ``output_type``/``key_type`` is given); serdes' keyed operators also refuse pickled keyed state
    when the state is requested.  Types inside fused Python operator chains are not checked (no
    coder runs there).

    ``speedups`` (or ``serdes.flink.speedups`` in ``config``): ``"auto"`` (the default), ``"on"`` or
    ``"off"``, the switch of serdes' process-mode speedups of PyFlink (docs/flink.md,
    "The speedups switch"), carried to the Python workers as a global job parameter; without it each worker
    reads the ``SERDES_FLINK_SPEEDUPS`` environment variable.  An invalid value of either raises
    ``ValueError`` here.
    """
    quiet_beam_gcs_warning()
    switch = _speedups_switch(speedups, config)
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    conf = Configuration()
    # python.executable: set by configure() below unless the context (flink run --pyExecutable,
    # config.yaml) or ``config`` names one
    conf.set_string("python.client.executable", sys.executable)
    if execution_mode:
        conf.set_string("python.execution-mode", execution_mode)
    # PyFlink's default bundle of 1,000 elements makes the keyed Python operator wait for a
    # synchronous bundle round trip very often; 10,000 was ~40% faster end to end here
    # (benchmarks/flink_e2e.py).  bundle.time (1 s default) still bounds the latency.
    conf.set_string("python.fn-execution.bundle.size", str(DEFAULT_BUNDLE_SIZE))
    if not chaining:
        # env.disable_operator_chaining() alone does not stop PyFlink from fusing consecutive
        # Python operators into one Python operator (PythonOperatorChainingOptimizer).
        conf.set_string("python.operator-chaining.enabled", "false")
    for k, v in (config or {}).items():
        if k != _pyflink.SPEEDUPS_KEY:  # serdes' own key, not Flink's: a job parameter below
            conf.set_string(k, str(v))
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(parallelism)
    if switch is not None:
        # PyFlink hands a job's global parameters to each Python operator's runtime context
        # (get_job_parameter): the one channel from here to the workers on any deployment
        params = env.get_config().get_global_job_parameters()
        params[_pyflink.SPEEDUPS_KEY] = switch
        env.get_config().set_global_job_parameters(params)
    if not chaining:
        env.disable_operator_chaining()
    from ._graph import install_checks

    mode = (config or {}).get("python.execution-mode", execution_mode)
    install_checks(env, thread_mode=mode == "thread", strict_types=strict_types)
    return configure(env, connector_jar)


def _speedups_switch(speedups: str | None, config: Dict[str, Any] | None) -> str | None:
    """The speedups switch given to create_env (argument, else config key), checked; ``None`` when
    neither is given.  The environment variable is checked too: workers started from this process
    (a MiniCluster, a local cluster) read it."""
    _pyflink.parse_speedups(os.environ.get(_pyflink.SPEEDUPS_ENV), _pyflink.SPEEDUPS_ENV)
    from_config = (config or {}).get(_pyflink.SPEEDUPS_KEY)
    if speedups is not None and from_config is not None and str(speedups) != str(from_config):
        raise ValueError(f"speedups={speedups!r} and config[{_pyflink.SPEEDUPS_KEY!r}]={from_config!r} disagree")
    if speedups is not None:
        return _pyflink.parse_speedups(speedups, "create_env(speedups=...)")
    if from_config is not None:
        return _pyflink.parse_speedups(str(from_config), f"config[{_pyflink.SPEEDUPS_KEY!r}]")
    return None
