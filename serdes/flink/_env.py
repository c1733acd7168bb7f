"""Environment set-up: jars on the classpath, the Python executable, serdes on the workers."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

from ._jars import jar_url, kafka_connector_jar
from ._shim import shim_jar

_CONFIGURED_ATTR = "_serdes_configured"


def _serdes_needs_shipping() -> Optional[Path]:
    """serdes' package dir when it is not importable from site-packages (e.g. a source checkout)."""
    import serdes

    pkg = Path(serdes.__file__).resolve().parent
    if "site-packages" in pkg.parts or "dist-packages" in pkg.parts:
        return None
    return pkg


def _shipping_root(pkg: Path) -> Path:
    """A directory whose only child is a copy of the serdes package.

    ``add_python_file(dir)`` puts ``dir`` itself on the workers' ``sys.path``; shipping the
    package directory directly would make ``serdes/avro`` importable as a top-level ``avro``
    and shadow the real one, so ship a wrapper directory instead.
    """
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="serdes-pyfiles-"))
    shutil.copytree(pkg, root / "serdes", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "java"))
    return root


def configure(env, connector_jar: str | os.PathLike | None = None, ship_serdes: bool = True):
    """Prepare a ``StreamExecutionEnvironment`` for serdes' Kafka sources/sinks.

    * adds the Kafka connector jar (``$SERDES_FLINK_KAFKA_JAR`` or fetched via mvn) and the
      compiled record shim with ``env.add_jars``;
    * sets ``python.executable`` to ``sys.executable`` (local runs otherwise spawn ``python``
      from PATH, which may lack serdes/pyflink);
    * ships the serdes package to the Python workers when it is a source checkout.

    Idempotent per environment. Returns ``env``.
    """
    if getattr(env, _CONFIGURED_ATTR, False):
        return env
    connector = kafka_connector_jar(connector_jar)
    shim = shim_jar(connector)
    env.add_jars(jar_url(connector), jar_url(shim))
    env.set_python_executable(sys.executable)
    if ship_serdes:
        pkg = _serdes_needs_shipping()
        if pkg is not None:
            env.add_python_file(str(_shipping_root(pkg)))
    setattr(env, _CONFIGURED_ATTR, True)
    return env


def create_env(
    parallelism: int = 1,
    connector_jar: str | os.PathLike | None = None,
    execution_mode: str | None = None,
    chaining: bool = True,
    config: dict | None = None,
):
    """A configured ``StreamExecutionEnvironment`` (``execution_mode``: "process" or "thread")."""
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    conf = Configuration()
    conf.set_string("python.executable", sys.executable)
    conf.set_string("python.client.executable", sys.executable)
    if execution_mode:
        conf.set_string("python.execution-mode", execution_mode)
    if not chaining:
        # env.disable_operator_chaining() alone does not stop PyFlink from fusing consecutive
        # Python operators into one Python operator (PythonOperatorChainingOptimizer).
        conf.set_string("python.operator-chaining.enabled", "false")
    for k, v in (config or {}).items():
        conf.set_string(k, str(v))
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(parallelism)
    if not chaining:
        env.disable_operator_chaining()
    return configure(env, connector_jar)


def from_sequence(env, start: int, end: int, name: str = "sequence"):
    """A bounded DataStream of longs ``start..end`` (inclusive) from Flink's NumberSequenceSource.

    (``env.from_collection`` of byte arrays fails and ``execute_and_collect`` is slow; generate
    volume from a sequence instead.)
    """
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    return env.from_source(NumberSequenceSource(start, end), WatermarkStrategy.no_watermarks(), name, Types.LONG())
