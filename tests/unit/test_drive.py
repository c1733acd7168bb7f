"""serdes._drive: one plan, two drivers (sync and asyncio) that give the plan the same replies."""

from __future__ import annotations

import asyncio
from typing import Any, List, Tuple

import pytest

from serdes._drive import Plan, drive, drive_async


def _boom(x: int) -> int:
    raise ValueError(f"bad {x}")


async def _later(x: int) -> int:
    await asyncio.sleep(0)
    return x * 10


def _plan(calls: List[Any]) -> Plan[List[Tuple[bool, Any]]]:
    replies: List[Tuple[bool, Any]] = []
    for fn, args in calls:
        replies.append((yield fn, args))
    return replies


def _summary(replies: List[Tuple[bool, Any]]) -> List[Tuple[bool, Any]]:
    return [(ok, v if ok else (type(v).__name__, str(v))) for ok, v in replies]


def test_both_drivers_send_results_and_exceptions_back_to_the_plan() -> None:
    calls = [(abs, (-3,)), (_boom, (7,)), (divmod, (7, 2))]
    want = [(True, 3), (False, ("ValueError", "bad 7")), (True, (3, 1))]
    assert _summary(drive(_plan(calls))) == want
    assert _summary(asyncio.run(drive_async(_plan(calls)))) == want


def test_only_the_async_driver_awaits_a_result() -> None:
    assert asyncio.run(drive_async(_plan([(_later, (4,))]))) == [(True, 40)]
    (ok, value), = drive(_plan([(_later, (4,))]))
    assert ok and asyncio.iscoroutine(value)
    value.close()


def test_a_plan_without_calls_returns_at_once() -> None:
    assert drive(_plan([])) == []
    assert asyncio.run(drive_async(_plan([]))) == []


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_base_exception_ends_the_drive(driver: str) -> None:
    def interrupt() -> None:
        raise KeyboardInterrupt

    plan = _plan([(interrupt, ())])
    with pytest.raises(KeyboardInterrupt):
        if driver == "sync":
            drive(plan)
        else:
            asyncio.run(drive_async(plan))
