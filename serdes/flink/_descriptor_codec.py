"""A Protobuf message's descriptor as bytes that travel with a job, and the decoder built from them.

:class:`~serdes.flink.DynamicProtobufTypeInformation` ships its descriptor (and the files it
imports) to the workers as a serialized ``FileDescriptorSet``; :class:`_DescriptorDecoder`
rebuilds the message class from it once per worker. The same bytes are what keyed state written
with that type info keeps as its schema (``_state.py``), so they stay byte-for-byte what earlier
versions wrote.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from google.protobuf.descriptor import Descriptor

from ._pickling import PICKLE_MODULE

__all__ = ["file_descriptor_set", "PICKLE_MODULE"]


class _DescriptorDecoder:
    """Picklable decoder that rebuilds a dynamic message class from a FileDescriptorSet."""

    __module__ = PICKLE_MODULE

    def __init__(self, fds_bytes: bytes, full_name: str) -> None:
        self.fds_bytes = fds_bytes
        self.full_name = full_name
        self._from_string: Optional[Callable[[bytes], Any]] = None

    def __getstate__(self) -> Dict[str, Any]:
        return {"fds_bytes": self.fds_bytes, "full_name": self.full_name, "_from_string": None}

    def message_class(self) -> type:
        from google.protobuf import message_factory

        from ..protobuf._descriptor_sets import pool_from_set

        pool = pool_from_set(self.fds_bytes)
        cls: type = message_factory.GetMessageClass(pool.FindMessageTypeByName(self.full_name))
        return cls

    def __call__(self, data: bytes) -> Any:
        if self._from_string is None:
            self._from_string = self.message_class().FromString  # type: ignore[attr-defined]
        return self._from_string(data)


def file_descriptor_set(descriptor: Descriptor) -> bytes:
    """Serialized ``FileDescriptorSet`` with the message's file and its dependencies."""
    from google.protobuf import descriptor_pb2

    from ..protobuf._descriptor_sets import files_in_import_order

    # CopyToProto, not serialized_pb as in compat.descriptor_set_for: these bytes travel with jobs
    # and savepoints already written, so they stay byte-for-byte what earlier versions wrote
    ordered: List[Any] = []
    for fd in files_in_import_order(descriptor.file):
        proto = descriptor_pb2.FileDescriptorProto()
        fd.CopyToProto(proto)
        ordered.append(proto)
    data: bytes = descriptor_pb2.FileDescriptorSet(file=ordered).SerializeToString()
    return data
