"""Smoke test of benchmarks/serde_bench.py: tiny run, report structure, same values as confluent.

No timing assertions: the numbers of a 1-repeat run on a shared machine mean nothing. A serdes
format that is not importable shows up as an ``n/a`` lane in the report and fails these checks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from benchmarks import serde_bench, serde_cases
from benchmarks.serde import lanes, memory, report

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--records", "12", "--repeats", "1", "--batch", "30", "--no-png", "--quiet"]


@pytest.fixture(scope="module")
def bench_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    rep = serde_bench.main(TINY + ["--out-dir", str(out)])
    return out, rep


def _ours_available(fmt: str) -> bool:
    try:
        mod = lanes.ours_module(fmt)
    except ImportError:
        return False
    return all(hasattr(mod, n) for n in lanes.CLASS_NAMES[fmt])


def _codec(results):
    return [r for r in results if r["kind"] == "codec"]


def test_report_files_and_structure(bench_report):
    out, rep = bench_report
    assert not (out / "serde.png").exists()
    on_disk = json.loads((out / "serde.json").read_text())
    assert on_disk["report_version"] == serde_bench.REPORT_VERSION == 2
    env = on_disk["environment"]
    for key in ("python", "cpu_model", "date"):
        assert env[key]
    for key in ("serdes", "confluent-kafka", "fastavro", "protobuf", "protobuf_backend", "orjson", "jsonschema-rs"):
        assert key in env["versions"]
    assert env["versions"]["protobuf_backend"] in ("upb", "cpp", "python")
    assert isinstance(env["native_extension"]["loaded"], bool)
    cfg = on_disk["config"]
    assert cfg["repeats"] == 1 and cfg["records"] == 12 and cfg["batch_records"] == 30
    assert on_disk["memory"] == []  # --memory not given

    results = _codec(on_disk["results"])
    keys = {(r["format"], r["size"], r["direction"]) for r in results}
    assert keys == {
        (f, s, d) for f in serde_bench.FORMATS for s in serde_bench.SIZES for d in serde_bench.DIRECTIONS
    }
    for r in results:
        assert set(r["lanes"]) == set(serde_bench.LANES) == {"native", "pure", "confluent", "floor"}
        for name in ("confluent", "floor"):  # the references always run
            lane = r["lanes"][name]
            assert lane["available"], (r["format"], r["size"], r["direction"], name, lane.get("error"))
            assert len(lane["samples_ns"]) == 1 and lane["n_records"] == 12
            assert lane["median_ns"] > 0
        for name in ("native", "pure"):
            ours = r["lanes"][name]
            if ours["available"]:
                assert len(ours["samples_ns"]) == 1 and ours["median_ns"] > 0
                assert r["ratios"][f"{name}/confluent"] > 0
            else:
                assert ours["error"]
                assert r["ratios"][f"{name}/confluent"] is None
        # the pure lane is pure whatever is installed; the native lane says what it ran
        assert r["lanes"]["pure"]["implementation"] == "pure"
        expected_native = "native" if env["native_extension"]["loaded"] else "pure"
        assert r["lanes"]["native"]["implementation"] == expected_native
        assert {"pure/confluent", "pure/floor"} <= set(r["targets"])
        assert set(r["met"]) == set(r["targets"])
        assert r["check"]["floor"]["ok"] is True, r["check"]["floor"]

    md = (out / "serde.md").read_text()
    assert "| format | size | direction | native ns | pure ns | confluent ns | floor ns |" in md
    assert md.count("\n| avro |") == 6 and md.count("\n| protobuf |") == 6 and md.count("\n| json |") == 6
    assert "| records per batch |" in md and "\n| 30 |" in md


def test_batch_lanes(bench_report):
    _, rep = bench_report
    (batch,) = [r for r in rep["results"] if r["kind"] == "batch"]
    assert (batch["format"], batch["size"], batch["direction"]) == ("avro", "standard", "deserialize")
    assert set(batch["lanes"]) == set(lanes.BATCH_LANES)
    for impl in lanes.SERDES_LANES:
        assert batch["check"][impl]["ok"] is True, batch["check"][impl]
        assert batch["lanes"][f"{impl}_batch"]["records_per_call"] == 30
        assert batch["lanes"][f"{impl}_batch"]["available"] and batch["lanes"][f"{impl}_record"]["available"]
        assert batch["ratios"][f"{impl} batch/record"] > 0
    assert batch["lanes"]["pure_batch"]["implementation"] == "pure"
    assert set(batch["met"]) == {"native batch/record"}


@pytest.mark.parametrize("fmt", serde_bench.FORMATS)
def test_report_check_ours_matches_confluent(bench_report, fmt):
    _, rep = bench_report
    assert _ours_available(fmt), f"serdes.{fmt} is missing"
    for r in _codec(rep["results"]):
        if r["format"] != fmt:
            continue
        for impl in lanes.SERDES_LANES:
            chk = r["check"][impl]
            assert chk["ok"] is True, (r["size"], r["direction"], impl, chk)
            assert r["lanes"][impl]["available"], r["lanes"][impl]


@pytest.mark.parametrize("impl", lanes.SERDES_LANES)
@pytest.mark.parametrize("size", serde_bench.SIZES)
@pytest.mark.parametrize("fmt", serde_bench.FORMATS)
def test_ours_decodes_same_values_as_confluent(fmt, size, impl):
    """Independent of the report: confluent frames decode to the same values with both, and
    serdes frames decode (with confluent) back to the records -- per implementation."""
    assert _ours_available(fmt), f"serdes.{fmt} is missing"
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    registry = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})
    ctx = SerializationContext(f"smoke-{fmt}-{size}", MessageField.VALUE)
    conf = lanes.confluent_module(fmt)
    conf_ser = lanes.make_serde(conf, fmt, size, "serialize", registry)
    conf_de = lanes.make_serde(conf, fmt, size, "deserialize", registry)
    recs = serde_cases.records(fmt, size, 25, seed=7)
    first = conf_ser(recs[0], ctx)
    ours_ser = lanes.build_serdes(impl, fmt, size, "serialize", registry, recs[0], ctx)
    ours_de = lanes.build_serdes(impl, fmt, size, "deserialize", registry, first, ctx)
    for rec in recs:
        framed = conf_ser(rec, ctx)
        expected = conf_de(framed, ctx)
        assert ours_de(framed, ctx) == expected
        assert conf_de(ours_ser(rec, ctx), ctx) == expected
        assert ours_de(ours_ser(rec, ctx), ctx) == expected
    if fmt in ("protobuf", "json"):
        assert conf_de(conf_ser(recs[0], ctx), ctx) == recs[0]


def test_pure_lane_is_built_inside_forced_pure(monkeypatch):
    """The pure lane's objects are built and first called with serdes._native.active() None, the
    native lane's as installed -- whatever the extension covers, the lanes stay what they say."""
    from serdes import _native

    seen = {}

    def fake_make(mod, fmt, size, direction, registry):
        seen["built"] = _native.active()

        def call(x, ctx):
            seen["called"] = _native.active()

        return call

    monkeypatch.setattr(lanes, "make_serde", fake_make)
    monkeypatch.setattr(_native, "native", object())  # as if the extension were loaded
    lanes.build_serdes("pure", "avro", "trivial", "deserialize", None, b"", None)
    assert seen == {"built": None, "called": None}
    lanes.build_serdes("native", "avro", "trivial", "deserialize", None, b"", None)
    assert seen["built"] is _native.native and seen["called"] is _native.native
    assert lanes.built_implementation("native") == "native" and lanes.built_implementation("pure") == "pure"


