package serdes.flink;

import java.nio.charset.StandardCharsets;

/**
 * Reads one top-level scalar field of a Confluent-framed Protobuf record value, in Java, so a
 * value-keyed job needs no Python operator before its key shuffle.
 *
 * <p>The value is untrusted bytes: every length and varint is checked against the bytes left
 * before it is used, the message-index count is bounded, group nesting is bounded, and nothing
 * is allocated from a length read from the input except the key string itself (at most the
 * bytes present). Anything it cannot read gives {@code null}; the Python keyed operator then
 * decodes the record and reports it through the job's {@code on_error} policy (see
 * {@code serdes/flink/_keyed.py}: every record's decoded key is checked against the key it was
 * shuffled by).
 *
 * <p>Framing: magic 0 + 4-byte id or magic 1 + 16-byte GUID, then the message indexes; with a
 * {@code __value_schema_id} header the value is the bare payload and the indexes live in the
 * header, so the payload starts at 0. The message indexes are skipped, not checked: like serdes'
 * deserializer with a message class, the payload is read as that class.
 */
public final class ProtobufKeyField {
    /** Key kinds, one per field type: {@code string} (UTF-8), {@code int64}, {@code int32} (the low
     *  32 bits of the varint, as protobuf parsers read it), {@code uint32}, {@code sint64},
     *  {@code sint32} (zigzag). */
    public static final int STRING = 0;
    public static final int INT64 = 1;
    public static final int INT32 = 2;
    public static final int UINT32 = 3;
    public static final int SINT64 = 4;
    public static final int SINT32 = 5;
    static final String[] KIND_NAMES = {"string", "int64", "int32", "uint32", "sint64", "sint32"};

    /** The kind named {@code name} (a protobuf field type), or -1. */
    public static int kind(String name) {
        for (int i = 0; i < KIND_NAMES.length; i++) {
            if (KIND_NAMES[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    static final int MAX_INDEXES = 100_000;
    static final int MAX_GROUP_DEPTH = 100;

    private final int fieldNumber;
    private final int kind;
    private int pos;

    public ProtobufKeyField(int fieldNumber, int kind) {
        if (fieldNumber < 1 || fieldNumber > 536_870_911) {
            throw new IllegalArgumentException("field number out of range: " + fieldNumber);
        }
        if (kind < STRING || kind > SINT32) {
            throw new IllegalArgumentException("unknown key kind " + kind);
        }
        this.fieldNumber = fieldNumber;
        this.kind = kind;
    }

    /** The key of {@code value} (String or Long): the field's last occurrence, the field's default
     *  ("" or 0) when it is absent, {@code null} when the bytes cannot be read. */
    public Object read(byte[] value, boolean headerFramed) {
        if (value == null) {
            return null;
        }
        try {
            pos = headerFramed ? 0 : payloadStart(value);
            return scan(value);
        } catch (Malformed e) {
            return null;
        }
    }

    private int payloadStart(byte[] v) throws Malformed {
        if (v.length < 1) {
            throw Malformed.INSTANCE;
        }
        if (v[0] == 0) {
            pos = 5;
        } else if (v[0] == 1) {
            pos = 17;
        } else {
            throw Malformed.INSTANCE;
        }
        if (pos > v.length) {
            throw Malformed.INSTANCE;
        }
        long count = zigzag(varint(v));
        if (count < 0 || count > MAX_INDEXES) {
            throw Malformed.INSTANCE;
        }
        for (long i = 0; i < count; i++) {
            varint(v);
        }
        return pos;
    }

    private Object scan(byte[] v) throws Malformed {
        Object found = kind == STRING ? "" : Long.valueOf(0L);
        int depth = 0;
        while (pos < v.length) {
            long tag = varint(v);
            long number = tag >>> 3;
            int wire = (int) (tag & 7);
            if (number == 0) {
                throw Malformed.INSTANCE;
            }
            // an occurrence of the field with another wire type than its type's is an unknown
            // field to protobuf parsers: skipped here too
            boolean ours = number == fieldNumber && depth == 0;
            switch (wire) {
                case 0: {
                    long x = varint(v);
                    if (ours && kind != STRING) {
                        found = integer(x);
                    }
                    break;
                }
                case 1:
                    skip(v, 8);
                    break;
                case 2: {
                    long len = varint(v);
                    if (len < 0 || len > v.length - pos) {
                        throw Malformed.INSTANCE;
                    }
                    if (ours && kind == STRING) {
                        found = new String(v, pos, (int) len, StandardCharsets.UTF_8);
                    }
                    pos += (int) len;
                    break;
                }
                case 3:
                    if (++depth > MAX_GROUP_DEPTH) {
                        throw Malformed.INSTANCE;
                    }
                    break;
                case 4:
                    if (--depth < 0) {
                        throw Malformed.INSTANCE;
                    }
                    break;
                case 5:
                    skip(v, 4);
                    break;
                default:
                    throw Malformed.INSTANCE;
            }
        }
        if (depth != 0) {
            throw Malformed.INSTANCE;
        }
        return found;
    }

    private void skip(byte[] v, int n) throws Malformed {
        if (n > v.length - pos) {
            throw Malformed.INSTANCE;
        }
        pos += n;
    }

    /** A varint as the field's type reads it. */
    private Long integer(long x) {
        switch (kind) {
            case INT32:
                return (long) (int) x;
            case UINT32:
                return x & 0xffffffffL;
            case SINT64:
                return zigzag(x);
            case SINT32: {
                int low = (int) x;
                return (long) ((low >>> 1) ^ -(low & 1));
            }
            default:
                return x;
        }
    }

    private long varint(byte[] v) throws Malformed {
        long result = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos >= v.length) {
                throw Malformed.INSTANCE;
            }
            byte b = v[pos++];
            result |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return result;
            }
        }
        throw Malformed.INSTANCE;
    }

    private static long zigzag(long x) {
        return (x >>> 1) ^ -(x & 1);
    }

    /** Unreadable bytes (a preallocated exception: no stack trace per poison pill). */
    private static final class Malformed extends Exception {
        private static final long serialVersionUID = 1L;
        static final Malformed INSTANCE = new Malformed();

        private Malformed() {
            super("unreadable protobuf record", null, false, false);
        }
    }
}
