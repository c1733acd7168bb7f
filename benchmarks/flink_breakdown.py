"""Where does an end-to-end PyFlink Kafka job spend its time?  Cumulative pipeline variants.

    read-only            Kafka -> shim rows -> trivial Python map -> discard
    read+decode          ... + Avro decode (serdes) in the Python worker
    decode+encode+write  ... + map + Avro encode + KafkaSink (no key_by)
    key_by (no state)    ... + key_by customer + KeyedProcessFunction without state
    full                 ... + ValueState running total in that function (the e2e job shape)

Each variant runs on the same N-record topic; the difference between consecutive rows is what
that stage costs per record.  ``python benchmarks/flink_breakdown.py [--records 60000]
[--mode process|thread] [--config KEY=VALUE ...]``; runs with ``create_env`` defaults; writes benchmarks/results/flink_breakdown_<mode>.{json,md}.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._results import servers, write_results  # noqa: E402

from pyflink.common import Types  # noqa: E402
from pyflink.datastream import KeyedProcessFunction  # noqa: E402

from benchmarks.flink_e2e import TOTAL_AVRO, DictTotals, dict_customer, produce  # noqa: E402
from benchmarks.flink_transport import discarding_sink  # noqa: E402
from serdes import flink as sf  # noqa: E402

VARIANTS = ("read-only", "read+decode", "decode+encode+write", "key_by (no state)", "full")


def one(o):
    return 1


def to_total(o):
    return {"customer": o["customer"], "count": 1, "total_cents": o["amount_cents"]}


class NoStateTotals(KeyedProcessFunction):
    def process_element(self, o, ctx):
        yield {"customer": o["customer"], "count": 1, "total_cents": o["amount_cents"]}


def job(variant, mode, bs, reg, t_in, config=None):
    env = sf.create_env(execution_mode=mode, config=config)
    out = "breakdown-out-" + uuid.uuid4().hex[:6]
    if variant == "read-only":
        sf.read_records(env, bs, t_in, bounded=True).map(one, output_type=Types.INT()).sink_to(discarding_sink())
    else:
        d = sf.read_kafka(env, bs, t_in, sf.avro(reg), bounded=True)
        if variant == "read+decode":
            d.map(one, output_type=Types.INT()).sink_to(discarding_sink())
        elif variant == "decode+encode+write":
            sf.write_kafka(d.map(to_total), bs, out, sf.avro_serializer(reg, TOTAL_AVRO))
        elif variant == "key_by (no state)":
            tot = d.key_by(dict_customer, key_type=Types.STRING()).process(NoStateTotals())
            sf.write_kafka(tot, bs, out, sf.avro_serializer(reg, TOTAL_AVRO))
        else:
            tot = d.key_by(dict_customer, key_type=Types.STRING()).process(DictTotals())
            sf.write_kafka(tot, bs, out, sf.avro_serializer(reg, TOTAL_AVRO))
    t = time.perf_counter()
    env.execute(variant)
    return time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=60_000)
    ap.add_argument("--mode", default="process", choices=["process", "thread"])
    ap.add_argument("--bootstrap")
    ap.add_argument("--registry")
    ap.add_argument("--config", action="append", default=[], help="extra Flink KEY=VALUE")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    n = args.records
    config = dict(kv.split("=", 1) for kv in args.config)
    with contextlib.ExitStack() as stack:
        bs, reg = servers(stack, args.bootstrap, args.registry)
        t_in = f"breakdown-in-{uuid.uuid4().hex[:6]}"
        produce(bs, reg, "avro", t_in, n)
        job("read-only", args.mode, bs, reg, t_in, config)  # warm-up
        times = {}
        for v in VARIANTS:
            times[v] = round(job(v, args.mode, bs, reg, t_in, config), 2)
            print(args.mode, v, times[v], flush=True)
    out = {"benchmark": "flink_breakdown", "records": n, "mode": args.mode, "cpus": os.cpu_count(),
           "config": {"python.fn-execution.bundle.size": sf.DEFAULT_BUNDLE_SIZE, **config}, "seconds": times}
    md = [f"# flink_breakdown ({args.mode} mode)", "",
          f"{n:,} Avro records, parallelism 1, {os.cpu_count()} CPUs; wall time per job incl. ~2-4 s start-up; "
          f"config {json.dumps(out['config'])}.", "",
          "| variant | seconds | added vs previous (µs/record) |", "|---|---|---|"]
    prev = None
    for v in VARIANTS:
        added = "" if prev is None else f"{(times[v] - times[prev]) / n * 1e6:,.0f}"
        md.append(f"| {v} | {times[v]} | {added} |")
        prev = v
    write_results(args.out, f"flink_breakdown_{args.mode}", out, md)


if __name__ == "__main__":
    main()
