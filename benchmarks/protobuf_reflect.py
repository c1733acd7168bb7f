"""serdes' native Protobuf loop against prost-reflect, inside Rust: the measurement behind the
choice of decoder in docs/arrow.md ("How it is built").

Writes the standard Protobuf record's bodies (benchmarks/serde_cases.py, 20,000), its descriptor
set and serdes' program of it to a temporary directory, then builds and runs the Rust crate in
benchmarks/protobuf_reflect/ (prost-reflect from crates.io; serdes' loop compiled from its
sources), which times, taking turns, serdes' loop into Arrow columns, prost-reflect's
DynamicMessage then Arrow builders, and DynamicMessage alone. ``python -m benchmarks.protobuf_reflect``
(needs cargo; the build goes to the temporary directory, nothing in the tree).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2

from benchmarks import serde_cases
from serdes.arrow._native_protobuf import program
from serdes.protobuf import ProtobufSerializer

CRATE = Path(__file__).parent / "protobuf_reflect" / "Cargo.toml"


def write_inputs(out: Path, count: int = 20_000) -> str:
    """The bodies, descriptor set and program of the standard record in ``out``; its full name."""
    cls = serde_cases.proto_classes()["standard"]
    ctx = SerializationContext("protobuf-reflect", MessageField.VALUE)
    ser = ProtobufSerializer(cls, SchemaRegistryClient.new_client({"url": "mock://protobuf-reflect"}),
                             {"use.deprecated.format": False})
    with open(out / "bodies.bin", "wb") as f:
        for r in serde_cases.records("protobuf", "standard", count):
            frame = ser(r, ctx)
            head = 6 if frame[5] == 0 else 6 + frame[5] // 2  # magic, id, message indexes
            f.write((len(frame) - head).to_bytes(4, "little") + frame[head:])
    files = descriptor_pb2.FileDescriptorSet()
    for fd in (*cls.DESCRIPTOR.file.dependencies, cls.DESCRIPTOR.file):
        proto = descriptor_pb2.FileDescriptorProto()
        fd.CopyToProto(proto)
        files.file.append(proto)
    (out / "set.bin").write_bytes(files.SerializeToString())
    (out / "program.txt").write_text(repr(program(cls.DESCRIPTOR)[0]))
    return str(cls.DESCRIPTOR.full_name)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        name = write_inputs(Path(tmp))
        libdir = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
                                check=True, capture_output=True, text=True).stdout.strip()
        subprocess.run(["cargo", "run", "-q", "--release", "--manifest-path", str(CRATE), "--target-dir",
                        str(Path(tempfile.gettempdir()) / "serdes-protobuf-reflect"), "--", tmp, name],
                       check=True, env={**os.environ, "LD_LIBRARY_PATH": libdir, "PYO3_PYTHON": sys.executable})


if __name__ == "__main__":
    main()
