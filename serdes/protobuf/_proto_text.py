"""``.proto`` source -> ``FileDescriptorProto`` for registries that only serve schema text.

Confluent Schema Registry serves ``format=serialized`` and never needs this. Apicurio returns
schemas as they were registered, which is ``.proto`` source when a Java (or other non-Python)
client registered them. serdes then compiles the text with ``protoc`` from ``grpcio-tools`` when
that package is installed (an optional dependency: ``pip install grpcio-tools``); without it a
clear :class:`~serdes.SchemaMismatchError` says what to do (install it, or pass
``descriptor_set=`` / ``message_descriptor=`` to the deserializer).
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Dict, Optional

from google.protobuf import descriptor_pb2, descriptor_pool

from .._errors import SchemaMismatchError

__all__ = ["parse_proto"]


_IMPORT_RE = re.compile(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;', re.MULTILINE)


def parse_proto(
    text: str, name: str, deps: Optional[Dict[str, descriptor_pb2.FileDescriptorProto]] = None
) -> descriptor_pb2.FileDescriptorProto:
    """Compile one ``.proto`` source; ``deps`` maps import paths to their (already built)
    descriptors. Imports missing from ``deps`` come from the protobuf runtime's default pool."""
    try:
        from grpc_tools import protoc  # type: ignore[import-not-found]
    except ImportError:
        raise SchemaMismatchError(
            f"the registry returned {name!r} as .proto source; decoding it without generated classes "
            "needs protoc: `pip install grpcio-tools`, or pass descriptor_set=/message_descriptor= "
            "to ProtobufDeserializer"
        ) from None

    known: Dict[str, descriptor_pb2.FileDescriptorProto] = dict(deps or {})
    fds = descriptor_pb2.FileDescriptorSet()
    seen: set = set()

    def add(path: str) -> None:
        if path in seen:
            return
        seen.add(path)
        proto = known.get(path)
        if proto is None:
            try:
                fd = descriptor_pool.Default().FindFileByName(path)
            except KeyError:
                return  # protoc reports the missing import
            proto = descriptor_pb2.FileDescriptorProto()
            fd.CopyToProto(proto)
        for dep in proto.dependency:
            add(dep)
        fds.file.add().CopyFrom(proto)

    for imp in _IMPORT_RE.findall(text):
        add(imp)
    with tempfile.TemporaryDirectory(prefix="serdes-proto-") as tmp:
        src = os.path.join(tmp, "src")
        full = os.path.join(src, name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
        deps_file = os.path.join(tmp, "deps.desc")
        with open(deps_file, "wb") as f:
            f.write(fds.SerializeToString())
        out = os.path.join(tmp, "out.desc")
        rc = protoc.main(["protoc", f"-I{src}", f"--descriptor_set_in={deps_file}", f"--descriptor_set_out={out}", name])
        if rc != 0:
            raise SchemaMismatchError(f"protoc could not compile {name!r} (exit {rc}); missing import or invalid source")
        result = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            result.ParseFromString(f.read())
    for fdp in result.file:
        if fdp.name == name:
            return fdp
    raise SchemaMismatchError(f"protoc produced no descriptor for {name!r}")  # pragma: no cover
