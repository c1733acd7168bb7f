"""The one Protobuf -> dict converter (serdes/protobuf/_todict.py), through both of its callers:
``ProtobufDeserializer(output="dict")`` and ``serdes.cdc.message_to_dict``, on the same cases.

Their documented contracts (docs/protobuf.md, docs/cdc.md) differ only in wrappers: the
deserializer gives ``google.protobuf.*Value`` as ``{"value": v}`` (a dict of its fields, like every
well-known type), serdes.cdc unwraps it to ``v``.
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any, Callable, Dict, Optional

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2, wrappers_pb2

from serdes import MalformedEnvelopeError
from serdes.cdc import MAX_MESSAGE_DEPTH, message_to_dict
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer
from serdes.protobuf._todict import MessageTooDeepError, dict_converter, is_repeated

CTX = SerializationContext("todict", MessageField.VALUE)
F = descriptor_pb2.FieldDescriptorProto


def _classes() -> Dict[str, Any]:
    """Message classes of one file (fresh pool and package per call) with every kind of field."""
    pkg = f"todict{uuid.uuid4().hex[:8]}"
    fdp = descriptor_pb2.FileDescriptorProto(name=f"{pkg}/t.proto", package=pkg, syntax="proto3")
    fdp.dependency.extend(["google/protobuf/wrappers.proto", "google/protobuf/timestamp.proto"])
    e = fdp.enum_type.add(name="Color")
    e.value.add(name="RED", number=0)
    e.value.add(name="BLUE", number=1)
    inner = fdp.message_type.add(name="Inner")
    inner.field.add(name="n", number=1, type=F.TYPE_INT32)
    node = fdp.message_type.add(name="Node")
    node.field.add(name="child", number=1, type=F.TYPE_MESSAGE, type_name=f".{pkg}.Node")
    m = fdp.message_type.add(name="M")

    def field(name: str, type_: int, type_name: str = "", repeated: bool = False, **kw: Any) -> Any:
        f = m.field.add(name=name, number=len(m.field) + 1, type=type_,
                        label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL, **kw)
        if type_name:
            f.type_name = type_name
        return f

    def map_field(name: str, value_type: int, value_type_name: str = "") -> None:
        entry = m.nested_type.add(name=name.capitalize() + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        v = entry.field.add(name="value", number=2, type=value_type, label=F.LABEL_OPTIONAL)
        if value_type_name:
            v.type_name = value_type_name
        field(name, F.TYPE_MESSAGE, f".{pkg}.M.{entry.name}", repeated=True)

    field("i64", F.TYPE_INT64)
    field("u64", F.TYPE_UINT64)
    field("s", F.TYPE_STRING)
    field("b", F.TYPE_BYTES)
    field("color", F.TYPE_ENUM, f".{pkg}.Color")
    field("colors", F.TYPE_ENUM, f".{pkg}.Color", repeated=True)
    field("ts", F.TYPE_MESSAGE, ".google.protobuf.Timestamp")
    field("w64", F.TYPE_MESSAGE, ".google.protobuf.Int64Value")
    field("wstr", F.TYPE_MESSAGE, ".google.protobuf.StringValue")
    field("wlist", F.TYPE_MESSAGE, ".google.protobuf.Int32Value", repeated=True)
    field("inner", F.TYPE_MESSAGE, f".{pkg}.Inner")
    field("inners", F.TYPE_MESSAGE, f".{pkg}.Inner", repeated=True)
    field("node", F.TYPE_MESSAGE, f".{pkg}.Node")
    map_field("counts", F.TYPE_INT64)
    map_field("boxes", F.TYPE_MESSAGE, f".{pkg}.Inner")
    map_field("wmap", F.TYPE_MESSAGE, ".google.protobuf.Int32Value")
    m.oneof_decl.add(name="pay")
    field("card", F.TYPE_STRING, oneof_index=0)
    field("iban", F.TYPE_STRING, oneof_index=0)
    # proto3 `optional`: a synthetic oneof of its own
    m.oneof_decl.add(name="_prio")
    field("prio", F.TYPE_INT32, oneof_index=1, proto3_optional=True)

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{pkg}.{n}"))
            for n in ("M", "Inner", "Node")}


C = _classes()

_DEFAULTS: Dict[str, Any] = {
    "i64": 0, "u64": 0, "s": "", "b": b"", "color": "RED", "colors": [], "ts": None, "w64": None,
    "wstr": None, "wlist": [], "inner": None, "inners": [], "node": None, "counts": {}, "boxes": {},
    "wmap": {}, "card": None, "iban": None, "prio": None,
}


def _set_all(m: Any) -> None:
    m.i64, m.u64, m.s, m.b = -(2 ** 62), 2 ** 64 - 1, "é", b"\x00\xff"
    m.color = 1
    m.colors.extend([1, 0, 7])      # 7: an unknown value of an open (proto3) enum
    m.ts.seconds, m.ts.nanos = 1_700_000_000, 5
    m.w64.value = 2 ** 40
    m.wstr.SetInParent()            # set, holding the default: present, not None
    m.wlist.add(value=3)
    m.wlist.add(value=0)
    m.inner.SetInParent()
    m.inners.add(n=1)
    m.inners.add()
    m.node.child.child.SetInParent()
    m.counts["a"] = 2 ** 40
    m.boxes["x"].n = 4
    m.wmap["k"].value = 9
    m.iban = "DE00"
    m.prio = 0                      # set to its default: present


def _all_expected(wrap: Callable[[Any], Any]) -> Dict[str, Any]:
    return {
        "i64": -(2 ** 62), "u64": 2 ** 64 - 1, "s": "é", "b": b"\x00\xff", "color": "BLUE",
        "colors": ["BLUE", "RED", 7], "ts": {"seconds": 1_700_000_000, "nanos": 5},
        "w64": wrap(2 ** 40), "wstr": wrap(""), "wlist": [wrap(3), wrap(0)], "inner": {"n": 0},
        "inners": [{"n": 1}, {"n": 0}], "node": {"child": {"child": {"child": None}}},
        "counts": {"a": 2 ** 40}, "boxes": {"x": {"n": 4}}, "wmap": {"k": wrap(9)},
        "card": None, "iban": "DE00", "prio": 0,
    }


def _card(m: Any) -> None:
    m.card = "4111"


# (id, fill the message, the expected dict given how a wrapper's value appears)
CASES = [
    ("empty", lambda m: None, lambda wrap: dict(_DEFAULTS)),
    ("every-field", _set_all, _all_expected),
    ("other-oneof-member", _card, lambda wrap: {**_DEFAULTS, "card": "4111"}),
]


def _unwrapped(v: Any) -> Any:
    return v


def _wrapped(v: Any) -> Dict[str, Any]:
    return {"value": v}


def _message(fill: Callable[[Any], None]) -> Any:
    m = C["M"]()
    fill(m)
    return m


@pytest.fixture
def client() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://todict-{uuid.uuid4().hex}"})


@pytest.mark.parametrize("fill, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_cdc_message_to_dict(fill: Any, expected: Any) -> None:
    assert message_to_dict(_message(fill)) == expected(_unwrapped)


@pytest.mark.usefixtures("implementation")
@pytest.mark.parametrize("dynamic", [False, True], ids=["generated", "dynamic"])
@pytest.mark.parametrize("fill, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_deserializer_dict_output(fill: Any, expected: Any, dynamic: bool, client: Any) -> None:
    data = ProtobufSerializer(C["M"], client)(_message(fill), CTX)
    de = ProtobufDeserializer(None if dynamic else C["M"], None, client, output="dict")
    for _ in range(2):  # the first record (slow path) and the cached one
        assert de(data, CTX) == expected(_wrapped)


def _chain(levels: int) -> Any:
    root = node = C["Node"]()
    for _ in range(levels):
        node = node.child
        node.SetInParent()
    return root


def test_depth_bound_only_where_asked() -> None:
    deep = _chain(MAX_MESSAGE_DEPTH + 1)
    with pytest.raises(MalformedEnvelopeError, match=f"nested deeper than {MAX_MESSAGE_DEPTH}"):
        message_to_dict(deep)
    assert message_to_dict(_chain(MAX_MESSAGE_DEPTH)) is not None
    # the deserializer's messages come from the parser (at most 100 levels): no bound of its own
    d = dict_converter(C["Node"].DESCRIPTOR)(deep)
    for _ in range(MAX_MESSAGE_DEPTH + 1):
        d = d["child"]
    assert d == {"child": None}
    with pytest.raises(MessageTooDeepError):
        dict_converter(C["Node"].DESCRIPTOR, max_depth=3)(_chain(4))


class _Field7:
    """A FieldDescriptor as protobuf 6.x/7.x has it: ``is_repeated``; ``label`` deprecated."""

    LABEL_REPEATED = 3

    def __init__(self, repeated: bool) -> None:
        self._repeated = repeated

    @property
    def is_repeated(self) -> bool:
        return self._repeated

    @property
    def label(self) -> int:
        warnings.warn("label is deprecated, use is_repeated", DeprecationWarning, stacklevel=2)
        return 3 if self._repeated else 1


class _Field4:
    """A FieldDescriptor as protobuf 4.25/5.x has it: ``label`` only."""

    LABEL_REPEATED = 3

    def __init__(self, repeated: bool) -> None:
        self.label: Optional[int] = 3 if repeated else 1


@pytest.mark.parametrize("shape", [_Field7, _Field4], ids=["is_repeated", "label-only"])
def test_is_repeated_on_both_descriptor_shapes(shape: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert is_repeated(shape(True)) is True
        assert is_repeated(shape(False)) is False


def test_is_repeated_on_the_installed_protobuf() -> None:
    d = C["M"].DESCRIPTOR.fields_by_name
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [n for n in ("colors", "counts", "wlist", "inners", "i64", "inner", "prio") if is_repeated(d[n])] \
            == ["colors", "counts", "wlist", "inners"]
