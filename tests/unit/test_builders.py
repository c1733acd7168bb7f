"""Every serdes builder calls its serde's constructor with the arguments confluent-kafka's builder
of the same name passes, refuses what that builder refuses, and hands back the client conf.

The builders share one ``build`` (serdes/_builders.py) driven by a per-class declaration of the
constructor's arguments; these tests compare each declaration with confluent-kafka's own ``build``
by building both with the same distinct value in every field, the constructed class replaced by a
recorder on both sides."""

from __future__ import annotations

import inspect
import sys
from typing import Any, List, Tuple

import pytest
from confluent_kafka.schema_registry import avro as c_avro
from confluent_kafka.schema_registry import json_schema as c_json
from confluent_kafka.schema_registry import protobuf as c_protobuf

import serdes.avro
import serdes.json
import serdes.protobuf
from tests.support.confluent_releases import needs

# on an older release serdes' builders refuse construction (test_confluent_seam.py checks that)
pytestmark = needs("2.16", "the builders")

PAIRS = [(c_avro, serdes.avro, "Avro"), (c_json, serdes.json, "JSON"), (c_protobuf, serdes.protobuf, "Protobuf")]
BUILDERS = [
    pytest.param(theirs, ours, f"{prefix}{fmt}{kind}Builder", id=f"{prefix}{fmt}{kind}Builder")
    for theirs, ours, fmt in PAIRS for prefix in ("", "Async") for kind in ("Serializer", "Deserializer")
]


class _Made:
    """What the replaced serde class returns: the constructor arguments it was called with."""

    def __init__(self, args: Tuple[Any, ...]) -> None:
        self.args = args

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def _recorders(is_async: bool) -> Tuple[Any, Any, List[_Made], List[_Made]]:
    """(serde class stand-in, init callback, what it made, what init was called with)."""
    made: List[_Made] = []
    inited: List[_Made] = []

    def construct(*args: Any) -> _Made:
        made.append(_Made(args))
        return made[-1]

    async def aconstruct(*args: Any) -> _Made:
        return construct(*args)

    def init(serde: _Made) -> None:
        inited.append(serde)

    async def ainit(serde: _Made) -> None:
        init(serde)

    return (aconstruct, ainit, made, inited) if is_async else (construct, init, made, inited)


def _fields(builder_cls: type, init: Any) -> dict:
    """A distinct value for every constructor argument of confluent-kafka's builder."""
    kwargs = {}
    for name in list(inspect.signature(builder_cls.__init__).parameters)[1:]:
        if name == "schema_registry_config":
            continue  # a client is given: both together are refused
        kwargs[name] = init if name.endswith("_init") else f"<{name}>"
    return kwargs


def _build(builder: Any, conf: dict) -> Any:
    result = builder.build(conf, False)
    if inspect.iscoroutine(result):
        try:
            result.send(None)  # the recorders never suspend
        except StopIteration as stop:
            return stop.value
        raise AssertionError("build suspended")
    return result


@pytest.mark.parametrize("theirs,ours,name", BUILDERS)
def test_build_calls_the_constructor_as_confluents_builder(
    theirs: Any, ours: Any, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs_cls, ours_cls = getattr(theirs, name), getattr(ours, name)
    serde_name = name[: -len("Builder")]
    is_async = name.startswith("Async")
    conf = {"bootstrap.servers": "b"}

    fake, init, made_theirs, inited_theirs = _recorders(is_async)
    monkeypatch.setattr(sys.modules[theirs_cls.__module__], serde_name, fake)
    expected, conf_theirs = _build(theirs_cls(**_fields(theirs_cls, init)), conf)

    fake, init, made_ours, inited_ours = _recorders(is_async)
    monkeypatch.setattr(ours_cls, "_serde", staticmethod(fake))
    built, conf_ours = _build(ours_cls(**_fields(theirs_cls, init)), conf)

    assert made_ours[0].args == made_theirs[0].args == expected.args
    # every field the builder holds reaches the constructor (the client as the value given)
    given = {v for k, v in _fields(theirs_cls, None).items() if not k.endswith("_init")}
    assert set(built.args) == given
    assert inited_ours == [built] and inited_theirs == [expected]
    assert conf_ours == conf_theirs == conf and conf_ours is not conf


@pytest.mark.parametrize("theirs,ours,name", [p for p in BUILDERS if "Protobuf" in p.values[2]])
def test_protobuf_builders_refuse_a_missing_message_type_as_confluents(theirs: Any, ours: Any, name: str) -> None:
    with pytest.raises(ValueError) as confluent_error:
        _build(getattr(theirs, name)(schema_registry_client="<client>"), {})
    # serdes refuses at the build() call itself, the asyncio builders too (before any await)
    with pytest.raises(ValueError) as serdes_error:
        getattr(ours, name)(schema_registry_client="<client>").build({}, False)
    assert str(serdes_error.value) == str(confluent_error.value)
    assert "message type" in str(serdes_error.value)


@pytest.mark.parametrize("theirs,ours,name", BUILDERS)
def test_builder_keeps_confluents_setters(theirs: Any, ours: Any, name: str) -> None:
    # the setters (and their chaining) are confluent-kafka's, inherited unchanged
    theirs_cls, ours_cls = getattr(theirs, name), getattr(ours, name)
    setters = sorted(n for n in dir(theirs_cls) if n.startswith("set_"))
    assert setters and all(getattr(ours_cls, n) is getattr(theirs_cls, n) for n in setters)
    def parameters(cls: type) -> list:
        return [(p.name, p.kind, p.default) for p in inspect.signature(cls.build).parameters.values()]

    assert parameters(ours_cls) == parameters(theirs_cls) == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("conf", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("is_key", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
    ]
