"""serdes.flink's picklable objects: what their pickles name, and that earlier releases' load.

Type infos, state descriptors, function wrappers and operators travel in pickled job graphs, and a
``KafkaRecord`` can sit in pickled state. Their pickles name the package, ``serdes.flink``
(``serdes/flink/_pickling.py``: unpickling a submodule first deadlocked against a concurrent
import of the package in PyFlink's workers); pickles written by earlier releases name the
submodules the classes were defined in, and still load.

The digests are of ``pickle.dumps(obj, protocol=5)`` made at commit 78fdca7 (before the modules
were split by job), with apache-flink 2.2.1 and protobuf < 6 as serdes[flink] pins them: pickling
with the classes' earlier module names restored gives those bytes again, so what is loaded here is
byte for byte what that release wrote. Skipped without PyFlink (the core-only matrix legs); CI's
main leg installs serdes[flink] and runs it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import pickle
import pickletools
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest

pytest.importorskip("pyflink")

from serdes import flink as sf  # noqa: E402
from serdes.demo import orders_pb2  # noqa: E402
from serdes.flink import _debezium, _kafka, _state, _types  # noqa: E402

AVRO_ENVELOPE = json.dumps({"type": "record", "name": "Env", "namespace": "x", "fields": [
    {"name": "before", "type": ["null", {"type": "record", "name": "V", "fields": [{"name": "id", "type": "int"}]}]},
    {"name": "after", "type": ["null", "V"]},
    {"name": "op", "type": "string"},
]})


def _debezium_function() -> Any:
    spec, _, converter = _debezium._after_row(sf.avro("http://x:1"), "t", AVRO_ENVELOPE)
    fn = sf.DebeziumDecodeFunction(spec, None, converter, _debezium._metadata_spec(["db"]), semantic_types=False)
    # as pickled before read_debezium had semantic_types: such a function reads physical values
    del fn.semantic_types
    return fn


def _objects() -> Dict[str, Callable[[], Any]]:
    ti = sf.ProtobufTypeInformation(orders_pb2.Order)
    dti = sf.DynamicProtobufTypeInformation(orders_pb2.Order.DESCRIPTOR)
    spec = sf.avro("http://x:1")
    return {
        "ti": lambda: ti,
        "dti": lambda: dti,
        "dec": dti.decoder,
        "rec": lambda: sf.KafkaRecord("t", 0, 1, 2, b"k", {"a": 1}, None),
        "desc": lambda: sf.ProtobufValueStateDescriptor("s", orders_pb2.Order),
        "map": lambda: _types._MapWrapper(len, ti.decoder(), _types._identity),
        "flat": lambda: _types._FlatMapWrapper(len, ti.decoder(), ti.encoder()),
        "filt": lambda: _types._FilterWrapper(len, ti.decoder()),
        "ks": lambda: _types._KeySelectorWrapper(len, ti.decoder()),
        "proc": lambda: _types._ProcessWrapper(len, ti.decoder(), _types._identity),
        "kproc": lambda: _types._KeyedProcessWrapper(len, ti.decoder(), _types._identity),
        "decfn": lambda: sf.DecodeFunction(spec, None, "skip", True, True, _kafka._Compose(len, str)),
        "encfn": lambda: sf.EncodeFunction("t", spec, None, None, None, None, None),
        "dlq": lambda: sf.DeadLetterToProducerRow("d"),
        "deb": _debezium_function,
    }


BEFORE_THE_SPLIT = {
    "ti": "a4b7f86f139ab929692a25638552150ab455c2afdff03a7d7f028e1541950135",
    "dti": "13c3a4b3006bb9e60055b829fac66754a9c220ff80360a87d925b8c3e07316bb",
    "dec": "a09c8656b593cabeb7efc19d3af79a81471a60e9a8aed0c117a124796a48ed71",
    "rec": "4d01c32de7e7219d02f735611b9e315913451727282bd292b18cba374812bef1",
    "desc": "7d4be741f7ecc3196a12931aebadb71f1a7dc19bf6926071ec88b1248b9a023a",
    "map": "f7031979657a6f7db1f8d94b8ddc1918ccf76827b0b0c74ef9cdcc7e61605667",
    "flat": "3ff0d37a7139efd0f601eb4b64b599f98793da3d7b55f9445bc4f00425ae7430",
    "filt": "c210cd86dc6185df9135be5813f812710b0efeec88107ec04835f89097c4bf34",
    "ks": "9eedc227e665fd09d960eae08c876d20fe3ffd89c5afb8ca7674c05d7fe8db26",
    "proc": "134a6787b87010061a46ed38906d6042793ba28d149906a06baca729d987e7e2",
    "kproc": "6eee82cef4fa108304b87d3b1996b9dc61d7e460ebc0e09fa122603b38af5010",
    "decfn": "6b348853712fbd627445e1f829852a7c0798b521d06272ffd73a2d6095eff874",
    "encfn": "6dbe97d4239b310d4cdf6577998ffc329caef14cf3d84c0c9fb76d51d997c69d",
    "dlq": "107f5624911d2fc056aa9e7869e65b4da2c2d20e2525cd95ccb99d3d9cd0a73b",
    "deb": "6707825edda95824f667faacb8764ff5c2850db121d980563834b8ecf5bd19d6",
}

#: the serialized FileDescriptorSet of serdes.demo.Order that type infos ship and keyed state keeps
FDS_BEFORE_THE_SPLIT = "58102e6cdc52e1ff970312696f7446a1009dc9fd24381ea7eeeb0fba23b65aea"


#: the modules earlier releases' pickles name (each still holds the name)
EARLIER_MODULE = {
    "DebeziumDecodeFunction": "serdes.flink._debezium",
    **{n: "serdes.flink._types" for n in (
        "BytesCodecTypeInfo", "ProtobufTypeInformation", "DynamicProtobufTypeInformation", "_DescriptorDecoder",
        "ProtobufValueStateDescriptor", "CodecValueState", "_Delegating", "_MapWrapper", "_FlatMapWrapper",
        "_FilterWrapper", "_KeySelectorWrapper", "_ProcessWrapper", "_KeyedProcessWrapper", "_identity")},
    **{n: "serdes.flink._kafka" for n in (
        "KafkaRecord", "FlinkSerializationContext", "DecodeFunction", "EncodeFunction", "PackedEncodeFunction",
        "DeadLetterToProducerRow", "_Compose")},
}


@contextlib.contextmanager
def earlier_module_names() -> Iterator[None]:
    """Give the classes the module names earlier releases pickled them under, for the block."""
    objs = [getattr(sf, n) for n in EARLIER_MODULE]
    saved = [o.__module__ for o in objs]
    try:
        for o, n in zip(objs, EARLIER_MODULE, strict=True):
            o.__module__ = EARLIER_MODULE[n]
        yield
    finally:
        for o, m in zip(objs, saved, strict=True):
            o.__module__ = m


def serdes_globals(data: bytes) -> List[str]:
    """The modules of the globals a pickle names, serdes' only, in order."""
    out, strings = [], []
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2 and strings[-2].startswith("serdes"):
            out.append(strings[-2])
        elif op.name == "GLOBAL" and str(arg).startswith("serdes"):
            out.append(str(arg).split(" ")[0])
    return out


