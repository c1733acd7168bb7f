"""The one seam to PyFlink's private API.

serdes' Flink layer needs a few things PyFlink keeps private: the Java objects behind its Python
wrappers (``_j_builder`` of the Kafka builders, ``_j_stream_execution_environment``,
``_j_data_stream``, ``_j_job_client``), the embedded (thread mode) state's ``_value_converter``
and converter classes, the fields of composite type infos (``_field_types``, ``_element_type``,
...), ``StreamExecutionEnvironment._generate_stream_graph`` (which serdes' job-graph checks
replace), ``pyflink.util.java_utils.get_field_value``, the process-mode keyed state backend's
fields (``RemoteKeyedStateBackend``: :func:`speed_up_key_changes`) and the Py4J gateway to the JVM. This module
is the only one in serdes that names them; the rest of ``serdes.flink`` calls the small typed
functions below.

Each private attribute is read by name, with no default, when the function that needs it runs
(for an instance attribute: once per object it is asked about; for a class or module attribute:
once per process). One that an apache-flink release renamed or dropped raises
:class:`PyFlinkAPIError` naming it, its owner and the installed apache-flink version, instead of
being silently skipped (the job-graph checks turned off, thread-mode state decoded as tuples of
ints). Verified against apache-flink 2.2.1 and 2.3.0, the releases ``serdes[flink]`` allows.
The one exception are the process-mode speedups (:func:`speed_up_key_changes`,
:func:`speed_up_records`): an optimization, so a mismatch there leaves PyFlink's own code and logs
one warning per process instead (:func:`speedups_allowed`, the ``SERDES_FLINK_SPEEDUPS`` switch).

The Java classes reached through the gateway (``PythonConfigUtil``,
``PythonOperatorChainingOptimizer``, ``SavepointFormatType``, the shim's classes) are Flink's and
serdes' Java API: Py4J reports a missing one when it is called, naming it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import os
import sys
from types import FrameType, ModuleType
from typing import Any, Callable, Dict, List, Optional, Tuple

from .._errors import PyFlinkAPIError

__all__ = [
    "PyFlinkAPIError",
    "pyflink_version",
    "require",
    "jvm",
    "new_java_object",
    "java_class",
    "java_env",
    "java_stream",
    "java_job_client",
    "env_config",
    "set_source_deserializer",
    "build_sink",
    "keyed_stream",
    "transformations",
    "prepare_python_operators",
    "replace_stream_graph",
    "load_jars_in_client",
    "bytes_state_as_bytes",
    "SPEEDUPS_ENV",
    "SPEEDUPS_KEY",
    "SPEEDUPS_VERIFIED",
    "parse_speedups",
    "speedups_allowed",
    "speed_up_key_changes",
    "speed_up_records",
    "new_row",
    "type_info_children",
    "savepoint_format",
]

_SENTINEL = object()
_log = logging.getLogger(__name__)


def pyflink_version() -> str:
    """The installed apache-flink (PyFlink) version, e.g. ``"2.2.1"``."""
    return importlib.metadata.version("apache-flink")


def require(obj: Any, name: str) -> Any:
    """``obj.<name>``, read by name; :class:`PyFlinkAPIError` when the installed PyFlink lacks it."""
    value = getattr(obj, name, _SENTINEL)
    if value is _SENTINEL:
        owner = obj.__name__ if isinstance(obj, (type, ModuleType)) else type(obj).__name__
        raise PyFlinkAPIError(name, owner, pyflink_version())
    return value


def _module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise PyFlinkAPIError(name, "pyflink", pyflink_version()) from exc


# -- the JVM --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _get_gateway() -> Callable[[], Any]:
    return require(_module("pyflink.java_gateway"), "get_gateway")  # type: ignore[no-any-return]


def jvm() -> Any:
    """The Py4J JVM view of PyFlink's gateway (starts the gateway if needed)."""
    return _get_gateway()().jvm


def new_java_object(class_name: str, *args: Any) -> Any:
    """An instance of a Java class by its dotted name, e.g. one from a jar added with ``env.add_jars``."""
    obj = jvm()
    for part in class_name.split("."):
        obj = getattr(obj, part)
    return obj(*args)


def java_class(name: str) -> Any:
    """``java.lang.Class`` of ``name``, loaded by the context class loader (which sees user jars)."""
    j = jvm()
    return j.java.lang.Class.forName(name, False, j.Thread.currentThread().getContextClassLoader())


