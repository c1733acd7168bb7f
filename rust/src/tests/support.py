"""Python side of the extension's Rust unit tests (rust/src/tests/): builds native objects the way
serdes does and checks them against Python's datetime/decimal, fastavro's logical writers and
the Avro spec's encodings written out here. ``native`` is bound by the test harness, which has
imported this checkout's serdes (its lowerings) as pure Python. Each
``check_*`` raises AssertionError on the first difference."""

import datetime
import decimal
import uuid

native = None  # the extension module, set by rust/src/tests/mod.rs

UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
US = datetime.timedelta(microseconds=1)
NULL, BOOL, LONG, FLOAT, DOUBLE, STRING, BYTES, FIXED, ENUM, ARRAY, MAP, UNION, RECORD, MISMATCH = range(14)
P_NONE, P_TS_MS, P_TS_US, P_LTS_MS, P_LTS_US, P_DATE, P_DECIMAL = 0, 4, 5, 6, 7, 8, 10
NOPOST = (P_NONE,)
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
LONGS = sorted({0, 1, -1, 63, -64, 64, -65, 2**31 - 1, -(2**31), 2**31, I64_MIN, I64_MAX}
               | {s * 2**k + d for k in range(63) for s in (1, -1) for d in (-1, 0, 1)
                  if I64_MIN <= s * 2**k + d <= I64_MAX})


class Corrupt(Exception):
    pass


class Mismatch(Exception):
    pass


class Invalid(Exception):
    pass


def zigzag(n):
    """The Avro spec's zigzag varint of a long."""
    assert I64_MIN <= n <= I64_MAX
    z = n * 2 if n >= 0 else -n * 2 - 1
    out = bytearray()
    while z >= 0x80:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def decoder(nodes, root=0, max_items=10_000, max_depth=50):
    return native.AvroDecoder(nodes, root, max_items, max_depth, None, Corrupt, Mismatch, UTC)


def raises(exc, fn, *args, match=""):
    try:
        fn(*args)
    except exc as e:
        assert match in str(e), f"{e!r} does not say {match!r}"
        return e
    except BaseException as e:  # noqa: B036 -- a PanicException is a BaseException
        raise AssertionError(f"{fn}{args!r:.200} raised {e!r}, not {exc}") from e
    raise AssertionError(f"{fn}{args!r:.200} did not raise {exc}")


# --- decoder ----------------------------------------------------------------------------------

# N {x: long, n: [null, N]}: a recursive record, depth-checked on entry
RECURSIVE = [
    (RECORD, NOPOST, ["x", "n"], [(1, 0), (2, 1)], [], None, True),
    (LONG, NOPOST),
    (UNION, NOPOST, [(3, None, None), (0, None, None)]),
    (NULL, NOPOST),
]


def check_program_validation():
    bad = [
        ([], 0, "root out of range"),
        ([(LONG, NOPOST)], 1, "root out of range"),
        ([(ARRAY, NOPOST, 5, 1)], 0, "node index out of range"),
        ([(ARRAY, NOPOST, -1, 1)], 0, "node index out of range"),
        ([(MAP, NOPOST, 2**40)], 0, "node index out of range"),
        ([(99, NOPOST)], 0, "unknown opcode"),
        ([(LONG, (42,))], 0, "unknown post tag"),
        ([[LONG, NOPOST]], 0, "node is not a tuple"),
        ([(LONG,)], 0, "node tuple too short"),
        ([(LONG, ())], 0, "node tuple too short"),
        ([(LONG, 0)], 0, "post is not a tuple"),
        ([(ENUM, NOPOST, ["a", "b"], [None])], 0, "enum tables differ"),
        ([(RECORD, NOPOST, ["a"], [(1, 1)], [], None, False), (LONG, NOPOST)], 0, "record slot out of range"),
        ([(RECORD, NOPOST, ["a"], [(1, 0)], [(3, 1, False)], None, False), (LONG, NOPOST)], 0, "out of range"),
        ([(RECORD, NOPOST, ["a"], [5], [], None, False)], 0, "action is not a tuple"),
        ([(UNION, NOPOST, [(-1, None, None)])], 0, "branch without node or mismatch"),
        ([(UNION, NOPOST, [5])], 0, "branch is not a tuple"),
        ([(UNION, NOPOST, [(7, None, None)])], 0, "node index out of range"),
    ]
    for nodes, root, msg in bad:
        raises(ValueError, decoder, nodes, root, match=msg)
    # wrong Python types where numbers or strings belong: a Python error, never a crash
    for nodes in ([(LONG, ("x",))], [("op", NOPOST)], [(FIXED, NOPOST, -1)], [(FIXED, NOPOST, "4")],
                  [(RECORD, NOPOST, [1], [], [], None, False)], [(ENUM, NOPOST, 3, [])],
                  [(LONG, (P_DECIMAL, None, "x", None, None, 4))]):
        raises((TypeError, OverflowError, ValueError), decoder, nodes)
    assert len(decoder(RECURSIVE)) == 4
    assert decoder(RECURSIVE)(zigzag(7) + b"\x02" + zigzag(8) + b"\x00") == {"x": 7, "n": {"x": 8, "n": None}}


