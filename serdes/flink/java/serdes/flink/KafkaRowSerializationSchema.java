package serdes.flink;

import java.util.Map;

import org.apache.flink.api.common.typeinfo.BasicTypeInfo;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.MapTypeInfo;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.kafka.shaded.org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.flink.kafka.shaded.org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.flink.kafka.shaded.org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.flink.types.Row;

/**
 * Writes Row(topic STRING, key BYTES, value BYTES, headers MAP&lt;STRING, BYTES&gt;) as a Kafka
 * record. A null topic falls back to the default topic given at construction.
 */
public class KafkaRowSerializationSchema implements KafkaRecordSerializationSchema<Row> {
    private static final long serialVersionUID = 1L;
    private final String defaultTopic;

    public KafkaRowSerializationSchema(String defaultTopic) {
        this.defaultTopic = defaultTopic;
    }

    public static RowTypeInfo rowType() {
        return new RowTypeInfo(
                new TypeInformation<?>[] {
                    BasicTypeInfo.STRING_TYPE_INFO,
                    PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO,
                    PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO,
                    new MapTypeInfo<>(
                            BasicTypeInfo.STRING_TYPE_INFO,
                            PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO)
                },
                new String[] {"topic", "key", "value", "headers"});
    }

    @Override
    @SuppressWarnings("unchecked")
    public ProducerRecord<byte[], byte[]> serialize(
            Row row, KafkaSinkContext context, Long timestamp) {
        String topic = (String) row.getField(0);
        if (topic == null) {
            topic = defaultTopic;
        }
        if (topic == null) {
            throw new IllegalArgumentException("record has no topic and the sink has no default topic");
        }
        Map<String, byte[]> headers = (Map<String, byte[]>) row.getField(3);
        RecordHeaders recordHeaders = new RecordHeaders();
        if (headers != null) {
            for (Map.Entry<String, byte[]> e : headers.entrySet()) {
                recordHeaders.add(new RecordHeader(e.getKey(), e.getValue()));
            }
        }
        return new ProducerRecord<>(
                topic, null, timestamp, (byte[]) row.getField(1), (byte[]) row.getField(2), recordHeaders);
    }
}
