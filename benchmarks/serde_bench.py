"""serdes vs confluent-kafka vs raw codec floor, every format side by side in one process.

Run from the repository root::

    python -m benchmarks.serde_bench                 # full run: 7 repeats of ~0.2 s per lane
    python -m benchmarks.serde_bench --quick         # 3 repeats of ~0.05 s per lane
    python -m benchmarks.serde_bench --formats avro --sizes standard,complex --directions deserialize

For every (format, size, direction) there are three lanes, all in this process, all on the same
confluent ``mock://`` Schema Registry client and the same records:

* ``serdes``    -- ``serdes.<format>`` serializer/deserializer, called as ``(data, ctx)``;
* ``confluent`` -- ``confluent_kafka.schema_registry.<format>`` serializer/deserializer, same args;
* ``floor``     -- the bare codec with no registry framing: fastavro ``schemaless_writer`` /
  ``schemaless_reader`` (with ``BytesIO``), Protobuf ``SerializeToString`` / ``FromString``, and
  ``orjson.dumps``/``orjson.loads`` plus a jsonschema-rs validity check.

A lane whose implementation cannot be imported or built (e.g. a serdes format not written yet) is
reported as ``n/a`` with the reason; the others still run. See docs/benchmarks.md for the method.

Outputs (``--out-dir``, default ``benchmarks/results``): ``serde.json`` (environment, config, every
sample), ``serde.md`` (the table) and ``serde.png`` (log-scale bar chart; ``--no-png`` skips it).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

if __package__ in (None, ""):  # ``python benchmarks/serde_bench.py``: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks import serde_cases as cases  # type: ignore[no-redef]
else:
    from . import serde_cases as cases

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT_DIR = os.path.join(REPO_ROOT, "benchmarks", "results")
REPORT_VERSION = 1

FORMATS = cases.FORMATS
SIZES = cases.SIZES
DIRECTIONS = ("serialize", "deserialize")
LANES = ("serdes", "confluent", "floor")

# Targets: ours/confluent (per format, direction, size) and ours/floor.
CONFLUENT_TARGETS: Dict[Tuple[str, str], Dict[str, float]] = {
    ("avro", "deserialize"): {"trivial": 0.15, "standard": 0.15, "complex": 0.25},
    ("protobuf", "deserialize"): {"trivial": 0.05, "standard": 0.05, "complex": 0.05},
    ("json", "deserialize"): {"trivial": 0.05, "standard": 0.05, "complex": 0.05},
    ("avro", "serialize"): {"trivial": 0.6, "standard": 0.6, "complex": 0.6},
    ("protobuf", "serialize"): {"trivial": 0.2, "standard": 0.2, "complex": 0.2},
    ("json", "serialize"): {"trivial": 0.1, "standard": 0.1, "complex": 0.1},
}
FLOOR_TARGET = 1.3
AVRO_DECODE_FLOOR_TARGET = 1.0  # strict: ours must beat fastavro's schemaless_reader


def targets_for(fmt: str, size: str, direction: str) -> Dict[str, Any]:
    vs_conf = CONFLUENT_TARGETS[(fmt, direction)][size]
    if fmt == "avro" and direction == "deserialize":
        return {"serdes/confluent": vs_conf, "serdes/floor": AVRO_DECODE_FLOOR_TARGET, "floor_strict": True}
    return {"serdes/confluent": vs_conf, "serdes/floor": FLOOR_TARGET, "floor_strict": False}


def _meets(ratio: Optional[float], target: float, strict: bool = False) -> Optional[bool]:
    if ratio is None:
        return None
    return ratio < target if strict else ratio <= target


# --------------------------------------------------------------------------------------------------
# lanes
# --------------------------------------------------------------------------------------------------
Call = Callable[[Any, Any], Any]


@dataclass
class Lane:
    name: str
    fn: Optional[Call] = None
    inputs: List[Any] = field(default_factory=list)  # the pool of distinct inputs
    error: Optional[str] = None
    n_records: int = 0
    samples_ns: List[float] = field(default_factory=list)  # ns/record, one per repeat

    @property
    def available(self) -> bool:
        return self.fn is not None and self.error is None


@dataclass
class Group:
    fmt: str
    size: str
    direction: str
    ctx: Any
    lanes: Dict[str, Lane]
    check: Dict[str, Any] = field(default_factory=dict)
    payload_bytes: Dict[str, float] = field(default_factory=dict)


def _short_error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".splitlines()[0][:300]


def _ours_module(fmt: str) -> Any:
    import importlib

    return importlib.import_module({"avro": "serdes.avro", "protobuf": "serdes.protobuf", "json": "serdes.json"}[fmt])


def _confluent_module(fmt: str) -> Any:
    import importlib

    return importlib.import_module(
        {
            "avro": "confluent_kafka.schema_registry.avro",
            "protobuf": "confluent_kafka.schema_registry.protobuf",
            "json": "confluent_kafka.schema_registry.json_schema",
        }[fmt]
    )


_CLASS_NAMES = {
    "avro": ("AvroSerializer", "AvroDeserializer"),
    "protobuf": ("ProtobufSerializer", "ProtobufDeserializer"),
    "json": ("JSONSerializer", "JSONDeserializer"),
}


def _make_serde(mod: Any, fmt: str, size: str, direction: str, registry: Any) -> Call:
    """Build a serializer/deserializer from ``mod`` with confluent-kafka's constructor arguments."""
    ser_name, de_name = _CLASS_NAMES[fmt]
    if fmt == "avro":
        schema_str = json.dumps(cases.AVRO_SCHEMAS[size])
        if direction == "serialize":
            return getattr(mod, ser_name)(registry, schema_str)
        return getattr(mod, de_name)(registry)  # writer schema from the registry, no reader schema
    if fmt == "protobuf":
        cls = cases.proto_classes()[size]
        if direction == "serialize":
            return getattr(mod, ser_name)(cls, registry, {"use.deprecated.format": False})
        return getattr(mod, de_name)(cls, {"use.deprecated.format": False}, registry)
    schema_str = json.dumps(cases.JSON_SCHEMAS[size])
    if direction == "serialize":
        return getattr(mod, ser_name)(schema_str, registry)  # validate=True is the default
    return getattr(mod, de_name)(schema_str, schema_registry_client=registry)


