//! Frame-head parsing of the dispatcher: zigzag varints and Protobuf message indexes, bounds-checked.
use super::{protobuf_head, zigzag, MAX_INDEXES};

#[test]
fn zigzag_decodes_and_refuses_truncated_or_overlong_varints() {
    assert_eq!(zigzag(&[0], 0), Some((0, 1)));
    assert_eq!(zigzag(&[1], 0), Some((-1, 1)));
    assert_eq!(zigzag(&[2], 0), Some((1, 1)));
    assert_eq!(zigzag(&[9, 0x80, 0x01], 1), Some((64, 3)));
    let max = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    assert_eq!(zigzag(&max, 0), Some((i64::MAX, 10)));
    let min = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    assert_eq!(zigzag(&min, 0), Some((i64::MIN, 10)));
    // truncated, past the end, eleven bytes
    assert_eq!(zigzag(&[0x80], 0), None);
    assert_eq!(zigzag(&[0], 1), None);
    assert_eq!(zigzag(&[], 0), None);
    assert_eq!(zigzag(&[0x80; 11], 0), None);
    assert_eq!(zigzag(&[0xff; 10], 0), None);
}

#[test]
fn protobuf_head_skips_the_message_index_array() {
    let frame = |rest: &[u8]| [&[0u8, 0, 0, 0, 1][..], rest].concat();
    assert_eq!(protobuf_head(&frame(&[0])), Some(6)); // count 0: the index [0]
    assert_eq!(protobuf_head(&frame(&[2, 2])), Some(7)); // [1]
    assert_eq!(protobuf_head(&frame(&[4, 2, 4, 0xaa])), Some(8)); // [1, 2], payload follows
    assert_eq!(protobuf_head(&frame(&[])), None); // no count
    assert_eq!(protobuf_head(&frame(&[4, 2])), None); // one index missing
    assert_eq!(protobuf_head(&frame(&[1])), None); // negative count
    let too_many = (MAX_INDEXES as u8 + 1) * 2;
    assert_eq!(protobuf_head(&frame(&[too_many])), None);
    let ok = MAX_INDEXES as u8 * 2;
    let mut rest = vec![ok];
    rest.extend(std::iter::repeat_n(0, MAX_INDEXES as usize));
    assert_eq!(protobuf_head(&frame(&rest)), Some(5 + 1 + MAX_INDEXES as usize));
    assert_eq!(protobuf_head(&[0, 0, 0]), None); // shorter than the frame head
}
