"""`python -m serdes.demo --local` (MiniCluster in this process) against the test servers (small
record count); the default, on a standalone cluster, is tested in tests/cluster/test_cluster_demo.py."""

import pytest

pytestmark = [pytest.mark.flink, pytest.mark.integration, pytest.mark.timeout(300)]


def test_demo_runs_and_accounts_for_every_record(kafka_bootstrap, registry_url, capsys):
    from serdes.demo.__main__ import main

    rc = main(["-n", "300", "--local", "--bootstrap", kafka_bootstrap, "--registry", registry_url])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "records out      : 900" in out
    assert "dead-lettered    : 6" in out