def _floor_codec(fmt: str, size: str) -> Tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    """(encode, decode) of the bare codec: no framing, no registry."""
    if fmt == "avro":
        from fastavro import parse_schema, schemaless_reader, schemaless_writer

        parsed = parse_schema(cases.AVRO_SCHEMAS[size])
        BytesIO = io.BytesIO

        def avro_encode(rec: Any) -> bytes:
            fo = BytesIO()
            schemaless_writer(fo, parsed, rec)
            return fo.getvalue()

        def avro_decode(data: bytes) -> Any:
            return schemaless_reader(BytesIO(data), parsed, None, False)

        return avro_encode, avro_decode
    if fmt == "protobuf":
        cls = cases.proto_classes()[size]
        return cls.SerializeToString, cls.FromString
    import jsonschema_rs
    import orjson

    is_valid = jsonschema_rs.validator_for(cases.JSON_SCHEMAS[size]).is_valid
    dumps, loads = orjson.dumps, orjson.loads

    def json_encode(obj: Any) -> bytes:
        if not is_valid(obj):
            raise ValueError("invalid record")
        return dumps(obj)

    def json_decode(data: bytes) -> Any:
        obj = loads(data)
        if not is_valid(obj):
            raise ValueError("invalid record")
        return obj

    return json_encode, json_decode


def _as_call(f: Callable[[Any], Any]) -> Call:
    def call(x: Any, ctx: Any) -> Any:
        return f(x)

    return call


def build_group(fmt: str, size: str, direction: str, registry: Any, pool: int, seed: int, lanes: Sequence[str]) -> Group:
    from confluent_kafka.serialization import MessageField, SerializationContext

    ctx = SerializationContext(f"bench-{fmt}-{size}", MessageField.VALUE)
    recs = cases.records(fmt, size, pool, seed)
    g = Group(fmt, size, direction, ctx, {name: Lane(name) for name in LANES})

    # confluent first: it registers the schema, and its frames are the deserializers' input
    conf_ser = _make_serde(_confluent_module(fmt), fmt, size, "serialize", registry)
    conf_de = _make_serde(_confluent_module(fmt), fmt, size, "deserialize", registry)
    framed = [conf_ser(r, ctx) for r in recs]
    floor_enc, floor_dec = _floor_codec(fmt, size)
    bare = [floor_enc(r) for r in recs]
    g.payload_bytes = {
        "framed_mean": statistics.fmean(len(b) for b in framed),
        "bare_mean": statistics.fmean(len(b) for b in bare),
    }

    if direction == "serialize":
        g.lanes["confluent"].fn, g.lanes["confluent"].inputs = conf_ser, recs
        g.lanes["floor"].fn, g.lanes["floor"].inputs = _as_call(floor_enc), recs
    else:
        g.lanes["confluent"].fn, g.lanes["confluent"].inputs = conf_de, framed
        g.lanes["floor"].fn, g.lanes["floor"].inputs = _as_call(floor_dec), bare

    ours: Optional[Call] = None
    if "serdes" in lanes:
        try:
            ours = _make_serde(_ours_module(fmt), fmt, size, direction, registry)
        except Exception as e:  # not written yet, or broken: this lane is n/a
            g.lanes["serdes"].error = "unavailable: " + _short_error(e)
        if ours is not None:
            g.lanes["serdes"].fn = ours
            g.lanes["serdes"].inputs = recs if direction == "serialize" else framed
    for name in LANES:
        if name not in lanes and g.lanes[name].error is None:
            g.lanes[name].fn = None
            g.lanes[name].error = "not selected"

    g.check = _check(g, recs, framed, bare, conf_de, floor_dec)
    return g


