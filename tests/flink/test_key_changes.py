"""``_pyflink.speed_up_key_changes``: serdes' ``set_current_key`` for PyFlink's process-mode keyed
state backend does what PyFlink's own does.

Two real ``RemoteKeyedStateBackend`` objects (PyFlink's class, its value / list / map /
reducing / aggregating states, Beam's bag states), one with PyFlink's method and one with serdes'.
The same random sequence of key changes, reads, writes, clears and bundle ends (commits) must read
the same values, leave the same encoded current key after every key change and the same committed
state.  Two stand-ins for the runner's state API (the part that lives in the JVM):

* :class:`~tests.support.state_backend.DictStateHandler`: bag states only, no Beam cache (the
  first test, byte[] value states, STRING keys);
* Beam's own ``GlobalCachingStateHandler`` (the handler of a process-mode worker, with and without
  its ``StateCache``, with a user-state cache token or per-bundle caching) in front of
  :class:`~tests.support.state_backend.RunnerStateService`, which answers PyFlink's map state
  protocol too: every kind of keyed state, the map state's own read cache
  (``CachingMapStateHandler``, small enough to evict) and write cache (small enough to flush), and
  keys of every shape PyFlink's key coder takes (``Types.ROW([key_type])`` around INT, BIGINT,
  STRING, DOUBLE, a TUPLE and a ROW of (STRING, INT), a ROW with field names, pickled keys).

TTL: PyFlink's process-mode backend takes a ``StateTtlConfig`` per state (``get_*_state(...,
ttl_config)``, from the descriptor's ``enable_time_to_live``); expiry itself is the JVM's (the
config travels in each state key's ``StateDescriptor`` proto and Flink's state backend applies it),
so no value expires here.  What the Python side does with it is checked: the state keys carry it,
``NeverReturnExpired`` states commit every write at once and their map state has no write cache
(``CacheType.DISABLE_CACHE``), ``OnReadAndWrite`` ones keep their write cache only
(``ENABLE_WRITE_CACHE``).  (Both also set ``_max_entries = 0`` on the Beam ``StateCache``'s
``_cache``, an ``OrderedDict`` in apache-beam 2.61: that does nothing, for either backend.)

The keyed jobs of ``tests/flink/test_keyed*.py`` run with serdes' method in process mode.
"""

from __future__ import annotations

import random
import sys
from typing import Any, Callable, Dict, List, Tuple

import pytest
from pyflink.common import Row, Types
from pyflink.common.time import Time
from pyflink.datastream import ReduceFunction
from pyflink.datastream.functions import AggregateFunction
from pyflink.datastream.state import StateTtlConfig
from pyflink.fn_execution.coders import from_type_info

from serdes.flink import _pyflink

from tests.support.state_backend import remote_backend, runner_backend

verified = pytest.mark.skipif(_pyflink.pyflink_version() not in _pyflink.SPEEDUPS_VERIFIED,
                              reason="serdes keeps PyFlink's own method on other releases")  # pinned: 2.2.1


def _install(backend: Any) -> None:
    class Ctx:
        _keyed_state_backend = backend

    assert _pyflink.speed_up_key_changes(Ctx()), "not installed"


def _backend(cache_size: int, fast: bool):
    backend, handler, states = remote_backend(Types.STRING(), cache_size, n_states=3)
    if fast:
        _install(backend)
    return backend, handler, states


@verified
@pytest.mark.parametrize("cache_size", [0, 2, 5, 1000])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_reads_and_committed_state_as_pyflinks_method(cache_size, seed):
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


# -- every kind of state, every key shape, Beam's caching handler ---------------------------------


class Sum(ReduceFunction):
    def reduce(self, value1: int, value2: int) -> int:
        return value1 + value2


class Mean(AggregateFunction):
    """(count, sum) accumulator; the result as a string."""

    def create_accumulator(self) -> Tuple[int, int]:
        return 0, 0

    def add(self, value: int, accumulator: Tuple[int, int]) -> Tuple[int, int]:
        return accumulator[0] + 1, accumulator[1] + value

    def get_result(self, accumulator: Tuple[int, int]) -> str:
        return f"{accumulator[1]}/{accumulator[0]}"

    def merge(self, acc_a: Tuple[int, int], acc_b: Tuple[int, int]) -> Tuple[int, int]:
        return acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]


