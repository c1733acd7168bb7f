"""serdes for PyFlink: Kafka sources/sinks with Schema Registry framing, decoded in Python.

    from serdes import flink as sf

    env = sf.create_env()                          # connector jar + shim + python.executable
    orders = sf.read_kafka(env, bootstrap, "orders", sf.avro(registry_url), bounded=True)
    totals = orders.key_by(lambda o: o["customer"]).map(...)
    sf.write_kafka(totals, bootstrap, "totals", sf.avro_serializer(registry_url, SCHEMA))
    env.execute("orders")

See docs/flink.md.
"""

from .._errors import (
    ConnectorJarError,
    PackedRecordError,
    FlinkJobError,
    JobGraphError,
    KeyFieldMismatchError,
    PyFlinkAPIError,
    RecordDecodeError,
    StateSchemaIncompatibleError,
    StrictTypeError,
    ThreadModeError,
)
from ._codecs import (
    SerdeSpec,
    avro,
    avro_serializer,
    custom,
    json_schema,
    json_serializer,
    protobuf,
    protobuf_serializer,
    resolve_class,
)
from ._debezium import METADATA_COLUMNS, DebeziumDecodeFunction, debezium_row_type, read_debezium
from ._env import DEFAULT_BUNDLE_SIZE, configure, create_env, from_sequence
from ._execute import execute, find_record_error
from ._jars import CONNECTOR_VERSION, fetch_connector_jar, kafka_connector_jar
from ._kafka import (
    DEAD_LETTER_ROW_TYPE,
    DEAD_LETTER_TAG,
    PRODUCER_ROW_TYPE,
    RECORD_ROW_TYPE,
    DeadLetterToProducerRow,
    DecodeFunction,
    EncodeFunction,
    FlinkSerializationContext,
    KafkaRecord,
    dead_letters,
    kafka_record_sink,
    kafka_record_source,
    read_kafka,
    read_records,
    write_dead_letters,
    write_kafka,
)
from ._keyed import KafkaKeyedProcess, KafkaKeyedStream, read_kafka_keyed
from ._rows import (
    avro_row_converter,
    avro_row_type_info,
    avro_type_info,
    json_schema_row_converter,
    json_schema_row_type_info,
)
from ._savepoints import stop_with_savepoint, trigger_savepoint
from ._shim import shim_jar
from ._types import (
    BytesCodecTypeInfo,
    CodecValueState,
    DynamicProtobufTypeInformation,
    KeyedTypedStream,
    ProtobufTypeInformation,
    ProtobufValueStateDescriptor,
    TypedStream,
    get_typed_state,
)


# pickled by name: PyFlink ships these to its workers, and a pickle names the package
# (``_pickling.py``), so the package holds them too; not part of the API
from ._decode import DecodingFunction as DecodingFunction  # noqa: E402
from ._encode import PackedEncodeFunction as PackedEncodeFunction  # noqa: E402
from ._keyed import KeyByDecodedField as KeyByDecodedField  # noqa: E402
from ._kafka import _Compose as _Compose  # noqa: E402
from ._types import (  # noqa: E402
    _Delegating as _Delegating,
    _DescriptorDecoder as _DescriptorDecoder,
    _FilterWrapper as _FilterWrapper,
    _FlatMapWrapper as _FlatMapWrapper,
    _identity as _identity,
    _KeyedProcessWrapper as _KeyedProcessWrapper,
    _KeySelectorWrapper as _KeySelectorWrapper,
    _MapWrapper as _MapWrapper,
    _ProcessWrapper as _ProcessWrapper,
)

__all__ = [
    # environment and jars
    "configure", "create_env", "from_sequence", "execute", "DEFAULT_BUNDLE_SIZE",
    "CONNECTOR_VERSION", "fetch_connector_jar", "kafka_connector_jar", "shim_jar",
    # serializer recipes
    "SerdeSpec", "avro", "avro_serializer", "custom", "json_schema", "json_serializer", "protobuf",
    "protobuf_serializer", "resolve_class",
    # Kafka sources, sinks and their operators
    "read_kafka", "read_records", "write_kafka", "write_dead_letters", "dead_letters", "kafka_record_source",
    "kafka_record_sink", "DecodeFunction", "EncodeFunction", "DeadLetterToProducerRow", "KafkaRecord",
    "FlinkSerializationContext", "RECORD_ROW_TYPE", "PRODUCER_ROW_TYPE", "DEAD_LETTER_ROW_TYPE", "DEAD_LETTER_TAG",
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
