"""serdes/flink/_pyflink.py: PyFlink's private attributes are read in that module only, by name,
with no default, and a missing one raises PyFlinkAPIError naming it and the installed
apache-flink version (instead of a feature silently switching off).

Each case simulates an apache-flink release without one attribute: an instance whose class no
longer sets it (built without ``__init__``, or with the attribute deleted), or a class / module
attribute deleted with monkeypatch. No JVM is started. Skipped without PyFlink (the core-only
matrix legs of scripts/test-matrix.sh); CI's main leg installs serdes[flink] and runs it.
"""

from __future__ import annotations

import ast
import pickle
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, List, Tuple

import pytest

pytest.importorskip("pyflink")

from pyflink.common import Types  # noqa: E402
from pyflink.common import typeinfo as t  # noqa: E402
from pyflink.common.job_client import JobClient  # noqa: E402
from pyflink.datastream import DataStream, StreamExecutionEnvironment  # noqa: E402
from pyflink.datastream.connectors.kafka import KafkaSinkBuilder, KafkaSourceBuilder  # noqa: E402

import serdes  # noqa: E402
from serdes.flink import PyFlinkAPIError, _pyflink  # noqa: E402

VERSION = _pyflink.pyflink_version()
FLINK_DIR = Path(serdes.__file__).parent / "flink"


def _bare(cls: type) -> Any:
    """An instance of ``cls`` whose ``__init__`` never ran: the instance attributes it sets are missing."""
    return object.__new__(cls)


def _without(obj: Any, attr: str) -> Any:
    delattr(obj, attr)
    return obj


class _Recorder:
    def __init__(self) -> None:
        self.calls: List[Tuple[str, Tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Callable[..., Any]:
        return lambda *args: self.calls.append((name, args))


# -- instance attributes --------------------------------------------------------------------------

# (attribute, owner class name, call that reads it from an object that lacks it)
INSTANCE_CASES: List[Tuple[str, str, Callable[[], Any]]] = [
    ("_j_builder", "KafkaSourceBuilder", lambda: _pyflink.set_source_deserializer(_bare(KafkaSourceBuilder), None)),
    ("_j_builder", "KafkaSinkBuilder", lambda: _pyflink.build_sink(_bare(KafkaSinkBuilder), None)),
    ("_j_stream_execution_environment", "StreamExecutionEnvironment",
     lambda: _pyflink.java_env(_bare(StreamExecutionEnvironment))),
    ("_j_stream_execution_environment", "StreamExecutionEnvironment",
     lambda: _pyflink.env_config(_bare(StreamExecutionEnvironment))),
    ("_j_data_stream", "DataStream", lambda: _pyflink.java_stream(_bare(DataStream))),
    ("_j_data_stream", "DataStream",
     lambda: _pyflink.keyed_stream(_bare(DataStream), None, Types.STRING(), Types.STRING())),
    ("_j_job_client", "JobClient", lambda: _pyflink.java_job_client(_bare(JobClient))),
    ("_field_names", "RowTypeInfo",
     lambda: _pyflink.type_info_children(_without(Types.ROW_NAMED(["a"], [Types.INT()]), "_field_names"))),
    ("_element_type", "PrimitiveArrayTypeInfo",
     lambda: _pyflink.type_info_children(_without(Types.PRIMITIVE_ARRAY(Types.BYTE()), "_element_type"))),
    ("_element_type", "BasicArrayTypeInfo",
     lambda: _pyflink.type_info_children(_without(Types.BASIC_ARRAY(Types.INT()), "_element_type"))),
    ("_element_type", "ObjectArrayTypeInfo",
     lambda: _pyflink.type_info_children(_without(Types.OBJECT_ARRAY(Types.STRING()), "_element_type"))),
    ("elem_type", "ListTypeInfo",
     lambda: _pyflink.type_info_children(_without(Types.LIST(Types.STRING()), "elem_type"))),
    ("_key_type_info", "MapTypeInfo",
     lambda: _pyflink.type_info_children(_without(Types.MAP(Types.STRING(), Types.INT()), "_key_type_info"))),
    ("_value_type_info", "MapTypeInfo",
     lambda: _pyflink.type_info_children(_without(Types.MAP(Types.STRING(), Types.INT()), "_value_type_info"))),
    ("_type_info", "ExternalTypeInfo",
     lambda: _pyflink.type_info_children(_without(t.ExternalTypeInfo(Types.STRING()), "_type_info"))),
]


def _check(err: PyFlinkAPIError, attr: str, owner: str) -> None:
    assert (err.attribute, err.owner, err.version) == (attr, owner, VERSION)
    assert repr(attr) in str(err) and owner in str(err) and f"apache-flink {VERSION}" in str(err)
    assert isinstance(err, serdes.SerdesError) and isinstance(err, TypeError)


@pytest.mark.parametrize("attr,owner,call", INSTANCE_CASES, ids=[f"{o}.{a}" for a, o, _ in INSTANCE_CASES])
def test_missing_instance_attribute_is_named(attr: str, owner: str, call: Callable[[], Any]) -> None:
    with pytest.raises(PyFlinkAPIError) as info:
        call()
    _check(info.value, attr, owner)


def test_present_attributes_are_used() -> None:
    source = _bare(KafkaSourceBuilder)
    source._j_builder = _Recorder()
    _pyflink.set_source_deserializer(source, "j-deserializer")
    assert source._j_builder.calls == [("setDeserializer", ("j-deserializer",))]
    env = _bare(StreamExecutionEnvironment)
    env._j_stream_execution_environment = "j-env"
    assert _pyflink.java_env(env) == "j-env"
    stream = _bare(DataStream)
    stream._j_data_stream = "j-stream"
    assert _pyflink.java_stream(stream) == "j-stream"
    client = _bare(JobClient)
    client._j_job_client = "j-client"
    assert _pyflink.java_job_client(client) == "j-client"


def test_type_info_children() -> None:
    row = Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.LIST(Types.STRING())])
    assert [label for label, _ in _pyflink.type_info_children(row)] == ["a", "b"]
    assert [label for label, _ in _pyflink.type_info_children(Types.ROW([Types.INT()]))] == ["0"]
    assert [label for label, _ in _pyflink.type_info_children(Types.TUPLE([Types.INT(), Types.LONG()]))] == ["0", "1"]
    (label, elem), = _pyflink.type_info_children(Types.LIST(Types.STRING()))
    assert label == "element" and elem == Types.STRING()
    assert [label for label, _ in _pyflink.type_info_children(Types.MAP(Types.STRING(), Types.INT()))] == [
        "key", "value"]
    assert _pyflink.type_info_children(t.ExternalTypeInfo(Types.LONG())) == [("value", Types.LONG())]
    assert _pyflink.type_info_children(Types.STRING()) == []
    assert _pyflink.type_info_children(None) == []


