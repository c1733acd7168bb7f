"""The environment a fresh PyFlink client process should start from.

A PyFlink job run in loopback mode inside a test process leaves its worker settings in
``os.environ`` (``BeamFnLoopbackWorkerPoolServicer`` updates it with the worker's environment),
among them ``PYFLINK_GATEWAY_DISABLED``, which stops a child process from starting its own JVM
("launching the PythonGatewayServer during Python UDF execution"). A test that starts a new client
process hands it :func:`client_env` instead of ``os.environ``.
"""

from __future__ import annotations

import os
from typing import Dict, Iterable

__all__ = ["LOOPBACK_ENV", "client_env"]

LOOPBACK_ENV = frozenset((
    "PYFLINK_GATEWAY_DISABLED", "PYFLINK_GATEWAY_PORT", "PYTHON_LOOPBACK_SERVER_ADDRESS", "BOOT_LOG_DIR",
    "SEMI_PERSISTENT_DIRECTORY", "_PYFLINK_CONN_INFO_PATH", "_PYTHON_WORKER_MEMORY_LIMIT", "_PYTHON_WORKING_DIR",
    "TABLE_LOCAL_TIME_ZONE", "FLINK_HOME", "FLINK_BIN_DIR", "FLINK_CONF_DIR", "FLINK_LIB_DIR", "FLINK_OPT_DIR",
    "FLINK_PLUGINS_DIR", "FLINK_LOG_DIR", "python",
))


def client_env(drop: Iterable[str] = ()) -> Dict[str, str]:
    """``os.environ`` without the loopback workers' settings and the names in ``drop``."""
    skip = LOOPBACK_ENV | set(drop)
    return {k: v for k, v in os.environ.items() if k not in skip}
