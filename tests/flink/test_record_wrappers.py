"""``_pyflink.speed_up_records``: serdes' per-record wrapper of a process-mode Python operation does
what PyFlink 2.2.1's own does.

Two real PyFlink operations of each kind (``StatefulOperation`` for a KEYED_PROCESS function proto,
``StatelessOperation`` for a PROCESS one, as the Beam runner builds them in a Python worker; the
keyed ones over real ``RemoteKeyedStateBackend`` objects behind Beam's caching state handler, with
tests/support/state_backend.py's ``RunnerStateService`` standing in for the runner's state API),
one whose function installs serdes' wrapper (and key change) in ``open()`` and one that does not.
The same records (key changes and repeated keys -- STRING, INT and TUPLE(STRING, INT) keys --,
timestamps, watermarks, functions that emit nothing, several outputs, side outputs, timers, keyed
value state, and list and map state read back per record) must give the same outputs, the same
context seen by the function, the same registered timers and the same committed state.
The jobs of ``tests/flink/test_keyed*.py`` run with the wrappers in process mode.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Tuple

import pytest
from pyflink.common import Row, Types
from pyflink.datastream import KeyedProcessFunction, OutputTag, ProcessFunction
from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor

from serdes.flink import _pyflink

from tests.support.state_backend import runner_backend

pytestmark = pytest.mark.skipif(_pyflink.pyflink_version() not in _pyflink.SPEEDUPS_VERIFIED,
                                reason="serdes keeps PyFlink's own wrapper on other releases")

SIDE = OutputTag("side", Types.STRING())
#: the functions opened by the operations of this module (each operation unpickles its own copy)
OPENED: List["Recorder"] = []
#: (function, installed?, the per-record functions of the REVISE_OUTPUT operations after it) as
#: the real job's functions saw them in open() (a MiniCluster's Python workers run in this process)
INSTALLED: List[Tuple[str, bool, List[str]]] = []


def _install(function: Any) -> None:
    installed = _pyflink.speed_up_records(function)
    revises = _pyflink._revise_operations(_pyflink._opening_operation(function))
    INSTALLED.append((type(function).__name__, installed, [r.process_element_func.__name__ for r in revises]))


class _Noting:
    """What both recorders share: serdes' wrapper or PyFlink's (``fast``), whether it went in, and
    what the function saw per record."""

    def __init__(self, fast: bool, more_state: bool = False) -> None:
        self.fast = fast
        self.more_state = more_state
        self.seen: List[Tuple[Any, ...]] = []
        self.installed: Any = None

    def _opened(self, runtime_context: Any, keyed: bool) -> None:
        OPENED.append(self)  # type: ignore[arg-type]
        if self.fast:
            if keyed:
                _pyflink.speed_up_key_changes(runtime_context)
            self.installed = _pyflink.speed_up_records(self)


class Recorder(_Noting, KeyedProcessFunction):
    """Counts per key in keyed state, notes what its context says, emits 0-2 outputs and side outputs."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        if self.more_state:
            self.values = runtime_context.get_list_state(ListStateDescriptor("values", Types.LONG()))
            self.kinds = runtime_context.get_map_state(MapStateDescriptor("kinds", Types.INT(), Types.LONG()))
        self._opened(runtime_context, keyed=True)

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        self.seen.append((value, ctx.get_current_key(), ctx.timestamp(), ctx.timer_service().current_watermark()))
        if self.more_state:
            self._more_state(value)
        kind = value % 5
        if kind == 0:
            return None  # a function may return nothing at all
        if kind == 1:
            ctx.timer_service().register_event_time_timer(1000 + value)
            return iter(())
        return self._outputs(value, ctx, n, kind)

    def _more_state(self, value: Any) -> None:
        """List and map state: written, read back (into ``seen``), now and then cleared / removed."""
        kind = value % 5
        if value % 11 == 0:
            self.values.clear()
        else:
            self.values.add(value)
        if value % 13 == 0:
            self.kinds.remove(kind)
        else:
            self.kinds.put(kind, (self.kinds.get(kind) or 0) + 1)
        self.seen.append((list(self.values.get()), sorted(self.kinds.items()), self.kinds.contains(0)))

    def _outputs(self, value: Any, ctx: Any, n: int, kind: int) -> Any:
        yield (ctx.get_current_key(), n, value)
        if kind == 3:
            yield SIDE, f"side-{value}"
        if kind == 4:
            yield (ctx.get_current_key(), -n, value)


