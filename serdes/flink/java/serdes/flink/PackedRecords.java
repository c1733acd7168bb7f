package serdes.flink;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.flink.kafka.shaded.org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.flink.kafka.shaded.org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.flink.kafka.shaded.org.apache.kafka.common.header.Header;
import org.apache.flink.kafka.shaded.org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.flink.kafka.shaded.org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The packed records serdes' keyed operators exchange with the JVM: one {@code byte[]} per Kafka
 * record instead of a nested {@code Row} (PyFlink builds a Python {@code Row} object per row and
 * field map, which was the largest single cost of a keyed record in the Python worker).
 *
 * <p>Layout, big-endian (the Python side is {@code serdes/flink/_packed.py}; both must change
 * together, and the shim jar is cached by a hash of these sources, so they do):
 *
 * <pre>
 * consumer record: int32 partition | int64 offset | int64 timestamp | int32 topicLen
 *                  | int32 keyLen (-1 = null) | int32 valueLen (-1 = null) | int32 headerCount (-1 = none)
 *                  | topic (UTF-8) | key | value | headers
 * producer record: int32 topicLen (-1 = the sink's default topic) | int32 keyLen (-1 = null)
 *                  | int32 valueLen (-1 = null) | int32 headerCount (-1 = none) | topic | key | value | headers
 * headers:         (int32 nameLen | name (UTF-8) | int32 valueLen (-1 = null) | value) * headerCount
 * </pre>
 *
 * <p>Consumer headers are deduplicated here, the first occurrence of a name winning and a null value
 * staying null (valueLen -1), exactly like the row shim ({@link KafkaRowDeserializationSchema}) and
 * like a plain confluent-kafka consumer, whose header list holds {@code None} for it.
 */
public final class PackedRecords {
    static final int CONSUMER_HEAD = 36;
    static final int PRODUCER_HEAD = 16;

    private PackedRecords() {}

    /**
     * The record's headers by name, the first occurrence of a name winning (confluent-kafka's
     * lookup), a null value kept as null; {@code null} when the record has no headers.
     */
    static Map<String, byte[]> firstHeaders(ConsumerRecord<byte[], byte[]> record, Map<String, byte[]> into) {
        Map<String, byte[]> headers = null;
        for (Header h : record.headers()) {
            if (headers == null) {
                headers = into;
            }
            if (!headers.containsKey(h.key())) {  // not putIfAbsent: that replaces a null value
                headers.put(h.key(), h.value());
            }
        }
        return headers;
    }

    /** A consumer record as one packed {@code byte[]} (layout above). */
    public static byte[] pack(ConsumerRecord<byte[], byte[]> record) {
        byte[] topic = record.topic().getBytes(StandardCharsets.UTF_8);
        byte[] key = record.key();
        byte[] value = record.value();
        Map<String, byte[]> headers = firstHeaders(record, new LinkedHashMap<>());
        byte[][] names = null;
        int size = CONSUMER_HEAD + topic.length + (key == null ? 0 : key.length) + (value == null ? 0 : value.length);
        if (headers != null) {
            names = new byte[headers.size()][];
            int i = 0;
            for (Map.Entry<String, byte[]> e : headers.entrySet()) {
                names[i] = e.getKey().getBytes(StandardCharsets.UTF_8);
                size += 8 + names[i].length + (e.getValue() == null ? 0 : e.getValue().length);
                i++;
            }
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        out.putInt(record.partition()).putLong(record.offset()).putLong(record.timestamp());
        out.putInt(topic.length).putInt(key == null ? -1 : key.length).putInt(value == null ? -1 : value.length);
        out.putInt(headers == null ? -1 : headers.size());
        out.put(topic);
        if (key != null) {
            out.put(key);
        }
        if (value != null) {
            out.put(value);
        }
        if (headers != null) {
            int i = 0;
            for (byte[] v : headers.values()) {
                out.putInt(names[i].length).put(names[i]);
                if (v == null) {
                    out.putInt(-1);
                } else {
                    out.putInt(v.length).put(v);
                }
                i++;
            }
        }
        return out.array();
    }

    /** A packed producer record (layout above) as a Kafka {@code ProducerRecord}. */
    public static ProducerRecord<byte[], byte[]> unpack(byte[] packed, String defaultTopic, Long timestamp) {
        ByteBuffer in = ByteBuffer.wrap(packed);
        int topicLen = in.getInt();
        int keyLen = in.getInt();
        int valueLen = in.getInt();
        int headerCount = in.getInt();
        String topic = defaultTopic;
        if (topicLen >= 0) {
            topic = new String(packed, in.position(), topicLen, StandardCharsets.UTF_8);
            in.position(in.position() + topicLen);
        }
        if (topic == null) {
            throw new IllegalArgumentException("record has no topic and the sink has no default topic");
        }
        byte[] key = take(in, keyLen);
        byte[] value = take(in, valueLen);
        RecordHeaders headers = new RecordHeaders();
        for (int i = 0; i < headerCount; i++) {
            int nameLen = in.getInt();
            String name = new String(packed, in.position(), nameLen, StandardCharsets.UTF_8);
            in.position(in.position() + nameLen);
            headers.add(new RecordHeader(name, take(in, in.getInt())));
        }
        if (in.hasRemaining()) {
            throw new IllegalArgumentException("packed producer record has " + in.remaining() + " trailing bytes");
        }
        return new ProducerRecord<>(topic, null, timestamp, key, value, headers);
    }

    private static byte[] take(ByteBuffer in, int len) {
        if (len < 0) {
            return null;
        }
        if (len > in.remaining()) {  // bounded before allocating
            throw new IllegalArgumentException(
                    "packed producer record: a length of " + len + " with " + in.remaining() + " bytes left");
        }
        byte[] out = new byte[len];
        in.get(out);
        return out;
    }
}
