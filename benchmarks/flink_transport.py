"""Per-hop transport cost: ProtobufTypeInformation (wire bytes) vs PICKLED_BYTE_ARRAY (cloudpickle).

Pipeline (operator chaining disabled, parallelism 1, process mode):

    NumberSequenceSource -> make Order -> hop 1 -> hop 2 -> hop 3 -> count -> DiscardingSink

Each hop is a Python ``map`` that reads a field and returns a message; every arrow between
Python operators is a Java<->Python boundary with the stream's coder.  The same pipeline is
run with 0 and 3 hops for each type, so

    per-hop cost = (T(3 hops) - T(0 hops)) / 3 / N

isolates what one extra non-chained hop costs (coder + Python operator + Flink network).
A microbenchmark of exactly the coder work per element (PyFlink's Cython ``CloudPickleCoder``
vs ``BinaryCoder`` + ``FromString``/``SerializeToString``) isolates the transport part.

    python benchmarks/flink_transport.py [--records 200000] [--repeat 1]

Writes benchmarks/results/flink_transport.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._results import write_results  # noqa: E402

from pyflink.common import Types  # noqa: E402
from pyflink.datastream import FlatMapFunction, MapFunction  # noqa: E402

from serdes import flink as sf  # noqa: E402
from serdes.demo.orders_pb2 import Order  # noqa: E402
from tests.support.flink_sources import from_sequence  # noqa: E402


def make_order(i):
    return Order(order_id=f"order-{i}", customer=f"customer-{i % 97}", amount_cents=i % 10000,
                 currency="EUR", tags=["a", "b"])


def make_order_bytes(i):
    return make_order(i).SerializeToString()


class Hop(MapFunction):
    def map(self, o):
        o.amount_cents += 1
        return o


class Count(FlatMapFunction):
    def __init__(self, path):
        self.path = path
        self.n = 0

    def flat_map(self, value):
        self.n += 1
        return ()

    def close(self):
        with open(self.path, "w") as fh:
            fh.write(str(self.n))


def discarding_sink():
    from pyflink.datastream.connectors import Sink
    from pyflink.java_gateway import get_gateway

    return Sink(get_gateway().jvm.org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink())


def run_pipeline(kind: str, hops: int, n: int, mode: str) -> float:
    env = sf.create_env(execution_mode=mode, chaining=False)
    count_file = tempfile.mktemp(prefix="serdes-bench-count-")
    seq = from_sequence(env, 0, n - 1)
    if kind == "protobuf":
        t = sf.ProtobufTypeInformation(Order)
        s = sf.TypedStream(seq.map(make_order_bytes, output_type=t), t)
        for _ in range(hops):
            s = s.map(Hop(), output_type=t)
        tail = s.data_stream
    elif kind == "long":  # floor: the cheapest coder (8-byte long), same operators and hops
        tail = seq.map(lambda i: i, output_type=Types.LONG())
        for _ in range(hops):
            tail = tail.map(lambda i: i + 1, output_type=Types.LONG())
    else:
        tail = seq.map(make_order, output_type=Types.PICKLED_BYTE_ARRAY())
        for _ in range(hops):
            tail = tail.map(Hop(), output_type=Types.PICKLED_BYTE_ARRAY())
    tail.flat_map(Count(count_file), output_type=Types.LONG()).sink_to(discarding_sink())
    t0 = time.perf_counter()
    env.execute(f"transport-{kind}-{hops}")
    elapsed = time.perf_counter() - t0
    got = int(Path(count_file).read_text())
    os.unlink(count_file)
    assert got == n, (kind, hops, got, n)
    return elapsed


def coder_micro(n: int = 20000) -> dict:
    """ns per element for one hop's coder work: encode on the way out + decode on the way in."""
    from pyflink.fn_execution import coder_impl_fast as impl

    msgs = [make_order(i) for i in range(n)]

    def bench(coder, values, to_wire, from_wire):
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter_ns()
            encode, decode = coder.encode, coder.decode
            for v in values:
                from_wire(decode(encode(to_wire(v))))
            best = min(best, (time.perf_counter_ns() - t0) / len(values))
        return best

    ident = lambda x: x  # noqa: E731
    pickle_ns = bench(impl.CloudPickleCoderImpl(), msgs, ident, ident)
    proto_ns = bench(impl.BinaryCoderImpl(), msgs, Order.SerializeToString, Order.FromString)
    return {"cloudpickle_ns": round(pickle_ns), "protobuf_bytes_ns": round(proto_ns),
            "ratio": round(proto_ns / pickle_ns, 3), "message_bytes": len(msgs[0].SerializeToString())}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--mode", default="process", choices=["process", "thread"])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    n = args.records

    micro = coder_micro()
    print(f"coder micro: {micro}", flush=True)
    run_pipeline("protobuf", 1, 1000, args.mode)  # warm-up: gateway, JIT, worker venv caches
    runs = {}
    for kind in ("long", "pickle", "protobuf"):
        for hops in (0, 3):
            times = [run_pipeline(kind, hops, n, args.mode) for _ in range(args.repeat)]
            runs[f"{kind}_{hops}"] = min(times)
            print(f"{kind:8} hops={hops}: {min(times):.2f}s ({n / min(times):,.0f} records/s)", flush=True)
    per_hop = {k: (runs[f"{k}_3"] - runs[f"{k}_0"]) / 3 / n * 1e9 for k in ("long", "pickle", "protobuf")}
    # transport = what a hop costs beyond the cheapest possible element (a long)
    transport = {k: max(per_hop[k] - per_hop["long"], 0.0) for k in ("pickle", "protobuf")}
    result = {
        "benchmark": "flink_transport",
        "records": n,
        "mode": args.mode,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "wall_seconds": {k: round(v, 3) for k, v in runs.items()},
        "per_hop_ns": {k: round(v) for k, v in per_hop.items()},
        "per_hop_ratio_protobuf_over_pickle": round(per_hop["protobuf"] / per_hop["pickle"], 3),
        "transport_ns": {k: round(v) for k, v in transport.items()},
        "transport_ratio_protobuf_over_pickle": round(transport["protobuf"] / transport["pickle"], 3)
        if transport["pickle"] else None,
        "coder_micro": micro,
        "target": "transport cost ours/pickle <= 0.3",
    }
    md = [
        "# flink_transport",
        "",
        f"{n:,} records, parallelism 1, operator chaining disabled, `python.execution-mode={args.mode}`, "
        f"`python.fn-execution.bundle.size={sf.DEFAULT_BUNDLE_SIZE}` (create_env default), "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; best of {args.repeat}.",
        "Pipeline: sequence -> make Order -> N x map hop -> count -> discard. Message: "
        f"{micro['message_bytes']} bytes on the wire.",
        "",
        "| type | 0 hops (s) | 3 hops (s) | per extra hop (ns/record) |",
        "|---|---|---|---|",
    ]
    for k, label in (("long", "Types.LONG() (floor: cheapest element)"),
                     ("pickle", "PICKLED_BYTE_ARRAY (cloudpickle)"), ("protobuf", "ProtobufTypeInformation")):
        md.append(f"| {label} | {runs[f'{k}_0']:.2f} | {runs[f'{k}_3']:.2f} | {per_hop[k]:,.0f} |")
    md += [
        "",
        f"Per-hop wall-clock ratio protobuf/pickle: **{result['per_hop_ratio_protobuf_over_pickle']}** "
        "(includes the Python operator, Beam data plane and Flink network, identical for both).",
        "",
        f"Per-hop transport cost above the LONG floor: pickle {transport['pickle']:,.0f} ns, "
        f"protobuf {transport['protobuf']:,.0f} ns -> ratio **{result['transport_ratio_protobuf_over_pickle']}** "
        "(target <= 0.3).",
        "",
        "Coder work per element per hop (encode + decode, PyFlink's Cython coders):",
        "",
        "| CloudPickleCoder | BinaryCoder + SerializeToString/FromString | ratio |",
        "|---|---|---|",
        f"| {micro['cloudpickle_ns']:,} ns | {micro['protobuf_bytes_ns']:,} ns | **{micro['ratio']}** |",
        "",
    ]
    write_results(args.out, "flink_transport", result, md)


if __name__ == "__main__":
    main()
