"""serdes (native and pure Python) vs confluent-kafka vs the raw codec floor, every format side by side in one process.

Run from the repository root::

    python benchmarks/serde_bench.py                 # full run: 7 repeats of ~0.2 s per lane
    python benchmarks/serde_bench.py --quick         # 3 repeats of ~0.05 s per lane
    python -m benchmarks.serde_bench --formats avro --sizes standard,complex --directions deserialize
    python -m benchmarks.serde_bench --memory        # also the peak memory of a 1M-record batch decode

For every (format, size, direction) there are four lanes, all in this process, all on the same
confluent ``mock://`` Schema Registry client and the same records:

* ``native``    -- ``serdes.<format>`` serializer/deserializer as installed, called as ``(data, ctx)``;
* ``pure``      -- the same classes built inside ``serdes._native.forced_pure()`` (pure Python);
* ``confluent`` -- ``confluent_kafka.schema_registry.<format>`` serializer/deserializer, same args;
* ``floor``     -- the bare codec with no registry framing: fastavro ``schemaless_writer`` /
  ``schemaless_reader`` (with ``BytesIO``), Protobuf ``SerializeToString`` / ``FromString``, and
  ``orjson.dumps``/``orjson.loads`` plus a jsonschema-rs validity check.

Plus a batch group: ``deserialize_batch`` of ``--batch`` (10,000) standard Avro records against as
many per-record calls, per implementation; and with ``--memory`` the peak memory (tracemalloc and
RSS) of one ``deserialize_batch`` of ``--memory-records`` (1,000,000) records.

A lane whose implementation cannot be imported or built is reported as ``n/a`` with the reason;
the others still run. See docs/benchmarks.md for the method. The pieces: benchmarks/serde_cases.py
(records and schemas), benchmarks/serde/ (lanes, timing, memory, report).

Outputs (``--out-dir``, default ``benchmarks/results``): ``serde.json`` (environment, config, every
sample), ``serde.md`` (the tables) and ``serde.png`` (log-scale bar chart; ``--no-png`` skips it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

if __package__ in (None, ""):  # ``python benchmarks/serde_bench.py``: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.serde import lanes as _lanes  # noqa: E402
from benchmarks.serde import memory as _memory  # noqa: E402
from benchmarks.serde import report as _report  # noqa: E402
from benchmarks.serde import timing as _timing  # noqa: E402

FORMATS = _lanes.FORMATS
SIZES = _lanes.SIZES
DIRECTIONS = _lanes.DIRECTIONS
LANES = _lanes.LANES
REPORT_VERSION = _report.REPORT_VERSION
#: ``--lanes`` names that stand for several lanes (``serdes``: both implementations)
LANE_ALIASES = {"serdes": _lanes.SERDES_LANES}


def _csv(choices: Sequence[str], aliases: Optional[Dict[str, Sequence[str]]] = None) -> Callable[[str], List[str]]:
    aliases = aliases or {}

    def parse(s: str) -> List[str]:
        items = [x.strip() for x in s.split(",") if x.strip()]
        if items == ["all"]:
            return list(choices)
        items = [y for x in items for y in aliases.get(x, (x,))]
        bad = [x for x in items if x not in choices]
        if bad or not items:
            names = ", ".join([*choices, *aliases])
            raise argparse.ArgumentTypeError(f"choose from {names} (comma separated) or 'all'")
        return [c for c in choices if c in items]

    return parse


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python benchmarks/serde_bench.py", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--formats", type=_csv(FORMATS), default=list(FORMATS), help="avro,protobuf,json (default all)")
    p.add_argument("--sizes", type=_csv(SIZES), default=list(SIZES), help="trivial,standard,complex (default all)")
    p.add_argument("--directions", type=_csv(DIRECTIONS), default=list(DIRECTIONS), help="serialize,deserialize")
    p.add_argument("--lanes", type=_csv(LANES, LANE_ALIASES), default=list(LANES),
                   help="native,pure,confluent,floor (default all; serdes = native,pure)")
    p.add_argument("--quick", action="store_true", help="3 repeats of ~0.05 s per lane, 200 distinct records")
    p.add_argument("--repeats", type=int, default=None, help="repeats per lane (default 7, --quick 3)")
    p.add_argument("--target-time", type=float, default=None, help="seconds per repeat per lane (default 0.2, --quick 0.05)")
    p.add_argument("--records", type=int, default=None, help="fixed records per repeat (default: auto-sized)")
    p.add_argument("--slices", type=int, default=10,
                   help="each repeat's records run as this many slices, alternating lanes (default 10; 1 = one block per lane)")
    p.add_argument("--pool", type=int, default=None, help="distinct records per case (default 1000, --quick 200)")
    p.add_argument("--batch", type=int, default=_lanes.DEFAULT_BATCH_RECORDS, metavar="N",
                   help=f"records per deserialize_batch call in the batch lanes (default {_lanes.DEFAULT_BATCH_RECORDS:,}; 0 skips them)")
    p.add_argument("--memory", action="store_true",
                   help="also measure the peak memory (tracemalloc, RSS) of one batch decode, a child process per lane")
    p.add_argument("--memory-records", type=int, default=_memory.DEFAULT_MEMORY_RECORDS, metavar="N",
                   help=f"records of the --memory batch (default {_memory.DEFAULT_MEMORY_RECORDS:,})")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out-dir", default=_report.DEFAULT_OUT_DIR)
    p.add_argument("--no-png", action="store_true", help="skip the chart")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--from-json", metavar="PATH",
                   help="no run: rewrite serde.md / serde.png (and --update-docs) from an existing serde.json")
    p.add_argument("--update-docs", action="store_true",
                   help=f"also copy the table into {os.path.relpath(_report.DOCS_PATH, _report.REPO_ROOT)} (between its markers)")
    a = p.parse_args(argv)
    a.repeats = a.repeats or (3 if a.quick else 7)
    a.target_time = a.target_time or (0.05 if a.quick else 0.2)
    a.pool = a.pool or (200 if a.quick else 1000)
    if a.records is not None:
        a.pool = min(a.pool, a.records)
    return a


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    a = parse_args(argv)
    log = (lambda s: None) if a.quiet else (lambda s: print(s, file=sys.stderr, flush=True))

    def write(report: Dict[str, Any], write_json: bool = True) -> None:
        _report.write_outputs(report, a.out_dir, png=not a.no_png, docs=a.update_docs, quiet=a.quiet,
                              write_json=write_json)

    if a.from_json:
        with open(a.from_json) as f:
            report = _report.upgrade(json.load(f))
        write(report, write_json=os.path.abspath(a.from_json) != os.path.abspath(os.path.join(a.out_dir, "serde.json")))
        return report
    from confluent_kafka.schema_registry import SchemaRegistryClient

    registry = SchemaRegistryClient.new_client({"url": "mock://serdes-bench"})
    env = _report.environment()
    log(f"serdes bench: python {env['python']}, {env['cpu_model']}, protobuf backend {env['versions']['protobuf_backend']}, "
        f"native extension {'loaded' if env['native_extension'].get('loaded') else 'not loaded'}")
    groups: List[_lanes.Group] = []
    t_start = time.perf_counter()
    log("building lanes and checking correctness")
    for fmt in a.formats:
        for size in a.sizes:
            for direction in a.directions:
                try:
                    g = _lanes.build_group(fmt, size, direction, registry, a.pool, a.seed, a.lanes)
                except Exception as e:  # confluent or floor itself failed: report the whole group n/a
                    g = _lanes.failed_group(fmt, size, direction, e)
                groups.append(g)
    if a.batch > 0 and any(impl in a.lanes for impl in _lanes.SERDES_LANES):
        groups.append(_lanes.build_batch_group(registry, a.batch, a.pool, a.seed, a.lanes))
    log(f"calibrating (target {a.target_time}s per repeat) and timing {a.repeats} repeats")
    overhead = _timing.loop_overhead_ns()
    _timing.run_benchmark(groups, a.repeats, a.target_time, a.records, log, a.slices)
    memory = _memory.run_children(a.lanes, a.memory_records, a.seed, log) if a.memory else []
    report: Dict[str, Any] = {
        "report_version": REPORT_VERSION,
        "environment": env,
        "config": {
            "formats": a.formats,
            "sizes": a.sizes,
            "directions": a.directions,
            "lanes": a.lanes,
            "repeats": a.repeats,
            "target_time_s": a.target_time,
            "records": a.records,
            "pool": a.pool,
            "seed": a.seed,
            "quick": a.quick,
            "batch_records": a.batch,
            "memory_records": a.memory_records if a.memory else None,
            "gc_disabled_while_timing": True,
            "slices_per_repeat": a.slices,
            "registry": "confluent mock:// (one client shared by every lane)",
            "loop_overhead_ns": overhead,
            "wall_time_s": None,
        },
        "results": [_report.group_report(g) for g in groups],
        "memory": memory,
    }
    report["config"]["wall_time_s"] = round(time.perf_counter() - t_start, 1)
    report["environment"]["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    write(report)
    return report


if __name__ == "__main__":
    main()
