"""serdes for PyFlink: Kafka sources/sinks with Schema Registry framing, decoded in Python.

    from serdes import flink as sf

    env = sf.create_env()                          # connector jar + shim + python.executable
    orders = sf.read_kafka(env, bootstrap, "orders", sf.avro(registry_url), bounded=True)
    totals = orders.key_by(lambda o: o["customer"]).map(...)
    sf.write_kafka(totals, bootstrap, "totals", sf.avro_serializer(registry_url, SCHEMA))
    env.execute("orders")

See docs/flink.md.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any, Dict, List, Tuple

# serdes._errors is a core module, imported by the core package ``serdes`` (which Python imports
# before this package) and importing nothing of serdes.flink: no import lock here can wait on it
from .._errors import (
    ConnectorJarError,
    FlinkJobError,
    JobGraphError,
    KeyFieldMismatchError,
    PackedRecordError,
    PyFlinkAPIError,
    RecordDecodeError,
    StateSchemaIncompatibleError,
    StrictTypeError,
    ThreadModeError,
)

# The package imports its submodules on first use of one of their names (PEP 562), never while
# it is itself being imported: a PyFlink worker imports serdes.flink and its submodules on several
# threads at once, and an ``__init__`` holding the package's import lock while it waited for a
# submodule's deadlocked against a thread holding that submodule's lock and waiting for the
# package (tests/unit/test_flink_imports.py). Each name comes from the module that defines it.
# The table holds the API (``__all__``) and, besides, every class a pickle names as
# ``serdes.flink.<name>`` (``_pickling.py``): unpickling must resolve those here, but they are not
# API and stay out of ``__all__`` (tests/unit/test_flink_imports.py checks that nothing else is here).
_NAMES: Dict[str, Tuple[str, ...]] = {
    "_codecs": ("SerdeSpec", "avro", "avro_serializer", "custom", "json_schema", "json_serializer", "protobuf",
                "protobuf_serializer"),
    "_connectors": ("kafka_record_sink", "kafka_record_source"),
    "_debezium": ("METADATA_COLUMNS", "DebeziumDecodeFunction", "debezium_row_type", "read_debezium"),
    "_decode": ("DecodeFunction", "DecodingFunction"),
    "_descriptor_codec": ("_DescriptorDecoder",),
    "_encode": ("DeadLetterToProducerRow", "EncodeFunction", "PackedEncodeFunction"),
    "_env": ("DEFAULT_BUNDLE_SIZE", "configure", "create_env"),
    "_execute": ("execute", "find_record_error"),
    "_jars": ("CONNECTOR_VERSION", "kafka_connector_jar"),
    "_kafka": ("dead_letters", "read_kafka", "read_records", "write_dead_letters", "write_kafka", "_Compose"),
    "_keyed": ("KafkaKeyedProcess", "KafkaKeyedStream", "read_kafka_keyed", "KeyByDecodedField"),
    "_records": ("DEAD_LETTER_ROW_TYPE", "DEAD_LETTER_TAG", "PRODUCER_ROW_TYPE", "RECORD_ROW_TYPE",
                 "FlinkSerializationContext", "KafkaRecord"),
    "_rows": ("avro_row_converter", "avro_row_type_info", "avro_type_info", "json_schema_row_converter",
              "json_schema_row_type_info"),
    "_savepoints": ("stop_with_savepoint", "trigger_savepoint"),
    "_shim": ("shim_jar",),
    "_typed_state": ("CodecValueState", "ProtobufValueStateDescriptor", "get_typed_state"),
    "_typed_stream": ("KeyedTypedStream", "TypedStream"),
    "_typeinfo": ("BytesCodecTypeInfo", "DynamicProtobufTypeInformation", "ProtobufTypeInformation"),
    # pickled by name: PyFlink ships these to its workers, and a pickle names the package
    # (``_pickling.py``), so the package resolves them too; not part of the API
    "_wrappers": ("_Delegating", "_FilterWrapper", "_FlatMapWrapper", "_identity", "_KeyedProcessWrapper",
                  "_KeySelectorWrapper", "_MapWrapper", "_ProcessWrapper"),
}
#: name -> the submodule (of this package) that defines it
_SUBMODULE: Dict[str, str] = {name: module for module, names in _NAMES.items() for name in names}

if TYPE_CHECKING:  # what the names are, for type checkers and IDEs (the same table as _NAMES)
    from ._codecs import (
        SerdeSpec,
        avro,
        avro_serializer,
        custom,
        json_schema,
        json_serializer,
        protobuf,
        protobuf_serializer,
    )
    from ._connectors import kafka_record_sink, kafka_record_source
    from ._debezium import METADATA_COLUMNS, DebeziumDecodeFunction, debezium_row_type, read_debezium
    from ._decode import DecodeFunction, DecodingFunction as DecodingFunction
    from ._descriptor_codec import _DescriptorDecoder as _DescriptorDecoder
    from ._encode import DeadLetterToProducerRow, EncodeFunction, PackedEncodeFunction as PackedEncodeFunction
    from ._env import DEFAULT_BUNDLE_SIZE, configure, create_env
    from ._execute import execute, find_record_error
    from ._jars import CONNECTOR_VERSION, kafka_connector_jar
    from ._kafka import _Compose as _Compose, dead_letters, read_kafka, read_records, write_dead_letters, write_kafka
    from ._keyed import KafkaKeyedProcess, KafkaKeyedStream, KeyByDecodedField as KeyByDecodedField, read_kafka_keyed
    from ._records import (
        DEAD_LETTER_ROW_TYPE,
        DEAD_LETTER_TAG,
        PRODUCER_ROW_TYPE,
        RECORD_ROW_TYPE,
        FlinkSerializationContext as FlinkSerializationContext,
        KafkaRecord,
    )
    from ._rows import (
        avro_row_converter,
        avro_row_type_info,
        avro_type_info,
        json_schema_row_converter,
        json_schema_row_type_info,
    )
    from ._savepoints import stop_with_savepoint, trigger_savepoint
    from ._shim import shim_jar
    from ._typed_state import CodecValueState, ProtobufValueStateDescriptor, get_typed_state
    from ._typed_stream import KeyedTypedStream, TypedStream
    from ._typeinfo import BytesCodecTypeInfo, DynamicProtobufTypeInformation, ProtobufTypeInformation
    from ._wrappers import (
        _Delegating as _Delegating,
        _FilterWrapper as _FilterWrapper,
        _FlatMapWrapper as _FlatMapWrapper,
        _identity as _identity,
        _KeyedProcessWrapper as _KeyedProcessWrapper,
        _KeySelectorWrapper as _KeySelectorWrapper,
        _MapWrapper as _MapWrapper,
        _ProcessWrapper as _ProcessWrapper,
    )

if importlib.util.find_spec("pyflink") is None:  # as when the submodules were imported here
    raise ModuleNotFoundError("serdes.flink needs PyFlink: pip install 'serdes[flink]'", name="pyflink")


def __getattr__(name: str) -> Any:
    module = _SUBMODULE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_SUBMODULE))


__all__ = [
    # environment and jars
    "configure", "create_env", "execute", "DEFAULT_BUNDLE_SIZE",
    "CONNECTOR_VERSION", "kafka_connector_jar", "shim_jar",
    # serializer recipes
    "SerdeSpec", "avro", "avro_serializer", "custom", "json_schema", "json_serializer", "protobuf",
    "protobuf_serializer",
    # Kafka sources, sinks and their operators
    "read_kafka", "read_records", "write_kafka", "write_dead_letters", "dead_letters", "kafka_record_source",
    "kafka_record_sink", "DecodeFunction", "EncodeFunction", "DeadLetterToProducerRow", "KafkaRecord",
    "RECORD_ROW_TYPE", "PRODUCER_ROW_TYPE", "DEAD_LETTER_ROW_TYPE", "DEAD_LETTER_TAG",
    # keyed jobs
    "read_kafka_keyed", "KafkaKeyedStream", "KafkaKeyedProcess",
    # typed streams and state
    "BytesCodecTypeInfo", "ProtobufTypeInformation", "DynamicProtobufTypeInformation", "TypedStream",
    "KeyedTypedStream", "ProtobufValueStateDescriptor", "CodecValueState", "get_typed_state",
    "stop_with_savepoint", "trigger_savepoint",
    # Table API rows and Debezium changelogs
    "avro_row_converter", "avro_row_type_info", "avro_type_info", "json_schema_row_converter",
    "json_schema_row_type_info", "read_debezium", "debezium_row_type", "DebeziumDecodeFunction", "METADATA_COLUMNS",
    # errors
    "RecordDecodeError", "StateSchemaIncompatibleError", "FlinkJobError", "find_record_error", "ConnectorJarError",
    "PackedRecordError", "KeyFieldMismatchError",
    "JobGraphError", "StrictTypeError", "ThreadModeError", "PyFlinkAPIError",
]