def _check(g: Group, recs: List[Any], framed: List[bytes], bare: List[bytes], conf_de: Call, floor_dec: Callable) -> Dict[str, Any]:
    """Correctness before timing: every lane must agree with confluent on every pool record.

    deserialize: serdes(frame) == confluent(frame), floor(bare) == confluent(frame).
    serialize:   confluent_de(serdes(rec)) == confluent_de(confluent(rec)), floor(rec) decodes back.
    A lane that raises is marked unavailable (its error is reported) and is not timed.
    """
    ctx = g.ctx
    expected = [conf_de(b, ctx) for b in framed]
    out: Dict[str, Any] = {"records": len(recs)}
    for name in ("serdes", "floor"):
        lane = g.lanes[name]
        if not lane.available:
            out[name] = {"ok": None, "detail": lane.error}
            continue
        mismatches = 0
        first: Optional[str] = None
        identical = 0
        try:
            for i, rec in enumerate(recs):
                if g.direction == "deserialize":
                    got = lane.fn(lane.inputs[i], ctx)  # type: ignore[misc]
                else:
                    enc = lane.fn(rec, ctx)  # type: ignore[misc]
                    if name == "serdes":
                        identical += enc == framed[i]
                        got = conf_de(enc, ctx)
                    else:
                        identical += enc == bare[i]
                        got = floor_dec(enc)
                if got != expected[i]:
                    mismatches += 1
                    if first is None:
                        first = f"record {i}: got {got!r:.200} expected {expected[i]!r:.200}"
        except Exception as e:
            lane.error = "failed: " + _short_error(e)
            lane.fn = None
            out[name] = {"ok": False, "detail": lane.error, "traceback": traceback.format_exc(limit=5)}
            continue
        entry: Dict[str, Any] = {"ok": mismatches == 0, "mismatches": mismatches, "detail": first}
        if g.direction == "serialize":
            entry["bytes_identical"] = identical == len(recs)
        out[name] = entry
    return out


# --------------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------------
def _run_once(fn: Call, inputs: List[Any], ctx: Any, _perf: Callable[[], int] = time.perf_counter_ns) -> int:
    t0 = _perf()
    for x in inputs:
        fn(x, ctx)
    return _perf() - t0


