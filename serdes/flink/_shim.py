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

A wheel carries the jar, compiled when the package was built (``setup.py``) and recorded with what
it was compiled from: it is used when that matches (these sources, the connector's version by
its file name, PyFlink's version), with no ``javac``. Otherwise (a source checkout, a build machine
without a JDK or Maven, another connector) the jar is compiled at first use and cached, keyed by a
hash of the sources and the connector/flink versions, so compilation (~3 s) happens once per
machine.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path

from .._errors import ConnectorJarError
from .._mvn import cache_dir
from ._jars import CONNECTOR_VERSION, kafka_connector_jar
from ._shim_build import JAVA_DIR, PACKAGED_JAR_NAME, compile_jar, connector_jar_name, read_build_info, sources_hash

_log = logging.getLogger(__name__)

JAVA_SRC = JAVA_DIR
#: the jar the package build ships (absent in a source checkout)
PACKAGED_JAR = Path(__file__).parent / PACKAGED_JAR_NAME
DESERIALIZER_CLASS = "serdes.flink.KafkaRowDeserializationSchema"
SERIALIZER_CLASS = "serdes.flink.KafkaRowSerializationSchema"
PACKED_DESERIALIZER_CLASS = "serdes.flink.KafkaPackedDeserializationSchema"
KEYED_PACKED_DESERIALIZER_CLASS = "serdes.flink.KafkaKeyedPackedDeserializationSchema"
PACKED_SERIALIZER_CLASS = "serdes.flink.KafkaPackedSerializationSchema"
PROTOBUF_KEYED_PACKED_DESERIALIZER_CLASS = "serdes.flink.KafkaProtobufKeyedPackedDeserializationSchema"


def _pyflink_lib() -> Path:
    import pyflink

    return Path(pyflink.__file__).parent / "lib"


def _pyflink_version() -> str:
    import pyflink.version

    return str(pyflink.version.__version__)


def shim_hash(connector_name: str) -> str:
    """The cache key of a shim compiled here: sources, connector jar name, PyFlink version."""
    h = hashlib.sha256()
    for part in (sources_hash(JAVA_SRC), connector_name, _pyflink_version()):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def packaged_shim_jar(connector_name: str, jar: Path | None = None) -> Path | None:
    """The jar the package build shipped (``jar``: default :data:`PACKAGED_JAR`) if it was built
    from these sources, for the connector named ``connector_name`` and this PyFlink; else ``None``."""
    jar = PACKAGED_JAR if jar is None else jar
    if not jar.is_file():
        return None
    info = read_build_info(jar) or {}
    wanted = {"sources": sources_hash(JAVA_SRC), "flink": _pyflink_version()}
    found = {k: info.get(k) for k in wanted}
    built_for = connector_jar_name(info.get("connector", "?"))
    if found != wanted or built_for != connector_name:
        _log.info("not using the packaged shim %s: built from %s for %s, needed %s for %s",
                  jar, found, built_for, wanted, connector_name)
        return None
    return jar


def shim_jar(connector_jar: str | os.PathLike[str] | None = None) -> Path:
    """Return the shim jar: the one the wheel ships when it matches (see :func:`packaged_shim_jar`),
    else one cached, else compiled now with ``javac`` (about 3 s, once).

    Without a matching packaged jar (a source checkout, a package built without a JDK or Maven,
    another connector version) a machine needs a JDK's ``javac`` the first time.
    """
    connector = Path(connector_jar) if connector_jar else kafka_connector_jar()
    packaged = packaged_shim_jar(connector.name)
    if packaged is not None:
        return packaged
    name = f"serdes-flink-shim-{shim_hash(connector.name)}.jar"
    out = cache_dir() / "serdes-flink-shim" / name
    if out.is_file():
        return out
    javac = shutil.which("javac")
    if javac is None:
        raise ConnectorJarError(
            "`javac` (a JDK 17+) is needed once to compile serdes' Kafka record shim "
            f"(cached at {out}): this serdes ships no shim jar built for {connector.name} and "
            f"PyFlink {_pyflink_version()}; install openjdk-17-jdk-headless."
        )
    if not connector.is_file():
        raise ConnectorJarError(f"compiling serdes' Kafka record shim needs the connector jar locally: {connector}")
    classpath = [str(connector)] + [str(p) for p in sorted(_pyflink_lib().glob("flink-dist*.jar"))]
    try:
        compile_jar(javac, classpath, out, java_dir=JAVA_SRC)
    except RuntimeError as exc:
        raise ConnectorJarError(f"javac failed compiling the serdes Flink shim against {connector}:\n{exc}") from None
    return out


__all__ = ["shim_jar", "DESERIALIZER_CLASS", "SERIALIZER_CLASS", "PACKED_DESERIALIZER_CLASS",
           "KEYED_PACKED_DESERIALIZER_CLASS", "PACKED_SERIALIZER_CLASS",
           "PROTOBUF_KEYED_PACKED_DESERIALIZER_CLASS", "CONNECTOR_VERSION"]
