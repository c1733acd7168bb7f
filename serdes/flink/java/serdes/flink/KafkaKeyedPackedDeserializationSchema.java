package serdes.flink;

import java.nio.charset.StandardCharsets;

import org.apache.flink.api.common.typeinfo.BasicTypeInfo;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.kafka.shaded.org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

/**
 * Emits Row(key STRING, record BYTES): the Kafka record key selected in Java, so a Python
 * keyed operator can follow the hash shuffle directly (PyFlink's keyed operators read the key
 * from field 0 of their input row) with no Python operator in front of it, and the whole record packed
 * ({@link PackedRecords}).
 *
 * <p>The key is the record key's bytes as a String, so that it hashes by content
 * (a byte[] key would hash by identity): {@code "utf8"} decodes them as UTF-8 text, {@code "raw"}
 * maps every byte to one ISO-8859-1 char (lossless for any bytes). A null key becomes the empty
 * string (the record's own key stays null).
 */
public class KafkaKeyedPackedDeserializationSchema
        implements KafkaRecordDeserializationSchema<Row> {
    private static final long serialVersionUID = 1L;
    private final boolean raw;

    public KafkaKeyedPackedDeserializationSchema(String keyEncoding) {
        if ("raw".equals(keyEncoding)) {
            raw = true;
        } else if ("utf8".equals(keyEncoding)) {
            raw = false;
        } else {
            throw new IllegalArgumentException("key encoding must be 'utf8' or 'raw', not " + keyEncoding);
        }
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
        byte[] k = record.key();
        String key = k == null ? "" : new String(k, raw ? StandardCharsets.ISO_8859_1 : StandardCharsets.UTF_8);
        out.collect(Row.of(key, PackedRecords.pack(record)));
    }

    @Override
    public TypeInformation<Row> getProducedType() {
        return rowType();
    }
}
