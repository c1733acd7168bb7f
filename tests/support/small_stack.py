"""Running a call on a thread with a small stack: how the tests reach the native code's stack
guard (docs/native.md, "Guards") without deep Python recursion."""
from __future__ import annotations

import threading
from typing import Any, Callable, List


def on_small_stack(call: Callable[[], Any], kib: int = 160) -> Any:
    """``call()``'s result, run on a new thread whose stack is ``kib`` KiB (an exception it raises
    is raised here)."""
    out: List[Any] = []
    failed: List[BaseException] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
            failed.append(e)

    old = threading.stack_size(kib * 1024)
    try:
        t = threading.Thread(target=run)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    if failed:
        raise failed[0]
    return out[0]
