"""serdes for PyFlink: Kafka sources/sinks with Schema Registry framing, decoded in Python.

    from serdes import flink as sf

    env = sf.create_env()                          # connector jar + shim + python.executable
    orders = sf.read_kafka(env, bootstrap, "orders", sf.avro(registry_url), bounded=True)
    totals = orders.key_by(lambda o: o["customer"]).map(...)
    sf.write_kafka(totals, bootstrap, "totals", sf.avro_serializer(registry_url, SCHEMA))
    env.execute("orders")

See docs/flink.md.
"""

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
from ._env import DEFAULT_BUNDLE_SIZE, configure, create_env, from_sequence
from ._jars import (
    CONNECTOR_VERSION,
    ConnectorJarError,
    fetch_connector_jar,
    kafka_connector_jar,
)
from ._kafka import (
    DEAD_LETTER_ROW_TYPE,
    DEAD_LETTER_TAG,
    DeadLetterToProducerRow,
    PRODUCER_ROW_TYPE,
    RECORD_ROW_TYPE,
    DecodeFunction,
    EncodeFunction,
    FlinkSerializationContext,
    KafkaRecord,
    RecordDecodeError,
    dead_letters,
    kafka_record_sink,
    kafka_record_source,
    read_kafka,
    read_records,
    write_dead_letters,
    write_kafka,
)
from ._graph import JobGraphError, StrictTypeError, ThreadModeError
from ._keyed import KafkaKeyedProcess, KafkaKeyedStream, read_kafka_keyed
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

from ._state import StateSchemaIncompatibleError
from ._savepoints import stop_with_savepoint, trigger_savepoint
from ._pyflink import PyFlinkAPIError

__all__ = [name for name in dir() if not name.startswith("_")]
from ._execute import FlinkJobError, execute, find_record_error  # noqa: E402
__all__ += ["FlinkJobError", "execute", "find_record_error"]
from ._rows import (  # noqa: E402
    avro_row_converter,
    avro_row_type_info,
    avro_type_info,
    json_schema_row_converter,
    json_schema_row_type_info,
)
__all__ += ["avro_row_converter", "avro_row_type_info", "avro_type_info",
            "json_schema_row_converter", "json_schema_row_type_info"]
from ._debezium import (  # noqa: E402
    METADATA_COLUMNS,
    DebeziumDecodeFunction,
    debezium_row_type,
    read_debezium,
)
__all__ += ["METADATA_COLUMNS", "DebeziumDecodeFunction", "debezium_row_type", "read_debezium"]