def _timed(fn: Call, inputs: List[Any], ctx: Any) -> float:
    """ns/record over ``inputs``, GC off while timing (as ``timeit`` does)."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        elapsed = _run_once(fn, inputs, ctx)
    finally:
        if was:
            gc.enable()
    return elapsed / len(inputs)


def _cycled(pool: List[Any], n: int) -> List[Any]:
    return [pool[i % len(pool)] for i in range(n)]


def calibrate(lane: Lane, ctx: Any, target_s: float, min_n: int = 20, max_n: int = 1_000_000) -> int:
    """Records per repeat so one repeat takes about ``target_s``."""
    n = min(len(lane.inputs), 100)
    while True:
        per = _timed(lane.fn, _cycled(lane.inputs, n), ctx)  # type: ignore[arg-type]
        if per * n >= 0.02e9 or n >= max_n:
            break
        n = min(max_n, n * 4)
    return int(min(max_n, max(min_n, target_s * 1e9 / max(per, 1.0))))


def loop_overhead_ns(n: int = 50_000) -> float:
    """The cost of the timing loop itself (a call to a no-op) per record; not subtracted."""

    def noop(x: Any, ctx: Any) -> None:
        return None

    inputs = list(range(n))
    return min(_timed(noop, inputs, None) for _ in range(5))


def run_benchmark(groups: List[Group], repeats: int, target_s: float, fixed_n: Optional[int], log: Callable[[str], None]) -> None:
    timed: List[Tuple[Group, List[Lane]]] = []
    for g in groups:
        lanes = [l for l in g.lanes.values() if l.available]
        for lane in lanes:
            lane.fn(lane.inputs[0], g.ctx)  # type: ignore[misc]  # warm-up (caches already primed by _check)
            lane.n_records = fixed_n if fixed_n else calibrate(lane, g.ctx, target_s)
            lane.inputs = _cycled(lane.inputs, lane.n_records)
        timed.append((g, lanes))
        log(f"  {g.fmt:8s} {g.size:8s} {g.direction:11s} " + ", ".join(f"{l.name}={l.n_records}" for l in lanes))
    # interleave: every repeat visits every group, with the lane order rotated per repeat, so slow
    # drift and bursts of noise on a shared machine land on all lanes alike
    for r in range(repeats):
        t0 = time.perf_counter()
        for g, lanes in timed:
            if not lanes:
                continue
            k = r % len(lanes)
            for lane in lanes[k:] + lanes[:k]:
                lane.samples_ns.append(_timed(lane.fn, lane.inputs, g.ctx))  # type: ignore[arg-type]
        log(f"  repeat {r + 1}/{repeats} took {time.perf_counter() - t0:.1f}s")


# --------------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------------
def _pkg_version(dist: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> Dict[str, Any]:
    import confluent_kafka
    import fastavro
    import google.protobuf
    import orjson
    from google.protobuf.internal import api_implementation

    try:
        import serdes

        serdes_version = getattr(serdes, "__version__", None)
    except Exception:
        serdes_version = None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5
        ).stdout.strip() or None
    except Exception:
        commit = None
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "git_commit": commit,
        "versions": {
            "serdes": serdes_version,
            "confluent-kafka": getattr(confluent_kafka, "__version__", None) or _pkg_version("confluent-kafka"),
            "fastavro": fastavro.__version__,
            "protobuf": google.protobuf.__version__,
            "protobuf_backend": api_implementation.Type(),
            "orjson": orjson.__version__,
            "jsonschema-rs": _pkg_version("jsonschema-rs") or _pkg_version("jsonschema_rs"),
            "jsonschema": _pkg_version("jsonschema"),
        },
    }


def _lane_stats(lane: Lane) -> Dict[str, Any]:
    d: Dict[str, Any] = {"available": lane.available and bool(lane.samples_ns), "error": lane.error}
    if lane.samples_ns:
        s = sorted(lane.samples_ns)
        q = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else [s[0], s[0], s[0]]
        d.update(
            n_records=lane.n_records,
            repeats=len(s),
            median_ns=statistics.median(s),
            min_ns=s[0],
            max_ns=s[-1],
            q1_ns=q[0],
            q3_ns=q[2],
            samples_ns=lane.samples_ns,
        )
    return d


def _ratio(a: Dict[str, Any], b: Dict[str, Any]) -> Optional[float]:
    if a.get("median_ns") and b.get("median_ns"):
        return a["median_ns"] / b["median_ns"]
    return None


def _paired(a: Lane, b: Lane) -> Optional[List[float]]:
    if a.samples_ns and b.samples_ns and len(a.samples_ns) == len(b.samples_ns):
        return [x / y for x, y in zip(a.samples_ns, b.samples_ns)]
    return None


def group_report(g: Group) -> Dict[str, Any]:
    lanes = {name: _lane_stats(lane) for name, lane in g.lanes.items()}
    t = targets_for(g.fmt, g.size, g.direction)
    r_conf = _ratio(lanes["serdes"], lanes["confluent"])
    r_floor = _ratio(lanes["serdes"], lanes["floor"])
    pc = _paired(g.lanes["serdes"], g.lanes["confluent"])
    pf = _paired(g.lanes["serdes"], g.lanes["floor"])
    return {
        "format": g.fmt,
        "size": g.size,
        "direction": g.direction,
        "topic": g.ctx.topic,
        "payload_bytes": g.payload_bytes,
        "check": g.check,
        "lanes": lanes,
        "ratios": {
            "serdes/confluent": r_conf,
            "serdes/floor": r_floor,
            "confluent/floor": _ratio(lanes["confluent"], lanes["floor"]),
            "paired_serdes/confluent": {"min": min(pc), "max": max(pc)} if pc else None,
            "paired_serdes/floor": {"min": min(pf), "max": max(pf)} if pf else None,
        },
        "targets": t,
        "met": {
            "serdes/confluent": _meets(r_conf, t["serdes/confluent"]),
            "serdes/floor": _meets(r_floor, t["serdes/floor"], t["floor_strict"]),
        },
    }


def _fmt_ns(d: Dict[str, Any]) -> str:
    if not d.get("available"):
        return "n/a"
    med, lo, hi = d["median_ns"], d["min_ns"], d["max_ns"]

    def f(x: float) -> str:
        return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"

    return f"{f(med)} ({f(lo)}–{f(hi)})"


def _fmt_ratio(r: Optional[float]) -> str:
    if r is None:
        return "n/a"
    return f"{r:.3f}" if r < 10 else f"{r:.1f}"


def _fmt_met(m: Optional[bool]) -> str:
    return "n/a" if m is None else ("yes" if m else "**no**")


def markdown_table(report: Dict[str, Any]) -> str:
    env = report["environment"]
    v = env["versions"]
    cfg = report["config"]
    lines = [
        "# serdes serializer benchmark",
        "",
        f"{env['date']} · Python {env['python']} · {env['cpu_model']} ({env['cpu_count']} cores) · "
        f"serdes {v['serdes']} (git {env.get('git_commit')}) · confluent-kafka {v['confluent-kafka']} · "
        f"fastavro {v['fastavro']} · protobuf {v['protobuf']} ({v['protobuf_backend']}) · orjson {v['orjson']} · "
        f"jsonschema-rs {v['jsonschema-rs']}",
        "",
        f"Median ns/record over {cfg['repeats']} interleaved repeats (min–max in brackets), "
        f"~{cfg['target_time_s']} s per repeat per lane{' (fixed ' + str(cfg['records']) + ' records)' if cfg.get('records') else ''}; "
        "lower is better. Ratios are medians of the same process. "
        "Floors have no registry framing. Target = ours/confluent, then ours/floor.",
        "",
        "| format | size | direction | ours ns | confluent ns | floor ns | ours/confluent | ours/floor | target | met? |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for g in report["results"]:
        la, r, t, m = g["lanes"], g["ratios"], g["targets"], g["met"]
        target = f"≤{t['serdes/confluent']:g} · {'<' if t['floor_strict'] else '≤'}{t['serdes/floor']:g}"
        met = f"{_fmt_met(m['serdes/confluent'])} · {_fmt_met(m['serdes/floor'])}"
        ours = _fmt_ns(la["serdes"])
        chk = g["check"].get("serdes", {})
        if chk.get("ok") is False:
            ours += " ⚠ mismatch"
        lines.append(
            f"| {g['format']} | {g['size']} | {g['direction']} | {ours} | {_fmt_ns(la['confluent'])} | "
            f"{_fmt_ns(la['floor'])} | {_fmt_ratio(r['serdes/confluent'])} | {_fmt_ratio(r['serdes/floor'])} | "
            f"{target} | {met} |"
        )
    notes = []
    for g in report["results"]:
        for name in LANES:
            err = g["lanes"][name].get("error")
            if err and err != "not selected":
                notes.append(f"- {g['format']} {g['size']} {g['direction']} `{name}`: {err}")
            c = g["check"].get(name)
            if isinstance(c, dict) and c.get("ok") is False and c.get("detail") and not err:
                notes.append(f"- {g['format']} {g['size']} {g['direction']} `{name}` check: {c['detail']}")
    if notes:
        lines += ["", "Notes:", ""] + sorted(set(notes))
    lines.append("")
    return "\n".join(lines)


def plot(report: Dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fmts = [f for f in FORMATS if any(g["format"] == f for g in report["results"])]
    fig, axes = plt.subplots(len(fmts), 1, figsize=(11, 3.6 * len(fmts)), squeeze=False)
    colors = {"serdes": "#2a9d8f", "confluent": "#e76f51", "floor": "#8d99ae"}
    width = 0.27
    for ax, fmt in zip(axes[:, 0], fmts):
        groups = [g for g in report["results"] if g["format"] == fmt]
        labels = [f"{g['size']}\n{g['direction']}" for g in groups]
        for k, name in enumerate(LANES):
            xs, ys, lo, hi = [], [], [], []
            for i, g in enumerate(groups):
                d = g["lanes"][name]
                if d.get("available"):
                    xs.append(i + (k - 1) * width)
                    ys.append(d["median_ns"])
                    lo.append(d["median_ns"] - d["min_ns"])
                    hi.append(d["max_ns"] - d["median_ns"])
            if xs:
                ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=name, color=colors[name])
        for i, g in enumerate(groups):
            if not g["lanes"]["serdes"].get("available"):
                ax.text(i - width, ax.get_ylim()[0] if ax.has_data() else 1, "n/a", ha="center", va="bottom", fontsize=8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("ns / record (log)")
        ax.set_title(fmt)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    env = report["environment"]
    fig.suptitle(f"serdes vs confluent-kafka vs floor — median of {report['config']['repeats']} repeats, "
                 f"{env['cpu_model']}, Python {env['python']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------
def _csv(choices: Sequence[str]) -> Callable[[str], List[str]]:
    def parse(s: str) -> List[str]:
        items = [x.strip() for x in s.split(",") if x.strip()]
        if items == ["all"]:
            return list(choices)
        bad = [x for x in items if x not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)} (comma separated) or 'all'")
        return [c for c in choices if c in items]

    return parse


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.serde_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--formats", type=_csv(FORMATS), default=list(FORMATS), help="avro,protobuf,json (default all)")
    p.add_argument("--sizes", type=_csv(SIZES), default=list(SIZES), help="trivial,standard,complex (default all)")
    p.add_argument("--directions", type=_csv(DIRECTIONS), default=list(DIRECTIONS), help="serialize,deserialize")
    p.add_argument("--lanes", type=_csv(LANES), default=list(LANES), help="serdes,confluent,floor (default all)")
    p.add_argument("--quick", action="store_true", help="3 repeats of ~0.05 s per lane, 200 distinct records")
    p.add_argument("--repeats", type=int, default=None, help="repeats per lane (default 7, --quick 3)")
    p.add_argument("--target-time", type=float, default=None, help="seconds per repeat per lane (default 0.2, --quick 0.05)")
    p.add_argument("--records", type=int, default=None, help="fixed records per repeat (default: auto-sized)")
    p.add_argument("--pool", type=int, default=None, help="distinct records per case (default 1000, --quick 200)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out-dir", default=DEFAULT_OUT_DIR)
    p.add_argument("--no-png", action="store_true", help="skip the chart")
    p.add_argument("--quiet", action="store_true")
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
    from confluent_kafka.schema_registry import SchemaRegistryClient

    registry = SchemaRegistryClient.new_client({"url": "mock://serdes-bench"})
    env = environment()
    log(f"serdes bench: python {env['python']}, {env['cpu_model']}, protobuf backend {env['versions']['protobuf_backend']}")
    groups: List[Group] = []
    t_start = time.perf_counter()
    log("building lanes and checking correctness")
    for fmt in a.formats:
        for size in a.sizes:
            for direction in a.directions:
                try:
                    g = build_group(fmt, size, direction, registry, a.pool, a.seed, a.lanes)
                except Exception as e:  # confluent or floor itself failed: report the whole group n/a
                    from confluent_kafka.serialization import MessageField, SerializationContext

                    g = Group(fmt, size, direction, SerializationContext(f"bench-{fmt}-{size}", MessageField.VALUE),
                              {n: Lane(n, error="setup failed: " + _short_error(e)) for n in LANES})
                    g.check = {"error": traceback.format_exc(limit=5)}
                groups.append(g)
    log(f"calibrating (target {a.target_time}s per repeat) and timing {a.repeats} repeats")
    overhead = loop_overhead_ns()
    run_benchmark(groups, a.repeats, a.target_time, a.records, log)
    report = {
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
            "gc_disabled_while_timing": True,
            "registry": "confluent mock:// (one client shared by every lane)",
            "loop_overhead_ns": overhead,
            "wall_time_s": None,
        },
        "results": [group_report(g) for g in groups],
    }
    report["config"]["wall_time_s"] = round(time.perf_counter() - t_start, 1)
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "serde.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
        f.write("\n")
    md = markdown_table(report)
    with open(os.path.join(a.out_dir, "serde.md"), "w") as f:
        f.write(md)
    if not a.no_png:
        plot(report, os.path.join(a.out_dir, "serde.png"))
    if not a.quiet:
        print(md)
    return report


if __name__ == "__main__":
    main()
