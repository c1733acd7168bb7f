"""Python side of the extension's Rust unit tests (rust/src/tests/): builds native objects the way
serdes does and checks them against Python's datetime/decimal, fastavro's logical writers and
the Avro spec's encodings written out here. ``native`` is bound by the test harness. Each
``check_*`` raises AssertionError on the first difference."""

import datetime
import decimal
import importlib.util
import uuid
import warnings

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


def encoder(schema, logical=None, fast=None, max_depth=100, prefix=b"P"):
    return native.AvroEncoder(schema, prefix, fallback, None, False, False, max_depth, logical or {}, Invalid,
                              fast or {}, CLASSES)


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

    cases = [
        ({"type": "int", "logicalType": "date"}, "int-date", 4,
         [datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1970, 1, 1), datetime.date(1969, 12, 31),
          datetime.date(2000, 2, 29), datetime.date(1582, 10, 15), 12]),
        ({"type": "long", "logicalType": "timestamp-micros"}, "long-timestamp-micros", 3,
         [datetime.datetime(1, 1, 1, tzinfo=UTC), datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
          EPOCH, EPOCH - US, EPOCH - 1500 * US, datetime.datetime(2024, 2, 29, 12, 0, 1, 5, tzinfo=UTC), -5]),
        ({"type": "long", "logicalType": "timestamp-millis"}, "long-timestamp-millis", 2,
         [datetime.datetime(1, 1, 1, tzinfo=UTC), datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
          EPOCH, EPOCH - US, EPOCH - 1500 * US, EPOCH + 999 * US, datetime.datetime(2024, 2, 29, 12, 0, 1, 5, tzinfo=UTC)]),
        ({"type": "string", "logicalType": "uuid"}, "string-uuid", 1,
         [uuid.UUID(int=0), uuid.UUID(int=2**128 - 1), uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")]),
        ({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}, "bytes-decimal", 5,
         [decimal.Decimal(s) for s in ("0", "-0", "0.00", "1.23", "-1.23", "12345678.90", "-99999999.99", "1E+3",
                                       "5E-1", "-128", "1.27", "-1.28", "1.234", "123456789.00", "NaN")]),
        ({"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0}, "bytes-decimal", 5,
         [decimal.Decimal(10**37 * 4 - 1), decimal.Decimal(-(10**37) * 4 + 1), decimal.Decimal(2**126),
          decimal.Decimal(2**126 - 1), decimal.Decimal(-(2**126))]),
    ]
    for schema, key, code, values in cases:
        prepare = LOGICAL_WRITERS[key]
        e = encoder(schema, {key: prepare}, {key: code})
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
    spec = importlib.util.spec_from_file_location("serdes_native_seam", f"{package_dir}/_native.py")
    seam = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # loaded outside its package, it finds no extension: it warns
        spec.loader.exec_module(seam)
    sources = native.FORMAT_SOURCES
    assert "avro/_native_decoder.py" in sources and "avro/_native_encoder.py" in sources, sources
    abi = native.abi_version()
    assert isinstance(abi, str) and len(abi) == 16, abi
    want = seam.format_hash(sources, __import__("pathlib").Path(package_dir))
    assert abi == want, (abi, want)
