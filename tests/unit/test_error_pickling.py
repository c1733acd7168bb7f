"""Every exception class serdes defines is a ``SerdesError`` and survives pickling with all of its
attributes (issue 11). Errors cross process boundaries in PyFlink (Python worker -> job client) and
multiprocessing, so an attribute lost on the way is information the user never sees.

The classes are discovered by walking serdes' modules, so a new exception class is covered (or
fails here) without editing this file; ``serdes.flink`` is walked only when PyFlink is importable
(its error classes live in ``serdes._errors`` and are covered either way).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pickle
import pkgutil
from typing import Any, Dict, List, Tuple

import pytest

import serdes
from serdes import RecordLocation, SerdesError
from serdes.protobuf.compat import CompatibilityResult, Incompatibility

HAVE_PYFLINK = importlib.util.find_spec("pyflink") is not None
HAVE_QUIXSTREAMS = importlib.util.find_spec("quixstreams") is not None  # serdes.quix (the quix extra)

# Exceptions that never reach a user: raised and caught inside one module (a generator telling its
# caller to fall back to fastavro, a check telling compile_generated to refuse the code).
# control flow inside serdes, never raised to callers (MessageTooDeepError: the dict converter's
# depth bound, which serdes.cdc turns into a MalformedEnvelopeError; the deserializer sets no bound)
INTERNAL = {"serdes.avro._generator.Unsupported", "serdes.json._ecma.Untranslatable",
            "serdes.protobuf._todict.MessageTooDeepError",
            # a value a column cannot hold: serdes.arrow._decode turns it into a ColumnValueError
            "serdes.arrow._shapes.ShapeError",
            # a reader message the native Protobuf columns do not take: the per-record path decodes
            "serdes.arrow._native_protobuf.NoProgram",
            # a schema the native JSON columnar decoder leaves to the per-record path
            "serdes.arrow._json_program.Refused"}


def _walk() -> List[type]:
    found: Dict[str, type] = {}
    for info in pkgutil.walk_packages(serdes.__path__, "serdes."):
        name = info.name
        if name.endswith("__main__") or (name.startswith(("serdes.flink", "serdes.demo")) and not HAVE_PYFLINK):
            continue
        if name == "serdes.quix" and not HAVE_QUIXSTREAMS:
            continue
        module = importlib.import_module(name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__.startswith("serdes"):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    found[f"{SerdesError.__module__}.SerdesError"] = SerdesError
    return [cls for qual, cls in sorted(found.items()) if not cls.__name__.startswith("_") and qual not in INTERNAL]


CLASSES = _walk()

_RESULT = CompatibilityResult(reasons=[Incompatibility("pkg.M.a", "field-type-changed", "int32 -> string")], message="pkg.M")

# constructor arguments of the classes whose signature is not SerdesError's
# (reason, location, schema_id); every attribute they set is compared after the round trip
ARGS: Dict[str, Tuple[Tuple[Any, ...], Dict[str, Any]]] = {
    "RegistryError": (("registry down", RecordLocation("t", "value", 1, 2), 9), {"http_status": 503}),
    "StateSchemaIncompatibleError": (("state s unreadable",), {"state": "s", "message": "pkg.M", "result": _RESULT}),
    "FlinkJobError": (("InvalidMagicByteError: bad (topic='t', partition=0, offset=5)", "InvalidMagicByteError",
                       "t", 0, 5, "java.lang.RuntimeException: ..."), {}),
    "JobGraphError": (("process mode operators",), {"operators": [("Map", "process mode"), ("Sink", "pickled")]}),
    "FlinkJobFailed": (("job j FAILED",), {"job_id": "j", "state": "FAILED", "exception_text": "boom"}),
    "RemoteRefRefused": (("http://example.invalid/s.json", False), {}),
    "ConfluentAPIError": (("_use_schema_id", "AvroSerializer", "2.16.1"), {}),
    "ConfluentVersionError": (("serdes.avro.AvroSerializerBuilder", "2.16", "2.12.0"), {}),
    "PyFlinkAPIError": (("_j_builder", "KafkaSourceBuilder", "2.2.1"), {}),
    "MissingPropertyError": ((["zip", "street"],), {}),
}


def _construct(cls: type) -> BaseException:
    for base in cls.__mro__:
        if base.__name__ in ARGS and "__init__" in base.__dict__:
            args, kwargs = ARGS[base.__name__]
            return cls(*args, **kwargs)  # type: ignore[no-any-return]
    return cls("what was wrong", RecordLocation("orders", "value", 3, 42), schema_id=7)  # type: ignore[no-any-return]


def _state(err: BaseException) -> Dict[str, Any]:
    out = dict(vars(err))
    loc = out.pop("location", None)
    if loc is not None:
        out["location"] = (loc.topic, loc.field, loc.partition, loc.offset)
    return out


def test_discovery_finds_the_known_classes() -> None:
    names = {cls.__name__ for cls in CLASSES}
    expected = {"SerdesError", "RegistryError", "ValidationError", "WrongMessageTypeError", "RemoteRefRefused",
                "StateSchemaIncompatibleError", "FlinkJobError", "ConnectorJarError", "RecordDecodeError",
                "JobGraphError", "ThreadModeError", "StrictTypeError", "ServerStartError", "MissingToolError",
                "FlinkSubmitError", "FlinkJobFailed", "MalformedEnvelopeError", "UnsupportedChangeError"}
    assert expected <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_is_a_serdes_error(cls: type) -> None:
    assert issubclass(cls, SerdesError)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_pickle_keeps_every_attribute(cls: type) -> None:
    err = _construct(cls)
    err.json_path = "$.items[0]"  # type: ignore[attr-defined]  # set after construction (JSON validation does)
    before = _state(err)
    assert before["json_path"] == "$.items[0]"

    back = pickle.loads(pickle.dumps(err))

    assert type(back) is cls
    assert str(back) == str(err)
    assert back.args == err.args
    assert _state(back) == before
    # the location is still live: at() fills it in and reformats the message
    back.at(offset=99)
    assert back.location.offset == 99


@pytest.mark.parametrize("name, builtin", [
    ("ConnectorJarError", RuntimeError), ("FlinkJobError", RuntimeError), ("JobGraphError", RuntimeError),
    ("ServerStartError", RuntimeError), ("MissingToolError", RuntimeError), ("FlinkSubmitError", RuntimeError),
    ("FlinkJobFailed", RuntimeError), ("WrongMessageTypeError", ValueError), ("ValidationError", ValueError),
])
def test_keeps_the_builtin_base_users_caught(name: str, builtin: type) -> None:
    cls = next(c for c in CLASSES if c.__name__ == name)
    assert issubclass(cls, builtin) and issubclass(cls, SerdesError)


def test_reexported_where_they_were() -> None:
    import serdes._errors as errors
    import serdes.json._refs
    import serdes.protobuf
    import serdes.testing

    assert serdes.protobuf.WrongMessageTypeError is errors.WrongMessageTypeError
    assert serdes.json._refs.RemoteRefRefused is errors.RemoteRefRefused
    assert serdes.testing.ServerStartError is errors.ServerStartError
    assert serdes.testing.MissingToolError is errors.MissingToolError
    if HAVE_PYFLINK:
        import serdes.flink

        for name in ("FlinkJobError", "ConnectorJarError", "RecordDecodeError", "StateSchemaIncompatibleError",
                     "JobGraphError", "ThreadModeError", "StrictTypeError"):
            assert getattr(serdes.flink, name) is getattr(errors, name)


def test_errors_module_does_not_import_pyflink() -> None:
    import subprocess
    import sys

    code = "import sys, serdes._errors, serdes; assert not any(m.startswith('pyflink') for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)
