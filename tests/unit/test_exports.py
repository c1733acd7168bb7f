"""serdes._exports: names exported only where the installed confluent-kafka provides them."""

from __future__ import annotations

import importlib
import types

import pytest

from serdes import _exports


def test_reexport_binds_only_what_the_module_has() -> None:
    module = types.ModuleType("fake_confluent")
    module.present = object()  # type: ignore[attr-defined]
    namespace: dict = {}
    _exports.reexport(namespace, module, ("present", "absent"))
    assert namespace == {"present": module.present}  # type: ignore[attr-defined]


def test_defined_keeps_order_and_lazy_names() -> None:
    namespace = {"b": 1, "a": 2}
    assert _exports.defined(namespace, ["a", "missing", "b", "lazy"], lazy=("lazy",)) == ["a", "b", "lazy"]


@pytest.mark.parametrize("package", ["serdes", "serdes.avro", "serdes.json", "serdes.protobuf"])
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ and len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
