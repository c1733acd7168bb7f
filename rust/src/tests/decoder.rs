//! The Avro decoder (rust/src/avro): program validation, varints and zigzag, bounds and limits,
//! timestamps, dates and decimals.
use super::{call, with_support};

#[test]
fn malformed_programs_are_value_errors_not_crashes() {
    with_support(|py, s| {
        call(py, s, "check_program_validation", ());
    });
}

#[test]
fn longs_are_zigzag_varints_of_at_most_ten_bytes() {
    with_support(|py, s| {
        call(py, s, "check_varints", ());
    });
}

#[test]
fn every_read_is_bounds_checked_and_every_count_limited() {
    with_support(|py, s| {
        call(py, s, "check_bounds", ());
    });
}

#[test]
fn timestamps_and_dates_match_pythons_datetime_over_its_whole_range() {
    with_support(|py, s| {
        call(py, s, "check_timestamps", ());
    });
}

#[test]
fn decimals_match_pythons_decimal_context() {
    with_support(|py, s| {
        call(py, s, "check_decimals", ());
    });
}