def load_jars_in_client(urls: List[str]) -> None:
    """Load jars into the client JVM's context class loader, as ``env.add_jars`` does for the
    jars it adds (``pyflink.util.java_utils.add_jars_to_context_class_loader``)."""
    require(_module("pyflink.util.java_utils"), "add_jars_to_context_class_loader")(urls)


def savepoint_format(fmt: str) -> Any:
    """Java ``SavepointFormatType`` constant for ``"canonical"`` / ``"native"``."""
    return getattr(jvm().org.apache.flink.core.execution.SavepointFormatType, fmt.upper())


# -- the Java objects behind PyFlink's wrappers ---------------------------------------------------


def java_env(env: Any) -> Any:
    """The Java ``StreamExecutionEnvironment`` of a PyFlink one."""
    return require(env, "_j_stream_execution_environment")


def java_stream(stream: Any) -> Any:
    """The Java ``DataStream`` of a PyFlink one."""
    return require(stream, "_j_data_stream")


def java_job_client(job_client: Any) -> Any:
    """The Java ``JobClient`` of a PyFlink one (PyFlink 2.2.1's savepoint calls are broken)."""
    return require(job_client, "_j_job_client")


def env_config(env: Any) -> Any:
    """The environment's Java ``Configuration`` (live: ``setString`` changes the environment's)."""
    j_env = java_env(env)
    return jvm().org.apache.flink.python.util.PythonConfigUtil.getEnvironmentConfig(j_env)


def set_source_deserializer(builder: Any, j_deserializer: Any) -> None:
    """``KafkaSourceBuilder.setDeserializer`` with a Java ``KafkaRecordDeserializationSchema``
    (PyFlink's builder only takes its own value-only schemas)."""
    require(builder, "_j_builder").setDeserializer(j_deserializer)


def build_sink(builder: Any, j_serializer: Any) -> Any:
    """A ``KafkaSink`` from a ``KafkaSinkBuilder`` with a Java ``KafkaRecordSerializationSchema``."""
    from pyflink.datastream.connectors.kafka import KafkaSink

    j_builder = require(builder, "_j_builder")
    j_builder.setRecordSerializer(j_serializer)
    return KafkaSink(j_builder.build())


def keyed_stream(stream: Any, j_selector: Any, key_type: Any, value_type: Any) -> Any:
    """A PyFlink ``KeyedStream`` of ``stream`` keyed in Java by ``j_selector``.

    PyFlink's keyed Python operators read the key from field 0 of ``Row(key, value)`` and hand
    ``value`` (of ``value_type``) to the user function; ``key_type`` is the key's type info.
    """
    from pyflink.common import Types
    from pyflink.datastream.data_stream import KeyedStream

    j_keyed = java_stream(stream).keyBy(j_selector, Types.ROW([key_type]).get_java_type_info())
    return KeyedStream(j_keyed, value_type, stream)


# -- job-graph generation -------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _get_field_value() -> Callable[[Any, str], Any]:
    return require(_module("pyflink.util.java_utils"), "get_field_value")  # type: ignore[no-any-return]


def transformations(j_env: Any) -> List[Any]:
    """The transformations registered on a Java ``StreamExecutionEnvironment`` (its private
    ``transformations`` field, read the way PyFlink reads it)."""
    return list(_get_field_value()(j_env, "transformations").toArray())


def prepare_python_operators(j_env: Any) -> None:
    """What PyFlink's ``_generate_stream_graph`` does before building the graph: configure the
    Python operators, fuse consecutive ones, set custom partitioners' partition counts."""
    j = jvm()
    util = j.org.apache.flink.python.util.PythonConfigUtil
    util.configPythonOperator(j_env)
    j.org.apache.flink.python.chain.PythonOperatorChainingOptimizer.apply(j_env)
    util.setPartitionCustomOperatorNumPartitions(_get_field_value()(j_env, "transformations"))


@functools.lru_cache(maxsize=None)
def _check_generate_stream_graph() -> None:
    from pyflink.datastream import StreamExecutionEnvironment

    require(StreamExecutionEnvironment, "_generate_stream_graph")


def replace_stream_graph(env: Any, generate: Callable[[bool, Optional[str]], Any]) -> None:
    """Make ``env.execute`` / ``execute_async`` / ``get_execution_plan`` build their stream graph
    with ``generate(clear_transformations, job_name)`` (all three call the private
    ``_generate_stream_graph``; the replacement is this environment's alone)."""
    _check_generate_stream_graph()

    def _generate_stream_graph(clear_transformations: bool = False, job_name: Optional[str] = None) -> Any:
        return generate(clear_transformations, job_name)

    env._generate_stream_graph = _generate_stream_graph


