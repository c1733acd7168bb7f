"""FileDescriptorSets: a file's imports in dependency order, and a DescriptorPool built from a set.

Shared by the Protobuf deserializer (``descriptor_set=``), the compatibility checker
(:func:`serdes.protobuf.compat.descriptor_set_for`) and the Flink type information that ships a
descriptor with the job (``serdes.flink._types``).
"""

from __future__ import annotations

from typing import Any, List, Set, Union

from google.protobuf import descriptor_pb2, descriptor_pool

__all__ = ["files_in_import_order", "pool_from_set"]


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


def pool_from_set(
    descriptor_set: Union[descriptor_pb2.FileDescriptorSet, bytes, bytearray, memoryview],
) -> descriptor_pool.DescriptorPool:
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
    added: set = set()

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
