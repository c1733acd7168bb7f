"""serdes' asyncio serdes vs confluent-kafka's, every format side by side in one process and one event loop.

Run from the repository root::

    python -m benchmarks.async_bench            # 7 repeats of ~0.2 s per lane
    python -m benchmarks.async_bench --quick    # 3 repeats of ~0.05 s per lane

Lanes, on one ``AsyncSchemaRegistryClient`` (``mock://``) and the records of benchmarks/serde_cases.py:

* ``serdes-async``    -- ``serdes.<format>.Async*``, ``await ser(obj, ctx)``;
* ``confluent-async`` -- ``confluent_kafka.schema_registry.<format>.Async*``, same call;
* ``serdes-sync``     -- serdes' sync class on a sync ``mock://`` client (what the coroutine adds).

Each repeat times every lane in turn (order rotated per repeat) on the same records, as
``for r in records: await f(r, ctx)`` inside one coroutine; reported are per-record medians of the
repeats and the ratio serdes-async / confluent-async (below 1 is faster). Every lane's output is
checked against confluent-kafka's before timing.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import statistics
import time
import uuid
from typing import Any, Callable, Dict, List, Tuple

from . import serde_cases as cases

LANES = ("serdes-async", "confluent-async", "serdes-sync")
_NAMES = {"avro": ("AvroSerializer", "AvroDeserializer"), "protobuf": ("ProtobufSerializer", "ProtobufDeserializer"),
          "json": ("JSONSerializer", "JSONDeserializer")}


def _module(impl: str, fmt: str) -> Any:
    import importlib

    if impl == "serdes":
        return importlib.import_module(f"serdes.{fmt}")
    return importlib.import_module("confluent_kafka.schema_registry." + {"json": "json_schema"}.get(fmt, fmt))


async def _make(mod: Any, fmt: str, size: str, direction: str, client: Any, asyncio_class: bool) -> Any:
    ser_name, de_name = _NAMES[fmt]
    prefix = "Async" if asyncio_class else ""
    if fmt == "avro":
        obj = (getattr(mod, prefix + ser_name)(client, json.dumps(cases.AVRO_SCHEMAS[size])) if direction == "serialize"
               else getattr(mod, prefix + de_name)(client))
    elif fmt == "protobuf":
        cls = cases.proto_classes()[size]
        conf = {"use.deprecated.format": False}
        obj = (getattr(mod, prefix + ser_name)(cls, client, conf) if direction == "serialize"
               else getattr(mod, prefix + de_name)(cls, conf, client))
    else:
        schema = json.dumps(cases.JSON_SCHEMAS[size])
        obj = (getattr(mod, prefix + ser_name)(schema, client) if direction == "serialize"
               else getattr(mod, prefix + de_name)(schema, None, client))
    return await obj if inspect.isawaitable(obj) else obj


async def _loop(fn: Callable[..., Any], inputs: List[Any], ctx: Any, is_async: bool) -> float:
    t = time.perf_counter()
    if is_async:
        for x in inputs:
            await fn(x, ctx)
    else:
        for x in inputs:
            fn(x, ctx)
    return time.perf_counter() - t


async def bench_group(fmt: str, size: str, direction: str, repeats: int, seconds: float) -> Dict[str, Any]:
    from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    aclient = AsyncSchemaRegistryClient.new_client({"url": f"mock://abench-{uuid.uuid4().hex}"})
    sclient = SchemaRegistryClient.new_client({"url": f"mock://sbench-{uuid.uuid4().hex}"})
    ctx = SerializationContext(f"bench-{fmt}-{size}", MessageField.VALUE)
    recs = cases.records(fmt, size, 200, 42)
    c_ser = await _make(_module("confluent", fmt), fmt, size, "serialize", aclient, True)
    c_de = await _make(_module("confluent", fmt), fmt, size, "deserialize", aclient, True)
    framed = [await c_ser(r, ctx) for r in recs]
    s_sync_ser = await _make(_module("serdes", fmt), fmt, size, "serialize", sclient, False)
    sync_framed = [s_sync_ser(r, ctx) for r in recs]
    lanes: Dict[str, Tuple[Any, List[Any], bool]] = {}
    if direction == "serialize":
        lanes["confluent-async"] = (c_ser, recs, True)
        lanes["serdes-async"] = (await _make(_module("serdes", fmt), fmt, size, "serialize", aclient, True), recs, True)
        lanes["serdes-sync"] = (s_sync_ser, recs, False)
    else:
        lanes["confluent-async"] = (c_de, framed, True)
        lanes["serdes-async"] = (await _make(_module("serdes", fmt), fmt, size, "deserialize", aclient, True), framed, True)
        lanes["serdes-sync"] = (await _make(_module("serdes", fmt), fmt, size, "deserialize", sclient, False),
                                sync_framed, False)
    # correctness before timing
    for name, (fn, inputs, is_async) in lanes.items():
        out = [await fn(x, ctx) if is_async else fn(x, ctx) for x in inputs]
        if direction == "serialize":
            de = c_de if name != "serdes-sync" else await _make(_module("serdes", fmt), fmt, size, "deserialize", sclient, False)
            back = [await de(o, ctx) if name != "serdes-sync" else de(o, ctx) for o in out]
            expected = [await c_de(f, ctx) for f in framed]
            assert back == expected, f"{name} output does not decode to the records"
        else:
            assert out == [await c_de(f, ctx) for f in framed], f"{name} decodes differently from confluent-kafka"
    # calibrate: enough passes over the records for ~`seconds` per lane and repeat
    one = await _loop(*_args(lanes["confluent-async"], ctx))
    passes = max(1, int(seconds / max(one, 1e-6)))
    samples: Dict[str, List[float]] = {n: [] for n in lanes}
    order = list(lanes)
    for rep in range(repeats):
        for name in order[rep % len(order):] + order[:rep % len(order)]:
            fn, inputs, is_async = lanes[name]
            total = 0.0
            for _ in range(passes):
                total += await _loop(fn, inputs, ctx, is_async)
            samples[name].append(total / (passes * len(inputs)))
    med = {n: statistics.median(v) for n, v in samples.items()}
    return {"format": fmt, "size": size, "direction": direction,
            "median_us": {n: round(v * 1e6, 3) for n, v in med.items()},
            "serdes-async/confluent-async": round(med["serdes-async"] / med["confluent-async"], 4),
            "serdes-async/serdes-sync": round(med["serdes-async"] / med["serdes-sync"], 3)}


def _args(lane: Tuple[Any, List[Any], bool], ctx: Any) -> Tuple[Any, List[Any], Any, bool]:
    fn, inputs, is_async = lane
    return fn, inputs, ctx, is_async


def main(argv: Any = None) -> int:
    p = argparse.ArgumentParser(description="serdes' asyncio serdes vs confluent-kafka's (same process, medians)")
    p.add_argument("--quick", action="store_true", help="3 repeats of ~0.05 s per lane (default: 7 of ~0.2 s)")
    p.add_argument("--formats", default="avro,protobuf,json", help="comma-separated formats (default: all)")
    p.add_argument("--sizes", default="standard", help="comma-separated sizes: trivial,standard,complex (default: standard)")
    args = p.parse_args(argv)
    repeats, seconds = (3, 0.05) if args.quick else (7, 0.2)
    rows = []
    for fmt in args.formats.split(","):
        for size in args.sizes.split(","):
            for direction in ("serialize", "deserialize"):
                rows.append(asyncio.run(bench_group(fmt, size, direction, repeats, seconds)))
    print("| format | size | direction | serdes-async µs | confluent-async µs | serdes-sync µs | serdes-async / confluent-async | serdes-async / serdes-sync |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        m = r["median_us"]
        print(f"| {r['format']} | {r['size']} | {r['direction']} | {m['serdes-async']} | {m['confluent-async']} | "
              f"{m['serdes-sync']} | {r['serdes-async/confluent-async']} | {r['serdes-async/serdes-sync']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