def check_varints():
    d = decoder([(LONG, NOPOST)])
    for n in LONGS:
        v = d(zigzag(n))
        assert type(v) is int and v == n, (n, v)
    raises(Corrupt, d, b"\x80" * 10 + b"\x01", match="varint longer than 10 bytes")
    raises(Corrupt, d, b"\xff" * 64, match="varint longer than 10 bytes")
    raises(Corrupt, d, b"\x80", match="payload ends early")
    raises(Corrupt, d, b"", match="payload ends early")
    # offset, and buffers other than bytes
    assert d(b"\xff\xff" + zigzag(-3), 2) == -3
    assert d(bytearray(zigzag(300))) == d(memoryview(zigzag(300))) == 300


def check_bounds():
    s = decoder([(STRING, NOPOST)])
    assert s(zigzag(3) + "é!".encode()) == "é!"
    raises(Corrupt, s, zigzag(5) + b"abc", match="only 3 bytes left")
    raises(Corrupt, s, zigzag(-1), match="negative length")
    raises(Corrupt, s, zigzag(I64_MAX), match="payload ends early")
    raises(UnicodeDecodeError, s, zigzag(1) + b"\xff")
    b = decoder([(BYTES, NOPOST)])
    raises(Corrupt, b, zigzag(2**62) + b"x", match="only 1 bytes left")
    lng = decoder([(LONG, NOPOST)])
    raises(Corrupt, lng, zigzag(1) + b"\x00", match="1 trailing bytes")
    raises(Corrupt, decoder([(FIXED, NOPOST, 4)]), b"ab", match="payload ends 2 bytes early")
    raises(Corrupt, decoder([(FIXED, NOPOST, 2**62)]), b"ab", match="bytes early")
    raises(Corrupt, decoder([(FLOAT, NOPOST)]), b"abc", match="payload ends early")
    raises(Corrupt, decoder([(DOUBLE, NOPOST)]), b"abcdefg", match="payload ends early")
    assert decoder([(BOOL, NOPOST)])(b"\x01") is True
    # arrays: the items budget, the bytes left, negative counts (with a byte size), -2**63
    arr = [(ARRAY, NOPOST, 1, 1), (LONG, NOPOST)]
    assert decoder(arr)(zigzag(2) + zigzag(5) + zigzag(-5) + b"\x00") == [5, -5]
    assert decoder(arr)(zigzag(-2) + zigzag(2) + zigzag(1) + zigzag(2) + b"\x00") == [1, 2]
    raises(Corrupt, decoder(arr, max_items=10), zigzag(11) + b"\x00" * 12, match="serdes.max.items=10")
    raises(Corrupt, decoder(arr, max_items=10), (zigzag(6) + b"\x00" * 6) * 2 + b"\x00", match="serdes.max.items=10")
    raises(Corrupt, decoder(arr), zigzag(5) + b"\x00\x00", match="block of 5 items but only 2 bytes left")
    raises(Corrupt, decoder(arr), zigzag(I64_MIN) + zigzag(0), match="serdes.max.items")
    raises(Corrupt, decoder(arr, max_items=2**62), zigzag(I64_MIN) + zigzag(0), match="serdes.max.items")
    # items of no bytes (null) are not compared with the bytes left, only with the budget
    nulls = [(ARRAY, NOPOST, 1, 0), (NULL, NOPOST)]
    assert decoder(nulls)(zigzag(3) + b"\x00") == [None] * 3
    raises(Corrupt, decoder(nulls, max_items=1000), zigzag(10**6) + b"\x00", match="serdes.max.items=1000")
    m = decoder([(MAP, NOPOST, 1), (LONG, NOPOST)], max_items=3)
    assert m(zigzag(1) + zigzag(1) + b"k" + zigzag(9) + b"\x00") == {"k": 9}
    raises(Corrupt, m, zigzag(4) + b"\x00" * 8, match="serdes.max.items=3")
    e = decoder([(ENUM, NOPOST, ["A", None], [None, "B is not in the reader"])])
    assert e(zigzag(0)) == "A"
    raises(Mismatch, e, zigzag(1), match="B is not in the reader")
    raises(Corrupt, e, zigzag(2), match="enum index 2 out of range for 2 symbols")
    raises(Corrupt, e, zigzag(-1), match="enum index -1")
    u = decoder([(UNION, NOPOST, [(1, None, None), (-1, None, "no such branch")]), (LONG, NOPOST)])
    assert u(zigzag(0) + zigzag(4)) == 4
    raises(Mismatch, u, zigzag(1), match="no such branch")
    raises(Corrupt, u, zigzag(2), match="union branch index 2 out of range for a 2-branch union")
    raises(Corrupt, u, zigzag(-1), match="union branch index -1")
    # depth: a recursive record checks serdes.max.depth on entry
    def nested(levels):
        return (zigzag(1) + b"\x02") * levels + zigzag(1) + b"\x00"
    assert decoder(RECURSIVE, max_depth=10)(nested(3))["n"]["n"]["n"] == {"x": 1, "n": None}
    raises(Corrupt, decoder(RECURSIVE, max_depth=10), nested(40), match="serdes.max.depth=10")
    # skipped writer-only fields keep every check: a record that skips an array of longs
    skip = [(RECORD, NOPOST, [], [(1, -1)], [], None, False), (ARRAY, NOPOST, 2, 1), (LONG, NOPOST)]
    assert decoder(skip)(zigzag(2) + zigzag(1) + zigzag(2) + b"\x00") == {}
    raises(Corrupt, decoder(skip, max_items=1), zigzag(2) + zigzag(1) + zigzag(2) + b"\x00", match="max.items=1")
    raises(Corrupt, decoder(skip), zigzag(1) + b"\x80", match="payload ends early")