def _ttl(visibility: Any, update: Any) -> StateTtlConfig:
    return StateTtlConfig.new_builder(Time.minutes(5)).set_state_visibility(visibility).set_update_type(update).build()


V, U = StateTtlConfig.StateVisibility, StateTtlConfig.UpdateType
#: the TTL configs the states get: PyFlink's three cache types (read+write, write only, none)
TTLS = {
    "none": None,
    "read-write-cache": _ttl(V.ReturnExpiredIfNotCleanedUp, U.OnCreateAndWrite),
    "write-cache": _ttl(V.ReturnExpiredIfNotCleanedUp, U.OnReadAndWrite),
    "no-cache": _ttl(V.NeverReturnExpired, U.OnCreateAndWrite),
}


def _states(backend: Any, ttl: Any, with_map: bool = True) -> Dict[str, Any]:
    """One state of each kind (and a second value state) on ``backend``, in the same order each time."""
    long_coder, str_coder = from_type_info(Types.LONG()), from_type_info(Types.STRING())
    states = {
        "value": backend.get_value_state("value", from_type_info(Types.PRIMITIVE_ARRAY(Types.BYTE())), ttl),
        "value2": backend.get_value_state("value2", long_coder, ttl),
        "list": backend.get_list_state("list", str_coder, ttl),
    }
    if with_map:
        states["map"] = backend.get_map_state("map", str_coder, long_coder, ttl)
    states.update({
        "reducing": backend.get_reducing_state("reducing", long_coder, Sum(), ttl),
        "aggregating": backend.get_aggregating_state(
            "aggregating", from_type_info(Types.TUPLE([Types.LONG(), Types.LONG()])), Mean(), ttl),
    })
    return states


def _iterate_and_remove(state: Any, digit: int) -> List[Any]:
    """The map's items, removing through the iterator those whose key ends in ``digit`` (chosen by
    key, not by position: the iteration order is not part of the contract)."""
    seen = []
    iterator = iter(state.items())
    for item in iterator:
        seen.append(item)
        if item[0].endswith(str(digit)):
            iterator.remove()
    return sorted(seen, key=repr)


#: state kind -> [(op name, weight, how: (state, argument) -> what it reads)]
OPS: Dict[str, List[Tuple[str, int, Callable[[Any, Any], Any]]]] = {
    "value": [("value", 3, lambda s, a: s.value()), ("update", 3, lambda s, a: s.update(a[0])),
              ("clear", 1, lambda s, a: s.clear())],
    "value2": [("value", 2, lambda s, a: s.value()), ("update", 2, lambda s, a: s.update(a[1]))],
    "list": [("get", 3, lambda s, a: list(s.get())), ("add", 3, lambda s, a: s.add(a[2])),
             ("add_all", 1, lambda s, a: s.add_all([a[2], a[3]])), ("update", 1, lambda s, a: s.update([a[3]])),
             ("clear", 1, lambda s, a: s.clear())],
    # map iteration order is not part of the contract (write cache first, then the runner's): sorted
    "map": [("get", 3, lambda s, a: s.get(a[3])), ("put", 3, lambda s, a: s.put(a[3], a[1])),
            ("put none", 1, lambda s, a: s.put(a[3], None)), ("contains", 2, lambda s, a: s.contains(a[3])),
            ("remove", 2, lambda s, a: s.remove(a[3])), ("keys", 1, lambda s, a: sorted(s.keys())),
            ("items", 1, lambda s, a: sorted(s.items(), key=repr)), ("values", 1, lambda s, a: sorted(s.values(), key=repr)),
            ("is_empty", 1, lambda s, a: s.is_empty()), ("put_all", 1, lambda s, a: s.put_all([(a[2], a[1]), (a[3], 7)])),
            ("iterate and remove", 1, lambda s, a: _iterate_and_remove(s, abs(a[1]) % 10)), ("clear", 1, lambda s, a: s.clear())],
    "reducing": [("get", 2, lambda s, a: s.get()), ("add", 3, lambda s, a: s.add(a[1])),
                 ("clear", 1, lambda s, a: s.clear())],
    "aggregating": [("get", 2, lambda s, a: s.get()), ("add", 3, lambda s, a: s.add(a[1])),
                    ("add none", 1, lambda s, a: s.add(None)), ("clear", 1, lambda s, a: s.clear())],
}


