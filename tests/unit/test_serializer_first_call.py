"""The first record of a topic and every later one are written by the same encoder, so they get
the same answer; and that answer is confluent-kafka's except where documented (issue 9 item 5).

Differential, with hypothesis: for each generated value, a cold serializer (first call), a warm
one (later call) and confluent-kafka's serializer (cold and warm). serdes' first and later answers
are identical (bytes, or the error class). Against confluent-kafka, the only differences allowed
are the documented ones (README "Errors", docs/avro.md): serdes refuses a value that fastavro --
which confluent-kafka writes with, unvalidated -- would write as something else than what was
given:

* a field without a default missing from the record (fastavro writes null / the type's zero);
* a str, bytes or dict given for an array, or a str, bytes or list for a map (fastavro iterates it:
  ``b"\\x01\\x02"`` becomes ``[1, 2]``);
* a float or bool for an int/long, an int outside the type's range, a bool for a float/double.

serdes never accepts what confluent-kafka refuses, and when both accept the bytes are equal.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import serdes
from serdes.avro import AvroSerializer

# the native dispatcher and the pure-Python one, same cases (tests/support/implementations.py)
pytestmark = pytest.mark.usefixtures("implementation")

FIELDS = [
    {"name": "n", "type": ["null", "int"]},
    {"name": "ns", "type": ["null", "string"], "default": None},
    {"name": "l", "type": {"type": "array", "items": "int"}},
    {"name": "i", "type": "int", "default": 3},
    {"name": "g", "type": "long"},
    {"name": "s", "type": "string"},
    {"name": "m", "type": {"type": "map", "values": "long"}},
    {"name": "d", "type": "double"},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "b", "type": "bytes"},
    {"name": "r", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}},
]
SCHEMA = json.dumps({"type": "record", "name": "R", "namespace": "t", "fields": FIELDS})
GOOD: Dict[str, Any] = {"n": None, "ns": "a", "l": [1], "i": 1, "g": 2, "s": "s", "m": {"k": 1}, "d": 1.0,
                        "e": "A", "b": b"x", "r": {"x": 1}}
TYPES = {f["name"]: f["type"] for f in FIELDS}
HAS_DEFAULT = {f["name"] for f in FIELDS if "default" in f}
MISSING = object()
RANGES = {"int": (-(2 ** 31), 2 ** 31 - 1), "long": (-(2 ** 63), 2 ** 63 - 1)}

PALETTE = [None, 0, 1, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 63, 1.5, True, False, "", "A", "x", b"", b"\x01\x02",
           [], [1], ["x"], [None], {}, {"k": 1}, {"k": "v"}, {"x": 1}, {"x": "1"}]


def documented_difference(name: str, value: Any) -> bool:
    """True for the (field, value) pairs serdes deliberately refuses and confluent-kafka writes."""
    t = TYPES[name]
    if value is MISSING:
        return name not in HAS_DEFAULT
    if isinstance(t, list):  # ["null", "int"]
        t = "int" if value is not None else "null"
    kind = t["type"] if isinstance(t, dict) else t
    if kind == "array":
        return isinstance(value, (str, bytes, dict))
    if kind == "map":
        return isinstance(value, (str, bytes, list))
    if kind in RANGES:
        lo, hi = RANGES[kind]
        return isinstance(value, (bool, float)) or (isinstance(value, int) and not lo <= value <= hi)
    if kind in ("double", "float"):
        return isinstance(value, bool)
    return False


def outcome(ser: Any, value: Any, ctx: SerializationContext) -> Any:
    try:
        return ser(value, ctx)
    except serdes.ValidationError:
        return serdes.ValidationError
    except Exception as e:  # confluent-kafka's own classes (TypeError, ValueError, ...)
        return type(e)


@pytest.fixture
def world(implementation):
    # per test, built with the implementation under test (native / pure)
    client = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})
    ctx = SerializationContext("orders", MessageField.VALUE)
    warm, theirs = AvroSerializer(client, SCHEMA), ConfluentAvroSerializer(client, SCHEMA)
    assert warm(GOOD, ctx) == theirs(GOOD, ctx)
    return client, ctx, warm, theirs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    changes=st.dictionaries(st.sampled_from(sorted(GOOD)), st.sampled_from(PALETTE + [MISSING]) | st.integers(-(2 ** 64), 2 ** 64), max_size=3),
)
def test_first_call_later_call_and_confluent_agree(world, changes):
    client, ctx, warm, theirs = world
    value = dict(GOOD)
    for name, v in changes.items():
        if v is MISSING:
            del value[name]
        else:
            value[name] = v
    first = outcome(AvroSerializer(client, SCHEMA), value, ctx)
    later = outcome(warm, value, ctx)
    assert first == later, (value, first, later)
    confluent = outcome(theirs, value, ctx)
    assert outcome(ConfluentAvroSerializer(client, SCHEMA), value, ctx) == confluent  # the reference is stable too
    if isinstance(later, bytes) and isinstance(confluent, bytes):
        assert later == confluent, value
        return
    if isinstance(later, bytes):
        pytest.fail(f"serdes wrote {value!r}, which confluent-kafka refuses ({confluent.__name__})")
    assert later is serdes.ValidationError, (value, later)
    if isinstance(confluent, bytes):
        assert any(documented_difference(name, changes[name]) for name in changes), (
            f"undocumented difference: serdes refuses {value!r}, confluent-kafka writes it"
        )


@pytest.mark.parametrize(
    "name,value",
    [("n", MISSING), ("l", b""), ("l", b"\x01\x02"), ("m", []), ("i", 1.5), ("i", True), ("i", 2 ** 31), ("d", True)],
)
def test_documented_differences_are_refused_on_every_call(world, name, value):
    """Each documented difference: confluent-kafka writes it, serdes raises ValidationError on the
    first and every later call."""
    client, ctx, warm, theirs = world
    record = dict(GOOD)
    if value is MISSING:
        del record[name]
    else:
        record[name] = value
    assert documented_difference(name, value)
    assert isinstance(outcome(theirs, record, ctx), bytes)
    for ser in (AvroSerializer(client, SCHEMA), warm, warm):
        with pytest.raises(serdes.ValidationError) as info:
            ser(record, ctx)
        assert info.value.location.topic == "orders"


# -- JSON and Protobuf: first call == later calls, vs confluent-kafka ------------------------------

JSON_SCHEMA = json.dumps({"type": "object", "properties": {"a": {"type": ["number", "null", "array", "object", "string"]}}})
leaves = (
    st.none() | st.booleans() | st.integers(-(2 ** 65), 2 ** 65) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=4) | st.binary(max_size=3) | st.just("\ud800") | st.frozensets(st.integers(0, 3), max_size=2)
)
json_values = st.recursive(
    leaves,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3) | st.integers(0, 3), kids, max_size=3),
    max_leaves=6,
)


def _has_non_finite(v: Any) -> bool:
    if isinstance(v, float):
        return v != v or v in (float("inf"), float("-inf"))
    if isinstance(v, dict):
        return any(_has_non_finite(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return any(_has_non_finite(x) for x in v)
    return False


@pytest.fixture
def json_world(implementation):
    # per test, not per module: the warm serializer must be built with the implementation under test
    from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJSONSerializer

    from serdes.json import JSONSerializer

    client = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})
    ctx = SerializationContext("orders", MessageField.VALUE)
    warm, theirs = JSONSerializer(JSON_SCHEMA, client), ConfluentJSONSerializer(JSON_SCHEMA, client)
    assert warm({"a": 1}, ctx) == theirs({"a": 1}, ctx)
    return client, ctx, warm, theirs, lambda: JSONSerializer(JSON_SCHEMA, client)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inner=json_values)
def test_json_first_call_later_call_and_confluent_agree(json_world, inner):
    client, ctx, warm, theirs, cold = json_world
    value = {"a": inner}
    first, later = outcome(cold(), value, ctx), outcome(warm, value, ctx)
    assert first == later, (value, first, later)
    confluent = outcome(theirs, value, ctx)
    if isinstance(later, bytes):
        assert later == confluent, value  # serdes never writes what confluent-kafka refuses, same bytes
        return
    assert later is serdes.ValidationError
    if isinstance(confluent, bytes):  # the one documented difference: NaN / +-Infinity
        assert _has_non_finite(inner), f"undocumented difference: serdes refuses {value!r}"


def test_protobuf_required_field_first_and_later_call_refused_like_confluent():
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProtobufSerializer
    from serdes_test import legacy_pb2

    from serdes.protobuf import ProtobufSerializer

    client = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})
    ctx = SerializationContext("orders", MessageField.VALUE)
    conf = {"use.deprecated.format": False}
    cold, warm = ProtobufSerializer(legacy_pb2.Legacy, client, conf), ProtobufSerializer(legacy_pb2.Legacy, client, conf)
    theirs = ConfluentProtobufSerializer(legacy_pb2.Legacy, client, conf)
    good = legacy_pb2.Legacy(id=1)
    assert warm(good, ctx) == theirs(good, ctx)
    bad = legacy_pb2.Legacy(name="no id")
    assert outcome(cold, bad, ctx) is serdes.ValidationError
    assert outcome(warm, bad, ctx) is serdes.ValidationError
    assert not isinstance(outcome(theirs, bad, ctx), bytes)  # confluent-kafka refuses it too (EncodeError)