@pytest.mark.parametrize("name", sorted(BEFORE_THE_SPLIT))
def test_earlier_releases_pickles_load(name: str) -> None:
    obj = _objects()[name]()
    with earlier_module_names():
        data = pickle.dumps(obj, protocol=5)
    assert hashlib.sha256(data).hexdigest() == BEFORE_THE_SPLIT[name]  # what that release wrote
    back = pickle.loads(data)
    assert type(back) is type(obj)
    assert pickle.dumps(back, protocol=5) == pickle.dumps(obj, protocol=5)


@pytest.mark.parametrize("name", sorted(BEFORE_THE_SPLIT))
def test_pickles_name_the_package(name: str) -> None:
    obj = _objects()[name]()
    data = pickle.dumps(obj, protocol=5)
    # the first serdes global decides which import lock an unpickling thread takes first
    assert serdes_globals(data)[0] == "serdes.flink"
    assert type(pickle.loads(data)) is type(obj)


def test_every_operator_type_info_and_descriptor_names_the_package() -> None:
    """Every serdes class PyFlink pickles (a Function, TypeInformation or StateDescriptor) names
    the package and is found there, so no worker thread unpickles a submodule first."""
    from pyflink.common.typeinfo import TypeInformation
    from pyflink.datastream.functions import Function
    from pyflink.datastream.state import StateDescriptor

    found = []
    for info in pkgutil.iter_modules(sf.__path__):
        module = importlib.import_module(f"serdes.flink.{info.name}")
        for obj in vars(module).values():
            if (isinstance(obj, type) and obj.__module__.startswith("serdes")
                    and issubclass(obj, (Function, TypeInformation, StateDescriptor))):
                found.append(obj)
    assert len(found) > 10
    for cls in found:
        assert (cls.__module__, getattr(sf, cls.__qualname__, None)) == ("serdes.flink", cls), cls


