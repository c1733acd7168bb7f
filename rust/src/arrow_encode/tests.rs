//! The columnar encoder's value conversions against the Python they reproduce: fastavro's decimal
//! prepare functions (after serdes' precision check) and `str(uuid.UUID)`.
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::write::{decimal_bytes, uuid_string};

/// fastavro's bytes (or the refusal) for `unscaled` at `precision`/`scale` (`size`: a fixed).
fn fastavro(py: Python<'_>, unscaled: i128, precision: u8, scale: i8, size: Option<usize>) -> Option<Vec<u8>> {
    let locals = PyDict::new(py);
    locals.set_item("u", unscaled).unwrap();
    locals.set_item("p", precision).unwrap();
    locals.set_item("s", scale).unwrap();
    locals.set_item("size", size).unwrap();
    py.run(
        c"
import decimal
from fastavro._logical_writers_py import prepare_bytes_decimal, prepare_fixed_decimal
d = decimal.Decimal(u).scaleb(-s, decimal.Context(prec=80))  # (the default context rounds to 28 digits)
schema = {'precision': p, 'scale': s, 'size': size}
if len(str(abs(u))) > p:
    out = None  # serdes' check: more digits than the precision
else:
    out = prepare_bytes_decimal(d, schema) if size is None else prepare_fixed_decimal(d, schema)
    if size is not None and len(out) != size:
        out = None  # the fixed encoder's error
",
        None,
        Some(&locals),
    )
    .unwrap();
    locals.get_item("out").unwrap().unwrap().extract().unwrap()
}

#[test]
fn decimals_are_fastavros_bytes() {
    Python::attach(|py| {
        let mut values: Vec<i128> = vec![0, 1, -1, 127, 128, -128, -129, 255, 256, -32768, 32767, 99_999, -99_999];
        let mut p: i128 = 1;
        for _ in 0..38 {
            p *= 10;
            values.extend([p - 1, -(p - 1), p, -p, p / 2, -(p / 2)]);
        }
        for n in 0..127 {
            values.extend([1i128 << n, -(1i128 << n), (1i128 << n) - 1]);
        }
        for &u in &values {
            for precision in [1u8, 4, 9, 18, 19, 38] {
                for size in [None, Some(1), Some(2), Some(4), Some(8), Some(16)] {
                    let ours = decimal_bytes(u, precision, size).ok().map(|b| match size {
                        // on bytes: the length (one zigzag byte: at most 16 bytes), then the bytes
                        None => {
                            assert_eq!(b[0] as usize, 2 * (b.len() - 1), "{u}");
                            b[1..].to_vec()
                        }
                        Some(_) => b,
                    });
                    assert_eq!(ours, fastavro(py, u, precision, 0, size), "{u} p={precision} {size:?}");
                }
            }
        }
    });
}

#[test]
fn uuids_are_pythons_text() {
    Python::attach(|py| {
        for seed in 0u8..=255 {
            let b: Vec<u8> = (0..16u8).map(|k| seed.wrapping_mul(37).wrapping_add(k.wrapping_mul(91))).collect();
            let locals = PyDict::new(py);
            locals.set_item("b", pyo3::types::PyBytes::new(py, &b)).unwrap();
            py.run(c"import uuid; out = str(uuid.UUID(bytes=b))", None, Some(&locals)).unwrap();
            let want: String = locals.get_item("out").unwrap().unwrap().extract().unwrap();
            assert_eq!(uuid_string(&b), want);
        }
    });
}
