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

They also run without the JVM's load-time bytecode verification (``-XX:-BytecodeVerificationRemote``,
a diagnostic option, hence ``-XX:+UnlockDiagnosticVMOptions``). Each local PyFlink job loads the
Kafka connector and Flink's runtime classes again in a class loader of its own, and verifying
them was a quarter of the machine's CPU for tests/flink/test_debezium.py (98 -> 74 CPU-seconds).
The verifier checks class files against malformed bytecode; the classes here are Flink's, the
connector's and serdes' shim (javac's output), and no test is about the verifier. One CI leg keeps
it: ``scripts/test-matrix.sh flink-newest`` runs the PyFlink and standalone-cluster tests with
``VERIFYING_JVM_ARGS``, so serdes' shim jar is verified on a MiniCluster and on a cluster.
"""

from __future__ import annotations

import os

#: C1 only and the serial GC, the JVM's bytecode verification left on (the flink-newest CI leg)
VERIFYING_JVM_ARGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: the options every JVM started by the tests gets through ``JVM_ARGS`` unless it is set already
TEST_JVM_ARGS = VERIFYING_JVM_ARGS + " -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"


def set_jvm_args() -> None:
    os.environ.setdefault("JVM_ARGS", TEST_JVM_ARGS)


def pytest_configure() -> None:
    set_jvm_args()