def _ops(rng: random.Random, keys: List[Any], n: int, with_map: bool = True) -> List[Tuple[str, Any]]:
    """Key changes (runs of one key as well), bundle ends, and state operations; some states are
    left alone for long stretches (the later states join in later)."""
    choices = [(kind, name, how) for kind, ops in OPS.items() for name, weight, how in ops for _ in range(weight)
               if with_map or kind != "map"]
    ops: List[Tuple[str, Any]] = []
    for i in range(n):
        r = rng.random()
        if r < 0.25:
            ops.append(("key", rng.choice(keys)))
        elif r < 0.27:
            ops.append(("bundle", None))
        else:
            kinds = list(OPS)[:2 + (i // 300) % (len(OPS) - 1)]  # the later states join in later
            kind, name, how = rng.choice([c for c in choices if c[0] in kinds])
            arg = (rng.randbytes(2), rng.randrange(-50, 50), f"e{rng.randrange(20)}", f"m{rng.randrange(6)}")
            ops.append((f"{kind} {name}", (kind, how, arg)))
    return ops


def _run(key_type: Any, keys: List[Any], ops: List[Tuple[str, Any]], fast: bool, cache_size: int,
         beam_cache: int, token: bool, ttl: Any, map_caches: Tuple[int, int], with_map: bool = True) -> Dict[str, Any]:
    from apache_beam.portability.api import beam_fn_api_pb2

    backend, handler, service = runner_backend(key_type, cache_size, beam_cache, *map_caches)
    states = _states(backend, ttl, with_map)
    if fast:
        _install(backend)
    tokens = [beam_fn_api_pb2.ProcessBundleRequest.CacheToken(
        user_state=beam_fn_api_pb2.ProcessBundleRequest.CacheToken.UserState(), token=b"user-state")] if token else []
    reads: List[Any] = []
    encoded: List[bytes] = []
    bundle = 0
    scope = handler.process_instruction_id(f"b{bundle}", tokens)
    scope.__enter__()
    try:
        backend.set_current_key(Row(keys[0]))
        for op, arg in ops:
            if op == "key":
                backend.set_current_key(Row(arg))
                encoded.append(backend._encoded_current_key)
            elif op == "bundle":  # what PyFlink's operation does at the end of a bundle
                backend.commit()
                scope.__exit__(None, None, None)
                bundle += 1
                scope = handler.process_instruction_id(f"b{bundle}", tokens)
                scope.__enter__()
            else:
                kind, how, value = arg
                try:
                    reads.append((op, how(states[kind], value)))
                except Exception as exc:  # noqa: BLE001 - PyFlink's own errors (remove after clear) must match
                    reads.append((op, "raised", type(exc).__name__, str(exc)))
        backend.commit()
    finally:
        scope.__exit__(None, None, None)
    if fast:  # serdes' method skipped the untouched states exactly when there was no map state
        assert backend.set_current_key.args[3][1] is with_map
    return {"reads": reads, "encoded": encoded, "committed": service.committed()}


def _compare(key_type: Any, keys: List[Any], seed: int, cache_size: int, beam_cache: int = 1 << 20,
             token: bool = True, ttl: str = "none", map_caches: Tuple[int, int] = (4, 3), n: int = 1500,
             with_map: bool = True) -> None:
    ops = _ops(random.Random(seed), keys, n, with_map)
    plain, fast = (_run(key_type, keys, ops, f, cache_size, beam_cache, token, TTLS[ttl], map_caches, with_map)
                   for f in (False, True))
    for i, (mine, theirs) in enumerate(zip(fast["reads"], plain["reads"], strict=True)):
        assert mine == theirs, f"read {i}: serdes {mine!r}, PyFlink {theirs!r}"
    assert fast["encoded"] == plain["encoded"]
    assert fast["committed"] == plain["committed"]
    # not a comparison of nothing: values were read back and state reached the runner
    assert sum(1 for r in plain["reads"] if r[1] not in (None, [], False, True)) > n // 20
    assert plain["committed"]["bags"] and (plain["committed"]["maps"] or not with_map)


#: key type -> keys (each row is one key value of the key type)
KEYS: Dict[str, Tuple[Any, List[Any]]] = {
    "STRING": (Types.STRING(), [f"k{i}" for i in range(7)] + ["é", ""]),
    "INT": (Types.INT(), [0, 1, -1, 7, 2**31 - 1, -2**31]),
    "BIGINT": (Types.LONG(), [0, 1, -1, 2**40, -2**63, 2**63 - 1]),
    "DOUBLE": (Types.DOUBLE(), [0.0, -0.0, 1.5, 1.0, 1, float("inf")]),
    "TUPLE(STRING, INT)": (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), ("a", 2), ("b", 1), ("", 0)]),
    "ROW(STRING, INT)": (Types.ROW([Types.STRING(), Types.INT()]), [Row("a", 1), Row("a", 2), Row("b", 1)]),
    "ROW(name, n)": (Types.ROW_NAMED(["name", "n"], [Types.STRING(), Types.INT()]),
                     [Row(name="a", n=1), Row(name="a", n=2), Row(name="b", n=1)]),
    # pickled keys: == values of different types (True / 1 / 1.0, 0.0 / -0.0) pickle differently
    "PICKLED": (Types.PICKLED_BYTE_ARRAY(), [1, True, 1.0, 0.0, -0.0, 0, False, "1", b"1", 2]),
}