# -- state ----------------------------------------------------------------------------------------

_EMBEDDED_STATE = "pyflink.fn_execution.datastream.embedded.state_impl"
_CONVERTERS = "pyflink.fn_execution.embedded.converters"


@functools.lru_cache(maxsize=None)
def _embedded_state_api() -> Tuple[Any, Any, Any]:
    """(embedded ``StateImpl``, ``ArrayDataConverter``, ``IdentityDataConverter``)."""
    converters = _module(_CONVERTERS)
    return (
        require(_module(_EMBEDDED_STATE), "StateImpl"),
        require(converters, "ArrayDataConverter"),
        require(converters, "IdentityDataConverter"),
    )


def bytes_state_as_bytes(state: Any) -> None:
    """Make a thread-mode ``byte[]`` state hand out ``bytes``.

    Thread mode (pemja) converts ``byte[]`` state with an ``ArrayDataConverter``: a tuple of ints
    per value, and ``value()`` of an empty state raises ``TypeError`` (PyFlink 2.2.1). pemja
    already maps ``byte[]`` <-> ``bytes``, so the identity converter is put in its place. Process
    mode states (no converter) are left alone; the embedded state module is loaded only in
    thread-mode workers, so its absence means ``state`` is not one of its states.
    """
    if _EMBEDDED_STATE not in sys.modules:
        return
    state_impl, array_converter, identity_converter = _embedded_state_api()
    if not isinstance(state, state_impl):
        return
    if isinstance(require(state, "_value_converter"), array_converter):
        state._value_converter = identity_converter()


# -- process-mode keyed state: key changes ---------------------------------------------------------

_REMOTE_STATE = "pyflink.fn_execution.state_impl"

# -- the switch: may the process-mode speedups run here? ------------------------------------------

#: the apache-flink releases whose internals :func:`_set_current_key` and the per-record wrappers
#: were checked against line by line (and the differential tests of tests/flink run on): with the
#: switch at ``auto`` the speedups run on these only. 2.3.0: the code they replace and the code they
#: reach (fn_execution/state_impl.py, datastream/process/operations.py and input_handler.py,
#: common/types.py, coder_impl_fast.pxd/.pyx, beam/beam_operations_fast.pxd) is byte-identical to
#: 2.2.1's; beam_operations_fast.pyx differs only in the branches of async operations
SPEEDUPS_VERIFIED: Tuple[str, ...] = ("2.2.1", "2.3.0")
#: the environment variable of the switch (read in each Python worker, and checked by create_env)
SPEEDUPS_ENV = "SERDES_FLINK_SPEEDUPS"
#: the key of the switch in ``create_env(config=...)``, carried to the workers as a global job parameter
SPEEDUPS_KEY = "serdes.flink.speedups"
_SPEEDUPS_VALUES = ("auto", "on", "off")

#: one WARNING per worker process: set once the speedups were not applied for a reason worth saying
_warned = False


def parse_speedups(value: Optional[str], source: str = SPEEDUPS_ENV) -> str:
    """The switch's value, ``"auto"`` when unset or empty; ``ValueError`` naming ``source`` otherwise."""
    if value is None or not str(value).strip():
        return "auto"
    setting = str(value).strip().lower()
    if setting not in _SPEEDUPS_VALUES:
        raise ValueError(f"{source}={value!r}: the switch of serdes' PyFlink speedups takes one of "
                         f"{', '.join(_SPEEDUPS_VALUES)} (auto: on for apache-flink {', '.join(SPEEDUPS_VERIFIED)})")
    return setting


def _not_applied(why: str) -> None:
    """Say once per process that PyFlink's own code runs, and why."""
    global _warned
    if _warned:
        _log.debug("serdes' PyFlink speedups not applied: %s", why)
        return
    _warned = True
    _log.warning("serdes' process-mode speedups are not applied on apache-flink %s (%s); PyFlink's own "
                 "code path runs, with the same results, slower (set %s=off to silence this)",
                 _installed_version(), why, SPEEDUPS_ENV)


def _installed_version() -> str:
    try:
        return pyflink_version()
    except Exception:  # noqa: BLE001 - only for the message
        return "(unknown version)"


