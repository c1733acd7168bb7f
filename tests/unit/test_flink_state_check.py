"""SchemaCheckedValueState without a Flink job: when the descriptor is written, read, checked."""

from __future__ import annotations

import pickle

import pytest

pytest.importorskip("pyflink")

from serdes import SerdesError  # noqa: E402
from serdes.flink._state import SchemaCheckedValueState, StateSchemaIncompatibleError  # noqa: E402


class FakeState:
    def __init__(self, value=None):
        self._v, self.reads, self.writes = value, 0, 0

    def value(self):
        self.reads += 1
        return self._v

    def update(self, v):
        self.writes += 1
        self._v = v

    def clear(self):
        self._v = None


def fds(version):
    from tests.flink.test_state_evolution import state_fds

    return state_fds(version)


def checked(value_state, schema_state, version="v1", dec=None):
    return SchemaCheckedValueState(value_state, schema_state, dec or (lambda b: b), lambda v: v,
                                   fds(version), "evo.Acc", "acc")


def test_new_key_writes_descriptor_once_and_reads_it_once():
    value, schema = FakeState(), FakeState()
    s = checked(value, schema)
    assert s.value() is None
    s.update(b"x")
    assert schema.value() == fds("v1") and schema.writes == 1
    schema.reads = 0
    for i in range(5):
        assert s.value() == (b"x" if i == 0 else b"y")
        s.update(b"y")
    assert schema.writes == 1 and schema.reads == 1   # checked on the first stored value only


def test_compatible_change_rewrites_descriptor_on_update():
    value, schema = FakeState(b"old"), FakeState(fds("v1"))
    s = checked(value, schema, "v2")
    assert s.value() == b"old"
    s.update(b"new")
    assert schema.value() == fds("v2")


@pytest.mark.parametrize("bad, rule", [("bad-type", "field-type-changed"), ("bad-number", "field-number-changed")])
def test_incompatible_change_raises_before_parsing(bad, rule):
    parsed = []
    s = checked(FakeState(b"old"), FakeState(fds("v1")), bad, dec=parsed.append)
    with pytest.raises(StateSchemaIncompatibleError) as err:
        s.value()
    assert parsed == []
    assert isinstance(err.value, SerdesError)
    assert err.value.state == "acc" and err.value.message == "evo.Acc"
    assert any(r.startswith("evo.Acc.count: [" + rule) for r in err.value.reasons)
    again = pickle.loads(pickle.dumps(err.value))      # crosses the worker boundary
    assert type(again) is StateSchemaIncompatibleError and rule in str(again)


def test_state_without_descriptor_is_not_checked():
    s = checked(FakeState(b"old"), FakeState(None), "bad-type")
    assert s.value() == b"old"
