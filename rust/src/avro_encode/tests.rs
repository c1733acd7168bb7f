//! Zigzag varints and calendar arithmetic of the encoder.
use super::days_from_civil;
use crate::avro_out::put_long;

fn long(v: i64) -> Vec<u8> {
    let mut b = Vec::new();
    put_long(&mut b, v);
    b
}

/// The Avro spec's zigzag varint, written the slow way: (n << 1) ^ (n >> 63) in i128, then 7 bits a byte.
fn reference(v: i64) -> Vec<u8> {
    let v = v as i128;
    let mut n = if v >= 0 { (v * 2) as u128 } else { (-v * 2 - 1) as u128 };
    let mut out = Vec::new();
    loop {
        let low = (n % 128) as u8;
        n /= 128;
        if n == 0 {
            out.push(low);
            return out;
        }
        out.push(low | 0x80);
    }
}

#[test]
fn put_long_is_the_spec_zigzag_varint() {
    assert_eq!(long(0), [0]);
    assert_eq!(long(-1), [1]);
    assert_eq!(long(1), [2]);
    assert_eq!(long(-64), [0x7f]);
    assert_eq!(long(64), [0x80, 0x01]);
    assert_eq!(long(i64::MAX), [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    assert_eq!(long(i64::MIN), [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    let mut v: i64 = 1;
    for _ in 0..62 {
        for x in [v - 1, v, v + 1, -v - 1, -v, -v + 1] {
            assert_eq!(long(x), reference(x), "{x}");
        }
        v *= 2;
    }
}

#[test]
fn days_from_civil_counts_every_day_of_datetimes_range() {
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mut days = days_from_civil(1, 1, 1);
    assert_eq!(days, -719_162); // date(1, 1, 1).toordinal() - 719163
    for y in 1..=9999 {
        for m in 1..=12 {
            let n = match m {
                4 | 6 | 9 | 11 => 30,
                2 if leap(y) => 29,
                2 => 28,
                _ => 31,
            };
            for d in 1..=n {
                assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
                days += 1;
            }
        }
    }
    assert_eq!(days_from_civil(1970, 1, 1), 0);
    assert_eq!(days_from_civil(9999, 12, 31), 2_932_896);
}
