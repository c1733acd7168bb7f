"""The JVMs the tests start run the way serdes.testing's servers do: C1 only, serial GC.

Every PyFlink job of the suite runs in a JVM the tests start: PyFlink's gateway (the MiniCluster
of the tests in this process, and of the jobs run in subprocesses), and the standalone cluster's
JobManager, TaskManagers and ``flink run`` client. Their jobs are short and small, so most of
their CPU went to the optimizing JIT compiler (C2) and the G1 collector's threads compiling and
collecting for a steady state the test never reaches; on 2 cores that CPU was taken from the
other worker. ``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC`` (what ``serdes.testing`` already
gives Kafka, the registry and Kafka Connect) took the gateway's CPU for tests/flink/test_debezium.py
from 56 to 35 CPU-seconds. Neither option changes what a job computes.

This plugin (loaded for the whole suite by tests/conftest.py) sets ``JVM_ARGS``, which PyFlink's
gateway launcher and Flink's scripts (``bin/flink``, ``jobmanager.sh``, ``taskmanager.sh``)
prepend to their JVM options, before any of them starts; subprocesses inherit it. A ``JVM_ARGS``
already in the environment is left as it is.
"""

from __future__ import annotations

import os

#: the options every JVM started by the tests gets through ``JVM_ARGS``
TEST_JVM_ARGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def set_jvm_args() -> None:
    os.environ.setdefault("JVM_ARGS", TEST_JVM_ARGS)


def pytest_configure() -> None:
    set_jvm_args()