def test_kafka_record_pickle_of_an_earlier_release_loads() -> None:
    earlier = (b"\x80\x05\x95D\x00\x00\x00\x00\x00\x00\x00\x8c\x13serdes.flink._kafka\x94\x8c\x0bKafkaRecord"
               b"\x94\x93\x94(\x8c\x01t\x94K\x00K\x01K\x02C\x01k\x94}\x94\x8c\x01a\x94K\x01sNt\x94\x81\x94.")
    assert pickle.loads(earlier) == sf.KafkaRecord("t", 0, 1, 2, b"k", {"a": 1}, None)


RACE = r"""
import importlib.abc, pickle, sys, threading, time

class SlowDebezium(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "serdes.flink._debezium":
            time.sleep(1.0)  # keeps the package initializing while the other thread unpickles
        return None

sys.meta_path.insert(0, SlowDebezium())
import serdes  # the core; only serdes.flink is imported by both threads
data = open(sys.argv[1], "rb").read()
errors = []

def run(f):
    try:
        f()
    except BaseException as e:
        errors.append(repr(e))

a = threading.Thread(target=run, args=(lambda: __import__("serdes.flink"),))
b = threading.Thread(target=run, args=(lambda: pickle.loads(data),))
a.start(); time.sleep(0.3); b.start(); a.join(); b.join()
print(errors)
sys.exit(1 if errors else 0)
"""


@pytest.mark.parametrize("name", ["decfn", "deb", "kproc", "ti"])
def test_unpickling_while_another_thread_imports_the_package(name: str, tmp_path) -> None:
    """What PyFlink's worker does: one thread imports ``serdes.flink`` (a job module's
    ``from serdes import flink``) while another unpickles an operator. With pickles naming a
    submodule, the two import locks were taken in opposite orders (a deadlock, or "partially
    initialized module")."""
    (tmp_path / "obj.pkl").write_bytes(pickle.dumps(_objects()[name](), protocol=5))
    (tmp_path / "race.py").write_text(RACE)
    # the script's directory, not this checkout, would come first on sys.path
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(tmp_path / "race.py"), str(tmp_path / "obj.pkl")],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_descriptor_bytes_unchanged() -> None:
    dti = sf.DynamicProtobufTypeInformation(orders_pb2.Order.DESCRIPTOR)
    assert hashlib.sha256(dti._fds).hexdigest() == FDS_BEFORE_THE_SPLIT
    fds, full_name = _state.descriptor_set_bytes(sf.ProtobufTypeInformation(orders_pb2.Order))
    assert (hashlib.sha256(fds).hexdigest(), full_name) == (FDS_BEFORE_THE_SPLIT, "serdes.demo.Order")


@pytest.mark.parametrize("name", sorted(BEFORE_THE_SPLIT))
def test_pickled_classes_resolve_where_they_claim(name: str) -> None:
    cls = type(_objects()[name]())
    module = importlib.import_module(cls.__module__)
    assert getattr(module, cls.__qualname__) is cls