def _setting(runtime_context: Any) -> Tuple[str, str]:
    """(raw value, where it came from): the job parameter :data:`SPEEDUPS_KEY` when the operator's
    runtime context has it (set by ``create_env``), else :data:`SPEEDUPS_ENV`, else auto."""
    get = getattr(runtime_context, "get_job_parameter", None)
    if get is not None:
        try:
            value = get(SPEEDUPS_KEY, None)
        except Exception:  # noqa: BLE001 - a context that cannot answer: the env var decides
            value = None
        if value is not None:
            return str(value), f"job parameter {SPEEDUPS_KEY}"
    return os.environ.get(SPEEDUPS_ENV, ""), SPEEDUPS_ENV


def speedups_allowed(runtime_context: Any = None) -> bool:
    """May serdes' process-mode speedups run in this worker?  ``False`` in thread mode and outside
    a Python worker (silently), with the switch ``off`` (a debug log), and with ``auto`` on a release
    not in :data:`SPEEDUPS_VERIFIED` or an invalid value (the one warning); ``True`` with ``on``
    (on any release: the installers check the internals and fall back) and with ``auto`` on a
    verified release.  Never raises."""
    if _REMOTE_STATE not in sys.modules:  # process mode's state module: not loaded in thread mode
        return False
    raw, source = _setting(runtime_context)
    try:
        setting = parse_speedups(raw, source)
    except ValueError as exc:
        _not_applied(str(exc))
        return False
    if setting == "off":
        _log.debug("serdes' PyFlink speedups off (%s=%s)", source, raw)
        return False
    if setting == "auto":
        version = _installed_version()
        if version not in SPEEDUPS_VERIFIED:
            _not_applied(f"release not verified, verified: {', '.join(SPEEDUPS_VERIFIED)}; "
                         f"{SPEEDUPS_ENV}=on tries them")
            return False
    return True


def _attempt(what: str, install: Callable[..., Optional[str]], *args: Any) -> bool:
    """Run one installer; ``True`` when it installed.  A mismatch it names (its return value) or any
    exception it raises -> ``False``, nothing changed (installers check everything before they
    change anything), and the one warning: an optimization never fails a job."""
    try:
        mismatch = install(*args)
    except Exception as exc:  # noqa: BLE001 - anything: PyFlink's own path is always correct
        mismatch = f"{type(exc).__name__}: {exc}"
    if mismatch is None:
        return True
    _not_applied(f"{what}: {mismatch}")
    return False


#: encoded keys a backend remembers (by key value) before it starts again: keys come from records
_ENCODED_KEYS_MAX = 4096
_EXACT_KEY_TYPES = frozenset((str, int, bytes))


