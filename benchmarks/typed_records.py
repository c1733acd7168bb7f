"""Typed records (serdes.typed) against dicts and against confluent-kafka + the same callables, one process.

For the benchmark records of benchmarks/serde_cases.py (Avro ``standard``: ten scalar fields;
``complex``: nested records, an array of records, maps, an enum and logical types; JSON Schema
``standard``), written once by confluent-kafka's serializers on a ``mock://`` registry, each lane
decodes the same frames (``decode``), or encodes the same records (``encode``):

* ``dict``: serdes' deserializer / serializer on plain dicts (the reference of the ratios);
* ``dataclass`` / ``msgspec``: the same with ``from_dict=`` / ``to_dict=serdes.typed.*(cls)`` for
  the dataclass / ``msgspec.Struct`` classes ``python -m serdes.codegen`` writes from the Avro
  schema (Avro decode: built inside the native decoder);
* ``pure dataclass``: the dataclass lane on serdes' pure-Python implementation;
* ``confluent + from_dict`` / ``confluent + to_dict``: confluent-kafka's class with the same
  callable (the fastest correct converter there is for nested classes; a hand-written
  ``Cls(**d)`` is not one for nested records).

Every lane is checked to give the same values (decode) or bytes (encode) before it is timed.
Method (docs/benchmarks.md): interleaved lanes, GC off while timing, ``--repeats`` repeats, the
median ns/record per lane; ratios of medians. The target (issue 25): typed decode within 1.5x of
dict decode.

    python benchmarks/typed_records.py [--repeats 7] [--records 2000]

Writes benchmarks/results/typed_records.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import types
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._results import write_results  # noqa: E402

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry import avro as c_avro  # noqa: E402
from confluent_kafka.schema_registry import json_schema as c_json  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

import serdes.avro as s_avro  # noqa: E402
import serdes.json as s_json  # noqa: E402
from benchmarks import serde_cases as cases  # noqa: E402
from benchmarks.serde.report import environment  # noqa: E402
from benchmarks.serde.timing import timed2  # noqa: E402
from serdes import _native  # noqa: E402
from serdes.codegen import generate  # noqa: E402
from serdes.typed import from_dict, to_dict  # noqa: E402

TARGET = 1.5  # typed / dict, at most


def _schema_str(fmt: str, size: str) -> str:
    s = (cases.AVRO_SCHEMAS if fmt == "avro" else cases.JSON_SCHEMAS)[size]
    return s if isinstance(s, str) else json.dumps(s)


# -- the classes of the benchmark schemas: written by serdes.codegen from the Avro schemas ----------
def _generated(size: str, style: str) -> Any:
    """The record class ``python -m serdes.codegen avro`` writes for a benchmark schema, in a module
    of its own (registered in sys.modules, as an imported module is, for its annotations)."""
    name = f"_typed_records_{size}_{style}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(generate(_schema_str("avro", size), "AVRO", style=style), module.__dict__)  # noqa: S102
    record = json.loads(_schema_str("avro", size))["name"]
    return getattr(module, record)


CLASSES = {size: (_generated(size, "dataclass"), _generated(size, "msgspec")) for size in ("standard", "complex")}
CASES = [("avro", "standard"), ("avro", "complex"), ("json", "standard")]
Call = Callable[[Any, Any], Any]


class Lane(NamedTuple):
    fn: Call
    inputs: List[Any]


def _decode_lanes(fmt: str, size: str, registry: Any, data: List[bytes], ctx: Any) -> Dict[str, Lane]:
    """Each lane built and called once (serdes picks its implementation when a schema's decoder is
    built: at the first record, inside ``forced_pure`` for the pure lane)."""
    dc, st = CLASSES[size]
    schema = _schema_str(fmt, size)

    def ours(**kw: Any) -> Call:
        if fmt == "avro":
            return s_avro.AvroDeserializer(registry, **kw)  # type: ignore[no-any-return]
        return s_json.JSONDeserializer(schema, **kw)  # type: ignore[no-any-return]

    with _native.forced_pure():
        pure = ours(from_dict=from_dict(dc))
        pure(data[0], ctx)
    if fmt == "avro":
        theirs: Call = c_avro.AvroDeserializer(registry, from_dict=from_dict(dc))
    else:
        theirs = c_json.JSONDeserializer(schema, from_dict=from_dict(dc))
    fns = {"dict": ours(), "dataclass": ours(from_dict=from_dict(dc)), "msgspec": ours(from_dict=from_dict(st)),
           "pure dataclass": pure, "confluent + from_dict": theirs}
    return {name: Lane(fn, data) for name, fn in fns.items()}


def _encode_lanes(fmt: str, size: str, registry: Any, recs: List[Any], ctx: Any) -> Dict[str, Lane]:
    dc, st = CLASSES[size]
    schema = _schema_str(fmt, size)
    objects = [from_dict(dc)(r) for r in recs]
    structs = [from_dict(st)(r) for r in recs]

    def ours(**kw: Any) -> Call:
        if fmt == "avro":
            return s_avro.AvroSerializer(registry, schema, **kw)  # type: ignore[no-any-return]
        return s_json.JSONSerializer(schema, registry, **kw)  # type: ignore[no-any-return]

    with _native.forced_pure():
        pure = ours(to_dict=to_dict(dc))
        pure(objects[0], ctx)
    if fmt == "avro":
        theirs: Call = c_avro.AvroSerializer(registry, schema, to_dict=to_dict(dc))
    else:
        theirs = c_json.JSONSerializer(schema, registry, to_dict=to_dict(dc))
    return {"dict": Lane(ours(), recs), "dataclass": Lane(ours(to_dict=to_dict(dc)), objects),
            "msgspec": Lane(ours(to_dict=to_dict(st)), structs), "pure dataclass": Lane(pure, objects),
            "confluent + to_dict": Lane(theirs, objects)}


def run(repeats: int, n: int) -> Dict[str, Any]:
    registry = SchemaRegistryClient.new_client({"url": f"mock://typed-bench-{uuid.uuid4().hex}"})
    out: Dict[str, Any] = {"environment": environment(), "config": {"repeats": repeats, "records": n}, "groups": []}
    for fmt, size in CASES:
        ctx = SerializationContext(f"typed-{fmt}-{size}", MessageField.VALUE)
        recs = cases.records(fmt, size, n)
        ser = c_avro.AvroSerializer(registry, _schema_str(fmt, size)) if fmt == "avro" \
            else c_json.JSONSerializer(_schema_str(fmt, size), registry)
        data = [ser(r, ctx) for r in recs]
        for direction, lanes in (("decode", _decode_lanes(fmt, size, registry, data, ctx)),
                                 ("encode", _encode_lanes(fmt, size, registry, recs, ctx))):
            # every lane gives the same values (decode: the same instances; encode: the same bytes)
            results = {name: [lane.fn(x, ctx) for x in lane.inputs] for name, lane in lanes.items()}
            reference = results["dataclass"]
            for name, got in results.items():
                if name != "dict" and name != "msgspec":
                    assert got == reference, f"{fmt} {size} {direction}: {name} differs"
            if direction == "encode":
                assert results["dict"] == results["msgspec"] == reference, f"{fmt} {size}: encode differs"
            samples: Dict[str, List[float]] = {name: [] for name in lanes}
            names = list(lanes)
            for r in range(repeats):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    samples[name].append(timed2(lanes[name].fn, lanes[name].inputs, ctx)[0])
            median = {name: statistics.median(v) for name, v in samples.items()}
            incumbent = names[-1]
            out["groups"].append({
                "format": fmt, "size": size, "direction": direction, "samples_ns": samples, "median_ns": median,
                "typed_over_dict": {k: median[k] / median["dict"] for k in ("dataclass", "msgspec", "pure dataclass")},
                "incumbent": incumbent, "incumbent_over_typed": median[incumbent] / median["dataclass"],
            })
    return out


def markdown(report: Dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "# Typed records: serdes.typed vs dicts vs confluent-kafka + from_dict / to_dict",
        "",
        f"`python benchmarks/typed_records.py`: {report['config']['records']} records, "
        f"{report['config']['repeats']} interleaved repeats, medians (ns/record). "
        f"confluent-kafka {env['versions'].get('confluent-kafka')}, Python {env['python']}, load average {env['loadavg']}. "
        f"Target: typed decode ≤ {TARGET}x dict decode.",
        "",
        "| direction | format | size | dict | dataclass | msgspec | pure dataclass | confluent-kafka + the same callable "
        "| dataclass / dict | msgspec / dict | confluent-kafka / dataclass |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for g in report["groups"]:
        m = g["median_ns"]
        t = g["typed_over_dict"]
        lines.append(
            f"| {g['direction']} | {g['format']} | {g['size']} | {m['dict']:,.0f} | {m['dataclass']:,.0f} "
            f"| {m['msgspec']:,.0f} | {m['pure dataclass']:,.0f} | {m[g['incumbent']]:,.0f} | {t['dataclass']:.2f}x "
            f"| {t['msgspec']:.2f}x | {g['incumbent_over_typed']:.1f}x |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--records", type=int, default=2000)
    p.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)
    report = run(args.repeats, args.records)
    write_results(args.out_dir, "typed_records", report, [markdown(report)])


if __name__ == "__main__":
    main()
