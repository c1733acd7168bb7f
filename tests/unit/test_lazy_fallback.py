"""The native Avro decoders and encoders compile their pure-Python fallback only when they first
call it (``serdes.avro._exec.CompiledOnFirstCall``): building one no longer compiles a second
decoder that most never use, and a record that does need the fallback gets the same value."""

from __future__ import annotations

import threading
from typing import Any, Callable, List

import pytest

from serdes import SchemaMismatchError
from serdes._limits import Limits
from serdes.avro import _exec
from serdes.avro._native_decoder import compile_native_decoder
from serdes.avro._native_encoder import compile_native_encoder, is_native_encoder

from tests.support.implementations import is_native, native_module

LINKED = {"type": "record", "name": "Node", "fields": [
    {"name": "x", "type": "long"}, {"name": "next", "type": ["null", "Node"]}]}


def _counting(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """Record each compile of generated source (its kind: "decoder", "encoder")."""
    compiled: List[str] = []
    real = _exec.compile_generated

    def counting(src: str, what: str, ns: Any, entry: str) -> Callable[..., Any]:
        compiled.append(what)
        return real(src, what, ns, entry)

    monkeypatch.setattr("serdes.avro._codegen.compile_generated", counting)
    return compiled


def _linked(depth: int) -> Any:
    value: Any = None
    for i in range(depth):
        value = {"x": i, "next": value}
    return {"x": -1, "next": value}


def test_native_builds_compile_no_pure_code(monkeypatch: pytest.MonkeyPatch) -> None:
    native_module()
    compiled = _counting(monkeypatch)
    dec = compile_native_decoder(LINKED)
    enc = compile_native_encoder(LINKED)
    assert is_native(dec) and is_native_encoder(enc)
    value = _linked(5)
    assert dec(enc(value, None), 0, None) == value
    assert compiled == []  # neither fallback was needed, so neither was compiled


def test_a_record_deeper_than_the_native_loop_gets_the_pure_value(monkeypatch: pytest.MonkeyPatch) -> None:
    native_module()
    compiled = _counting(monkeypatch)
    deep = Limits(max_depth=1000)
    dec = compile_native_decoder(LINKED, limits=deep)
    enc = compile_native_encoder(LINKED, limits=deep)
    value = _linked(300)  # within Python's recursion limit, deeper than a 64 KiB thread stack lets native go
    data = enc(value, None)
    results: List[Any] = []
    threading.stack_size(64 * 1024)
    try:
        threads = [threading.Thread(target=lambda: results.append(dec(data, 0, None))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        threading.stack_size(0)
    assert results == [value] * 4
    assert compiled == ["decoder"]  # compiled once, by the first of the four threads


def test_build_once_and_keep_a_refusal() -> None:
    calls: List[int] = []

    def refuse() -> Callable[..., Any]:
        calls.append(1)
        raise SchemaMismatchError("serdes refused the decoder generated for this schema (test)")

    lazy = _exec.CompiledOnFirstCall(refuse)
    for _ in range(3):
        with pytest.raises(SchemaMismatchError, match=r"refused the decoder .*\(test\)"):
            lazy(b"", 0, None)
    assert calls == [1]  # one build, not one per record

    built = _exec.CompiledOnFirstCall(lambda: (lambda *args: ("called", args)))
    assert built(1, 2) == ("called", (1, 2)) and built.built()(3) == ("called", (3,))


def test_threads_share_one_build() -> None:
    builds: List[int] = []
    start = threading.Barrier(8)

    def build() -> Callable[..., Any]:
        builds.append(1)
        return lambda x: x + 1

    lazy = _exec.CompiledOnFirstCall(build)
    out: List[int] = []

    def call() -> None:
        start.wait()
        out.append(lazy(1))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [2] * 8 and builds == [1]