#: every key type twice, with two of the four cache sizes each (no cache, evicting on every key
#: change, small, large), so that each cache size meets four key types: the key type decides the
#: encoding, the cache size the caching, and the two meet only through the cache's keys
_KEY_CASES = [(key, (0, 1, 3, 1000)[(i + shift) % 4]) for i, key in enumerate(sorted(KEYS)) for shift in (0, 2)]


@verified
@pytest.mark.parametrize("key, cache_size", _KEY_CASES)
def test_every_state_kind_and_key_type_same_as_pyflinks_method(key, cache_size):
    key_type, keys = KEYS[key]
    _compare(key_type, keys, seed=sorted(KEYS).index(key) * 10 + cache_size, cache_size=cache_size)


@verified
@pytest.mark.parametrize("beam_cache, token", [(0, False), (1 << 20, False), (1 << 20, True), (300, True)])
@pytest.mark.parametrize("map_caches", [(1, 1), (4, 3), (1000, 1000)])
@pytest.mark.parametrize("cache_size", [2])
def test_beam_cache_and_map_caches_same_as_pyflinks_method(beam_cache, token, map_caches, cache_size):
    """Beam's StateCache off, per bundle, across bundles (a user-state token) and small enough to
    evict; the map state's read cache (entries per map) and write cache (entries before a flush)."""
    _compare(Types.STRING(), [f"k{i}" for i in range(6)], seed=beam_cache + sum(map_caches) + cache_size,
             cache_size=cache_size, beam_cache=beam_cache, token=token, map_caches=map_caches)


@verified
@pytest.mark.parametrize("ttl", sorted(TTLS))
@pytest.mark.parametrize("cache_size", [0, 2, 1000])
def test_ttl_states_same_as_pyflinks_method(ttl, cache_size):
    _compare(Types.INT(), list(range(6)), seed=len(ttl) + cache_size, cache_size=cache_size, ttl=ttl)


@verified
@pytest.mark.parametrize("key", ["STRING", "INT", "TUPLE(STRING, INT)"])
@pytest.mark.parametrize("cache_size", [1, 2, 3])
def test_bag_backed_states_alone_same_as_pyflinks_method(key, cache_size):
    """No map state: serdes skips the states not accessed under the old key (their evictions come
    at other moments than with PyFlink's method, which the bag-backed states do not show)."""
    key_type, keys = KEYS[key]
    _compare(key_type, keys, seed=cache_size * 7 + len(key), cache_size=cache_size, with_map=False)


@verified
def test_map_remove_after_clear_as_with_pyflinks_method():
    """The difference these tests found (fixed): a map state cleared (and written again) under key
    A, then keys B and C with no state accessed, then ``remove`` of another key under A.  PyFlink's method caches an empty internal
    state per state and key, so A's map state is evicted (committed) by C, and ``remove`` works;
    serdes' method used to skip those, A's cleared internal map state was still cached, and PyFlink's
    ``InternalSynchronousMapRuntimeState.remove`` of a key it does not hold after ``clear()`` raised
    ``KeyError``."""
    runs = []
    for fast in (False, True):
        backend, handler, service = runner_backend(Types.STRING(), 2, 0)
        states = _states(backend, None)
        if fast:
            _install(backend)
        with handler.process_instruction_id("b0", []):
            backend.set_current_key(Row("A"))
            states["map"].put("x", 1)
            backend.commit()
            states["map"].clear()
            states["map"].put("z", 2)
            for key in ("B", "C", "A"):
                backend.set_current_key(Row(key))
            states["map"].remove("y")
            reads = [states["map"].get("x"), states["map"].get("z"), states["map"].is_empty()]
            backend.commit()
        runs.append((reads, service.committed()))
    assert runs[1] == runs[0]
    assert runs[0][0] == [None, 2, False]