# -- class and module attributes ------------------------------------------------------------------


@pytest.fixture
def fresh_seam() -> Iterator[None]:
    """The seam caches what it resolved from classes and modules once per process: forget it."""
    caches = (_pyflink._get_gateway, _pyflink._get_field_value, _pyflink._check_generate_stream_graph,
              _pyflink._embedded_state_api)
    for cache in caches:
        cache.cache_clear()
    yield
    for cache in caches:
        cache.cache_clear()


def test_missing_generate_stream_graph(monkeypatch: pytest.MonkeyPatch, fresh_seam: None) -> None:
    monkeypatch.delattr(StreamExecutionEnvironment, "_generate_stream_graph")
    env = _bare(StreamExecutionEnvironment)
    with pytest.raises(PyFlinkAPIError) as info:
        _pyflink.replace_stream_graph(env, lambda clear, name: None)
    _check(info.value, "_generate_stream_graph", "StreamExecutionEnvironment")
    assert "_generate_stream_graph" not in vars(env)


def test_generate_stream_graph_replaced_per_environment(fresh_seam: None) -> None:
    env, other = _bare(StreamExecutionEnvironment), _bare(StreamExecutionEnvironment)
    seen = []
    _pyflink.replace_stream_graph(env, lambda clear, name: seen.append((clear, name)) or "graph")
    assert env._generate_stream_graph(clear_transformations=True, job_name="j") == "graph"
    assert seen == [(True, "j")]
    assert "_generate_stream_graph" not in vars(other)


def test_missing_get_field_value(monkeypatch: pytest.MonkeyPatch, fresh_seam: None) -> None:
    import pyflink.util.java_utils as java_utils

    monkeypatch.delattr(java_utils, "get_field_value")
    with pytest.raises(PyFlinkAPIError) as info:
        _pyflink.transformations(object())
    _check(info.value, "get_field_value", "pyflink.util.java_utils")


def test_missing_get_gateway(monkeypatch: pytest.MonkeyPatch, fresh_seam: None) -> None:
    import pyflink.java_gateway as java_gateway

    monkeypatch.delattr(java_gateway, "get_gateway")
    with pytest.raises(PyFlinkAPIError) as info:
        _pyflink.new_java_object("serdes.flink.KafkaRowDeserializationSchema")
    _check(info.value, "get_gateway", "pyflink.java_gateway")


# -- thread-mode (embedded) state -----------------------------------------------------------------


_EMBEDDED_PACKAGES = ("pyflink.fn_execution.embedded", "pyflink.fn_execution.datastream.embedded")


