//! Calendar arithmetic of the decoder, against a day-by-day reference calendar.
use super::{civil_from_days, DAYS_SHIFT, MAX_ORDINAL};

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn month_len(y: i64, m: u8) -> u8 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Every day of datetime's range (0001-01-01 to 9999-12-31), walked one day at a time.
#[test]
fn civil_from_days_matches_a_day_by_day_calendar_over_datetimes_range() {
    let (mut y, mut m, mut d) = (1i64, 1u8, 1u8);
    for days in (1 - DAYS_SHIFT)..=(MAX_ORDINAL - DAYS_SHIFT) {
        assert_eq!(civil_from_days(days), (y, m, d), "days {days}");
        d += 1;
        if d > month_len(y, m) {
            d = 1;
            m += 1;
            if m > 12 {
                m = 1;
                y += 1;
            }
        }
    }
    assert_eq!((y, m, d), (10_000, 1, 1));
}

#[test]
fn civil_from_days_known_dates() {
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(-1), (1969, 12, 31));
    assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    assert_eq!(civil_from_days(-141_427), (1582, 10, 15));
    // no overflow just outside the range (the decoder checks the range before calling it)
    assert_eq!(civil_from_days(-DAYS_SHIFT), (0, 12, 31));
}