def test_cli_lists_and_selection(tmp_path):
    rep = serde_bench.main(
        ["--formats", "avro", "--sizes", "trivial", "--directions", "deserialize", "--lanes", "confluent,floor",
         "--out-dir", str(tmp_path)] + TINY
    )
    assert [(r["format"], r["size"], r["direction"]) for r in rep["results"]] == [("avro", "trivial", "deserialize")]
    assert rep["results"][0]["lanes"]["native"]["available"] is False
    assert rep["results"][0]["lanes"]["pure"]["available"] is False
    assert serde_bench.parse_args(["--lanes", "serdes"]).lanes == ["native", "pure"]
    with pytest.raises(SystemExit):
        serde_bench.parse_args(["--formats", "xml"])


def test_script_entry_point_and_version_1_report(tmp_path):
    """``python benchmarks/serde_bench.py`` runs as a script; --from-json re-renders a report of
    the one-``serdes``-lane format (version 1) in the current table."""
    v1 = {
        "report_version": 1,
        "environment": {"date": "d", "python": "3", "cpu_model": "cpu", "cpu_count": 2, "git_commit": "abc",
                        "versions": {k: "1" for k in ("serdes", "confluent-kafka", "fastavro", "protobuf",
                                                      "protobuf_backend", "orjson", "jsonschema-rs")}},
        "config": {"repeats": 1, "target_time_s": 0.1, "records": None, "wall_time_s": 1},
        "results": [{
            "format": "avro", "size": "standard", "direction": "deserialize", "check": {"serdes": {"ok": True}},
            "lanes": {name: {"available": True, "median_ns": ns, "min_ns": ns, "max_ns": ns, "samples_ns": [ns]}
                      for name, ns in (("serdes", 50.0), ("confluent", 1000.0), ("floor", 100.0))},
        }],
    }
    src = tmp_path / "v1.json"
    src.write_text(json.dumps(v1))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "benchmarks/serde_bench.py", "--from-json", str(src), "--no-png",
                           "--out-dir", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    md = (out / "serde.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| avro | standard | deserialize |"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[3] == "n/a"  # native: not in a version-1 report
    assert cells[4].startswith("50.0") and cells[9] == "0.050"  # pure ns, pure/confluent


def test_memory_measurement_child(tmp_path):
    """The --memory lane's child process on a small batch: both measurements, sane numbers."""
    for mode in memory.MODES:
        proc = subprocess.run([sys.executable, "-m", "benchmarks.serde.memory", "--lane", "pure", "--mode", mode,
                               "--records", "2000"], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        assert got["implementation"] == "pure" and got["records"] == 2000
        if "error" not in got:  # RSS needs Linux's /proc; tracemalloc always works
            assert got["peak_bytes"] > 0 and got["bytes_per_record"] > 0
        else:
            assert mode == "rss"
    rep = {"environment": {}, "results": [], "memory": [
        {"lane": "pure", "mode": "tracemalloc", "implementation": "pure", "records": 10, "peak_bytes": 2**20,
         "bytes_per_record": 104857.6},
        {"lane": "pure", "mode": "rss", "implementation": "pure", "records": 10, "peak_bytes": 2 * 2**20,
         "bytes_per_record": 209715.2, "seconds": 0.1}]}
    rep["environment"] = json.loads(json.dumps({"date": "d", "python": "3", "cpu_model": "c", "cpu_count": 1,
                                                "versions": {k: "1" for k in ("serdes", "confluent-kafka", "fastavro",
                                                                              "protobuf", "protobuf_backend", "orjson",
                                                                              "jsonschema-rs")}}))
    rep["config"] = {"repeats": 1, "target_time_s": 0.1}
    md = report.markdown_table(rep)
    assert "| pure | pure | 10 | 1 MiB | 104,858 | 2 MiB | 209,715 | 0.1 |" in md


def test_missing_matplotlib_skips_the_chart_after_the_results(bench_report, tmp_path, monkeypatch, capsys):
    """Without matplotlib (an optional library) a run writes serde.json and serde.md and skips the
    chart with one line, instead of crashing after the whole measurement. The outputs of a run and
    of ``--from-json`` are written by one function (``_report.write_outputs``), so the tiny run's
    report is rewritten here with the chart asked for, rather than measured again."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # ``import matplotlib`` raises ImportError
    measured, _ = bench_report
    out = tmp_path / "bench"
    capsys.readouterr()
    rep = serde_bench.main(["--from-json", str(measured / "serde.json"), "--out-dir", str(out)])
    assert json.loads((out / "serde.json").read_text())["config"] == rep["config"]
    assert (out / "serde.md").read_text().startswith("# ")
    assert not (out / "serde.png").exists()
    err = [line for line in capsys.readouterr().err.splitlines() if "matplotlib" in line]
    assert len(err) == 1 and err[0].startswith("serde.png not drawn: matplotlib is not installed"), err