def _set_current_key(backend: Any, encoded_keys: Dict[Any, bytes], row: type, maps: List[Any], key: Any) -> None:
    """``RemoteKeyedStateBackend.set_current_key`` of apache-flink 2.2.1, with the same effects and
    three costs removed (28% of a process-mode keyed worker's time in a py-spy profile):

    * the "same key?" test: PyFlink's keys here are positional ``Row(key)`` objects (its
      ``state_key_selector``), and ``Row.__eq__`` answers through ``hasattr`` calls that raise
      inside ``Row.__getattr__``; two positional rows are compared by what that ``__eq__``
      compares for them (row kind and values), any other key by ``==``;
    * states not accessed under the old key: PyFlink builds an empty internal state for each (a
      Beam ``StateKey`` message) only to cache it; they have nothing to cache, so they are skipped
      while the backend has no map state.  The internal states that were accessed are cached
      exactly as PyFlink caches them.  The skipped entries would only have taken places in the
      backend's LRU cache, so states are evicted (committed) at other moments than with PyFlink's
      method: nothing a bag-backed state (value, list, reducing, aggregating) shows, but a map
      state's ``remove`` of a key after its ``clear()`` raises ``KeyError`` (PyFlink 2.2.1's
      ``InternalSynchronousMapRuntimeState``) only until the state is committed.  So with a map
      state registered (and the cache on) every state is cached as PyFlink caches it, the same
      LRU order and the same evictions (found by tests/flink/test_key_changes.py);
    * encoding the key (PyFlink's row coder, which also asks the row for field names through a
      raising ``hasattr``) on every change: the encoded bytes of a positional row's key values are
      remembered in ``encoded_keys`` (at most :data:`_ENCODED_KEYS_MAX`, then it starts again).
    """
    current = backend._current_key  # (row: PyFlink's Row class, bound once by speed_up_key_changes)
    values = None
    if type(key) is row and "_fields" not in key.__dict__:
        mine = key.__dict__
        values = mine["_values"]
        if type(current) is row and "_fields" not in current.__dict__:
            theirs = current.__dict__
            if values == theirs["_values"] and mine["_row_kind"] == theirs["_row_kind"]:
                return
        elif key == current:
            return
    elif key == current:
        return
    encoded_old_key = backend._encoded_current_key
    cache = backend._internal_state_cache if backend._state_cache_size > 0 else None
    encode_namespace = backend._encode_namespace
    states = backend._all_states
    if len(states) != maps[0]:  # maps: [states seen, a map state among them?, the map state class]
        maps[0], maps[1] = len(states), any(isinstance(s, maps[2]) for s in states.values())
    like_pyflink = cache is not None and maps[1]
    for state in states.values():
        internal = state._internal_state
        if internal is not None:
            if cache is not None:
                cache.put((state.name, encoded_old_key, encode_namespace(state.namespace)), internal)
            state._internal_state = None
        elif like_pyflink:
            # PyFlink's own step: an empty internal state cached for it (see the docstring: a map
            # state's behaviour depends on when the LRU cache evicts it)
            backend.cache_internal_state(encoded_old_key, state)
            state._internal_state = None
        state.namespace = None
    backend._current_key = key
    # only str / int / bytes key values: for them equal values are equal bytes (not for floats:
    # 0.0 == -0.0; not for bool: True == 1)
    cache_key = tuple(values) if values is not None and all(type(v) in _EXACT_KEY_TYPES for v in values) else None
    encoded = None if cache_key is None else encoded_keys.get(cache_key)
    if encoded is None:
        encoded = backend._key_coder_impl.encode(key)
        if cache_key is not None:
            if len(encoded_keys) >= _ENCODED_KEYS_MAX:
                encoded_keys.clear()
            encoded_keys[cache_key] = encoded
    backend._encoded_current_key = encoded


@functools.lru_cache(maxsize=None)
def _row_class() -> type:
    from pyflink.common import Row

    return Row


def speed_up_key_changes(runtime_context: Any) -> bool:
    """Give a process-mode keyed operator's state backend :func:`_set_current_key`.

    Only when :func:`speedups_allowed`, and only on that operator's ``RemoteKeyedStateBackend``
    instance (not PyFlink's class): ``False``, and nothing changed, in thread mode (the state lives
    in the JVM), for non-keyed operators, with the switch off, and when anything it uses is not
    what it was checked against (then with the one warning).  Never raises.
    """
    if not speedups_allowed(runtime_context):
        return False
    backend: Any = getattr(runtime_context, "_keyed_state_backend", None)
    if backend is None:
        return False  # not a keyed operator
    return _attempt("key change", _install_key_change, backend)


def _install_key_change(backend: Any) -> Optional[str]:
    """Install :func:`_set_current_key` on ``backend``; what did not match, or ``None`` when done.
    The attributes it uses are read by name before anything changes."""
    remote = require(_module(_REMOTE_STATE), "RemoteKeyedStateBackend")
    if type(backend) is not remote:
        return f"the keyed state backend is a {type(backend).__qualname__}, not PyFlink's RemoteKeyedStateBackend"
    for name in ("_current_key", "_encoded_current_key", "_internal_state_cache", "_state_cache_size",
                 "_encode_namespace", "_all_states", "_key_coder_impl", "cache_internal_state"):
        require(backend, name)
    map_state = require(_module(_REMOTE_STATE), "SynchronousMapRuntimeState")
    backend.set_current_key = functools.partial(_set_current_key, backend, {}, _row_class(), [-1, False, map_state])
    return None


# -- process-mode Python operations: the per-record wrapper --------------------------------------

_OPERATIONS = "pyflink.fn_execution.datastream.process.operations"
_INPUT_HANDLER = "pyflink.fn_execution.datastream.process.input_handler"
#: the closures of PyFlink 2.2.1's per-record functions (``extract_stateful_function``'s
#: ``process_element(normal_data, timestamp)`` of a KEYED_PROCESS operation, and
#: ``extract_stateless_function``'s ``wrapped_func(value)`` of a PROCESS operation): the names
#: :func:`speed_up_records` reads
_KEYED_CLOSURE = ("ctx", "input_selector", "keyed_state_backend", "process_function", "state_key_selector",
                  "user_key_selector")
