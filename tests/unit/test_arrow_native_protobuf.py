"""serdes.arrow's native columnar Protobuf decoder (rust/src/columnar/protobuf/): every case runs on
both paths -- the native decoder, and the per-record path (``ProtobufDeserializer`` then the dict
converter then pyarrow, built pure: ``_native.forced_pure``), the reference -- and compares the
batches (schema and values), ``batch.rows`` and the typed errors. Where the native decoder cannot
read a list exactly as the per-record path does it must hand the list over (``declined``), and
the tests say which lists it takes (``taken``)."""

from __future__ import annotations

import math
import struct
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pytest

pa = pytest.importorskip("pyarrow")

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, timestamp_pb2, wrappers_pb2  # noqa: E402
from google.protobuf.internal import api_implementation  # noqa: E402
from google.protobuf.message_factory import GetMessageClass  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from serdes import ColumnValueError, CorruptPayloadError, _native  # noqa: E402
from serdes.arrow._native_protobuf import NoProgram, program, reread_refusal  # noqa: E402
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer  # noqa: E402
from tests.support.implementations import require_native  # noqa: E402
from tests.support.arrow_rows import panic_armed, storage_rows  # noqa: E402
from tests.support.small_stack import on_small_stack  # noqa: E402

CTX = SerializationContext("t", MessageField.VALUE)
CONF = {"use.deprecated.format": False}
F = descriptor_pb2.FieldDescriptorProto


@pytest.fixture(autouse=True)
def _native_built() -> None:
    require_native()


def _client() -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://arrow-native-pb-{uuid.uuid4().hex}"})


# -- message classes, built from descriptors (no protoc) ------------------------------------------

def _pool() -> Any:
    pool = descriptor_pool.DescriptorPool()
    for mod in (timestamp_pb2, duration_pb2, wrappers_pb2):
        fdp = descriptor_pb2.FileDescriptorProto()
        mod.DESCRIPTOR.CopyToProto(fdp)
        pool.Add(fdp)
    return pool


_SCALARS = [
    ("d", F.TYPE_DOUBLE), ("f", F.TYPE_FLOAT), ("i32", F.TYPE_INT32), ("i64", F.TYPE_INT64), ("u32", F.TYPE_UINT32),
    ("u64", F.TYPE_UINT64), ("s32", F.TYPE_SINT32), ("s64", F.TYPE_SINT64), ("fx32", F.TYPE_FIXED32),
    ("fx64", F.TYPE_FIXED64), ("sf32", F.TYPE_SFIXED32), ("sf64", F.TYPE_SFIXED64), ("b", F.TYPE_BOOL),
    ("s", F.TYPE_STRING), ("by", F.TYPE_BYTES),
]
_WRAPPERS = ["DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value", "BoolValue",
             "StringValue", "BytesValue"]


