//! The ABI version build.rs derives from the program format is the hash serdes/_native.py computes,
//! and the opcode tables the extension exports are serdes/_native_opcodes.py's.
use super::{call, with_support};

#[test]
fn abi_version_is_the_python_format_hash() {
    let package = concat!(env!("CARGO_MANIFEST_DIR"), "/../serdes");
    with_support(|py, s| {
        call(py, s, "check_abi", (package,));
    });
}

#[test]
fn opcode_tables_are_the_python_ones() {
    with_support(|py, s| {
        call(py, s, "check_opcodes", ());
    });
}