_PROCESS_CLOSURE = ("ctx", "has_side_output", "process_element")


def _opening_operation(function: Any) -> Any:
    """The ``StatefulOperation`` / ``StatelessOperation`` whose ``open()`` is opening ``function``
    right now (a frame above the caller's caller), or ``None``: PyFlink hands a function its
    runtime context, never its operation."""
    operations = _module(_OPERATIONS)
    codes = {require(require(operations, cls), "open").__code__ for cls in ("StatefulOperation", "StatelessOperation")}
    frame: Optional[FrameType] = sys._getframe(1)
    for _ in range(8):  # Operation.open() -> open_func() -> function.open() -> here: a few frames up
        frame = frame.f_back if frame is not None else None
        if frame is None:
            return None
        if frame.f_code in codes:
            return frame.f_locals.get("self")
    return None


def _closure(fn: Any, names: Tuple[str, ...]) -> Optional[Dict[str, Any]]:
    """``fn``'s closure variables by name if they are exactly ``names``, else ``None``."""
    code = getattr(fn, "__code__", None)
    if code is None or tuple(sorted(code.co_freevars)) != names:
        return None
    return dict(zip(code.co_freevars, (c.cell_contents for c in fn.__closure__), strict=True))


def new_row(values: List[Any], fields: Optional[List[str]] = None) -> Any:
    """``Row(*values)`` (or, with ``fields``, ``Row(**dict(zip(fields, values)))``) without
    ``Row.__init__``'s ``__setattr__`` calls: the same attributes, set directly.  A row with field
    names equal to its row coder's is encoded without ``Row.get_fields_by_names``' raising
    ``hasattr``."""
    cls, insert = _ROW_PARTS or _row_parts()
    row = cls.__new__(cls)
    attrs = row.__dict__
    if fields is not None:
        attrs["_fields"] = fields
    attrs["_values"] = values
    attrs["_from_dict"] = fields is not None
    attrs["_row_kind"] = insert
    return row


#: ``(Row, RowKind.INSERT)`` once :func:`_row_parts` has run (per record, a global read instead of
#: two cached calls)
_ROW_PARTS: Tuple[Any, ...] = ()


def _row_parts() -> Tuple[Any, Any]:
    global _ROW_PARTS
    _ROW_PARTS = (_row_class(), require(require(_module("pyflink.common.types"), "RowKind"), "INSERT"))
    return _ROW_PARTS[0], _ROW_PARTS[1]


def _row_insert() -> Any:
    return (_ROW_PARTS or _row_parts())[1]


def _emitter(has_side_output: bool) -> Callable[[Any, Any, Any], Any]:
    """PyFlink 2.2.1's ``_emit_results`` handing each output on as a ``(timestamp, watermark,
    output)`` tuple -- ``(tag id, (timestamp, watermark, output))`` with side outputs -- in place of
    its ``Row``: the consumer of a Python operation's output is always Python code that indexes it
    (the ``REVISE_OUTPUT`` function the Beam data-stream runner appends after every operation's
    outputs, or the next fused operation's wrapper)."""
    handlers = _module(_INPUT_HANDLER)
    output_tag, default_tag = require(handlers, "OutputTag"), require(handlers, "DEFAULT_OUTPUT_TAG")
    if has_side_output:
        def emit_tagged(ts: Any, wm: Any, results: Any) -> Any:
            if results:
                for result in results:
                    if isinstance(result, tuple) and isinstance(result[0], output_tag):
                        yield result[0].tag_id, (ts, wm, result[1])
                    else:
                        yield default_tag, (ts, wm, result)
        return emit_tagged

    def emit(ts: Any, wm: Any, results: Any) -> Any:
        if results:
            for result in results:
                yield ts, wm, result
    return emit


