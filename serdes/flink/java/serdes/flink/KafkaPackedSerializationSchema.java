package serdes.flink;

import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.kafka.shaded.org.apache.kafka.clients.producer.ProducerRecord;

/** Writes packed producer records ({@link PackedRecords}); topic -1 = the default topic. */
public class KafkaPackedSerializationSchema implements KafkaRecordSerializationSchema<byte[]> {
    private static final long serialVersionUID = 1L;
    private final String defaultTopic;

    public KafkaPackedSerializationSchema(String defaultTopic) {
        this.defaultTopic = defaultTopic;
    }

    @Override
    public ProducerRecord<byte[], byte[]> serialize(byte[] packed, KafkaSinkContext context, Long timestamp) {
        return PackedRecords.unpack(packed, defaultTopic, timestamp);
    }
}
