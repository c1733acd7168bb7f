"""FileDescriptorSets: loading and parsing one, the set a message type needs, a file's imports in
dependency order, and a DescriptorPool built from a set.

Shared by the Protobuf deserializer (``descriptor_set=``), the compatibility checker and its CLI
(:mod:`serdes.protobuf.compat`, which re-exports :func:`load_descriptor_set` and
:func:`descriptor_set_for`) and the Flink type information and state that ship a descriptor with
the job (``serdes.flink``).
"""

from __future__ import annotations

import os
from typing import Any, List, Set, Union

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError

__all__ = [
    "DescriptorSetLike", "as_descriptor_set", "descriptor_set_for", "files_in_import_order", "load_descriptor_set",
    "parse_descriptor_set", "pool_from_set",
]

#: what the functions taking a descriptor set accept: the message, or its serialized bytes
DescriptorSetLike = Union[descriptor_pb2.FileDescriptorSet, bytes, bytearray, memoryview]


def files_in_import_order(file_descriptor: Any) -> List[Any]:
    """``file_descriptor`` and its transitive imports, each once, imports before importers."""
    ordered: List[Any] = []
    seen: Set[str] = set()

    def visit(f: Any) -> None:
        if f.name in seen:
            return
        seen.add(f.name)
        for dep in f.dependencies:
            visit(dep)
        ordered.append(f)

    visit(file_descriptor)
    return ordered


def pool_from_set(descriptor_set: DescriptorSetLike) -> descriptor_pool.DescriptorPool:
    """A fresh pool holding every file of ``descriptor_set`` (serialized or not), in any order.

    An import the set lacks is taken from the default pool (well-known types, generated modules
    already imported); one found nowhere raises ValueError.
    """
    if isinstance(descriptor_set, (bytes, bytearray, memoryview)):
        fds = descriptor_pb2.FileDescriptorSet.FromString(bytes(descriptor_set))
    else:
        fds = descriptor_set
    pool = descriptor_pool.DescriptorPool()
    files = {f.name: f for f in fds.file}
    added: Set[str] = set()

    def add(f: descriptor_pb2.FileDescriptorProto) -> None:
        if f.name in added:
            return
        for dep in f.dependency:
            if dep in files:
                add(files[dep])
            elif dep not in added:
                from ._schemas import _add_from_default_pool

                if not _add_from_default_pool(pool, dep, added):
                    raise ValueError(f"descriptor_set lacks {dep!r}, imported by {f.name!r}")
        pool.Add(f)
        added.add(f.name)

    for f in fds.file:
        add(f)
    return pool


def load_descriptor_set(
    source: str | os.PathLike[str] | bytes | bytearray | memoryview,
) -> descriptor_pb2.FileDescriptorSet:
    """Load a binary ``FileDescriptorSet``.

    ``source`` is either the serialized bytes or a path to a file produced by
    e.g. ``protoc --include_imports -o x.desc``.  Raises ``ValueError`` if the
    data is not a non-empty ``FileDescriptorSet`` and ``OSError`` if the file
    cannot be read.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        origin = "<bytes>"
    else:
        origin = os.fspath(source)
        with open(origin, "rb") as fh:
            data = fh.read()
    fds = parse_descriptor_set(data, origin)
    if not fds.file:
        raise ValueError(f"{origin}: empty FileDescriptorSet")
    return fds


def parse_descriptor_set(data: bytes, origin: str) -> descriptor_pb2.FileDescriptorSet:
    """``data`` parsed as a ``FileDescriptorSet``; ValueError naming ``origin`` when it is not one."""
    fds = descriptor_pb2.FileDescriptorSet()
    try:
        fds.ParseFromString(data)
    except DecodeError as exc:
        raise ValueError(f"{origin}: not a serialized FileDescriptorSet: {exc}") from exc
    for f in fds.file:
        if not f.name:
            raise ValueError(f"{origin}: not a FileDescriptorSet (file without a name)")
    return fds


def as_descriptor_set(value: Any, what: str) -> descriptor_pb2.FileDescriptorSet:
    """``value`` (a set, one file, or a serialized set) as a ``FileDescriptorSet``; ``what`` names it
    in the TypeError/ValueError."""
    if isinstance(value, descriptor_pb2.FileDescriptorSet):
        return value
    if isinstance(value, descriptor_pb2.FileDescriptorProto):
        fds = descriptor_pb2.FileDescriptorSet()
        fds.file.add().CopyFrom(value)
        return fds
    if isinstance(value, (bytes, bytearray, memoryview)):
        return parse_descriptor_set(bytes(value), what)
    raise TypeError(f"{what}: expected FileDescriptorSet or bytes, got {type(value).__name__}")


def descriptor_set_for(message_class_or_descriptor: Any) -> descriptor_pb2.FileDescriptorSet:
    """Return the ``FileDescriptorSet`` needed to interpret a message type.

    Accepts a generated message class or instance, a ``Descriptor``,
    ``EnumDescriptor`` or ``FileDescriptor``.  The set contains the defining
    file and all of its transitive imports, each exactly once, in dependency
    order (imports before importers), so it can be fed file by file into a
    ``DescriptorPool``.  This is what the Flink state code stores with state.
    """
    obj = message_class_or_descriptor
    fd = getattr(obj, "DESCRIPTOR", obj)
    fd = getattr(fd, "file", fd)
    if not hasattr(fd, "dependencies") or not hasattr(fd, "name"):
        raise TypeError(
            "expected a message class/instance, Descriptor, EnumDescriptor or "
            f"FileDescriptor, got {type(obj).__name__}"
        )
    out = descriptor_pb2.FileDescriptorSet()
    for f in files_in_import_order(fd):
        proto = out.file.add()
        serialized = getattr(f, "serialized_pb", None)
        if serialized:
            proto.ParseFromString(serialized)
        else:  # pragma: no cover - pure-python descriptors without serialized_pb
            f.CopyToProto(proto)
    return out