def _keyed_record_function(handler: Any, function: Any) -> Optional[Callable[[Any], Any]]:
    """The replacement of a KEYED_PROCESS operation's ``RunnerInputHandler.process_element``."""
    if type(handler) is not require(_module(_INPUT_HANDLER), "RunnerInputHandler"):
        return None
    closure = _closure(require(handler, "_process_element_func"), _KEYED_CLOSURE)
    if closure is None or closure["process_function"] is not function:
        return None
    ctx, backend = closure["ctx"], closure["keyed_state_backend"]
    for name in ("_timestamp", "_current_key"):
        require(ctx, name)
    require(backend, "_current_key")
    advance = require(require(handler, "_internal_timer_service"), "advance_watermark")
    emit = _emitter(bool(require(handler, "_has_side_output")))
    set_key, user, row_cls = require(backend, "set_current_key"), function.process_element, _row_class()
    given: List[Any] = [None, _SENTINEL]  # [the key row given to the backend, its key]

    def process_keyed_record(value: Any) -> Any:
        # value: Row(timestamp, watermark, Row(key, input)), PyFlink's runner input
        ts, wm, data = value.__dict__["_values"] if type(value) is row_cls else value
        advance(wm)
        ctx._timestamp = ts
        key, element = data.__dict__["_values"] if type(data) is row_cls else data
        ctx._current_key = key
        last = given[1]
        if backend._current_key is not given[0] or not (key is last or key == last):
            row = new_row([key])  # PyFlink's state_key_selector: Row(key)
            set_key(row)
            given[0], given[1] = row, key
        return emit(ts, wm, user(element, ctx))

    return process_keyed_record


def _process_record_function(wrapped: Any, function: Any) -> Optional[Callable[[Any], Any]]:
    """The replacement of a PROCESS operation's ``wrapped_func``."""
    closure = _closure(wrapped, _PROCESS_CLOSURE)
    user = getattr(function, "process_element", None)
    if closure is None or user is None or closure["process_element"] != user:
        return None  # e.g. a MapFunction: PyFlink runs it inside a ProcessFunction of its own
    ctx = closure["ctx"]
    require(ctx, "_timestamp")
    advance = require(ctx.timer_service(), "advance_watermark")
    emit = _emitter(bool(closure["has_side_output"]))
    row_cls = _row_class()

    def process_record(value: Any) -> Any:
        # value: Row(timestamp, watermark, input), PyFlink's runner input
        ts, wm, element = value.__dict__["_values"] if type(value) is row_cls else value
        ctx._timestamp = ts
        advance(wm)
        return emit(ts, wm, user(element, ctx))

    return process_record


_BEAM_OPERATIONS = "pyflink.fn_execution.beam.beam_operations_fast"
_FAST_CODERS = "pyflink.fn_execution.coder_impl_fast"
#: ``extract_stateless_function``'s REVISE_OUTPUT function (``[ts, wm, data]`` -> ``Row(ts, data)``),
#: and serdes' replacement of it (found again, so installing twice changes nothing)
_REVISE_OUTPUT = ("extract_stateless_function.<locals>.revise_output", "_revise_plan.<locals>.revise_record")


def _revise_operations(operation: Any) -> List[Any]:
    """The ``StatelessOperation`` objects of the REVISE_OUTPUT functions that take ``operation``'s
    outputs (the Beam data-stream runner appends one per output tag after the last operation of a
    worker's chain), found through the garbage collector's references: PyFlink's Cython
    ``FunctionOperation`` that owns ``operation``, its output processors, their consumers.  Empty
    when any link is not what PyFlink 2.2.1's Cython operations have (no Cython coders, a fused
    Python operation after this one)."""
    import gc

    try:
        beam = importlib.import_module(_BEAM_OPERATIONS)
    except ImportError:
        return []
    owner_cls, intermediate = require(beam, "FunctionOperation"), require(beam, "IntermediateOutputProcessor")
    owners = [o for o in gc.get_referrers(operation) if isinstance(o, owner_cls)]
    if len(owners) != 1:
        return []
    found: List[Any] = []
    for processors in (r for r in gc.get_referents(owners[0]) if type(r) is dict):  # _output_processors
        for group in processors.values():
            for processor in group if type(group) is list else ():
                if not isinstance(processor, intermediate):
                    return []
                for consumer in (c for c in gc.get_referents(processor) if isinstance(c, owner_cls)):
                    for inner in gc.get_referents(consumer):
                        func = getattr(inner, "process_element_func", None)
                        if getattr(func, "__qualname__", None) in _REVISE_OUTPUT:
                            found.append(inner)
    return found


def _revise_plan(operation: Any) -> Tuple[List[Any], Optional[Callable[[Any], Any]]]:
    """The REVISE_OUTPUT operations after ``operation`` and their replacement ``revise_output``:
    PyFlink's without its ``Row(timestamp, data)``, the same values as the Cython ``InternalRow``
    the runner's row coder encodes directly (a ``Row`` without field names costs it a raising
    ``hasattr`` per record).  Nothing is changed here."""
    try:
        internal_row = require(importlib.import_module(_FAST_CODERS), "InternalRow")
    except ImportError:
        return [], None
    insert = _row_insert().value

    def revise_record(value: Any) -> Any:
        # VALUE[CURRENT_TIMESTAMP, CURRENT_WATERMARK, NORMAL_DATA] -> (timestamp, data), kind INSERT
        return (internal_row([value[0], value[2]], insert),)

    return _revise_operations(operation), revise_record


