"""Smoke test of benchmarks/serde_bench.py: tiny run, report structure, same values as confluent.

No timing assertions: the numbers of a 1-repeat run on a shared machine mean nothing. A serdes
format that is not importable shows up as an ``n/a`` lane in the report and fails these checks.
"""

from __future__ import annotations

import json
import uuid

import pytest

from benchmarks import serde_bench, serde_cases

TINY = ["--records", "12", "--repeats", "1", "--no-png", "--quiet"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    rep = serde_bench.main(TINY + ["--out-dir", str(out)])
    return out, rep


def _ours_available(fmt: str) -> bool:
    try:
        mod = serde_bench._ours_module(fmt)
    except ImportError:
        return False
    return all(hasattr(mod, n) for n in serde_bench._CLASS_NAMES[fmt])


def test_report_files_and_structure(report):
    out, rep = report
    assert not (out / "serde.png").exists()
    on_disk = json.loads((out / "serde.json").read_text())
    assert on_disk["report_version"] == serde_bench.REPORT_VERSION
    env = on_disk["environment"]
    for key in ("python", "cpu_model", "date"):
        assert env[key]
    for key in ("serdes", "confluent-kafka", "fastavro", "protobuf", "protobuf_backend", "orjson", "jsonschema-rs"):
        assert key in env["versions"]
    assert env["versions"]["protobuf_backend"] in ("upb", "cpp", "python")
    cfg = on_disk["config"]
    assert cfg["repeats"] == 1 and cfg["records"] == 12

    results = on_disk["results"]
    keys = {(r["format"], r["size"], r["direction"]) for r in results}
    assert keys == {
        (f, s, d) for f in serde_bench.FORMATS for s in serde_bench.SIZES for d in serde_bench.DIRECTIONS
    }
    for r in results:
        assert set(r["lanes"]) == set(serde_bench.LANES)
        for name in ("confluent", "floor"):  # the references always run
            lane = r["lanes"][name]
            assert lane["available"], (r["format"], r["size"], r["direction"], name, lane.get("error"))
            assert len(lane["samples_ns"]) == 1 and lane["n_records"] == 12
            assert lane["median_ns"] > 0
        ours = r["lanes"]["serdes"]
        if ours["available"]:
            assert len(ours["samples_ns"]) == 1 and ours["median_ns"] > 0
            assert r["ratios"]["serdes/confluent"] > 0
            assert r["met"]["serdes/confluent"] in (True, False)
        else:
            assert ours["error"]
            assert r["ratios"]["serdes/confluent"] is None
        assert set(r["targets"]) >= {"serdes/confluent", "serdes/floor"}
        assert r["check"]["floor"]["ok"] is True, r["check"]["floor"]

    md = (out / "serde.md").read_text()
    assert "| format | size | direction | ours ns | confluent ns | floor ns |" in md
    assert md.count("\n| avro |") == 6 and md.count("\n| protobuf |") == 6 and md.count("\n| json |") == 6


@pytest.mark.parametrize("fmt", serde_bench.FORMATS)
def test_report_check_ours_matches_confluent(report, fmt):
    _, rep = report
    assert _ours_available(fmt), f"serdes.{fmt} is missing"
    for r in rep["results"]:
        if r["format"] != fmt:
            continue
        chk = r["check"]["serdes"]
        assert chk["ok"] is True, (r["size"], r["direction"], chk)
        assert r["lanes"]["serdes"]["available"], r["lanes"]["serdes"]


@pytest.mark.parametrize("size", serde_bench.SIZES)
@pytest.mark.parametrize("fmt", serde_bench.FORMATS)
def test_ours_decodes_same_values_as_confluent(fmt, size):
    """Independent of the report: confluent frames decode to the same values with both, and
    serdes frames decode (with confluent) back to the records."""
    assert _ours_available(fmt), f"serdes.{fmt} is missing"
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    registry = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})
    ctx = SerializationContext(f"smoke-{fmt}-{size}", MessageField.VALUE)
    conf = serde_bench._confluent_module(fmt)
    ours = serde_bench._ours_module(fmt)
    conf_ser = serde_bench._make_serde(conf, fmt, size, "serialize", registry)
    conf_de = serde_bench._make_serde(conf, fmt, size, "deserialize", registry)
    ours_ser = serde_bench._make_serde(ours, fmt, size, "serialize", registry)
    ours_de = serde_bench._make_serde(ours, fmt, size, "deserialize", registry)
    recs = serde_cases.records(fmt, size, 25, seed=7)
    for rec in recs:
        framed = conf_ser(rec, ctx)
        expected = conf_de(framed, ctx)
        assert ours_de(framed, ctx) == expected
        assert conf_de(ours_ser(rec, ctx), ctx) == expected
        assert ours_de(ours_ser(rec, ctx), ctx) == expected
    if fmt == "protobuf":
        assert conf_de(conf_ser(recs[0], ctx), ctx) == recs[0]
    elif fmt == "json":
        assert conf_de(conf_ser(recs[0], ctx), ctx) == recs[0]


def test_cli_lists_and_selection(tmp_path):
    rep = serde_bench.main(
        ["--formats", "avro", "--sizes", "trivial", "--directions", "deserialize", "--lanes", "confluent,floor",
         "--out-dir", str(tmp_path)] + TINY
    )
    assert [(r["format"], r["size"], r["direction"]) for r in rep["results"]] == [("avro", "trivial", "deserialize")]
    assert rep["results"][0]["lanes"]["serdes"]["available"] is False
    with pytest.raises(SystemExit):
        serde_bench.parse_args(["--formats", "xml"])