class StatelessRecorder(_Noting, ProcessFunction):
    """Notes what its context says, emits 0-2 outputs and side outputs."""

    def open(self, runtime_context: Any) -> None:
        self._opened(runtime_context, keyed=False)

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.seen.append((value, ctx.timestamp(), ctx.timer_service().current_watermark()))
        kind = value % 5
        if kind == 0:
            return None
        return self._outputs(value, kind)

    def _outputs(self, value: Any, kind: int) -> Any:
        if kind >= 2:
            yield ("out", value)
        if kind == 3:
            yield SIDE, f"side-{value}"
        if kind == 4:
            yield ("again", value)


def _stateless_operation(fn: StatelessRecorder, side_output: bool) -> Any:
    import cloudpickle
    from pyflink.fn_execution import flink_fn_execution_pb2 as pb
    from pyflink.fn_execution.datastream.process.operations import StatelessOperation

    proto = pb.UserDefinedDataStreamFunction(
        function_type=pb.UserDefinedDataStreamFunction.PROCESS, payload=cloudpickle.dumps(fn),
        has_side_output=side_output)
    operation = StatelessOperation(proto, None)
    operation.open()
    return operation


def _operation(fn: Recorder, side_output: bool, key_type: Any = None, cache_size: int = 1000) -> Tuple[Any, Any, Any]:
    import cloudpickle
    from pyflink.fn_execution import flink_fn_execution_pb2 as pb
    from pyflink.fn_execution.datastream.process.operations import StatefulOperation

    proto = pb.UserDefinedDataStreamFunction(
        function_type=pb.UserDefinedDataStreamFunction.KEYED_PROCESS, payload=cloudpickle.dumps(fn),
        has_side_output=side_output)
    backend, handler, service = runner_backend(key_type or Types.STRING(), cache_size, 1 << 20)
    operation = StatefulOperation(proto, backend, None)
    operation.open()
    return operation, handler, service


def _plain(x: Any) -> Any:
    """Rows and tuples as nested tuples of their values (the consumer only indexes them)."""
    if isinstance(x, Row):
        return ("Row", tuple(_plain(v) for v in x._values))
    if isinstance(x, tuple):
        return tuple(_plain(v) for v in x)
    return x


def _run(fast: bool, side_output: bool, records: List[Tuple[int, int, Any, int]], key_type: Any = None,
         more_state: bool = False, cache_size: int = 1000) -> Dict[str, Any]:
    operation, handler, service = _operation(Recorder(fast, more_state), side_output, key_type, cache_size)
    user = OPENED[-1]
    timers: List[Tuple[Any, ...]] = []  # what PyFlink would write to the runner's timer stream
    operation.internal_timer_service._set_timer = lambda kind, ts, key, namespace: timers.append(
        (kind.value, ts, _plain(key), namespace))
    outputs = []
    for bundle in range(0, len(records), 100):  # bundles of 100 records, each ended as PyFlink ends one
        with handler.process_instruction_id(f"b{bundle}", []):
            for ts, wm, key, value in records[bundle:bundle + 100]:
                outputs.append([_untag(_plain(o)) for o in operation.process_element(Row(ts, wm, Row(key, value)))])
            operation.finish()  # commits the keyed state
    state = service.committed()
    return {"outputs": outputs, "seen": user.seen, "timers": timers, "state": state, "installed": user.installed,
            "func": operation.process_element_func}


#: key type of the keyed operation -> its keys
KEYS: Dict[str, Tuple[Any, List[Any]]] = {
    "STRING": (Types.STRING(), [f"k{i}" for i in range(5)]),
    "INT": (Types.INT(), [0, 1, -1, 7, 2**31 - 1]),
    "TUPLE": (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), ("a", 2), ("b", 1), ("", 0), ("b", -1)]),
}


def _records(seed: int, n: int = 400, keys: Any = None) -> List[Tuple[int, int, Any, int]]:
    rng = random.Random(seed)
    keys = keys or KEYS["STRING"][1]
    out, key = [], keys[0]
    for i in range(n):
        if rng.random() < 0.6:  # runs of one key as well as changes
            key = rng.choice(keys)
        out.append((1_000 + i * 7, i * 5 - 1, key, rng.randrange(1000)))
    return out