@pytest.fixture
def embedded_modules(monkeypatch: pytest.MonkeyPatch, fresh_seam: None) -> Iterator[Any]:
    """PyFlink's embedded state modules, importable outside a thread-mode worker.

    They import ``pemja.findClass``, which only a pemja-embedded interpreter has, and call it for
    window classes at import; a stand-in answering ``None`` lets the real modules load. The
    embedded modules are removed again, so the rest of the session sees process mode.
    """
    import pemja

    monkeypatch.setattr(pemja, "findClass", lambda name: None, raising=False)
    before = set(sys.modules)
    import pyflink.fn_execution.datastream.embedded.state_impl as state_impl

    yield state_impl
    for name in set(sys.modules) - before:
        if name.startswith(_EMBEDDED_PACKAGES):
            del sys.modules[name]


def _embedded_bytes_state(state_impl: Any) -> Any:
    from pyflink.fn_execution.embedded.converters import from_type_info

    return state_impl.ValueStateImpl(None, from_type_info(Types.PRIMITIVE_ARRAY(Types.BYTE())))


def test_embedded_bytes_state_gets_the_identity_converter(embedded_modules: Any) -> None:
    from pyflink.fn_execution.embedded.converters import ArrayDataConverter, IdentityDataConverter

    state = _embedded_bytes_state(embedded_modules)
    assert isinstance(state._value_converter, ArrayDataConverter)
    _pyflink.bytes_state_as_bytes(state)
    assert isinstance(state._value_converter, IdentityDataConverter)


def test_embedded_state_without_value_converter(embedded_modules: Any) -> None:
    state = _without(_embedded_bytes_state(embedded_modules), "_value_converter")
    with pytest.raises(PyFlinkAPIError) as info:
        _pyflink.bytes_state_as_bytes(state)
    _check(info.value, "_value_converter", "ValueStateImpl")


@pytest.mark.parametrize("module,attr", [
    ("pyflink.fn_execution.datastream.embedded.state_impl", "StateImpl"),
    ("pyflink.fn_execution.embedded.converters", "ArrayDataConverter"),
    ("pyflink.fn_execution.embedded.converters", "IdentityDataConverter"),
])
def test_embedded_state_classes_missing(monkeypatch: pytest.MonkeyPatch, embedded_modules: Any, module: str,
                                        attr: str) -> None:
    state = _embedded_bytes_state(embedded_modules)
    monkeypatch.delattr(sys.modules[module], attr)
    with pytest.raises(PyFlinkAPIError) as info:
        _pyflink.bytes_state_as_bytes(state)
    _check(info.value, attr, module)


def test_process_mode_state_is_left_alone() -> None:
    # process-mode workers never load the embedded state module: the state is not one of its states
    assert _pyflink._EMBEDDED_STATE not in sys.modules
    state = object()
    _pyflink.bytes_state_as_bytes(state)


# -- the error, and the seam being the only reader --------------------------------------------------


def test_error_pickles_with_its_attributes() -> None:
    err = PyFlinkAPIError("_j_builder", "KafkaSourceBuilder", "9.9.9")
    back = pickle.loads(pickle.dumps(err))
    assert (back.attribute, back.owner, back.version, str(back)) == (err.attribute, err.owner, err.version, str(err))


#: PyFlink names only _pyflink.py may use (attributes read, or names imported from pyflink)
PRIVATE_NAMES = {"_value_converter", "_field_names", "_field_types", "_element_type", "elem_type",
                 "_key_type_info", "_value_type_info", "_type_info", "_generate_stream_graph",
                 "get_gateway", "get_field_value", "_j_typeinfo"}


def _private_uses(path: Path) -> List[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and (node.attr.startswith("_j_") or node.attr in PRIVATE_NAMES):
            found.append(f"{path.name}:{node.lineno} .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyflink"):
            module = node.module or ""
            if any(part.startswith("_") for part in module.split(".")) or "fn_execution" in module \
                    or module in ("pyflink.java_gateway", "pyflink.util.java_utils"):
                found.append(f"{path.name}:{node.lineno} from {module}")
            found += [f"{path.name}:{node.lineno} import {a.name}" for a in node.names
                      if a.name.startswith("_") or a.name in PRIVATE_NAMES]
        elif isinstance(node, ast.Constant) and node.value in PRIVATE_NAMES:
            found.append(f"{path.name}:{node.lineno} {node.value!r}")  # getattr(obj, "_name")
    return found


def test_only_the_seam_touches_pyflink_privates() -> None:
    modules = sorted(p for p in FLINK_DIR.glob("*.py") if p.name != "_pyflink.py")
    assert len(modules) > 10
    assert [use for path in modules for use in _private_uses(path)] == []
    assert _private_uses(FLINK_DIR / "_pyflink.py")  # the check does see them where they are