def test_ttl_reaches_the_state_keys_and_the_write_caches():
    """What the Python side does with a TTL config (see the module docstring), so the TTL runs
    above compare states that really are TTL-configured."""
    from pyflink.fn_execution.flink_fn_execution_pb2 import StateDescriptor
    import base64

    backend, handler, service = runner_backend(Types.INT(), 10, 1 << 20)
    states = _states(backend, TTLS["no-cache"])
    _install(backend)
    with handler.process_instruction_id("b0", []):
        backend.set_current_key(Row(1))
        states["value2"].update(5)
        states["map"].put("m", 1)
        # NeverReturnExpired: both written through at once, before any commit
        assert len(service.committed()["bags"]) == 1 and len(service.committed()["maps"]) == 1
        assert states["map"].get_internal_state()._max_write_cache_entries == 0
        descriptor = StateDescriptor.FromString(base64.b64decode(
            states["value2"].get_internal_state()._state_key.bag_user_state.user_state_id))
        assert descriptor.state_name == "value2" and descriptor.state_ttl_config.ttl == 5 * 60 * 1000
        backend.set_current_key(Row(2))
        assert states["value2"].value() is None and states["map"].get("m") is None
        backend.set_current_key(Row(1))
        assert states["value2"].value() == 5 and states["map"].get("m") == 1


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
    (Types.DOUBLE(), [0.0, -0.0, 1.5, 0.0, -0.0, 1, 1.0]),   # equal values, different bytes: not remembered
    (Types.STRING(), ["a", "b", "é", "a"]),
    (Types.BOOLEAN(), [True, False, 1, 0, True]),
    (Types.INT(), [1, True, 2, 1, False, 0]),
    # == but pickled apart: an encoding remembered for one must never be handed to the other
    (Types.PICKLED_BYTE_ARRAY(), [1, True, 1.0, 2, True, 1, 1.0, 0, -0.0, 0.0, False, 0]),
])
def test_encoded_key_is_pyflinks_encoding(key_type, keys):
    backend, pyflinks = (remote_backend(key_type, 10, n_states=0)[0] for _ in range(2))
    _install(backend)
    for k in keys * 2:
        backend.set_current_key(Row(k))
        pyflinks.set_current_key(Row(k))  # (PyFlink keeps 0.0 on -0.0, 1 on True: the rows are equal)
        assert backend._encoded_current_key == pyflinks._encoded_current_key, k


@pytest.mark.parametrize("first, second", [(1, True), (True, 1), (1, 1.0), (0.0, -0.0), (-0.0, 0.0), (0, False)])
def test_equal_keys_that_encode_apart_get_their_own_encoding(first, second):
    """``first == second`` but they pickle apart: after another key in between (so that the row
    comparison does not keep the old key) each gets its own bytes, also when ``first``'s were
    remembered."""
    coder = from_type_info(Types.ROW([Types.PICKLED_BYTE_ARRAY()])).get_impl()
    assert first == second and coder.encode(Row(first)) != coder.encode(Row(second))
    backend = remote_backend(Types.PICKLED_BYTE_ARRAY(), 10, n_states=0)[0]
    _install(backend)
    for k in (first, "other", second, "other", first, "other", second):
        backend.set_current_key(Row(k))
        assert backend._encoded_current_key == coder.encode(Row(k)), k


def test_remembered_keys_are_bounded(monkeypatch):
    monkeypatch.setattr(_pyflink, "_ENCODED_KEYS_MAX", 3)
    backend, _, _ = _backend(10, True)
    remembered = backend.set_current_key.args[1]
    for i in range(10):
        backend.set_current_key(Row(f"k{i}"))
        assert len(remembered) <= 3
