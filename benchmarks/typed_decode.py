"""Typed decode (serdes.typed) against dict decode and against confluent-kafka + from_dict, one process.

For the benchmark records of benchmarks/serde_cases.py (Avro ``standard``: ten scalar fields;
``complex``: nested records, an array of records, maps, an enum and logical types; JSON Schema
``standard``), written once by confluent-kafka's serializers on a ``mock://`` registry, the lanes
decode the same frames:

* ``dict``: serdes' deserializer, plain dicts (the reference of the target ratio);
* ``dataclass`` / ``msgspec``: the same with ``from_dict=serdes.typed.from_dict(cls)`` for a
  dataclass / ``msgspec.Struct`` version of the schema (Avro: built inside the native decoder);
* ``pure dataclass``: the dataclass lane on serdes' pure-Python implementation;
* ``confluent + from_dict``: confluent-kafka's deserializer with the same ``from_dict`` callable
  (the fastest correct converter there is for nested classes; a hand-written ``Cls(**d)`` is not
  one for nested records).

Method (docs/benchmarks.md): interleaved lanes, GC off while timing, ``--repeats`` repeats, the
median ns/record per lane; ratios of medians. The target (issue 25): typed decode within 1.5x of
dict decode.

    python benchmarks/typed_decode.py [--repeats 7] [--records 2000]

Writes benchmarks/results/typed_decode.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import decimal
import enum
import json
import statistics
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

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
from serdes.typed import from_dict  # noqa: E402

TARGET = 1.5  # typed / dict, at most


# -- the classes of the benchmark schemas -----------------------------------------------------------
@dataclasses.dataclass
class Standard:
    id: int
    user: str
    email: str
    age: int
    score: float
    ratio: float
    active: bool
    country: str
    created: int
    tag: Optional[str]


class StandardS(msgspec.Struct):
    id: int
    user: str
    email: str
    age: int
    score: float
    ratio: float
    active: bool
    country: str
    created: int
    tag: Optional[str]


class Status(str, enum.Enum):
    NEW = "NEW"
    PAID = "PAID"
    SHIPPED = "SHIPPED"
    CANCELLED = "CANCELLED"


@dataclasses.dataclass
class Geo:
    lat: float
    lon: float


@dataclasses.dataclass
class Address:
    street: str
    city: str
    zip: str
    geo: Geo


@dataclasses.dataclass
class Customer:
    name: str
    address: Address


@dataclasses.dataclass
class Item:
    sku: str
    qty: int
    price: decimal.Decimal


@dataclasses.dataclass
class Complex:
    id: uuid.UUID
    status: Status
    customer: Customer
    items: List[Item]
    tags: List[str]
    attributes: Dict[str, str]
    counters: Dict[str, int]
    created_at: datetime.datetime
    birthday: datetime.date
    note: Optional[str] = None


class GeoS(msgspec.Struct):
    lat: float
    lon: float


class AddressS(msgspec.Struct):
    street: str
    city: str
    zip: str
    geo: GeoS


class CustomerS(msgspec.Struct):
    name: str
    address: AddressS


class ItemS(msgspec.Struct):
    sku: str
    qty: int
    price: decimal.Decimal


class ComplexS(msgspec.Struct):
    id: uuid.UUID
    status: Status
    customer: CustomerS
    items: List[ItemS]
    tags: List[str]
    attributes: Dict[str, str]
    counters: Dict[str, int]
    created_at: datetime.datetime
    birthday: datetime.date
    note: Optional[str] = None


CLASSES = {"standard": (Standard, StandardS), "complex": (Complex, ComplexS)}
CASES = [("avro", "standard"), ("avro", "complex"), ("json", "standard")]
Call = Callable[[Any, Any], Any]


def _schema_str(fmt: str, size: str) -> str:
    s = (cases.AVRO_SCHEMAS if fmt == "avro" else cases.JSON_SCHEMAS)[size]
    return s if isinstance(s, str) else json.dumps(s)


def lanes_for(fmt: str, size: str, registry: Any, first: bytes, ctx: Any) -> Dict[str, Call]:
    """The lanes, each built and called once on ``first`` (serdes picks its implementation when a
    schema's decoder is built: at the first record, inside ``forced_pure`` for the pure lane)."""
    dc, st = CLASSES[size]
    schema = _schema_str(fmt, size)
    if fmt == "avro":
        def ours(**kw: Any) -> Call:
            return s_avro.AvroDeserializer(registry, **kw)  # type: ignore[no-any-return]

        with _native.forced_pure():
            pure = s_avro.AvroDeserializer(registry, from_dict=from_dict(dc))
            pure(first, ctx)
        theirs: Call = c_avro.AvroDeserializer(registry, from_dict=from_dict(dc))
    else:
        def ours(**kw: Any) -> Call:
            return s_json.JSONDeserializer(schema, **kw)  # type: ignore[no-any-return]

        with _native.forced_pure():
            pure = s_json.JSONDeserializer(schema, from_dict=from_dict(dc))
            pure(first, ctx)
        theirs = c_json.JSONDeserializer(schema, from_dict=from_dict(dc))
    return {
        "dict": ours(),
        "dataclass": ours(from_dict=from_dict(dc)),
        "msgspec": ours(from_dict=from_dict(st)),
        "pure dataclass": pure,
        "confluent + from_dict": theirs,
    }


def frames(fmt: str, size: str, registry: Any, n: int, ctx: Any) -> List[bytes]:
    recs = cases.records(fmt, size, n)
    schema = _schema_str(fmt, size)
    if fmt == "avro":
        ser = c_avro.AvroSerializer(registry, schema)
    else:
        ser = c_json.JSONSerializer(schema, registry)
    return [ser(r, ctx) for r in recs]


def run(repeats: int, n: int) -> Dict[str, Any]:
    registry = SchemaRegistryClient.new_client({"url": f"mock://typed-bench-{uuid.uuid4().hex}"})
    out: Dict[str, Any] = {"environment": environment(), "config": {"repeats": repeats, "records": n}, "groups": []}
    for fmt, size in CASES:
        ctx = SerializationContext(f"typed-{fmt}-{size}", MessageField.VALUE)
        data = frames(fmt, size, registry, n, ctx)
        lanes = lanes_for(fmt, size, registry, data[0], ctx)
        # every lane gives the same values (the typed ones: the same instances)
        reference = [lanes["dataclass"](b, ctx) for b in data]
        for name in ("pure dataclass", "confluent + from_dict"):
            assert [lanes[name](b, ctx) for b in data] == reference, f"{fmt} {size}: {name} differs"
        samples: Dict[str, List[float]] = {name: [] for name in lanes}
        names = list(lanes)
        for r in range(repeats):
            for name in names[r % len(names):] + names[:r % len(names)]:
                samples[name].append(timed2(lanes[name], data, ctx)[0])
        median = {name: statistics.median(v) for name, v in samples.items()}
        out["groups"].append({
            "format": fmt, "size": size, "samples_ns": samples, "median_ns": median,
            "typed_over_dict": {k: median[k] / median["dict"] for k in ("dataclass", "msgspec", "pure dataclass")},
            "confluent_over_typed": median["confluent + from_dict"] / median["dataclass"],
        })
    return out


def markdown(report: Dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "# Typed decode: serdes.typed vs dict decode vs confluent-kafka + from_dict",
        "",
        f"`python benchmarks/typed_decode.py`: {report['config']['records']} records, "
        f"{report['config']['repeats']} interleaved repeats, medians (ns/record). "
        f"confluent-kafka {env['versions'].get('confluent-kafka')}, Python {env['python']}, load average {env['loadavg']}. "
        f"Target: typed ≤ {TARGET}x dict.",
        "",
        "| format | size | dict | dataclass | msgspec | pure dataclass | confluent + from_dict "
        "| dataclass / dict | msgspec / dict | confluent / dataclass |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for g in report["groups"]:
        m = g["median_ns"]
        t = g["typed_over_dict"]
        lines.append(
            f"| {g['format']} | {g['size']} | {m['dict']:,.0f} | {m['dataclass']:,.0f} | {m['msgspec']:,.0f} "
            f"| {m['pure dataclass']:,.0f} | {m['confluent + from_dict']:,.0f} | {t['dataclass']:.2f}x "
            f"| {t['msgspec']:.2f}x | {g['confluent_over_typed']:.1f}x |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--records", type=int, default=2000)
    p.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)
    report = run(args.repeats, args.records)
    out = Path(args.out_dir)
    (out / "typed_decode.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    md = markdown(report)
    (out / "typed_decode.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
