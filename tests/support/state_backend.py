"""PyFlink's process-mode keyed state backend (``RemoteKeyedStateBackend``, Beam bag states) over a
dict standing in for the runner's state API, the part that lives in the JVM.

Used by tests/flink/test_key_changes.py (serdes' ``set_current_key`` against PyFlink's),
tests/flink/test_record_wrappers.py and benchmarks/flink_key_change.py (what each costs per record).
:func:`remote_backend` is the short form (bag states only, no Beam cache); :func:`runner_backend`
puts Beam's own caching state handler in front of :class:`RunnerStateService`, which also answers
PyFlink's map state requests.
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, List, Optional, Tuple

__all__ = ["DictStateHandler", "RunnerStateService", "remote_backend", "runner_backend"]


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


# -- the runner's state service, the way Flink's Java side answers PyFlink's requests ----------------

_MAP_GET, _MAP_ITERATE, _MAP_CHECK_EMPTY = 0, 1, 2  # request flags of PyFlink's map state protocol
_MAP_EXISTS, _MAP_IS_NONE, _MAP_MISSING, _MAP_EMPTY, _MAP_NOT_EMPTY = 0, 1, 2, 3, 4  # response flags
_MAP_DELETE, _MAP_SET_NONE, _MAP_SET_VALUE = 0, 1, 2  # append flags
_MAP_ITERATE_KEYS = 1  # IterateType.KEYS


def _done() -> Any:
    """A completed request, as the gRPC handler's future of a state append / clear completes."""
    from apache_beam.portability.api import beam_fn_api_pb2
    from apache_beam.runners.worker.sdk_worker import _Future

    return _Future().set(beam_fn_api_pb2.StateResponse())


