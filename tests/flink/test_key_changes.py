"""``_pyflink.speed_up_key_changes``: serdes' ``set_current_key`` for PyFlink's process-mode keyed
state backend does what PyFlink's own does.

Two real ``RemoteKeyedStateBackend`` objects (PyFlink's class, Beam's bag states) over a
dict-backed state handler standing in for the runner's state API (the part that lives in the JVM),
one with PyFlink's method and one with serdes'. The same random sequence of key changes, reads,
updates and clears (several states, some untouched for long stretches, a cache small enough to
evict) must read the same values and leave the same committed state. The keyed jobs of
``tests/flink/test_keyed*.py`` run with it in process mode.
"""

from __future__ import annotations

import random
import sys
import pytest
from pyflink.common import Row, Types

from serdes.flink import _pyflink

from tests.support.state_backend import remote_backend


def _backend(cache_size: int, fast: bool):
    backend, handler, states = remote_backend(Types.STRING(), cache_size, n_states=3)

    class Ctx:
        _keyed_state_backend = backend

    if fast:
        assert _pyflink.speed_up_key_changes(Ctx()), "not installed"
    return backend, handler, states


@pytest.mark.parametrize("cache_size", [0, 2, 5, 1000])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_reads_and_committed_state_as_pyflinks_method(cache_size, seed):
    if _pyflink.pyflink_version() not in _pyflink.SPEEDUPS_VERIFIED:
        pytest.skip("serdes keeps PyFlink's own method on other releases")
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(8)]
    ops = []
    for _ in range(3000):
        r = rng.random()
        ops.append(("key", rng.choice(keys)) if r < 0.35 else
                   ("commit", None) if r < 0.37 else
                   (rng.choice(["value", "update", "update", "clear"]), (rng.randrange(3 if r < 0.8 else 1),
                                                                          rng.randbytes(3))))
    runs = []
    for fast in (False, True):
        backend, handler, states = _backend(cache_size, fast)
        backend.set_current_key(Row(keys[0]))
        reads = []
        for op, arg in ops:
            if op == "key":
                backend.set_current_key(Row(arg))
            elif op == "commit":
                backend.commit()
            elif op == "value":
                reads.append(states[arg[0]].value())
            elif op == "update":
                states[arg[0]].update(arg[1])
            else:
                states[arg[0]].clear()
        backend.commit()
        runs.append((reads, {k: v for k, v in handler.store.items() if v}))
    assert runs[1][0] == runs[0][0]
    assert runs[1][1] == runs[0][1]


def test_same_key_again_is_no_change():
    if _pyflink.pyflink_version() not in _pyflink.SPEEDUPS_VERIFIED:
        pytest.skip("serdes keeps PyFlink's own method on other releases")
    backend, _, states = _backend(1000, True)
    backend.set_current_key(Row("a"))
    states[0].update(b"x")
    encoded = backend._encoded_current_key
    backend.set_current_key(Row("a"))
    assert backend._encoded_current_key is encoded and states[0]._internal_state is not None
    backend.set_current_key(Row("b"))
    assert states[0]._internal_state is None and states[0].value() is None


def test_not_installed_outside_process_mode_keyed_operators():
    class NoBackend:
        _keyed_state_backend = None

    assert not _pyflink.speed_up_key_changes(NoBackend())
    assert not _pyflink.speed_up_key_changes(object())


def test_not_installed_on_other_releases(monkeypatch):
    monkeypatch.setattr(_pyflink, "pyflink_version", lambda: "2.99.0")  # a release not verified
    backend, _, _ = _backend(10, False)

    class Ctx:
        _keyed_state_backend = backend

    assert not _pyflink.speed_up_key_changes(Ctx())
    assert "set_current_key" not in vars(backend)


def test_the_state_module_is_only_looked_at_when_loaded(monkeypatch):
    monkeypatch.delitem(sys.modules, _pyflink._REMOTE_STATE)
    assert not _pyflink.speed_up_key_changes(object())


@pytest.mark.parametrize("key_type, keys", [
    (Types.LONG(), [1, 2, 3, -1, 2**40]),
    (Types.DOUBLE(), [0.0, -0.0, 1.5, 0.0, -0.0]),   # equal values, different bytes: not remembered
    (Types.STRING(), ["a", "b", "é", "a"]),
])
def test_encoded_key_is_pyflinks_encoding(key_type, keys):
    backend, pyflinks = (remote_backend(key_type, 10, n_states=0)[0] for _ in range(2))

    class Ctx:
        _keyed_state_backend = backend

    assert _pyflink.speed_up_key_changes(Ctx())
    for k in keys * 2:
        backend.set_current_key(Row(k))
        pyflinks.set_current_key(Row(k))  # (PyFlink keeps 0.0 on -0.0: the rows are equal)
        assert backend._encoded_current_key == pyflinks._encoded_current_key, k


def test_remembered_keys_are_bounded(monkeypatch):
    monkeypatch.setattr(_pyflink, "_ENCODED_KEYS_MAX", 3)
    backend, _, _ = _backend(10, True)
    remembered = backend.set_current_key.args[1]
    for i in range(10):
        backend.set_current_key(Row(f"k{i}"))
        assert len(remembered) <= 3