class _File:
    """A FileDescriptorProto being assembled: messages with fields by (name, type, options)."""

    def __init__(self, name: str, package: str, syntax: str = "proto3") -> None:
        self.fdp = descriptor_pb2.FileDescriptorProto(
            name=name, package=package, syntax=syntax,
            dependency=["google/protobuf/timestamp.proto", "google/protobuf/duration.proto",
                        "google/protobuf/wrappers.proto"])
        self.package = package

    def message(self, name: str, parent: Any = None) -> Any:
        return (parent.nested_type if parent is not None else self.fdp.message_type).add(name=name)

    def field(self, m: Any, name: str, number: int, typ: int, type_name: str = "", repeated: bool = False,
              optional: bool = False, oneof: Optional[int] = None, packed: Optional[bool] = None) -> Any:
        f = m.field.add(name=name, number=number, type=typ,
                        label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
        if type_name:
            f.type_name = type_name
        if optional:  # proto3 `optional`: a synthetic oneof of its own
            f.proto3_optional = True
            f.oneof_index = len(m.oneof_decl)
            m.oneof_decl.add(name=f"_{name}")
        if oneof is not None:
            f.oneof_index = oneof
        if packed is not None:
            f.options.packed = packed
        return f

    def map(self, m: Any, name: str, number: int, key: int, value: int, value_type: str = "") -> None:
        entry = self.message(name.title().replace("_", "") + "Entry", m)
        entry.options.map_entry = True
        self.field(entry, "key", 1, key)
        self.field(entry, "value", 2, value, value_type)
        self.field(m, name, number, F.TYPE_MESSAGE, f".{self.package}.{m.name}.{entry.name}", repeated=True)

    def classes(self, *names: str) -> List[Any]:
        pool = _pool()
        pool.Add(self.fdp)
        return [GetMessageClass(pool.FindMessageTypeByName(f"{self.package}.{n}")) for n in names]


def _every_kind_file() -> _File:
    fb = _File("every.proto", "t.every")
    color = fb.fdp.enum_type.add(name="Color")
    color.options.allow_alias = True
    for name, number in (("RED", 0), ("GREEN", 1), ("BLUE", 5), ("AZURE", 5), ("NEG", -3)):
        color.value.add(name=name, number=number)
    inner = fb.message("Inner")
    fb.field(inner, "x", 1, F.TYPE_INT32)
    fb.field(inner, "y", 2, F.TYPE_STRING)
    fb.field(inner, "deep", 3, F.TYPE_MESSAGE, ".t.every.Deep")
    deep = fb.message("Deep")
    fb.field(deep, "z", 1, F.TYPE_SINT64)
    fb.field(deep, "tags", 2, F.TYPE_STRING, repeated=True)
    m = fb.message("Every")
    n = 1
    for name, typ in _SCALARS:
        fb.field(m, name, n, typ)
        n += 1
    fb.field(m, "e", n, F.TYPE_ENUM, ".t.every.Color")
    m.oneof_decl.add(name="choice")  # a real oneof: before the synthetic ones of `optional`
    choice = 0
    fb.field(m, "o_i32", n + 1, F.TYPE_INT32, optional=True)
    fb.field(m, "o_s", n + 2, F.TYPE_STRING, optional=True)
    fb.field(m, "o_e", n + 3, F.TYPE_ENUM, ".t.every.Color", optional=True)
    fb.field(m, "oa", n + 4, F.TYPE_INT64, oneof=choice)
    fb.field(m, "ob", n + 5, F.TYPE_STRING, oneof=choice)
    fb.field(m, "oc", n + 6, F.TYPE_MESSAGE, ".t.every.Inner", oneof=choice)
    fb.field(m, "inner", n + 7, F.TYPE_MESSAGE, ".t.every.Inner")
    fb.field(m, "r_i32", n + 8, F.TYPE_INT32, repeated=True)
    fb.field(m, "r_s", n + 9, F.TYPE_STRING, repeated=True)
    fb.field(m, "r_inner", n + 10, F.TYPE_MESSAGE, ".t.every.Inner", repeated=True)
    fb.field(m, "r_e", n + 11, F.TYPE_ENUM, ".t.every.Color", repeated=True)
    fb.field(m, "r_f", n + 12, F.TYPE_FLOAT, repeated=True)
    fb.field(m, "r_b", n + 13, F.TYPE_BOOL, repeated=True, packed=False)
    fb.field(m, "r_fx64", n + 14, F.TYPE_FIXED64, repeated=True)
    fb.field(m, "r_by", n + 15, F.TYPE_BYTES, repeated=True)
    fb.map(m, "m_si", n + 16, F.TYPE_STRING, F.TYPE_INT32)
    fb.map(m, "m_is", n + 17, F.TYPE_INT64, F.TYPE_STRING)
    fb.map(m, "m_bi", n + 18, F.TYPE_BOOL, F.TYPE_MESSAGE, ".t.every.Inner")
    fb.map(m, "m_ue", n + 19, F.TYPE_UINT32, F.TYPE_ENUM, ".t.every.Color")
    fb.map(m, "m_st", n + 20, F.TYPE_SINT32, F.TYPE_MESSAGE, ".google.protobuf.Timestamp")
    fb.field(m, "ts", n + 21, F.TYPE_MESSAGE, ".google.protobuf.Timestamp")
    fb.field(m, "du", n + 22, F.TYPE_MESSAGE, ".google.protobuf.Duration")
    for k, w in enumerate(_WRAPPERS):
        fb.field(m, "w_" + w[:-5].lower(), n + 23 + k, F.TYPE_MESSAGE, f".google.protobuf.{w}")
    fb.field(m, "r_ts", 100, F.TYPE_MESSAGE, ".google.protobuf.Timestamp", repeated=True)
    fb.field(m, "r_w", 101, F.TYPE_MESSAGE, ".google.protobuf.Int32Value", repeated=True)
    fb.field(m, "big", 536870911, F.TYPE_INT32)  # the largest field number
    other = fb.message("Other")  # the file's second message: message indexes [1]
    fb.field(other, "name", 1, F.TYPE_STRING)
    fb.field(other, "n", 2, F.TYPE_UINT64)
    return fb


Every, Inner, Other = _every_kind_file().classes("Every", "Inner", "Other")

_EDGE_INTS = {
    "i32": [0, -1, 2**31 - 1, -(2**31)], "i64": [0, -1, 2**63 - 1, -(2**63)], "u32": [0, 1, 2**32 - 1, 7],
    "u64": [0, 1, 2**64 - 1, 2**63], "s32": [0, -1, 2**31 - 1, -(2**31)], "s64": [0, -1, 2**63 - 1, -(2**63)],
    "fx32": [0, 1, 2**32 - 1, 9], "fx64": [0, 1, 2**64 - 1, 3], "sf32": [0, -1, 2**31 - 1, -(2**31)],
    "sf64": [0, -1, 2**63 - 1, -(2**63)],
}


def _every(n: int) -> Any:
    """A message with every kind of field, its values varying with ``n`` (edge values included)."""
    m = Every()
    for name, values in _EDGE_INTS.items():
        setattr(m, name, values[n % 4])
    m.d = [0.0, -0.0, math.inf, 1e308, -5e-324][n % 5]
    m.f = [0.0, 1.5, -math.inf, 3.25, 1e-45][n % 5]
    m.b = n % 2 == 1
    m.s = ["", "zoë ☃", "a" * 300, "𝄞 emoji 🎉"][n % 4]
    m.by = [b"", b"\x00\xff", b"b" * 200, b"\x80"][n % 4]
    m.e = [0, 1, 5, -3][n % 4]
    if n % 3 == 0:
        m.o_i32 = 0  # set to the default: present, not null
    if n % 3 == 1:
        m.o_s = ""
        m.o_e = 5
    if n % 4 == 0:
        m.oa = -n
    elif n % 4 == 1:
        m.ob = f"b{n}"
    elif n % 4 == 2:
        m.oc.x = n  # a oneof message member
    if n % 2 == 0:
        m.inner.x = n
        m.inner.y = "in"
        if n % 4 == 0:
            m.inner.deep.z = -(n**5)
            m.inner.deep.tags.extend(["t"] * (n % 3))
    m.r_i32.extend([-1, n, 2**31 - 1][: n % 4])
    m.r_s.extend(["", "x", "ü"][: n % 4])
    for k in range(n % 3):
        item = m.r_inner.add(x=k)
        if k:
            item.deep.z = k
    m.r_e.extend([5, 0, -3][: n % 4])
    m.r_f.extend([0.5, -0.0, math.inf][: n % 4])
    m.r_b.extend([True, False][: n % 3])
    m.r_fx64.extend([2**64 - 1, 0][: n % 3])
    m.r_by.extend([b"", b"\x01"][: n % 3])
    for k in range(n % 4):
        m.m_si[f"k{(n * 7 + k * 3) % 10}"] = k - 1
        m.m_is[(k * 13 - 20) * (n + 1)] = f"v{k}"
        m.m_ue[k * 1000] = [0, 1, 5][k % 3]
        m.m_st[-k].FromNanoseconds(k * 10**9 + 5)
    if n % 2:
        m.m_bi[True].x = n
        m.m_bi[False].y = "f"
    if n % 3 != 2:
        m.ts.FromNanoseconds([0, -1, 1_700_000_000_123_456_789, -(2**62)][n % 4])
        m.du.FromNanoseconds([0, -1_500_000_001, 2**62, 1][n % 4])
    for k, w in enumerate(_WRAPPERS):
        if (n + k) % 3:
            wrapper = getattr(m, "w_" + w[:-5].lower())
            default = {"StringValue": "", "BytesValue": b"", "BoolValue": False}.get(w, 0)
            wrapper.value = default if (n + k) % 3 == 1 else {"StringValue": "sv", "BytesValue": b"bv",
                                                               "BoolValue": True, "DoubleValue": -2.5,
                                                               "FloatValue": 0.25}.get(w, 7)
    for k in range(n % 3):
        m.r_ts.add().FromNanoseconds(k)
        m.r_w.add(value=-k)
    m.big = -n
    return m


# -- both paths ---------------------------------------------------------------------------------

def _canon(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, list):
        return [_canon(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_canon(x) for x in v)
    if isinstance(v, dict):
        return {k: _canon(x) for k, x in v.items()}
    return v


def _same(a: Any, b: Any) -> bool:
    if a.equals(b):
        return True
    # NaN is not equal to itself in Arrow's equality: compare the Python values, NaN as a marker
    return bool(a.schema.equals(b.schema) and _canon(storage_rows(a)) == _canon(storage_rows(b)))


def _native_of(deser: Any) -> Any:
    found = [n for n in deser.__dict__.get("_arrow_native_protobuf", {}).values() if n is not None]
    assert len(found) == 1, found
    return found[0]


def _both(make: Callable[[], Any], frames: List[Any], **kw: Any) -> Tuple[Any, Any, Any]:
    """(native-path batch, per-record-path batch, the native decoder), errors collected; checks
    that the two are the same batch, rows and error types."""
    deser = make()
    got = deser.deserialize_arrow(frames, CTX, errors="collect", **kw)
    with _native.forced_pure():
        ref = make().deserialize_arrow(frames, CTX, errors="collect", **kw)
    a, b = pa.record_batch(got), pa.record_batch(ref)
    assert a.schema.equals(b.schema), (a.schema, b.schema)
    assert _same(a, b), [(n, a.column(n), b.column(n)) for n in a.schema.names if not a.column(n).equals(b.column(n))][:3]
    assert got.rows == ref.rows
    assert [(i, type(e)) for i, e in got.errors] == [(i, type(e)) for i, e in ref.errors]
    return got, ref, _native_of(deser)


def _generated(cls: Any, client: Any = None, conf: Optional[Dict[str, Any]] = None) -> Callable[[], Any]:
    return lambda: ProtobufDeserializer(cls, dict(CONF, **(conf or {})), client)


def _frames(cls: Any, msgs: Sequence[Any], client: Any = None) -> List[bytes]:
    ser = ProtobufSerializer(cls, client or _client(), CONF)
    return [ser(m, CTX) for m in msgs]


def _head(frame: bytes) -> bytes:
    """The frame's prefix: magic, schema id and message indexes (one byte each)."""
    return frame[:6] if frame[5] == 0 else frame[:6 + frame[5] // 2]


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _tag(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _len(number: int, data: bytes) -> bytes:
    return _tag(number, 2) + _varint(len(data)) + data


def _num(name: str) -> int:
    return int(Every.DESCRIPTOR.fields_by_name[name].number)


# -- the cases ----------------------------------------------------------------------------------

@pytest.mark.parametrize("registry", [False, True])
def test_every_kind_of_field_is_decoded_natively(registry: bool) -> None:
    client = _client()
    frames = _frames(Every, [_every(n) for n in range(24)], client)
    got, _, native = _both(_generated(Every, client if registry else None), frames)
    assert native.taken == 1 and native.declined == 0 and got.num_rows == 24
    rb = pa.record_batch(got)
    assert rb.schema.field("e").type == pa.dictionary(pa.int32(), pa.utf8())
    assert rb.schema.field("ts").type == pa.timestamp("ns", "UTC") and rb.schema.field("du").type == pa.duration("ns")
    assert rb.column("e").to_pylist()[:4] == ["RED", "GREEN", "AZURE", "NEG"]  # an alias: the last name
    assert rb.column("i32").to_pylist()[:4] == [0, -1, 2**31 - 1, -(2**31)]  # -1: a 10-byte varint
    assert rb.column("o_i32").to_pylist()[:3] == [0, None, None]
    assert rb.column("oa").to_pylist()[:4] == [0, None, None, None]
    assert rb.column("oc").to_pylist()[1:3] == [None, {"x": 2, "y": "", "deep": None}]


def test_the_standard_benchmark_record() -> None:
    serde_cases = pytest.importorskip("benchmarks.serde_cases", reason="a checkout's benchmarks/ (not in a wheel check)")

    cls = serde_cases.proto_classes()["standard"]
    frames = _frames(cls, serde_cases.records("protobuf", "standard", 300))
    got, _, native = _both(_generated(cls), frames)
    assert native.taken == 1 and got.num_rows == 300


def test_nan_floats() -> None:
    m = Every(d=math.nan, f=math.nan)
    m.r_f.extend([math.nan])
    frames = _frames(Every, [m])
    # a signalling NaN float, as the runtime widens it to a double and pyarrow narrows it back
    head = _head(frames[0])
    frames.append(head + frames[0][len(head):] + _tag(_num("f"), 5) + struct.pack("<I", 0x7F800001))
    got, ref, native = _both(_generated(Every), frames)
    assert native.taken == 1
    rb, rr = pa.record_batch(got), pa.record_batch(ref)
    assert rb.column("f").cast(pa.float32()).view(pa.uint32()).equals(rr.column("f").view(pa.uint32()))
    assert math.isnan(rb.column("d").to_pylist()[0])


def test_tombstones_are_rows_of_nulls_natively() -> None:
    frames: List[Any] = _frames(Every, [_every(n) for n in range(5)])
    frames[1:1] = [None]
    frames.append(None)
    got, _, native = _both(_generated(Every), frames)
    assert native.taken == 1 and got.num_rows == 7
    rb = pa.record_batch(got)
    assert rb.column("i32").to_pylist()[:3] == [0, None, -1] and rb.column("m_si").to_pylist()[-1] is None
    assert all(f.nullable for f in rb.schema)
    assert _generated(Every)().deserialize_arrow([None, None], CTX).num_rows == 2


def test_message_indexes_of_other_messages() -> None:
    client = _client()
    others = _frames(Other, [Other(name=f"o{n}", n=n) for n in range(3)], client)
    inners = _frames(Inner, [Inner(x=n) for n in range(3)], client)
    assert _head(others[0])[5:] == b"\x02\x06" and _head(inners[0])[5:] == b"\x00"  # [3], [0]
    for registry in (False, True):
        got, _, native = _both(_generated(Other, client if registry else None), others)
        assert native.taken == 1 and pa.record_batch(got).column("n").to_pylist() == [0, 1, 2]
        got, _, native = _both(_generated(Inner, client if registry else None), inners)
        assert native.taken == 1


def test_a_message_index_out_of_range_is_the_per_record_error() -> None:
    client = _client()
    frames = _frames(Other, [Other(name="a")] * 3, client)
    frames[1] = frames[1][:5] + b"\x02\x0a" + frames[1][7:]  # indexes [5] (for [3]): no such message
    got, _, native = _both(_generated(Other, client), frames)
    assert native.taken == 0 and [i for i, _ in got.errors] == [1]
    # without a registry the per-record path reads it with its class, and so does the native one
    got, _, native = _both(_generated(Other), frames)
    assert native.taken == 1 and not got.errors


def test_wire_variants_the_runtime_accepts() -> None:
    base = _head(_frames(Every, [Every()])[0])  # indexes [2]: the file's third message
    bodies = {
        # unpacked items of a packed field, then a packed run, mixed
        "unpacked": _tag(_num("r_i32"), 0) + _varint(-1) + _tag(_num("r_i32"), 0) + _varint(3)
        + _len(_num("r_i32"), _varint(4) + _varint(5)),
        # a packed run of a field declared unpacked
        "packed bools": _len(_num("r_b"), b"\x01\x00\x07"),
        # a scalar twice: the last wins; a oneof: the last member wins and clears the others
        "last wins": _tag(_num("i32"), 0) + _varint(1) + _tag(_num("i32"), 0) + _varint(2)
        + _tag(_num("oa"), 0) + _varint(9) + _len(_num("ob"), b"ob") + _len(_num("oc"), b"")
        + _len(_num("s"), b"first") + _len(_num("s"), b"second"),
        # a oneof message member set, cleared by another member, then set again: not merged
        "oneof again": _len(_num("oc"), b"\x08\x01") + _tag(_num("oa"), 0) + b"\x01" + _len(_num("oc"), b"\x08\x02"),
        # unknown fields of every wire type, skipped
        "unknown": _tag(9999, 0) + _varint(2**64 - 1) + _tag(9998, 1) + b"\x00" * 8 + _len(9997, b"xyz")
        + _tag(9996, 5) + b"\x00" * 4 + _tag(_num("u32"), 0) + _varint(5),
        # a map key twice: the last wins; keys out of order
        "map duplicates": _len(_num("m_si"), _len(1, b"b") + _tag(2, 0) + b"\x01")
        + _len(_num("m_si"), _len(1, b"a") + _tag(2, 0) + b"\x02")
        + _len(_num("m_si"), _len(1, b"b") + _tag(2, 0) + b"\x03")
        + _len(_num("m_si"), _tag(2, 0) + b"\x04")  # no key: the default ""
        + _len(_num("m_bi"), _tag(1, 0) + b"\x01"),  # no value: the empty message
        # an int32 and a bool out of their range: the low 32 bits, any non-zero is true
        "wide varints": _tag(_num("i32"), 0) + _varint(2**40 + 5) + _tag(_num("b"), 0) + _varint(2**35)
        + _tag(_num("u32"), 0) + _varint(2**33 + 1) + _tag(_num("e"), 0) + _varint(2**32 + 1),
        # a Timestamp with negative nanos, and its fields twice; a wrapper's value twice
        "timestamps": _len(_num("ts"), _tag(1, 0) + _varint(5) + _tag(2, 0) + _varint(-7) + _tag(1, 0) + _varint(6))
        + _len(_num("w_int64"), _tag(1, 0) + b"\x01" + _tag(1, 0) + b"\x02"),
        "empty": b"",
    }
    frames = [base + b for b in bodies.values()]
    got, _, native = _both(_generated(Every), frames)
    assert native.taken == 1 and not got.errors
    rows = storage_rows(pa.record_batch(got))
    assert rows[0]["r_i32"] == [-1, 3, 4, 5] and rows[1]["r_b"] == [True, False, True]
    assert (rows[2]["i32"], rows[2]["oa"], rows[2]["ob"], rows[2]["s"]) == (2, None, None, "second")
    assert rows[2]["oc"] == {"x": 0, "y": "", "deep": None}
    assert rows[3]["oc"] == {"x": 2, "y": "", "deep": None} and rows[3]["oa"] is None
    assert rows[5]["m_si"] == [("", 4), ("a", 2), ("b", 3)]
    assert rows[6]["i32"] == 5 and rows[6]["b"] is True and rows[6]["e"] == "GREEN"


@pytest.mark.parametrize("case", [
    "truncated", "bad varint", "bad wire type", "length past end", "group", "field 0", "not utf-8",
    "map key not utf-8", "undeclared enum", "undeclared enum in a list", "message twice", "timestamp overflow",
    "packed fixed cut", "bad magic", "no index array", "two-byte index", "bytearray",
])
def test_a_list_with_a_frame_the_native_decoder_does_not_take_is_the_per_record_result(case: str) -> None:
    frames: List[Any] = _frames(Every, [_every(n) for n in range(6)])
    head = _head(frames[2])
    body = {
        "truncated": frames[2][6:-1],
        "bad varint": _tag(_num("i64"), 0) + b"\xff" * 10 + b"\x01",
        "bad wire type": _len(_num("i32"), b"\x01"),  # the runtime keeps it as an unknown field
        "length past end": _tag(_num("s"), 2) + b"\x10ab",
        "group": _tag(9000, 3) + _tag(9000, 4),
        "field 0": b"\x00\x01",
        "not utf-8": _len(_num("s"), b"\xff\xfe"),
        "map key not utf-8": _len(_num("m_si"), _len(1, b"\xc3") + _tag(2, 0) + b"\x01"),
        "undeclared enum": _tag(_num("e"), 0) + _varint(7),
        "undeclared enum in a list": _len(_num("r_e"), b"\x00\x0e"),
        "message twice": _len(_num("inner"), b"\x08\x01") + _len(_num("inner"), b"\x12\x01z"),
        "timestamp overflow": _len(_num("ts"), _tag(1, 0) + _varint(2**62)),
        "packed fixed cut": _len(_num("r_fx64"), b"\x00" * 12),
        "bad magic": None,
        "no index array": None,
        "two-byte index": None,
        "bytearray": None,
    }[case]
    if body is not None:
        frames[2] = head + body
    elif case == "bad magic":
        frames[2] = b"\x07" + frames[2][1:]
    elif case == "no index array":
        frames[2] = frames[2][:5]
    elif case == "two-byte index":
        frames[2] = frames[2][:5] + b"\x02\x84\x00" + frames[2][7:]  # [2] spelled in two bytes
    else:
        frames[2] = bytearray(frames[2])
    got, _, native = _both(_generated(Every), frames)
    assert native.taken == 0 and native.declined == 1
    if case in ("undeclared enum", "undeclared enum in a list", "timestamp overflow"):
        assert [type(e) for _, e in got.errors] == [ColumnValueError]
    elif case == "not utf-8":
        assert [type(e) for _, e in got.errors] == [CorruptPayloadError]
    # the others: whatever the per-record path makes of them (an error, a value), compared above


def test_a_map_entry_with_another_field_goes_to_the_per_record_path() -> None:
    """A map entry holding a field besides its key and value: upb keeps the whole entry as an
    unknown field of the message (the map does not get it) and the pure-Python runtime inserts
    it, so the native decoder leaves such a list to the per-record path (found by
    test_corrupted_frames_decode_alike: one damaged byte turned an entry's key into field 4)."""
    base = _head(_frames(Every, [Every()])[0])
    for entry in (_len(1, b"a") + _tag(2, 0) + b"\x05" + _tag(4, 0) + b"\x07",  # an extra varint
                  _len(4, b"a") + _tag(2, 0) + b"\x05"):  # the key's bytes under field 4
        frames = [base + _len(_num("m_si"), _len(1, b"k") + _tag(2, 0) + b"\x01") + _len(_num("m_si"), entry)]
        got, ref, native = _both(_generated(Every), frames)
        assert native.taken == 0 and native.declined == 1 and "map entry" in native.refused[1]
        if api_implementation.Type() == "upb":  # (the per-record path's own answer, checked equal above)
            assert dict(storage_rows(pa.record_batch(got))[0]["m_si"]) == {"k": 1}


def test_too_many_items_and_too_deep_stay_on_the_per_record_path() -> None:
    frames = _frames(Every, [_every(n) for n in range(4)] + [Every(r_i32=list(range(50)))])
    got, _, native = _both(_generated(Every, conf={"serdes.max.items": 20}), frames)
    assert native.taken == 0 and "max_items" in native.refused[1] and not got.errors
    # a reader nested deeper than max_depth has no native decoder (the per-record converter
    # refuses such records: MessageTooDeepError)
    deser = _generated(Every, conf={"serdes.max.depth": 2})()
    deser.deserialize_arrow(frames[:1], CTX)
    assert list(deser.__dict__["_arrow_native_protobuf"].values()) == [None]


def test_a_recursive_message_has_no_columnar_shape() -> None:
    from serdes.arrow import NoColumnarShape

    fb = _File("rec.proto", "t.rec")
    node = fb.message("Node")
    fb.field(node, "v", 1, F.TYPE_INT32)
    fb.field(node, "next", 2, F.TYPE_MESSAGE, ".t.rec.Node")
    (cls,) = fb.classes("Node")
    with pytest.raises(NoColumnarShape):
        _generated(cls)().deserialize_arrow(_frames(cls, [cls(v=1)]), CTX)


def test_programs_refused() -> None:
    fb = _File("p2.proto", "t.p2", syntax="proto2")
    req = fb.message("Req")
    f = fb.field(req, "r", 1, F.TYPE_INT32)
    f.label = F.LABEL_REQUIRED
    grp = fb.message("Grp")
    fb.field(grp, "g", 1, F.TYPE_GROUP, ".t.p2.Grp.G")
    fb.message("G", grp)
    ext = fb.message("Ext")
    ext.extension_range.add(start=100, end=200)
    fb.message("Empty")  # no fields: no columns
    for cls in fb.classes("Req", "Grp", "Ext", "Empty"):
        with pytest.raises(NoProgram):
            program(cls.DESCRIPTOR)


def test_empty_messages_inside() -> None:
    fb = _File("empty.proto", "t.empty")
    fb.message("E")
    m = fb.message("M")
    fb.field(m, "e", 1, F.TYPE_MESSAGE, ".t.empty.E")
    fb.field(m, "es", 2, F.TYPE_MESSAGE, ".t.empty.E", repeated=True)
    fb.field(m, "x", 3, F.TYPE_INT32)
    cls, empty = fb.classes("M", "E")
    msgs = [cls(x=1), cls(x=2, es=[empty(), empty()])]
    msgs[1].e.SetInParent()
    got, _, native = _both(_generated(cls), _frames(cls, msgs))
    assert native.taken == 1
    assert pa.record_batch(got).to_pylist() == [{"e": None, "es": [], "x": 1}, {"e": {}, "es": [{}, {}], "x": 2}]


def test_proto2_optional_fields_and_defaults() -> None:
    fb = _File("p2b.proto", "t.p2b", syntax="proto2")
    en = fb.fdp.enum_type.add(name="E")
    en.value.add(name="ONE", number=1)
    en.value.add(name="TWO", number=2)
    m = fb.message("P")
    fb.field(m, "i", 1, F.TYPE_INT32).default_value = "7"
    fb.field(m, "e", 2, F.TYPE_ENUM, ".t.p2b.E").default_value = "TWO"
    fb.field(m, "s", 3, F.TYPE_STRING)
    fb.field(m, "xs", 4, F.TYPE_SINT32, repeated=True, packed=True)
    (cls,) = fb.classes("P")
    frames = _frames(cls, [cls(), cls(i=0, e=1, s="", xs=[-1, 1]), cls(e=2)])
    # a closed enum's unknown number: the runtime keeps it as an unknown field (the field unset)
    frames.append(frames[0] + _tag(2, 0) + b"\x09")
    got, _, native = _both(_generated(cls), frames[:3])
    assert native.taken == 1
    assert pa.record_batch(got).to_pylist()[0] == {"i": None, "e": None, "s": None, "xs": []}
    got, _, native = _both(_generated(cls), frames)
    assert native.taken == 0 and pa.record_batch(got).column("e").to_pylist()[3] is None


# -- writer versions and readers ------------------------------------------------------------------

def _versions() -> Dict[str, Any]:
    """Versions of message t.v.Rec, each in a pool of its own: v1; v2 adds a field; v3 drops
    v1's string; v4 turns a field's type; v5 puts two fields in a oneof."""
    out = {}
    for version, fields in {
        "v1": [("id", 1, F.TYPE_INT64), ("name", 2, F.TYPE_STRING), ("n", 3, F.TYPE_INT32)],
        "v2": [("id", 1, F.TYPE_INT64), ("name", 2, F.TYPE_STRING), ("n", 3, F.TYPE_INT32),
               ("score", 4, F.TYPE_DOUBLE)],
        "v3": [("id", 1, F.TYPE_INT64), ("n", 3, F.TYPE_INT32), ("score", 4, F.TYPE_DOUBLE)],
        "v4": [("id", 1, F.TYPE_INT64), ("name", 2, F.TYPE_STRING), ("n", 3, F.TYPE_INT64)],
        "v5": [("id", 1, F.TYPE_INT64), ("name", 2, F.TYPE_STRING), ("n", 3, F.TYPE_INT32)],
    }.items():
        fb = _File(f"rec_{version}.proto", "t.v")
        m = fb.message("Rec")
        if version == "v5":
            m.oneof_decl.add(name="which")
        for name, number, typ in fields:
            fb.field(m, name, number, typ, oneof=0 if version == "v5" and number in (2, 3) else None)
        (out[version],) = fb.classes("Rec")
    return out


def _version_frames(client: Any, classes: Dict[str, Any], versions: Sequence[str]) -> List[bytes]:
    frames: List[bytes] = []
    for v in versions:
        cls = classes[v]
        values = {"id": 1, "name": f"name-{v}", "n": 3, "score": 0.5}
        frames += _frames(cls, [cls(**{k: x for k, x in values.items() if k in cls.DESCRIPTOR.fields_by_name})] * 2,
                          client)
    return frames


def test_mixed_writer_versions_into_the_deserializer_s_class() -> None:
    classes = _versions()
    client = _client()
    frames = _version_frames(client, classes, ["v1", "v2", "v3", "v1"])
    assert len({f[1:5] for f in frames}) == 3  # three schema ids
    for registry in (None, client):
        got, _, native = _both(_generated(classes["v2"], registry), frames)
        assert native.taken == 1 and pa.record_batch(got).column("name").to_pylist()[4:6] == ["", ""]


@pytest.mark.parametrize("reader, writers, taken", [
    ("v2", ["v1", "v2"], True),  # the reader adds a field
    ("v1", ["v1", "v2"], True),  # the reader drops a double
    ("v3", ["v1", "v3"], False),  # the reader drops a string (its parse can fail): refused
    ("v4", ["v1"], False),  # int32 -> int64: the re-read keeps 32 bits of a wider varint
    ("v5", ["v1"], False),  # a oneof the writer does not have
])
def test_dynamic_deserializer_re_reads_other_versions(reader: str, writers: List[str], taken: bool) -> None:
    classes = _versions()
    client = _client()
    frames = _version_frames(client, classes, writers)
    got, _, native = _both(lambda: ProtobufDeserializer(None, CONF, client), frames, reader_schema=classes[reader])
    assert (native.taken == 1) is taken and not got.errors, native.refused


def test_reread_equivalence_rules() -> None:
    classes = _versions()
    d = {v: c.DESCRIPTOR for v, c in classes.items()}
    assert reread_refusal(d["v1"], d["v2"]) is None and reread_refusal(d["v2"], d["v1"]) is None
    assert "fail to parse" in (reread_refusal(d["v1"], d["v3"]) or "")
    assert "type" in (reread_refusal(d["v1"], d["v4"]) or "")
    assert reread_refusal(d["v1"], d["v5"]) is not None  # a oneof member has presence, its sibling is cleared
    assert "not the reader's" in (reread_refusal(Other.DESCRIPTOR, d["v1"]) or "")
    assert reread_refusal(Every.DESCRIPTOR, _every_kind_file().classes("Every")[0].DESCRIPTOR) is None


def test_a_frame_of_another_message_is_the_per_record_error() -> None:
    client = _client()
    frames = _frames(Every, [_every(1)], client) + _frames(Other, [Other(name="x")], client)
    got, _, native = _both(lambda: ProtobufDeserializer(None, CONF, client), frames, reader_schema=Every)
    assert native.taken == 0 and [i for i, _ in got.errors] == [1]


def test_threads_give_the_same_batch() -> None:
    frames: List[Any] = _frames(Every, [_every(n % 24) for n in range(9000)])
    frames[5000] = None
    deser = _generated(Every)()
    one = pa.record_batch(deser.deserialize_arrow(frames, CTX))
    for threads in (2, 3):
        assert _same(pa.record_batch(deser.deserialize_arrow(frames, CTX, threads=threads)), one)
    assert _native_of(deser).taken == 3


def test_a_panic_in_the_native_decoder_gives_the_per_record_result() -> None:
    from tests.support.implementations import native_module

    mod = native_module()
    frames = _frames(Every, [_every(n) for n in range(5)])
    deser = _generated(Every)()
    first = deser.deserialize_arrow(frames, CTX)
    with panic_armed(mod):
        batch = deser.deserialize_arrow(frames, CTX)
    native = _native_of(deser)
    assert native.declined == 1 and "panicked" in native.refused[1]
    assert _same(pa.record_batch(batch), pa.record_batch(first))


def test_columns_that_differ_from_the_reference_turn_the_native_path_off(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    frames = _frames(Other, [Other(name="a")])
    deser = _generated(Other)()
    deser.deserialize_arrow(frames, CTX)
    native = _native_of(deser)
    native._target = pa.struct([pa.field("name", pa.binary())])  # as if the decoder typed a column otherwise
    with caplog.at_level(logging.WARNING, logger="serdes.arrow"):
        batch = deser.deserialize_arrow(frames, CTX)
        deser.deserialize_arrow(frames, CTX)
    assert len(caplog.records) == 1 and "differ" in caplog.records[0].message
    assert pa.record_batch(batch).column("name").to_pylist() == ["a"] and native.declined == 2


def test_frame_heads_kept_are_bounded() -> None:
    client = _client()
    classes = _versions()
    frames = _version_frames(client, classes, ["v1", "v2", "v3"])
    deser = ProtobufDeserializer(classes["v2"], dict(CONF, **{"serdes.cache.size": 2}), client)
    assert deser.deserialize_arrow(frames, CTX).num_rows == 6
    native = _native_of(deser)
    assert len(native._heads) <= 2 and native.taken == 0  # three heads in one call: more than kept
    assert native.refused == (None, "more frame heads in one call than the cache keeps")
    for one in (frames[:2], frames[2:4], frames[4:]):
        assert deser.deserialize_arrow(one, CTX).num_rows == 2
    assert len(native._heads) <= 2 and native.taken == 3


# -- random messages (hypothesis) ------------------------------------------------------------------

_KIND_VALUES: Dict[int, Any] = {
    F.TYPE_DOUBLE: st.floats(width=64), F.TYPE_FLOAT: st.floats(width=32),
    F.TYPE_INT32: st.integers(-(2**31), 2**31 - 1), F.TYPE_SINT32: st.integers(-(2**31), 2**31 - 1),
    F.TYPE_SFIXED32: st.integers(-(2**31), 2**31 - 1), F.TYPE_INT64: st.integers(-(2**63), 2**63 - 1),
    F.TYPE_SINT64: st.integers(-(2**63), 2**63 - 1), F.TYPE_SFIXED64: st.integers(-(2**63), 2**63 - 1),
    F.TYPE_UINT32: st.integers(0, 2**32 - 1), F.TYPE_FIXED32: st.integers(0, 2**32 - 1),
    F.TYPE_UINT64: st.integers(0, 2**64 - 1), F.TYPE_FIXED64: st.integers(0, 2**64 - 1),
    F.TYPE_BOOL: st.booleans(), F.TYPE_STRING: st.text(max_size=5), F.TYPE_BYTES: st.binary(max_size=5),
}
_FIELD_KINDS = st.sampled_from(sorted(_KIND_VALUES) + ["message", "enum", "map", "map_msg", "timestamp", "wrapper"])


@st.composite
def _shapes(draw: Any) -> List[Tuple[Any, str]]:
    """A message shape: fields of random kinds and cardinalities (members of one oneof among
    them), one level of nesting."""
    out = []
    for kind in draw(st.lists(_FIELD_KINDS, min_size=1, max_size=8)):
        card = draw(st.sampled_from(["single", "optional", "repeated", "oneof"]))
        if kind in ("message", "timestamp", "wrapper") and card == "single":
            card = "optional"
        if kind in ("map", "map_msg"):
            card = "map"
        out.append((kind, card))
    return out


def _shape_class(shape: List[Tuple[Any, str]]) -> Any:
    fb = _File(f"h{uuid.uuid4().hex}.proto", "t.h")
    en = fb.fdp.enum_type.add(name="E")
    for name, number in (("Z", 0), ("A", 1), ("B", 9)):
        en.value.add(name=name, number=number)
    leaf = fb.message("Leaf")
    fb.field(leaf, "a", 1, F.TYPE_SINT32)
    fb.field(leaf, "b", 2, F.TYPE_STRING, repeated=True)
    m = fb.message("M")
    if any(card == "oneof" for _, card in shape):
        m.oneof_decl.add(name="pick")  # the real oneof first: synthetic ones (`optional`) come after
    for i, (kind, card) in enumerate(shape, start=1):
        name = f"f{i}"
        if kind == "map":
            fb.map(m, name, i, F.TYPE_STRING, F.TYPE_INT64)
            continue
        if kind == "map_msg":
            fb.map(m, name, i, F.TYPE_INT32, F.TYPE_MESSAGE, ".t.h.Leaf")
            continue
        typ, type_name = {
            "message": (F.TYPE_MESSAGE, ".t.h.Leaf"), "enum": (F.TYPE_ENUM, ".t.h.E"),
            "timestamp": (F.TYPE_MESSAGE, ".google.protobuf.Timestamp"),
            "wrapper": (F.TYPE_MESSAGE, ".google.protobuf.StringValue"),
        }.get(kind, (kind, ""))
        fb.field(m, name, i, typ, type_name, repeated=card == "repeated", optional=card == "optional"
                 and kind not in ("message", "timestamp", "wrapper"), oneof=0 if card == "oneof" else None)
    (cls,) = fb.classes("M")
    return cls


def _value(draw: Any, kind: Any) -> Any:
    if kind == "message":
        return {"a": draw(st.integers(-(2**31), 2**31 - 1)), "b": draw(st.lists(st.text(max_size=3), max_size=2))}
    if kind == "enum":
        return draw(st.sampled_from([0, 1, 9]))
    if kind == "timestamp":
        return draw(st.integers(-(2**62), 2**62))
    if kind == "wrapper":
        return draw(st.text(max_size=4))
    return draw(_KIND_VALUES[kind])


def _fill(msg: Any, name: str, kind: Any, card: str, draw: Any) -> None:
    if kind == "map":
        for k, v in draw(st.dictionaries(st.text(max_size=3), st.integers(-(2**63), 2**63 - 1), max_size=4)).items():
            getattr(msg, name)[k] = v
        return
    if kind == "map_msg":
        for k in draw(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=3)):
            leaf = getattr(msg, name)[k]
            leaf.a = draw(st.integers(-5, 5))
            leaf.b.extend(draw(st.lists(st.text(max_size=2), max_size=2)))
        return
    count = draw(st.integers(0, 3)) if card == "repeated" else draw(st.integers(0, 1))
    for _ in range(count):
        v = _value(draw, kind)
        target = getattr(msg, name).add() if card == "repeated" and kind in ("message", "timestamp", "wrapper") \
            else getattr(msg, name) if kind in ("message", "timestamp", "wrapper") else None
        if kind == "message":
            target.a = v["a"]
            target.b.extend(v["b"])
        elif kind == "timestamp":
            target.FromNanoseconds(v)
        elif kind == "wrapper":
            target.value = v
        elif card == "repeated":
            getattr(msg, name).append(v)
        else:
            setattr(msg, name, v)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_message_shapes_decode_alike(data: Any) -> None:
    shape = data.draw(_shapes())
    cls = _shape_class(shape)
    msgs = []
    for _ in range(data.draw(st.integers(1, 6))):
        msg = cls()
        for i, (kind, card) in enumerate(shape, start=1):
            _fill(msg, f"f{i}", kind, card, data.draw)
        msgs.append(msg)
    frames: List[Any] = _frames(cls, msgs)
    if data.draw(st.booleans()):
        frames.insert(data.draw(st.integers(0, len(frames))), None)
    _, _, native = _both(_generated(cls), frames)
    assert native.taken == 1


def test_timestamp_and_duration_boundaries() -> None:
    head = _head(_frames(Every, [Every()])[0])
    bound = 2**63 - 1  # int64 nanoseconds: seconds * 10^9 + nanos must fit (the column's storage)
    seconds, nanos = divmod(bound, 10**9)
    low_seconds, low_nanos = divmod(-(2**63), 10**9)

    def ts(number: int, s: int, n: int) -> bytes:
        return _len(number, _tag(1, 0) + _varint(s) + _tag(2, 0) + _varint(n))

    fits = [ts(_num("ts"), seconds, nanos) + ts(_num("du"), low_seconds, low_nanos),
            ts(_num("ts"), low_seconds, low_nanos) + ts(_num("du"), seconds, nanos),
            ts(_num("ts"), 0, -1) + ts(_num("du"), -1, 999_999_999)]  # nanos of either sign, as written
    got, _, native = _both(_generated(Every), [head + b for b in fits])
    assert native.taken == 1
    assert pa.record_batch(got).column("ts").cast(pa.int64()).to_pylist() == [bound, -(2**63), -1]
    beyond = [ts(_num("ts"), seconds, nanos + 1), ts(_num("du"), low_seconds, low_nanos - 1)]
    for body in beyond:
        got, _, native = _both(_generated(Every), [head + b for b in fits] + [head + body])
        assert native.taken == 0 and [(i, type(e)) for i, e in got.errors] == [(3, ColumnValueError)]


def test_a_thread_without_stack_for_the_reader_gets_the_per_record_path() -> None:

    fb = _File("deep.proto", "t.deep")
    levels = 50  # (50 + 16) * 2 KiB of stack wanted: more than a 160 KiB thread has
    for d in range(levels):
        m = fb.message(f"L{d}")
        fb.field(m, "v", 1, F.TYPE_INT32)
        if d + 1 < levels:
            fb.field(m, "c", 2, F.TYPE_MESSAGE, f".t.deep.L{d + 1}")
    (cls,) = fb.classes("L0")
    msg = cls(v=1)
    inner = msg
    for _ in range(levels - 1):
        inner = inner.c
        inner.v = 2
    frames = _frames(cls, [msg, msg])
    deser = _generated(cls)()
    out = [on_small_stack(lambda: deser.deserialize_arrow(frames, CTX), kib=160)]
    native = _native_of(deser)
    assert native.declined == 1 and native.refused is not None and "stack" in native.refused[1], native.refused
    assert _same(pa.record_batch(deser.deserialize_arrow(frames, CTX)), pa.record_batch(out[0]))
    assert native.taken == 1


def _outcome(make: Callable[[], Any], frames: List[Any]) -> Tuple[Any, ...]:
    """What a call gives: the batch's Python values, rows and error types, or the exception's type."""
    try:
        got = make().deserialize_arrow(frames, CTX, errors="collect")
    except Exception as e:  # a failure that is not a record's: the per-record path raises it too
        return ("raised", type(e))
    return (_canon(storage_rows(pa.record_batch(got))), got.rows, [(i, type(e)) for i, e in got.errors])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 23), st.lists(st.tuples(st.sampled_from(["cut", "set", "insert"]), st.integers(0, 10**6),
                                              st.binary(min_size=1, max_size=3)), min_size=1, max_size=3))
def test_corrupted_frames_decode_alike(n: int, edits: List[Tuple[str, int, bytes]]) -> None:
    """Random damage to a valid frame (truncated, bytes overwritten or inserted): whatever it
    becomes -- still valid, another valid message, malformed -- the native path's result is the
    per-record path's, and nothing crashes."""
    frames: List[Any] = _frames(Every, [_every(n), _every(n + 1)])
    frame = bytearray(frames[0])
    for kind, at, data in edits:
        at = 7 + at % max(1, len(frame) - 7)  # in the message, after the 7-byte prefix ([2])
        if kind == "cut":
            frame = frame[:at]
        elif kind == "set":
            frame[at:at + len(data)] = data
        else:
            frame[at:at] = data
    frames[0] = bytes(frame)
    make = _generated(Every)
    got = _outcome(make, frames)
    with _native.forced_pure():
        ref = _outcome(make, frames)
    assert got == ref
