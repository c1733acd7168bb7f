"""`python -m serdes.demo` on the standalone cluster (the session's ``flink_cluster``): submitted
with ``flink run --python``, phases printed, every record accounted for."""

from serdes.demo.__main__ import main


def test_demo_on_the_cluster(flink_cluster, kafka_bootstrap, registry_url, capsys):
    rc = main(["-n", "300", "--bootstrap", kafka_bootstrap, "--registry", registry_url], cluster=flink_cluster)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "records out      : 900" in out
    assert "dead-lettered    : 6" in out
    assert f"ran on           : standalone cluster {flink_cluster.rest_url}" in out
    for phase in ("submitting: flink run", "submitted job", "first records out"):
        assert phase in out, out
