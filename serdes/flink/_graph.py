"""serdes' job-graph building and checks: Java-keyed streams, thread-mode and strict-type checks.

* :func:`keyed_by_field0` builds a PyFlink ``KeyedStream`` on the Java side
  (``keyBy(KeyByKeySelector)`` on a stream of ``Row(key, payload)``): the key selector is Java,
  so no Python operator runs in front of the shuffle.  PyFlink's own ``key_by`` always adds a
  Python key-extraction operator.
* :func:`stream_graph` replaces PyFlink's ``StreamExecutionEnvironment._generate_stream_graph``
  (Python operator configuration + Python operator fusion) and checks the optimized
  transformations before the stream graph is built: every Python operator embedded
  (``thread_mode``) and no output type that falls back to pickled bytes (``strict_types``).
* :func:`install_checks` makes ``env.execute`` / ``env.execute_async`` / ``get_execution_plan``
  of one environment go through those checks.

The PyFlink internals this needs (the Java objects behind the environment and streams, the
transformations field, ``_generate_stream_graph``) are reached through ``_pyflink.py``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .._errors import JobGraphError, StrictTypeError, ThreadModeError  # noqa: F401  (JobGraphError: re-exported)

from pyflink.common.typeinfo import TypeInformation
from pyflink.datastream import DataStream, KeyedStream, StreamExecutionEnvironment

from . import _pyflink

ATTR_CHECKS = "_serdes_graph_checks"

_PYTHON_OPERATOR = "org.apache.flink.streaming.api.operators.python.AbstractPythonFunctionOperator"
_EMBEDDED_OPERATOR = "org.apache.flink.streaming.api.operators.python.embedded.AbstractEmbeddedPythonFunctionOperator"
_PICKLED = "org.apache.flink.streaming.api.typeinfo.python.PickledByteArrayTypeInfo"


def keyed_by_field0(stream: DataStream, key_type: TypeInformation, value_type: TypeInformation) -> KeyedStream:
    """``KeyedStream`` of a ``DataStream`` of ``Row(key, value)`` keyed by field 0 in Java.

    PyFlink's keyed Python operators read the key from field 0 of their input row and hand
    field 1 to the user function, which is exactly the shape PyFlink's ``key_by`` produces with
    its Python key-extraction operator; here the rows come from Java (the keyed record shim) or
    from serdes' decode operator, so no extra Python operator is needed.
    """
    keyed: KeyedStream = _pyflink.keyed_stream(stream, _pyflink.new_java_object("KeyByKeySelector"), key_type, value_type)
    return keyed


# ---------------------------------------------------------------------------------------------
# job graph checks
# ---------------------------------------------------------------------------------------------


def _transformations(j_env: Any) -> List[Any]:
    """All transformations reachable from the environment's sinks (inputs included, once each)."""
    roots = _pyflink.transformations(j_env)
    seen: Dict[int, object] = {}
    stack = roots[::-1]
    while stack:
        t = stack.pop()
        if t.getId() in seen:
            continue
        seen[t.getId()] = t
        stack.extend(list(t.getInputs().toArray())[::-1])
    return sorted(seen.values(), key=lambda t: t.getId())


def _operator(t: Any) -> Any:
    try:
        factory = t.getOperatorFactory()
    except Exception:  # noqa: BLE001 - sources, sinks, partitioning: no operator factory
        return None
    try:
        return factory.getOperator()
    except Exception:  # noqa: BLE001 - not a SimpleOperatorFactory
        return None


def _pickled_path(j_type: Any, pickled_cls: Any, path: str = "") -> Optional[str]:
    """Where in a (composite) Java TypeInformation the pickled-bytes type sits, or ``None``."""
    if pickled_cls.isInstance(j_type):
        return path or "the element"
    try:
        n = j_type.getArity() if j_type.isTupleType() else 0
    except Exception:  # noqa: BLE001
        n = 0
    if n:
        names = list(j_type.getFieldNames()) if hasattr(j_type, "getFieldNames") else [str(i) for i in range(n)]
        for i in range(n):
            found = _pickled_path(j_type.getTypeAt(i), pickled_cls, f"{path}.{names[i]}" if path else names[i])
            if found:
                return found
        return None
    for getter, label in (("getKeyTypeInfo", "key"), ("getValueTypeInfo", "value"),
                          ("getElementTypeInfo", "element"), ("getComponentInfo", "element")):
        sub = getattr(j_type, getter, None)
        if sub is None:
            continue
        try:
            inner = sub()
        except Exception:  # noqa: BLE001 - py4j: no such method on this class
            continue
        if inner is not None and inner != j_type:
            found = _pickled_path(inner, pickled_cls, f"{path}.{label}" if path else label)
            if found:
                return found
    return None


def problems(j_env: Any, thread_mode: bool, strict_types: bool) -> Dict[str, List[Tuple[str, str]]]:
    """Offending operators of the (already optimized) transformations, by check."""
    out: Dict[str, List[Tuple[str, str]]] = {"thread": [], "strict": []}
    python_cls = _pyflink.java_class(_PYTHON_OPERATOR)
    embedded_cls = _pyflink.java_class(_EMBEDDED_OPERATOR)
    pickled_cls = _pyflink.java_class(_PICKLED)
    for t in _transformations(j_env):
        if thread_mode:
            op = _operator(t)
            if op is not None and python_cls.isInstance(op) and not embedded_cls.isInstance(op):
                out["thread"].append((t.getName(), op.getClass().getSimpleName()))
        if strict_types:
            where = _pickled_path(t.getOutputType(), pickled_cls)
            if where is not None:
                out["strict"].append((t.getName(), f"output type {t.getOutputType().toString()} "
                                                   f"(pickled bytes at {where})"))
    return out


def check(j_env: Any, thread_mode: bool, strict_types: bool) -> None:
    """Raise :class:`ThreadModeError` / :class:`StrictTypeError` for the optimized transformations."""
    found = problems(j_env, thread_mode, strict_types)
    if found["thread"]:
        names = "; ".join(f"{n!r} ({cls})" for n, cls in found["thread"])
        raise ThreadModeError(
            "execution_mode='thread' but these Python operators run in process mode "
            f"(PyFlink has no embedded version of them): {names}", found["thread"])
    if found["strict"]:
        names = "; ".join(f"{n!r}: {d}" for n, d in found["strict"])
        raise StrictTypeError(
            "strict_types=True and these operators' types fall back to pickled bytes "
            "(give them an output_type / key_type, e.g. Types.STRING(), a RowTypeInfo or a "
            f"ProtobufTypeInformation): {names}", found["strict"])


def stream_graph(env: StreamExecutionEnvironment, clear_transformations: bool, job_name: Optional[str] = None) -> Any:
    """PyFlink's ``_generate_stream_graph`` with serdes' checks between optimizing and building."""
    j_env = _pyflink.java_env(env)
    _pyflink.prepare_python_operators(j_env)
    thread_mode, strict = getattr(env, ATTR_CHECKS, (False, False))
    check(j_env, thread_mode, strict)
    j_graph = j_env.getStreamGraph(clear_transformations)
    if job_name is not None:
        j_graph.setJobName(job_name)
    return j_graph


def install_checks(env: StreamExecutionEnvironment, thread_mode: bool, strict_types: bool) -> None:
    """Route this environment's job-graph generation through :func:`stream_graph`."""
    setattr(env, ATTR_CHECKS, (thread_mode, strict_types))
    if not (thread_mode or strict_types):
        return

    _pyflink.replace_stream_graph(env, lambda clear, job_name: stream_graph(env, clear, job_name))
