"""The switch and the voice of serdes' process-mode PyFlink speedups (``_pyflink.speedups_allowed``).

``SERDES_FLINK_SPEEDUPS`` / ``create_env(speedups=...)`` / the ``serdes.flink.speedups`` job
parameter decide whether ``speed_up_key_changes`` / ``speed_up_records`` may run; a release not
verified, or internals that do not match, give PyFlink's own path and one WARNING per process,
never an exception; ``off`` is silent.  Real ``RemoteKeyedStateBackend`` objects, no JVM (except
the one create_env test that checks the job parameter) and no MiniCluster.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional

import pytest

pytest.importorskip("pyflink")

import pyflink.fn_execution.state_impl  # noqa: E402,F401 - loaded in a process-mode worker
from pyflink.common import Types  # noqa: E402

import serdes.flink as sf  # noqa: E402
from serdes.flink import _pyflink  # noqa: E402
from serdes.flink._wrappers import _KeyedProcessWrapper  # noqa: E402

from tests.support.state_backend import remote_backend  # noqa: E402

LOGGER = _pyflink.__name__
VERIFIED = _pyflink.SPEEDUPS_VERIFIED[0]


@pytest.fixture(autouse=True)
def _fresh_process(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Each test is a new worker process as far as the once-flag goes, with no switch set."""
    monkeypatch.setattr(_pyflink, "_warned", False)
    monkeypatch.delenv(_pyflink.SPEEDUPS_ENV, raising=False)
    caplog.set_level(logging.DEBUG, logger=LOGGER)


class Ctx:
    """A process-mode runtime context: the keyed state backend and the job parameters."""

    def __init__(self, backend: Any, params: Optional[Dict[str, str]] = None) -> None:
        self._keyed_state_backend = backend
        self._params = params or {}

    def get_job_parameter(self, key: str, default: Any) -> Any:
        return self._params.get(key, default)


def _backend() -> Any:
    return remote_backend(Types.STRING(), 10, n_states=1)[0]


def _warnings(caplog: pytest.LogCaptureFixture) -> List[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]


@pytest.mark.parametrize("raw, setting", [
    (None, "auto"), ("", "auto"), ("  ", "auto"), ("auto", "auto"), ("on", "on"), ("OFF", "off"), (" On ", "on"),
])
def test_switch_values(raw: Optional[str], setting: str) -> None:
    assert _pyflink.parse_speedups(raw) == setting


@pytest.mark.parametrize("raw", ["true", "1", "yes", "fast", "of"])
def test_an_invalid_switch_names_itself_and_the_values(raw: str) -> None:
    with pytest.raises(ValueError, match=rf"SERDES_FLINK_SPEEDUPS='{raw}'.*auto, on, off"):
        _pyflink.parse_speedups(raw)


def test_create_env_refuses_an_invalid_switch_before_any_job(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="create_env"):
        sf.create_env(speedups="fast")
    with pytest.raises(ValueError, match="serdes.flink.speedups"):
        sf.create_env(config={"serdes.flink.speedups": "maybe"})
    with pytest.raises(ValueError, match="disagree"):
        sf.create_env(speedups="on", config={"serdes.flink.speedups": "off"})
    monkeypatch.setenv(_pyflink.SPEEDUPS_ENV, "sometimes")
    with pytest.raises(ValueError, match="SERDES_FLINK_SPEEDUPS='sometimes'"):
        sf.create_env()


def test_create_env_carries_the_switch_as_a_job_parameter() -> None:
    env = sf.create_env(config={"serdes.flink.speedups": "Off"})
    assert env.get_config().get_global_job_parameters()[_pyflink.SPEEDUPS_KEY] == "off"


def test_auto_on_a_release_not_verified_keeps_pyflinks_path_and_says_so_once(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(_pyflink, "pyflink_version", lambda: "2.99.0")  # a release not verified
    backends = [_backend() for _ in range(5)]
    for backend in backends:
        assert _pyflink.speed_up_key_changes(Ctx(backend)) is False
        assert _pyflink.speed_up_records(object(), Ctx(backend)) is False
    assert all("set_current_key" not in vars(b) for b in backends)
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "2.99.0" in warnings[0] and "not verified" in warnings[0]


def test_a_mismatch_of_internals_falls_back_without_raising(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    if _pyflink.pyflink_version() not in _pyflink.SPEEDUPS_VERIFIED:
        monkeypatch.setenv(_pyflink.SPEEDUPS_ENV, "on")
    backends = [_backend() for _ in range(3)]
    for backend in backends:
        del backend._key_coder_impl  # a vendor build of the same release without it
        assert _pyflink.speed_up_key_changes(Ctx(backend)) is False
        assert "set_current_key" not in vars(backend)
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "_key_coder_impl" in warnings[0] and _pyflink.pyflink_version() in warnings[0]


@pytest.mark.parametrize("error", [AttributeError("no such thing"), TypeError("bad"), RuntimeError("boom")])
def test_any_error_of_the_record_installer_falls_back(monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture, error: Exception) -> None:
    monkeypatch.setattr(_pyflink, "pyflink_version", lambda: VERIFIED)

    def broken(function: Any) -> Any:
        raise error

    monkeypatch.setattr(_pyflink, "_opening_operation", broken)
    for _ in range(3):
        assert _pyflink.speed_up_records(object(), Ctx(_backend())) is False
    warnings = _warnings(caplog)
    assert len(warnings) == 1 and type(error).__name__ in warnings[0], warnings


def test_on_tries_them_on_a_release_not_verified(monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(_pyflink, "pyflink_version", lambda: "2.99.0")  # a release not verified
    monkeypatch.setenv(_pyflink.SPEEDUPS_ENV, "on")
    backend = _backend()
    assert _pyflink.speed_up_key_changes(Ctx(backend)) is True
    assert "set_current_key" in vars(backend)
    assert _warnings(caplog) == []


@pytest.mark.parametrize("where", ["env", "job parameter"])
def test_off_is_silent(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, where: str) -> None:
    monkeypatch.setattr(_pyflink, "pyflink_version", lambda: VERIFIED)
    params = {}
    if where == "env":
        monkeypatch.setenv(_pyflink.SPEEDUPS_ENV, "off")
    else:
        monkeypatch.setenv(_pyflink.SPEEDUPS_ENV, "on")  # the job's own parameter wins
        params = {_pyflink.SPEEDUPS_KEY: "off"}
    backend = _backend()
    for _ in range(3):
        assert _pyflink.speed_up_key_changes(Ctx(backend, params)) is False
        assert _pyflink.speed_up_records(object(), Ctx(backend, params)) is False
    assert "set_current_key" not in vars(backend)
    assert _warnings(caplog) == []
    assert any("off" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)


def test_an_invalid_value_in_a_worker_is_a_warning_not_an_error(monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(_pyflink.SPEEDUPS_ENV, "fast")
    backend = _backend()
    assert _pyflink.speed_up_key_changes(Ctx(backend)) is False
    assert len(_warnings(caplog)) == 1 and "'fast'" in _warnings(caplog)[0]


def test_typed_stream_wrappers_leave_a_users_keyed_state_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pyflink, "pyflink_version", lambda: VERIFIED)
    monkeypatch.setenv(_pyflink.SPEEDUPS_ENV, "on")

    class UserFunction:
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield value

    backend = _backend()
    _KeyedProcessWrapper(UserFunction(), bytes, bytes).open(Ctx(backend))  # type: ignore[arg-type]
    assert "set_current_key" not in vars(backend)  # PyFlink's own key change on the user's state
