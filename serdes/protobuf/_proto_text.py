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
import tempfile
from typing import Dict, Optional

from google.protobuf import descriptor_pb2

from .._errors import SchemaMismatchError

__all__ = ["parse_proto"]


def parse_proto(text: str, name: str, imports: Optional[Dict[str, str]] = None) -> descriptor_pb2.FileDescriptorProto:
    """Compile one ``.proto`` source; ``imports`` maps import paths to their source text."""
    try:
        from grpc_tools import protoc  # type: ignore[import-not-found]
    except ImportError:
        raise SchemaMismatchError(
            f"the registry returned {name!r} as .proto source; decoding it without generated classes "
            "needs protoc: `pip install grpcio-tools`, or pass descriptor_set=/message_descriptor= "
            "to ProtobufDeserializer"
        ) from None
    import importlib.resources

    with tempfile.TemporaryDirectory(prefix="serdes-proto-") as tmp:
        files = dict(imports or {})
        files[name] = text
        for path, src in files.items():
            full = os.path.join(tmp, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(src)
        out = os.path.join(tmp, "out.desc")
        include = str(importlib.resources.files("grpc_tools") / "_proto")
        rc = protoc.main(["protoc", f"-I{tmp}", f"-I{include}", f"--descriptor_set_out={out}", name])
        if rc != 0:
            raise SchemaMismatchError(f"protoc could not compile {name!r} (exit {rc}); missing import or invalid source")
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    for fdp in fds.file:
        if fdp.name == name:
            return fdp
    raise SchemaMismatchError(f"protoc produced no descriptor for {name!r}")  # pragma: no cover
