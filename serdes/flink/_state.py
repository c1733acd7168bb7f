"""Protobuf keyed state that survives schema changes.

A :class:`~serdes.flink.ProtobufValueStateDescriptor` keeps, next to the value state, a second
keyed ``ValueState<byte[]>`` named ``<name>.serdes-descriptor`` holding the serialized
``FileDescriptorSet`` the value was written with (:func:`serdes.protobuf.compat.descriptor_set_for`
of the message class).  It is

* **written** once per key, when the key's value is first created (``value()`` returned
  ``None`` before ``update()``), and on every ``update()`` after this run detected that the
  restored state was written with another descriptor (so each key's descriptor is brought up to
  date as the key is rewritten);
* **read** once per operator instance: on the first ``value()`` that finds a stored value
  (i.e. the first access after a restore).  Equal bytes -> nothing to do; different ->
  :func:`~serdes.protobuf.compat.check_compatibility` (``message=`` the state's root type);
  incompatible -> :class:`StateSchemaIncompatibleError` is raised *before* the old bytes are
  parsed, so no record is processed with that state.

Size: one copy of the ``FileDescriptorSet`` per key (the message's file and its imports:
a few hundred bytes for a small file; RocksDB compresses the identical values well).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

from .._errors import StateSchemaIncompatibleError

DESCRIPTOR_STATE_SUFFIX = ".serdes-descriptor"


def descriptor_set_bytes(type_info: Any) -> Tuple[bytes, str]:
    """(serialized FileDescriptorSet, full name) for a ProtobufTypeInformation-like type info."""
    fds: Optional[bytes] = getattr(type_info, "_fds", None)
    if fds is None:
        from ..protobuf.compat import descriptor_set_for

        fds = descriptor_set_for(type_info.message_class).SerializeToString(deterministic=True)
    full_name: str = type_info._key
    return fds, full_name


class SchemaCheckedValueState:
    """ValueState facade (parse on ``value()``, serialize on ``update()``) that keeps the
    writer's ``FileDescriptorSet`` per key and checks it once after a restore."""

    __slots__ = ("_state", "_schema", "_dec", "_enc", "_fds", "_full_name", "_name",
                 "_verified", "_changed", "_fresh")

    def __init__(self, state: Any, schema_state: Any, dec: Callable[[bytes], Any], enc: Callable[[Any], bytes],
                 fds: bytes, full_name: str, name: str) -> None:
        self._state, self._schema, self._dec, self._enc = state, schema_state, dec, enc
        self._fds, self._full_name, self._name = fds, full_name, name
        self._verified = False
        self._changed = False   # restored state had another descriptor: rewrite it on update
        self._fresh: Optional[bool] = None  # did the last value() find no state (None: unknown)

    def value(self) -> Any:
        raw = self._state.value()
        if raw is None:
            self._fresh = True
            return None
        self._fresh = False
        if not self._verified:
            self.verify()
        return self._dec(raw)

    def verify(self) -> None:
        """Compare the current key's stored descriptor with the job's (raises if incompatible)."""
        old = self._schema.value()
        if old is not None and bytes(old) != self._fds:
            from ..protobuf.compat import check_compatibility

            result = check_compatibility(bytes(old), self._fds, message=self._full_name)
            if not result.compatible:
                detail = "; ".join(str(r) for r in result.reasons)
                raise StateSchemaIncompatibleError(
                    f"keyed state {self._name!r} was written with a {self._full_name} schema that "
                    f"the job's class cannot read: {detail}",
                    state=self._name, message=self._full_name, result=result,
                )
            self._changed = True
        self._verified = True

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        if self._fresh is not False or self._changed:
            self._schema.update(self._fds)
        self._fresh = None
        self._state.update(self._enc(value))

    def clear(self) -> None:
        self._state.clear()
        self._schema.clear()
        self._fresh = None
