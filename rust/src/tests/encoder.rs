//! The Avro encoder (rust/src/avro_encode): program validation and lowering, zigzag longs, the
//! logical fast paths against fastavro's own prepare functions, and the depth bound.
use super::{call, with_support};

#[test]
fn longs_and_ints_encode_as_zigzag_or_bail() {
    with_support(|py, s| {
        call(py, s, "check_encoder_longs", ());
    });
}

#[test]
fn logical_fast_paths_write_what_fastavro_writes() {
    with_support(|py, s| {
        call(py, s, "check_encoder_logical", ());
    });
}

#[test]
fn recursive_values_stop_at_the_depth_bound_with_a_typed_error() {
    with_support(|py, s| {
        call(py, s, "check_encoder_depth", ());
    });
}

#[test]
fn malformed_encoder_programs_are_value_errors_not_crashes() {
    with_support(|py, s| {
        call(py, s, "check_encoder_program_validation", ());
    });
}

#[test]
fn schemas_lower_to_programs_of_shared_named_nodes() {
    with_support(|py, s| {
        call(py, s, "check_encoder_lowering", ());
    });
}
