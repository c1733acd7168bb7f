"""Fast tests of the one-operator keyed path without a Flink job or servers."""

from __future__ import annotations

import pickle

import pytest
from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction, OutputTag
from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor

from serdes import flink as sf
from serdes.flink._keyed import KeyByDecodedField, _kafka_key_encoding, _pickled_in, _StrictStateContext

from tests.support.flink_context import RuntimeContext
from tests.support.packed import pack_consumer_record

OTHER = OutputTag("other", Types.STRING())


class _RuntimeContext(RuntimeContext):
    """Also records the state descriptors the operator asks for."""

    def __init__(self):
        super().__init__()
        self.requested = []

    def get_state(self, descriptor):
        self.requested.append(descriptor.get_name())
        return None

    def get_list_state(self, descriptor):
        self.requested.append(descriptor.get_name())
        return None


def _factory(client, **kw):
    def de(data, ctx):
        if data == b"bad":
            raise ValueError("cannot parse")
        return {"v": data.decode(), "offset": ctx.offset}

    return de


def _decode(on_error="dead_letter"):
    return sf.DecodeFunction(sf.custom("avro", "de", _factory), on_error=on_error)


class Echo(KeyedProcessFunction):
    def open(self, runtime_context):
        self.opened = runtime_context

    def process_element(self, value, ctx):
        yield value["v"]
        yield OTHER, "side"


def row(offset, value):
    """What the keyed operators receive: a packed record (``serdes/flink/_packed.py``)."""
    return pack_consumer_record("t", 0, offset, 0, b"k", value)


def test_keyed_process_decodes_calls_user_function_and_encodes():
    op = sf.KafkaKeyedProcess(Echo(), _decode(), encode=str.upper)
    rc = _RuntimeContext()
    op.open(rc)
    out = list(op.process_element(row(1, b"a"), None))
    assert out == ["A", (OTHER, "side")]  # side outputs are not encoded
    dead = list(op.process_element(row(2, b"bad"), None))
    assert len(dead) == 1 and dead[0][0] == sf.DEAD_LETTER_TAG
    assert dead[0][1][2] == 2 and dead[0][1][8] == "RecordDecodeError"
    assert rc.group.counters["serdes_failed"].n == 1  # failures are counted at once
    op.close()  # flushes the batched decoded count
    assert rc.group.counters["serdes_decoded"].n == 1 and rc.group.counters["serdes_failed"].n == 1
    # it is pickled with the job
    again = pickle.loads(pickle.dumps(sf.KafkaKeyedProcess(Echo(), _decode())))
    assert isinstance(again.fn, Echo)


def test_keyed_process_fail_raises_typed_error_with_coordinates():
    op = sf.KafkaKeyedProcess(Echo(), _decode("fail"))
    op.open(_RuntimeContext())
    with pytest.raises(sf.RecordDecodeError) as info:
        list(op.process_element(row(9, b"bad"), None))
    assert "offset=9" in str(info.value) and "topic='t'" in str(info.value)


def test_key_by_decoded_field_emits_key_and_raw_record():
    op = KeyByDecodedField(_decode(), lambda v: v["v"] * 2)
    op.open(_RuntimeContext())
    (out,) = list(op.process_element(row(3, b"ab"), None))
    assert tuple(out) == ("abab", row(3, b"ab"))
    (dead,) = list(op.process_element(row(4, b"bad"), None))
    assert dead[0] == sf.DEAD_LETTER_TAG


def test_strict_state_context_refuses_pickled_state_only():
    rc = _RuntimeContext()
    ctx = _StrictStateContext(rc, True, "my-op")
    ctx.get_state(ValueStateDescriptor("ok", Types.TUPLE([Types.LONG(), Types.STRING()])))
    with pytest.raises(sf.StrictTypeError, match="'my-op'.*'pickled'.*value"):
        ctx.get_state(ValueStateDescriptor("pickled", Types.PICKLED_BYTE_ARRAY()))
    with pytest.raises(sf.StrictTypeError, match="'nested'"):
        ctx.get_list_state(ListStateDescriptor("nested", Types.PICKLED_BYTE_ARRAY()))
    assert rc.requested == ["ok"]
    # not strict: anything goes
    _StrictStateContext(rc, False, "my-op").get_state(ValueStateDescriptor("p", Types.PICKLED_BYTE_ARRAY()))
    assert rc.requested == ["ok", "p"]


def test_pickled_in_finds_nested_pickled_types():
    assert _pickled_in(Types.TUPLE([Types.LONG(), Types.LONG()])) is None
    assert _pickled_in(Types.PRIMITIVE_ARRAY(Types.BYTE())) is None
    assert _pickled_in(Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.PICKLED_BYTE_ARRAY()])) == "b"
    assert _pickled_in(MapStateDescriptor("m", Types.STRING(), Types.LIST(Types.PICKLED_BYTE_ARRAY())).type_info) \
        == "value.element"


def test_kafka_key_types():
    assert _kafka_key_encoding(Types.STRING()) == "utf8"
    assert _kafka_key_encoding(Types.PRIMITIVE_ARRAY(Types.BYTE())) == "raw"
    with pytest.raises(ValueError, match="key_type"):
        _kafka_key_encoding(Types.LONG())


def test_value_keyed_needs_a_key_type():
    with pytest.raises(ValueError, match="key_type"):
        sf.read_kafka_keyed(None, "b:1", "t", sf.avro("http://127.0.0.1:1"), key_by=lambda v: v)


def test_batched_counter_flushes_by_count_time_and_close():
    from serdes.flink._keyed import BatchedCounter
    from tests.support.flink_context import Counter

    now = [0.0]
    inner = Counter()
    c = BatchedCounter(inner, every=3, seconds=1.0, clock=lambda: now[0])
    c.inc()
    c.inc()
    assert inner.n == 0
    c.inc()
    assert inner.n == 3  # every=3
    c.inc()
    now[0] = 1.5
    c.inc()
    assert inner.n == 5  # a second passed since the last flush
    c.inc(4)
    assert inner.n == 9  # a batch of 4 >= every
    c.inc()
    c.flush()
    c.flush()
    assert inner.n == 10


def test_keyed_process_fast_path_tombstones_and_skips_emit_nothing():
    op = sf.KafkaKeyedProcess(Echo(), _decode("skip"), encode=str.upper)
    rc = _RuntimeContext()
    op.open(rc)
    assert list(op.process_element(row(1, None), None)) == []  # tombstone
    assert list(op.process_element(row(2, b"bad"), None)) == []  # skipped poison pill
    assert list(op.process_element(row(3, b"ok"), None)) == ["OK", (OTHER, "side")]
    op.close()
    counters = {k: v.n for k, v in rc.group.counters.items()}
    assert counters["serdes_tombstones"] == 1 and counters["serdes_failed"] == 1 and counters["serdes_decoded"] == 1