def _untag(o: Any) -> Any:
    """``("Row", values)`` -> values: the row marker is the one difference the consumer cannot see."""
    if isinstance(o, tuple) and len(o) == 2 and o[0] == "Row":
        return o[1]
    if isinstance(o, tuple):
        return tuple(_untag(v) for v in o)
    return o


def _run_stateless(fast: bool, side_output: bool, records: List[Tuple[int, int, str, int]]) -> Dict[str, Any]:
    operation = _stateless_operation(StatelessRecorder(fast), side_output)
    user = OPENED[-1]
    outputs = [[_untag(_plain(o)) for o in operation.process_element(Row(ts, wm, value))]
               for ts, wm, _, value in records]
    return {"outputs": outputs, "seen": user.seen, "timers": [], "state": {}, "installed": user.installed,
            "func": operation.process_element_func}


#: per kind of operation: how one run goes, and the names of PyFlink's and serdes' per-record functions
KINDS = {"keyed": ("process_element", "process_keyed_record"), "process": ("wrapped_func", "process_record")}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("side_output", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_same_outputs_context_timers_and_state_as_pyflinks_wrapper(kind, side_output, seed):
    records = _records(seed)
    run = _run if kind == "keyed" else _run_stateless
    plain, fast = run(False, side_output, records), run(True, side_output, records)
    assert fast["installed"] is True and plain["installed"] is None, "serdes' wrapper was not installed"
    assert (plain["func"].__name__, fast["func"].__name__) == KINDS[kind]
    # outputs: PyFlink's Row(ts, wm, out) and serdes' (ts, wm, out) carry the same values by position
    assert fast["outputs"] == plain["outputs"]
    assert sum(len(r) for r in plain["outputs"]) > len(records) // 2  # not a comparison of empty lists
    assert fast["seen"] == plain["seen"]  # what the function saw: value, (key,) timestamp, watermark
    assert fast["timers"] == plain["timers"] and (kind != "keyed" or plain["timers"])  # timers registered
    assert fast["state"] == plain["state"] and (kind != "keyed" or plain["state"])  # committed keyed state


@pytest.mark.parametrize("key", sorted(KEYS))
@pytest.mark.parametrize("cache_size", [1, 1000])  # 1: the backend's LRU cache evicts on every key change
def test_keyed_wrapper_with_list_and_map_state_same_as_pyflinks(key, cache_size):
    key_type, keys = KEYS[key]
    records = _records(sorted(KEYS).index(key) + cache_size, keys=keys)
    plain, fast = (_run(f, True, records, key_type, more_state=True, cache_size=cache_size) for f in (False, True))
    assert fast["installed"] is True and plain["installed"] is None, "serdes' wrapper was not installed"
    assert fast["func"].__name__ == "process_keyed_record"
    assert fast["outputs"] == plain["outputs"]
    assert fast["seen"] == plain["seen"]  # incl. the list and map state read back after each record
    assert fast["timers"] == plain["timers"] and plain["timers"]
    assert fast["state"] == plain["state"]
    assert plain["state"]["maps"] and len(plain["state"]["bags"]) > len(keys)  # value and list state per key
    assert any(lst and items for lst, items, _ in plain["seen"][1::2])  # the states were read back non-empty


def test_new_row_is_the_row_pyflink_builds():
    from pyflink.fn_execution.coder_impl_fast import RowCoderImpl
    from pyflink.fn_execution.coders import from_type_info

    assert _pyflink.new_row([1, "a"]).__dict__ == Row(1, "a").__dict__
    assert _pyflink.new_row([1, "a"], ["n", "s"]).__dict__ == Row(n=1, s="a").__dict__
    assert _pyflink.new_row([1, "a"], ["n", "s"]) == Row(n=1, s="a")
    coder = from_type_info(Types.ROW_NAMED(["n", "s"], [Types.LONG(), Types.STRING()])).get_impl()
    assert isinstance(coder, RowCoderImpl)  # the Cython coder of process-mode workers
    assert coder.encode(_pyflink.new_row([7, "x"], ["n", "s"])) == coder.encode(Row(7, "x"))
    assert coder.encode(_pyflink.new_row([7, "x"])) == coder.encode(Row(7, "x"))


def test_side_outputs_keep_their_tag():
    from pyflink.fn_execution.datastream.process.input_handler import DEFAULT_OUTPUT_TAG

    outputs = _run(True, True, [(10, 9, "a", 3), (11, 10, "a", 2)])["outputs"]
    assert outputs == [[(DEFAULT_OUTPUT_TAG, (10, 9, ("a", 1, 3))), (SIDE.tag_id, (10, 9, "side-3"))],
                       [(DEFAULT_OUTPUT_TAG, (11, 10, ("a", 2, 2)))]]


def test_not_installed_for_another_function_or_release(monkeypatch):
    class Other(Recorder):
        def open(self, runtime_context: Any) -> None:
            super().open(runtime_context)
            self.installed = _pyflink.speed_up_records(Recorder(True))  # not the operation's function

    operation, _, _ = _operation(Other(False), False)
    assert OPENED[-1].installed is False
    assert operation.process_element_func.__name__ == "process_element"

    assert _pyflink.speed_up_records(Recorder(True)) is False  # no operation is opening it

    class NotAProcessFunction(StatelessRecorder):  # what PyFlink runs inside a wrapper of its own
        def open(self, runtime_context: Any) -> None:
            super().open(runtime_context)
            self.installed = _pyflink.speed_up_records(object())

    operation = _stateless_operation(NotAProcessFunction(False), False)
    assert OPENED[-1].installed is False and operation.process_element_func.__name__ == "wrapped_func"

    monkeypatch.setattr(_pyflink, "pyflink_version", lambda: "2.1.0")
    operation, _, _ = _operation(Recorder(True), False)
    assert OPENED[-1].installed is False
    assert operation.process_element_func.__name__ == "process_element"


# -- in a real process-mode job: PyFlink's Beam runner, its coders, the JVM on both sides ----------


class CountPerKey(KeyedProcessFunction):
    """Running count per key (keyed state) as ``"key:count"``; every third record of a key also as a
    side output."""

    def __init__(self, fast: bool) -> None:
        self.fast = fast

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        if self.fast:
            _pyflink.speed_up_key_changes(runtime_context)
            _install(self)

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield f"{ctx.get_current_key()}:{n}"
        if n % 3 == 0:
            yield SIDE, f"side {value}"


class Tag(ProcessFunction):
    def __init__(self, fast: bool) -> None:
        self.fast = fast

    def open(self, runtime_context: Any) -> None:
        if self.fast:
            _install(self)

    def process_element(self, value: Any, ctx: Any) -> Any:
        yield f"{value}@{ctx.timestamp() is None}"


def _job(fast: bool) -> Tuple[List[str], List[str]]:
    """A stateless operation fused with PyFlink's key selector, then a keyed operation with a side
    output (so its worker has two REVISE_OUTPUT functions); both outputs collected in one job."""
    import serdes.flink as sf

    env = sf.create_env(execution_mode="process")
    words = [f"w{i % 7}" for i in range(60)]
    tagged = env.from_collection(words, type_info=Types.STRING()).process(Tag(fast), output_type=Types.STRING())
    counted = tagged.key_by(lambda w: w.split("@")[0], key_type=Types.STRING()).process(
        CountPerKey(fast), output_type=Types.STRING())
    both = counted.map(lambda s: f"main {s}", output_type=Types.STRING()).union(counted.get_side_output(SIDE))
    out = sorted(both.execute_and_collect())
    return [o for o in out if o.startswith("main ")], [o for o in out if o.startswith("side ")]


@pytest.mark.flink
@pytest.mark.integration
@pytest.mark.timeout(300)
def test_real_process_mode_job_same_results_with_the_replacements_installed():
    plain = _job(False)
    INSTALLED.clear()
    fast = _job(True)
    assert fast == plain
    # 9 or 8 records per key, a side output for every third: 3 * 4 + 2 * 3
    assert len(plain[0]) == 60 and "main w3:9" in plain[0] and len(plain[1]) == 18
    # Tag is fused with PyFlink's key selector: no REVISE_OUTPUT right after it. CountPerKey's main
    # and side outputs each go to a REVISE_OUTPUT, both replaced
    assert sorted(INSTALLED) == [("CountPerKey", True, ["revise_record", "revise_record"]), ("Tag", True, [])], \
        INSTALLED
