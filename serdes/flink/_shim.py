"""Compile the tiny Java shim (``serdes/flink/java``) with ``javac`` at first use.

The shim's classes are compiled against the Kafka connector jar and PyFlink's own
``flink-dist`` jar:

* ``serdes.flink.KafkaRowDeserializationSchema`` - KafkaRecordDeserializationSchema that
  emits ``Row(topic, partition, offset, timestamp, key, value, headers)``; PyFlink's
  value-only ``ByteArraySchema`` would drop coordinates and headers.
* ``serdes.flink.KafkaRowSerializationSchema`` - KafkaRecordSerializationSchema writing
  ``Row(topic, key, value, headers)`` (key + value + header framing in one sink).
* ``serdes.flink.KafkaPackedDeserializationSchema`` / ``KafkaKeyedPackedDeserializationSchema`` /
  ``KafkaPackedSerializationSchema`` - the same records packed into one ``byte[]``
  (``serdes.flink.PackedRecords``, ``_packed.py``) for the keyed operators (``read_kafka_keyed``,
  ``process_to_kafka``); the keyed one emits ``Row(key, packed record)`` with the Kafka record key
  as a String, so a keyed Python operator follows the shuffle directly;
  ``KafkaProtobufKeyedPackedDeserializationSchema`` keys by a top-level field of a Protobuf value
  instead (``serdes.flink.ProtobufKeyField``: ``read_kafka_keyed(key_by="field")``).

The jar is cached next to the connector jar, keyed by a hash of the sources and the
connector/flink versions, so compilation (~3 s) happens once per machine.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from .._errors import ConnectorJarError
from .._mvn import cache_dir
from ._jars import CONNECTOR_VERSION, kafka_connector_jar

JAVA_SRC = Path(__file__).parent / "java"
DESERIALIZER_CLASS = "serdes.flink.KafkaRowDeserializationSchema"
SERIALIZER_CLASS = "serdes.flink.KafkaRowSerializationSchema"
PACKED_DESERIALIZER_CLASS = "serdes.flink.KafkaPackedDeserializationSchema"
KEYED_PACKED_DESERIALIZER_CLASS = "serdes.flink.KafkaKeyedPackedDeserializationSchema"
PACKED_SERIALIZER_CLASS = "serdes.flink.KafkaPackedSerializationSchema"
PROTOBUF_KEYED_PACKED_DESERIALIZER_CLASS = "serdes.flink.KafkaProtobufKeyedPackedDeserializationSchema"


def _pyflink_lib() -> Path:
    import pyflink

    return Path(pyflink.__file__).parent / "lib"


def _sources() -> list[Path]:
    return sorted(JAVA_SRC.rglob("*.java"))


def shim_hash(connector_name: str) -> str:
    h = hashlib.sha256()
    for src in _sources():
        h.update(src.name.encode())
        h.update(src.read_bytes())
    h.update(connector_name.encode())
    import pyflink.version

    h.update(pyflink.version.__version__.encode())
    return h.hexdigest()[:16]


def shim_jar(connector_jar: str | os.PathLike[str] | None = None) -> Path:
    """Return the compiled shim jar: cached, else compiled now with ``javac`` (about 3 s, once).

    No jar ships in the package (jars are built or fetched into the cache, never committed), so a
    machine needs a JDK's ``javac`` the first time.
    """
    connector = Path(connector_jar) if connector_jar else kafka_connector_jar()
    name = f"serdes-flink-shim-{shim_hash(connector.name)}.jar"
    out = cache_dir() / "serdes-flink-shim" / name
    if out.is_file():
        return out
    javac = shutil.which("javac")
    if javac is None:
        raise ConnectorJarError(
            "`javac` (a JDK 17+) is needed once to compile serdes' Kafka record shim "
            f"(cached at {out}); install openjdk-17-jdk-headless."
        )
    classpath = [str(connector)] + [str(p) for p in sorted(_pyflink_lib().glob("flink-dist*.jar"))]
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="serdes-shim-") as tmp:
        cmd = [javac, "--release", "17", "-nowarn", "-d", tmp, "-cp", os.pathsep.join(classpath)]
        cmd += [str(s) for s in _sources()]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ConnectorJarError(
                f"javac failed compiling the serdes Flink shim against {connector}:\n{proc.stderr}"
            )
        part = out.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: serdes\n\n")
            for cls in Path(tmp).rglob("*.class"):
                zf.write(cls, cls.relative_to(tmp).as_posix())
        os.replace(part, out)
    return out


__all__ = ["shim_jar", "DESERIALIZER_CLASS", "SERIALIZER_CLASS", "PACKED_DESERIALIZER_CLASS",
           "KEYED_PACKED_DESERIALIZER_CLASS", "PACKED_SERIALIZER_CLASS",
           "PROTOBUF_KEYED_PACKED_DESERIALIZER_CLASS", "CONNECTOR_VERSION"]