def check_timestamps():
    lo = (datetime.datetime(1, 1, 1, tzinfo=UTC) - EPOCH) // US
    hi = (datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - EPOCH) // US
    micros = [0, 1, -1, 999_999, -999_999, 1_000_000, -86_400_000_000, 1_700_000_000_123_456, 951_782_400_000_000,
              lo, lo + 1, hi, hi - 1, -62_135_596_800_000_000 + 86_399_999_999]
    for tag, scale, tz in ((P_TS_US, 1, UTC), (P_TS_MS, 1000, UTC), (P_LTS_US, 1, None), (P_LTS_MS, 1000, None)):
        d = decoder([(LONG, (tag,))])
        for us in micros:
            n = us // scale
            want = EPOCH + n * scale * US
            if tz is None:
                want = want.replace(tzinfo=None)
            got = d(zigzag(n))
            assert type(got) is datetime.datetime and got == want, (tag, n, got, want)
            assert got.tzinfo is tz, (tag, n, got.tzinfo)
        for n in (lo // scale - 1, hi // scale + 1, I64_MIN, I64_MAX):
            raises(Corrupt, d, zigzag(n), match="out of datetime's range")
    d = decoder([(LONG, (P_DATE,))])
    for n in (0, -1, 1, 11_016, -141_427, -719_162, 2_932_896):
        got = d(zigzag(n))
        assert type(got) is datetime.date and got == datetime.date.fromordinal(n + 719_163), (n, got)
    for n in (-719_163, 2_932_897, I64_MIN, I64_MAX):
        raises(Corrupt, d, zigzag(n), match="out of range")


def check_decimals():
    from serdes import CorruptPayloadError
    from serdes.avro._decgen import decimal_spec

    for prec, scale in ((10, 2), (38, 0), (4, 4), (39, 5), (60, 3), (1, 0)):
        ctx = decimal.Context(prec=prec)
        spec = decimal_spec({"precision": prec, "scale": scale}, "field 'd'")
        d = decoder([(BYTES, (P_DECIMAL, ctx.create_decimal, -scale, ctx, decimal.Decimal, prec, spec.max_len, spec))])
        values = {0, 1, -1, 127, 128, -128, -129, 10**prec - 1, -(10**prec - 1), 10**prec, -(10**prec) - 7,
                  2**127 - 1, -(2**127), 2**127, 2**160 + 12345, 9}
        for v in sorted(values):
            raw = v.to_bytes((v.bit_length() + 8) // 8, "big", signed=True)
            for b in (raw, (b"\xff" if v < 0 else b"\x00") * 3 + raw):  # sign-extended too
                if len(b) > spec.max_len or abs(v) >= 10**prec:
                    # longer than the precision allows, or more digits than it: refused, never rounded
                    raises((Corrupt, CorruptPayloadError), d, zigzag(len(b)) + b)
                    continue
                want = ctx.create_decimal(int.from_bytes(b, "big", signed=True)).scaleb(-scale, ctx)
                got = d(zigzag(len(b)) + b)
                assert type(got) is decimal.Decimal and got.as_tuple() == want.as_tuple(), (prec, scale, v, got, want)
        want = ctx.create_decimal(0).scaleb(-scale, ctx)
        assert d(zigzag(0)).as_tuple() == want.as_tuple()


# --- encoder ----------------------------------------------------------------------------------

CLASSES = (uuid.UUID, datetime.datetime, datetime.date, UTC, decimal.Decimal)


def fallback(value, ctx):
    return ("fallback", value)


def program(schema):
    """serdes' program for ``schema`` (serdes/avro/_native_encoder.py's lowering)."""
    from fastavro import parse_schema

    from serdes.avro._native_encoder import lower

    return lower(parse_schema(schema))


def encoder(schema, max_depth=100, prefix=b"P"):
    return encoder_of(*program(schema), max_depth=max_depth, prefix=prefix)


def encoder_of(nodes, root, recursive=False, general_union=False, max_depth=100, prefix=b"P"):
    return native.AvroEncoder(nodes, root, recursive, general_union, prefix, fallback, None, False, False, max_depth,
                              Invalid, CLASSES)


def check_encoder_program_validation():
    from serdes import _native_opcodes as op

    s = (op.E_STRING,)
    good = [s, (op.E_LONG,)]
    assert encoder_of(good, 1)(3) == b"P" + zigzag(3)
    bad = [
        ([], 0, "root out of range"),
        (good, 2, "root out of range"),
        ([(op.E_LONG,)], 0, "node 0 is not the string node"),
        ([s, (99,)], 1, "unknown opcode"),
        ([s, (-1,)], 1, "unknown opcode"),
        ([s, (2**70,)], 1, "opcode is not an int"),
        ([s, [op.E_LONG]], 1, "a node is not a tuple"),
        ([s, ()], 1, "node tuple too short"),
        ([s, (op.E_ARRAY, 2)], 1, "node index out of range"),
        ([s, (op.E_MAP, -1)], 1, "node index out of range"),
        ([s, (op.E_FIXED, -1)], 1, "negative fixed size"),
        ([s, (op.E_FIXED, "4")], 1, "fixed size is not an int"),
        ([s, (op.E_ENUM, ["a"])], 1, "enum table is not a dict"),
        ([s, (op.E_NULLABLE, 0, 0, 0)], 1, "not 0 and 2"),
        ([s, (op.E_NULLABLE, 0, 2, 5)], 1, "node index out of range"),
        ([s, (op.E_UNION, [])], 1, "a union without branches"),
        ([s, (op.E_UNION, ((op.E_STRING, 0, None),))], 1, "union branches are not a list"),
        ([s, (op.E_UNION, [(op.E_LOGICAL, 0, None)])], 1, "unknown branch kind"),
        ([s, (op.E_UNION, [(op.E_FIXED, 0, None)])], 1, "fixed size is not an int"),
        ([s, (op.E_UNION, [(op.E_STRING, 3, None)])], 1, "node index out of range"),
        ([s, (op.E_RECORD, [("a", 0)])], 1, "node tuple too short"),
        ([s, (op.E_RECORD, [(b"a", 0, False, None)])], 1, "a field name is not a str"),
        ([s, (op.E_RECORD, [("a", 9, False, None)])], 1, "node index out of range"),
        ([s, (op.E_LOGICAL, None, {}, 0, 0, 0, 0)], 1, "not callable"),
        ([s, (op.E_LOGICAL, str, {}, 0, 42, 0, 0)], 1, "unknown fast code"),
        ([s, (op.E_LOGICAL, str, {}, 0, op.F_DECIMAL, 2**64, 0)], 1, "decimal precision is not an int"),
        # a chain of logical nodes would convert forever without going a level deeper
        ([s, (op.E_LOGICAL, str, {}, 1, 0, 0, 0)], 1, "inner node is logical"),
    ]
    for nodes, root, msg in bad:
        raises(ValueError, encoder_of, nodes, root, match=msg)
    # a cycle through a container is a recursive type: values bound it, level by level
    cyc = [s, (op.E_ARRAY, 1)]
    raises(Invalid, encoder_of(cyc, 1, recursive=True, max_depth=3), [[[[[]]]]], match="serdes.max.depth=3")


def check_encoder_lowering():
    from serdes import _native_opcodes as op

    # the named type is one node however often it is used; the recursion is reported
    nodes, root, recursive, general = program(
        {"type": "record", "name": "N", "fields": [
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
            {"name": "f", "type": "E"}, {"name": "n", "type": ["null", "N"]}]})
    assert nodes[0] == (op.E_STRING,) and recursive and not general
    (_, fields, record_class) = nodes[root]
    assert record_class is None  # no typed record class (serdes.avro._typed) without a to_dict(cls)
    assert [f[0] for f in fields] == ["e", "f", "n"] and fields[0][1] == fields[1][1]
    assert nodes[fields[2][1]] == (op.E_NULLABLE, 0, 2, root)
    assert encoder_of(nodes, root, recursive)({"e": "B", "f": "A", "n": {"e": "A", "f": "A", "n": None}}) == (
        b"P" + zigzag(1) + zigzag(0) + b"\x02" + zigzag(0) + zigzag(0) + b"\x00")
    nodes, root, recursive, general = program(["null", "long", {"type": "fixed", "name": "F", "size": 2}])
    assert general and not recursive
    assert [b[0] for b in nodes[root][1]] == [op.E_NULL, op.E_LONG, op.E_FIXED] and nodes[root][1][2][2] == 2
    e = encoder_of(nodes, root, recursive, general)
    assert e(None) == b"P" + zigzag(0) and e(5) == b"P" + zigzag(1) + zigzag(5) and e(b"ab") == b"P" + zigzag(2) + b"ab"


def check_encoder_longs():
    e = encoder("long")
    for n in LONGS:
        assert e(n) == b"P" + zigzag(n), n
    for v in (2**63, -(2**63) - 1, True, 1.0, "1", None):
        assert e(v) == ("fallback", v), v  # the pure encoder decides
    i = encoder("int")
    assert i(2**31 - 1) == b"P" + zigzag(2**31 - 1) and i(-(2**31)) == b"P" + zigzag(-(2**31))
    assert i(2**31) == ("fallback", 2**31)


def check_encoder_logical():
    from fastavro.write import LOGICAL_WRITERS

    from serdes import _native_opcodes as op

    cases = [
        ({"type": "int", "logicalType": "date"}, "int-date", op.F_DATE,
         [datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1970, 1, 1), datetime.date(1969, 12, 31),
          datetime.date(2000, 2, 29), datetime.date(1582, 10, 15), 12]),
        ({"type": "long", "logicalType": "timestamp-micros"}, "long-timestamp-micros", op.F_TS_US,
         [datetime.datetime(1, 1, 1, tzinfo=UTC), datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
          EPOCH, EPOCH - US, EPOCH - 1500 * US, datetime.datetime(2024, 2, 29, 12, 0, 1, 5, tzinfo=UTC), -5]),
        ({"type": "long", "logicalType": "timestamp-millis"}, "long-timestamp-millis", op.F_TS_MS,
         [datetime.datetime(1, 1, 1, tzinfo=UTC), datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
          EPOCH, EPOCH - US, EPOCH - 1500 * US, EPOCH + 999 * US, datetime.datetime(2024, 2, 29, 12, 0, 1, 5, tzinfo=UTC)]),
        ({"type": "string", "logicalType": "uuid"}, "string-uuid", op.F_UUID,
         [uuid.UUID(int=0), uuid.UUID(int=2**128 - 1), uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")]),
        ({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}, "bytes-decimal", op.F_DECIMAL,
         [decimal.Decimal(s) for s in ("0", "-0", "0.00", "1.23", "-1.23", "12345678.90", "-99999999.99", "1E+3",
                                       "5E-1", "-128", "1.27", "-1.28", "1.234", "123456789.00", "NaN")]),
        ({"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0}, "bytes-decimal", op.F_DECIMAL,
         [decimal.Decimal(10**37 * 4 - 1), decimal.Decimal(-(10**37) * 4 + 1), decimal.Decimal(2**126),
          decimal.Decimal(2**126 - 1), decimal.Decimal(-(2**126))]),
    ]
    for schema, key, code, values in cases:
        nodes, root, _, _ = program(schema)
        (opcode, prepare, _, _, fast, _, _) = nodes[root]
        # the program converts natively what fastavro's own prepare function converts, and calls
        # that function (for decimals: after checking the digits, as the pure encoder does) otherwise
        assert opcode == op.E_LOGICAL and fast == code, key
        assert prepare is LOGICAL_WRITERS[key] or key == "bytes-decimal", key
        e = encoder_of(nodes, root)
        base = encoder(schema["type"])
        for v in values:
            try:
                prepared = prepare(v, schema)
            except Exception:
                want = ("fallback", v)  # fastavro refuses it: so does the native encoder, by bailing
            else:
                want = base(prepared)
            assert e(v) == want, (schema, v, e(v), want)


def check_encoder_depth():
    schema = {"type": "record", "name": "N", "fields": [{"name": "n", "type": ["null", "N"]}]}
    e = encoder(schema, max_depth=5)

    def nested(levels):
        v = {"n": None}
        for _ in range(levels):
            v = {"n": v}
        return v

    assert e(nested(1)) == b"P\x02\x00"
    raises(Invalid, e, nested(20), match="serdes.max.depth=5")
    cyclic = {"n": None}
    cyclic["n"] = cyclic
    raises(Invalid, e, cyclic, match="serdes.max.depth=5")


# --- ABI --------------------------------------------------------------------------------------

def check_abi(package_dir):
    """abi_version() is serdes/_native.py's format_hash of the FORMAT_SOURCES it names."""
    from pathlib import Path

    from serdes import _native

    sources = native.FORMAT_SOURCES
    assert {"_native_opcodes.py", "avro/_native_decoder.py", "avro/_native_encoder.py"} <= set(sources), sources
    abi = native.abi_version()
    assert isinstance(abi, str) and len(abi) == 16, abi
    want = _native.format_hash(sources, Path(package_dir))
    assert abi == want, (abi, want)


def check_opcodes():
    """The opcodes the extension reads are the ones serdes' lowerings write."""
    from serdes import _native_opcodes

    assert native.OPCODES == _native_opcodes.tables(), (native.OPCODES, _native_opcodes.tables())
