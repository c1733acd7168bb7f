"""The JVMs the tests start get tests/support/jvm_options.py's options (``JVM_ARGS``)."""

from __future__ import annotations

import os

import pytest

from tests.support import jvm_options


def test_the_suite_runs_with_the_test_jvm_options_or_the_callers_own():
    assert os.environ.get("JVM_ARGS"), "tests/support/jvm_options.py did not set JVM_ARGS"


def test_a_jvm_args_already_set_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("JVM_ARGS", "-Xss2m")
    jvm_options.set_jvm_args()
    assert os.environ["JVM_ARGS"] == "-Xss2m"
    monkeypatch.delenv("JVM_ARGS")
    jvm_options.set_jvm_args()
    assert os.environ["JVM_ARGS"] == jvm_options.TEST_JVM_ARGS


def test_the_gateway_jvm_runs_with_them():
    # the gateway of this process (the MiniCluster of the PyFlink tests here) is launched by
    # PyFlink with JVM_ARGS before its own options
    from pyflink.java_gateway import get_gateway

    bean = get_gateway().jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(bean.getInputArguments())
    assert set(os.environ["JVM_ARGS"].split()) <= set(arguments), arguments


def test_the_gateway_verifies_bytecode_as_jvm_args_say():
    # the main suite skips the verifier (TEST_JVM_ARGS); the flink-newest CI leg keeps it on
    # (VERIFYING_JVM_ARGS): whichever this run has, the gateway's JVM runs with it
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    if "-XX:-BytecodeVerificationRemote" in os.environ["JVM_ARGS"].split():
        diagnostic = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
            jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
        assert diagnostic.getVMOption("BytecodeVerificationRemote").getValue() == "false"
    else:   # the JVM's default: on (the option is diagnostic, so it cannot be read unlocked)
        assert not any("BytecodeVerification" in a for a in arguments), arguments


def test_the_verifying_options_differ_from_the_suites_only_in_the_verifier():
    assert "BytecodeVerification" not in jvm_options.VERIFYING_JVM_ARGS
    assert jvm_options.TEST_JVM_ARGS.split()[:2] == jvm_options.VERIFYING_JVM_ARGS.split()
    assert "-XX:-BytecodeVerificationRemote" in jvm_options.TEST_JVM_ARGS.split()
