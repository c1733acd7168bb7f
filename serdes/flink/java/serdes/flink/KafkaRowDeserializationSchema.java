package serdes.flink;

import java.util.HashMap;
import java.util.Map;

import org.apache.flink.api.common.typeinfo.BasicTypeInfo;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.MapTypeInfo;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.kafka.shaded.org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

/**
 * Emits every Kafka record unchanged as
 * Row(topic STRING, partition INT, offset BIGINT, timestamp BIGINT, key BYTES, value BYTES,
 *     headers MAP&lt;STRING, BYTES&gt;) so that the Python side sees coordinates and headers.
 * (Duplicate header keys: the first occurrence wins, like confluent-kafka's header lookup; a null
 * header value stays null, as in a plain consumer's header list.)
 */
public class KafkaRowDeserializationSchema implements KafkaRecordDeserializationSchema<Row> {
    private static final long serialVersionUID = 1L;

    public static RowTypeInfo rowType() {
        return new RowTypeInfo(
                new TypeInformation<?>[] {
                    BasicTypeInfo.STRING_TYPE_INFO,
                    BasicTypeInfo.INT_TYPE_INFO,
                    BasicTypeInfo.LONG_TYPE_INFO,
                    BasicTypeInfo.LONG_TYPE_INFO,
                    PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO,
                    PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO,
                    new MapTypeInfo<>(
                            BasicTypeInfo.STRING_TYPE_INFO,
                            PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO)
                },
                new String[] {"topic", "partition", "offset", "timestamp", "key", "value", "headers"});
    }

    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Row> out) {
        out.collect(toRow(record));
    }

    /** The record as Row(topic, partition, offset, timestamp, key, value, headers). */
    public static Row toRow(ConsumerRecord<byte[], byte[]> record) {
        Map<String, byte[]> headers = PackedRecords.firstHeaders(record, new HashMap<>());
        return Row.of(
                record.topic(),
                record.partition(),
                record.offset(),
                record.timestamp(),
                record.key(),
                record.value(),
                headers);
    }

    @Override
    public TypeInformation<Row> getProducedType() {
        return rowType();
    }
}
