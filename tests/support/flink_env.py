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

from serdes.testing._flink_cluster import PYFLINK_PROCESS_ENV

__all__ = ["client_env"]


def client_env(drop: Iterable[str] = ()) -> Dict[str, str]:
    """``os.environ`` without the loopback workers' settings (the list LocalFlinkCluster keeps from
    its processes too) and the names in ``drop``."""
    skip = PYFLINK_PROCESS_ENV | set(drop)
    return {k: v for k, v in os.environ.items() if k not in skip}
