package serdes.flink;

import org.apache.flink.api.common.typeinfo.BasicTypeInfo;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.kafka.shaded.org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

/**
 * Emits Row(key STRING, record BYTES): the Kafka record key selected in Java (as in
 * {@link KafkaKeyedRowDeserializationSchema}: {@code "utf8"} or {@code "raw"} latin-1, null = "")
 * and the whole record packed ({@link PackedRecords}), for a keyed Python operator right after
 * the hash shuffle.
 */
public class KafkaKeyedPackedDeserializationSchema implements KafkaRecordDeserializationSchema<Row> {
    private static final long serialVersionUID = 1L;
    private final boolean raw;

    public KafkaKeyedPackedDeserializationSchema(String keyEncoding) {
        raw = KafkaKeyedRowDeserializationSchema.isRaw(keyEncoding);
    }

    public static RowTypeInfo rowType() {
        return new RowTypeInfo(
                new TypeInformation<?>[] {
                    BasicTypeInfo.STRING_TYPE_INFO, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO
                },
                new String[] {"key", "record"});
    }

    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Row> out) {
        out.collect(Row.of(KafkaKeyedRowDeserializationSchema.key(record.key(), raw), PackedRecords.pack(record)));
    }

    @Override
    public TypeInformation<Row> getProducedType() {
        return rowType();
    }
}
