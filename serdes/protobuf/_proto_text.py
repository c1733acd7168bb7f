"""``.proto`` source -> ``FileDescriptorProto`` for registries that only serve schema text.

Confluent Schema Registry serves ``format=serialized`` and never needs this. Apicurio returns
schemas as they were registered, which is ``.proto`` source when a Java (or other non-Python)
client registered them. serdes then compiles the text with ``protoc`` from ``grpcio-tools`` when
that package is installed (an optional dependency: ``pip install grpcio-tools``); without it a
clear :class:`~serdes.SchemaMismatchError` says what to do (install it, or pass
``descriptor_set=`` / ``message_descriptor=`` to the deserializer).

The text is untrusted (whoever registered it chose it), so:

* no name from the registry becomes a file path: the source is written to a private temporary
  directory under a fixed generated name, and every import is served from an in-memory
  ``--descriptor_set_in`` (the already-built references and well-known files), so protoc reads
  nothing else; import paths that look like paths outside that tree are refused up front;
* protoc runs in a child interpreter with a memory limit and a timeout: it is C++ and crashes on
  some hostile inputs (deeply nested option aggregates overflow its stack), which in-process would
  take the consumer down.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Set

from google.protobuf import descriptor_pb2, descriptor_pool

from .._errors import SchemaMismatchError
from ._names import check_import_name

__all__ = ["parse_proto", "PROTOC_TIMEOUT", "PROTOC_MEMORY"]

#: seconds protoc may run for one schema
PROTOC_TIMEOUT = 60.0
#: bytes of address space the protoc child may use
PROTOC_MEMORY = 2 << 30

# the only file written: the source under this name, in a fresh temporary directory
_SOURCE_NAME = "serdes_registry_schema.proto"

# an import statement: at the start of a line or after another statement (one-line sources), in
# the source without its comments (_COMMENT_RE); only which files to serve depends on it, protoc
# compiles the source as given
_IMPORT_RE = re.compile(r'(?:^|[;{}])\s*import\s+(?:public\s+|weak\s+)?["\']([^"\']*)["\']\s*;', re.MULTILINE)
_COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


# The child sets its own memory limit (no preexec_fn: unsafe in a threaded consumer) and calls
# protoc without grpc_tools' default include path, so imports come only from --descriptor_set_in.
_CHILD = (
    "import sys\n"
    "try:\n"
    "    import resource\n"
    "    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))\n"
    "except (ImportError, ValueError, OSError):\n"
    "    pass\n"
    "from grpc_tools import protoc\n"
    "sys.exit(protoc.main(['protoc'] + sys.argv[2:]))\n"
)


def source_imports(text: str) -> List[str]:
    """The import paths of ``.proto`` source, in order (comments left out)."""
    return _IMPORT_RE.findall(_COMMENT_RE.sub(" ", text))


def parse_proto(
    text: str, name: str, deps: Optional[Dict[str, descriptor_pb2.FileDescriptorProto]] = None
) -> descriptor_pb2.FileDescriptorProto:
    """Compile one ``.proto`` source; ``deps`` maps import paths to their (already built)
    descriptors. Imports missing from ``deps`` come from the protobuf runtime's default pool.
    The result is named ``name`` (never used as a path)."""
    try:
        import grpc_tools
    except ImportError:
        raise SchemaMismatchError(
            f"the registry returned {name!r} as .proto source; decoding it without generated classes "
            "needs protoc: `pip install grpcio-tools`, or pass descriptor_set=/message_descriptor= "
            "to ProtobufDeserializer"
        ) from None

    known: Dict[str, descriptor_pb2.FileDescriptorProto] = dict(deps or {})
    fds = descriptor_pb2.FileDescriptorSet()
    seen: Set[str] = set()

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

    for imp in source_imports(text):
        check_import_name(imp, f"import in {name!r}:")
        if imp == _SOURCE_NAME:
            raise SchemaMismatchError(f"{name!r} imports the reserved name {imp!r}")
        add(imp)
    with tempfile.TemporaryDirectory(prefix="serdes-proto-") as tmp:
        src = os.path.join(tmp, "src")
        os.mkdir(src)
        with open(os.path.join(src, _SOURCE_NAME), "w", encoding="utf-8") as source_file:
            source_file.write(text)
        deps_file = os.path.join(tmp, "deps.desc")
        with open(deps_file, "wb") as deps_out:
            deps_out.write(fds.SerializeToString())
        out = os.path.join(tmp, "out.desc")
        argv = [sys.executable, "-c", _CHILD, str(PROTOC_MEMORY), f"-I{src}", f"--descriptor_set_in={deps_file}",
                f"--descriptor_set_out={out}", _SOURCE_NAME]
        # the child imports grpc_tools from where this process found it
        site = os.path.dirname(os.path.dirname(os.path.abspath(grpc_tools.__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH")) if p))
        try:
            proc = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROTOC_TIMEOUT, cwd=tmp, env=env,
            )
        except subprocess.TimeoutExpired:
            raise SchemaMismatchError(f"protoc did not compile {name!r} within {PROTOC_TIMEOUT:g} s") from None
        except OSError as e:  # pragma: no cover - no interpreter to run
            raise SchemaMismatchError(f"cannot run protoc for {name!r}: {e}") from e
        if proc.returncode != 0:
            detail = proc.stderr.decode("utf-8", "replace").replace(_SOURCE_NAME, name).strip()[:500]
            how = f"exit {proc.returncode}" if proc.returncode > 0 else f"killed by signal {-proc.returncode}"
            raise SchemaMismatchError(f"protoc could not compile {name!r} ({how}): {detail or 'invalid source'}")
        result = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as result_in:
            result.ParseFromString(result_in.read())
    fdp: descriptor_pb2.FileDescriptorProto
    for fdp in result.file:
        if fdp.name == _SOURCE_NAME:
            fdp.name = name
            return fdp
    raise SchemaMismatchError(f"protoc produced no descriptor for {name!r}")  # pragma: no cover
