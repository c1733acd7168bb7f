"""PyFlink's process-mode keyed state backend (``RemoteKeyedStateBackend``, Beam bag states) over a
dict standing in for the runner's state API, the part that lives in the JVM.

Used by tests/flink/test_key_changes.py (serdes' ``set_current_key`` against PyFlink's) and
benchmarks/flink_key_change.py (what each costs per record).
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

__all__ = ["DictStateHandler", "remote_backend"]


class DictStateHandler:
    """The runner's state API as a dict: bag state key (serialized ``StateKey``) -> elements."""

    _state_cache = None
    _underlying = None
    _context = None

    def __init__(self) -> None:
        self.store: Dict[bytes, List[Any]] = {}

    def blocking_get(self, state_key: Any, coder: Any) -> List[Any]:
        return list(self.store.get(state_key.SerializeToString(deterministic=True), []))

    def extend(self, state_key: Any, coder: Any, elements: Any) -> None:
        self.store.setdefault(state_key.SerializeToString(deterministic=True), []).extend(elements)

    def clear(self, state_key: Any) -> None:
        self.store.pop(state_key.SerializeToString(deterministic=True), None)


def remote_backend(key_type: Any, cache_size: int, n_states: int = 1) -> Tuple[Any, DictStateHandler, List[Any]]:
    """``(backend, handler, [n_states byte[] value states named s0, s1, ...])``, keyed by ``Row(key_type)``."""
    from pyflink.common import Types
    from pyflink.fn_execution.coders import from_type_info
    from pyflink.fn_execution.state_impl import RemoteKeyedStateBackend

    handler = DictStateHandler()
    backend = RemoteKeyedStateBackend(handler, from_type_info(Types.ROW([key_type])), None, cache_size, 1000, 1000)
    coder = from_type_info(Types.PRIMITIVE_ARRAY(Types.BYTE()))
    return backend, handler, [backend.get_value_state(f"s{i}", coder) for i in range(n_states)]