class RunnerStateService:
    """What Beam's ``GlobalCachingStateHandler`` talks to (``get_raw`` / ``append_raw`` / ``clear``,
    the gRPC ``GrpcStateHandler`` in a worker): the part of a process-mode job that lives in the
    JVM, as dicts.  Bag states (``bag_user_state`` keys) hold their encoded elements, concatenated;
    map states (PyFlink's ``multimap_side_input`` keys) answer PyFlink's map protocol (``GET`` /
    ``ITERATE`` in batches of :attr:`batch` entries, with an iterator token between batches /
    ``CHECK_EMPTY``; appends of ``DELETE`` / ``SET_NONE`` / ``SET_VALUE``) the way Flink's
    ``BeamKeyedStateStore`` / map state handler does, keyed by the encoded map key.  TTL is not
    applied here: it is the JVM's state backend's (the state key carries the TTL config)."""

    def __init__(self, batch: int = 3) -> None:
        self.bags: Dict[bytes, bytes] = {}
        self.maps: Dict[bytes, Dict[bytes, Optional[bytes]]] = {}
        self.batch = batch
        self._iterators: Dict[bytes, List[Tuple[bytes, Optional[bytes]]]] = {}
        self.iterator_clears = 0

    @staticmethod
    def _key(state_key: Any) -> bytes:
        return state_key.SerializeToString(deterministic=True)  # type: ignore[no-any-return]

    @contextlib.contextmanager
    def process_instruction_id(self, bundle_id: str) -> Iterator[None]:
        yield

    def done(self) -> None:
        pass

    def committed(self) -> Dict[str, Dict[bytes, Any]]:
        """What the JVM side holds: non-empty bags and maps."""
        return {"bags": {k: v for k, v in self.bags.items() if v},
                "maps": {k: dict(v) for k, v in self.maps.items() if v}}

    def get_raw(self, state_key: Any, continuation_token: Optional[bytes] = None) -> Tuple[bytes, bytes]:
        if state_key.HasField("bag_user_state"):
            if state_key.bag_user_state.transform_id:
                raise NotImplementedError(state_key.bag_user_state.transform_id)  # merge_namespaces
            return self.bags.get(self._key(state_key), b""), b""
        entries = self.maps.get(self._key(state_key), {})
        request = continuation_token or b""
        if request[0] == _MAP_GET:
            if request[1:] not in entries:
                return bytes([_MAP_MISSING]), b""
            value = entries[request[1:]]
            return (bytes([_MAP_IS_NONE]), b"") if value is None else (bytes([_MAP_EXISTS]) + value, b"")
        if request[0] == _MAP_CHECK_EMPTY:
            return bytes([_MAP_EMPTY if not entries else _MAP_NOT_EMPTY]), b""
        if request[0] != _MAP_ITERATE:
            raise ValueError(f"unknown map request flag {request[0]}")
        iterate_type, size = request[1], int.from_bytes(request[2:6], "big")
        token = request[6:6 + size]
        if token:
            pending = self._iterators.pop(token)
        else:
            pending = list(entries.items())
        batch, rest = pending[:self.batch], pending[self.batch:]
        out = bytearray()
        for map_key, value in batch:
            out += map_key
            if iterate_type != _MAP_ITERATE_KEYS:
                out += b"\x00" if value is None else b"\x01" + value
        next_token = b""
        if rest:
            next_token = f"it{len(self._iterators)}-{id(rest)}".encode()
            self._iterators[next_token] = rest
        return bytes(out), next_token

    def append_raw(self, state_key: Any, data: bytes) -> Any:
        if state_key.HasField("bag_user_state"):
            if state_key.bag_user_state.transform_id:
                raise NotImplementedError(state_key.bag_user_state.transform_id)
            key = self._key(state_key)
            self.bags[key] = self.bags.get(key, b"") + data
            return _done()
        entries = self.maps.setdefault(self._key(state_key), {})
        pos, count = 4, int.from_bytes(data[:4], "big")
        for _ in range(count):
            flag = data[pos]
            size = int.from_bytes(data[pos + 1:pos + 5], "big")
            map_key = data[pos + 5:pos + 5 + size]
            pos += 5 + size
            if flag == _MAP_DELETE:
                entries.pop(map_key, None)
            elif flag == _MAP_SET_NONE:
                entries[map_key] = None
            elif flag == _MAP_SET_VALUE:
                size = int.from_bytes(data[pos:pos + 4], "big")
                entries[map_key] = data[pos + 4:pos + 4 + size]
                pos += 4 + size
            else:
                raise ValueError(f"unknown map append flag {flag}")
        assert pos == len(data), "trailing bytes in a map append"
        return _done()

    def clear(self, state_key: Any) -> Any:
        if state_key.HasField("bag_user_state"):
            self.bags.pop(self._key(state_key), None)
        elif state_key.multimap_side_input.transform_id == "clear_iterators":
            self._iterators.clear()  # the backend's clear_cached_iterators mark
            self.iterator_clears += 1
        else:
            self.maps.pop(self._key(state_key), None)
        return _done()


def runner_backend(key_type: Any, cache_size: int, beam_cache_weight: int, map_read_cache: int = 1000,
                   map_write_cache: int = 1000) -> Tuple[Any, Any, RunnerStateService]:
    """``(backend, Beam's caching state handler, the runner's state service)``: a
    ``RemoteKeyedStateBackend`` keyed by ``Row(key_type)`` over the handler a process-mode worker
    gives it (Beam's ``GlobalCachingStateHandler`` with a ``StateCache`` of ``beam_cache_weight``
    bytes, 0: no cache) in front of :class:`RunnerStateService`.  State access needs a bundle:
    ``with handler.process_instruction_id(bundle_id, cache_tokens): ...``."""
    from apache_beam.runners.worker.sdk_worker import GlobalCachingStateHandler
    from apache_beam.runners.worker.statecache import StateCache
    from pyflink.common import Types
    from pyflink.fn_execution.coders import from_type_info
    from pyflink.fn_execution.state_impl import RemoteKeyedStateBackend

    service = RunnerStateService()
    handler = GlobalCachingStateHandler(StateCache(beam_cache_weight), service)
    backend = RemoteKeyedStateBackend(handler, from_type_info(Types.ROW([key_type])), None, cache_size,
                                      map_read_cache, map_write_cache)
    return backend, handler, service
