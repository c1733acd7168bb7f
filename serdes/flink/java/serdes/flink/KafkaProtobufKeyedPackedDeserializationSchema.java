package serdes.flink;

import java.util.Iterator;

import org.apache.flink.api.common.typeinfo.BasicTypeInfo;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.kafka.shaded.org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.flink.kafka.shaded.org.apache.kafka.common.header.Header;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

/**
 * Emits Row(key, record BYTES) like {@link KafkaKeyedPackedDeserializationSchema}, with the key
 * read from a top-level field of the Protobuf record value ({@link ProtobufKeyField}) instead of the
 * Kafka record key: a value-keyed job with no Python operator before the shuffle.
 *
 * <p>The key is a String (string fields) or a Long (integer fields). A value it cannot read, and a
 * tombstone, get the field's default key ("" or 0): the Python keyed operator decodes every record
 * and checks its key, so such a record fails (or is dead-lettered or skipped) there, by the job's
 * {@code on_error}, and never runs the user's function under a wrong key.
 */
public class KafkaProtobufKeyedPackedDeserializationSchema
        implements KafkaRecordDeserializationSchema<Row> {
    private static final long serialVersionUID = 1L;
    private static final String VALUE_SCHEMA_ID_HEADER = "__value_schema_id";
    private final int fieldNumber;
    private final int kind;
    private transient ProtobufKeyField reader;

    public KafkaProtobufKeyedPackedDeserializationSchema(int fieldNumber, String kind) {
        this.fieldNumber = fieldNumber;
        this.kind = ProtobufKeyField.kind(kind);
        if (this.kind < 0) {
            throw new IllegalArgumentException(
                    "key kind must be one of " + String.join(", ", ProtobufKeyField.KIND_NAMES) + ", not " + kind);
        }
        new ProtobufKeyField(fieldNumber, this.kind); // checks the field number now, on the client
    }

    public static RowTypeInfo rowType(String kind) {
        TypeInformation<?> key = "string".equals(kind) ? BasicTypeInfo.STRING_TYPE_INFO : BasicTypeInfo.LONG_TYPE_INFO;
        return new RowTypeInfo(
                new TypeInformation<?>[] {key, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO},
                new String[] {"key", "record"});
    }

    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Row> out) {
        if (reader == null) {
            reader = new ProtobufKeyField(fieldNumber, kind);
        }
        // header framing as the Python deserializers see it: the first such header, with a value
        // (a null value is no header: the schema id is in the payload's prefix)
        Iterator<Header> found = record.headers().headers(VALUE_SCHEMA_ID_HEADER).iterator();
        boolean headerFramed = found.hasNext() && found.next().value() != null;
        Object key = reader.read(record.value(), headerFramed);
        if (key == null) {
            key = kind == ProtobufKeyField.STRING ? "" : (Object) Long.valueOf(0L);
        }
        out.collect(Row.of(key, PackedRecords.pack(record)));
    }

    @Override
    public TypeInformation<Row> getProducedType() {
        return rowType(ProtobufKeyField.KIND_NAMES[kind]);
    }
}