def speed_up_records(function: Any, runtime_context: Any = None) -> bool:
    """Give the process-mode operation running ``function`` (a ``KeyedProcessFunction`` or a
    ``ProcessFunction`` of serdes', from its ``open()``, with its ``runtime_context``) a per-record
    wrapper with the same effects as PyFlink 2.2.1's and its Python layers removed.

    Per record PyFlink runs two or three nested calls (for a keyed operation
    ``RunnerInputHandler.process_element``, a generator, and the operation's ``process_element``
    closure; then ``_emit_results``, a generator), reads its input rows through
    ``Row.__getitem__``, builds a ``Row(key)`` for the state backend (``state_key_selector``) and a
    ``Row(timestamp, watermark, output)`` per output.  The replacement does the same steps in one
    call and one generator: the watermark is advanced, the context's timestamp (and key) are set,
    the backend's key is changed (skipped when the backend still holds the key row this wrapper
    gave it for an equal key), ``function.process_element`` is called, and its outputs are handed
    on by :func:`_emitter`.  Timers keep PyFlink's path.

    Only when :func:`speedups_allowed`, only for the KEYED_PROCESS / PROCESS operation whose user
    function is ``function``: ``False``, and nothing changed, otherwise (thread mode, the switch
    off, a release not verified, other operations, internals that do not match: the last with the
    one warning).  Every attribute used is checked by name before anything changes.  Never raises.
    """
    if not speedups_allowed(runtime_context):
        return False
    return _attempt("per-record wrapper", _install_records, function)


def _install_records(function: Any) -> Optional[str]:
    """Install :func:`speed_up_records`' wrapper; what did not match, or ``None`` when done."""
    operation = _opening_operation(function)
    if operation is None:
        return f"no PyFlink StatefulOperation / StatelessOperation is opening {type(function).__qualname__}"
    current = require(operation, "process_element_func")
    handler = getattr(current, "__self__", None)
    replacement = (_keyed_record_function(handler, function) if handler is not None
                   else _process_record_function(current, function))
    if replacement is None:
        return f"the per-record function of {type(operation).__name__} is not the one checked against"
    revises, revise_record = _revise_plan(operation)
    # everything found: only assignments from here on
    operation.process_element_func = replacement
    for revise in revises:
        revise.process_element_func = revise_record
    _log.debug("per-record wrapper of %s installed for %s; REVISE_OUTPUT functions replaced: %d",
               type(operation).__name__, type(function).__name__, len(revises))
    return None


# -- type information -----------------------------------------------------------------------------


def type_info_children(type_info: Any) -> List[Tuple[str, Any]]:
    """The ``(label, type info)`` components of a composite PyFlink ``TypeInformation``: row and
    tuple fields (by name, else index), array / list elements, map keys and values, the wrapped
    type of an ``ExternalTypeInfo``. Empty for other types."""
    from pyflink.common import typeinfo as t

    children: List[Tuple[str, Any]] = []
    if isinstance(type_info, t.RowTypeInfo):
        fields = type_info.get_field_types()
        # get_field_names() asks the JVM when the names were not given; the labels need no JVM
        names = require(type_info, "_field_names") or [str(i) for i in range(len(fields))]
        children = list(zip(names, fields, strict=False))  # as PyFlink pairs them: by position
    elif isinstance(type_info, t.TupleTypeInfo):
        children = [(str(i), f) for i, f in enumerate(type_info.get_field_types())]
    elif isinstance(type_info, (t.PrimitiveArrayTypeInfo, t.BasicArrayTypeInfo, t.ObjectArrayTypeInfo)):
        children = [("element", require(type_info, "_element_type"))]
    elif isinstance(type_info, t.ListTypeInfo):
        children = [("element", require(type_info, "elem_type"))]
    elif isinstance(type_info, t.MapTypeInfo):
        children = [("key", require(type_info, "_key_type_info")), ("value", require(type_info, "_value_type_info"))]
    elif isinstance(type_info, t.ExternalTypeInfo):
        children = [("value", require(type_info, "_type_info"))]
    return [(label, child) for label, child in children if isinstance(child, t.TypeInformation)]
