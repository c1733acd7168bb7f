//! A map column's entries in key order, one per key (the last on the wire wins).
//!
//! Protobuf maps have no order: the runtime iterates its hash table's (upb), a pure-Python
//! runtime its insertion order, and a writer may send a key twice (the last wins). Both paths put
//! each map's entries in key order (strings by their UTF-8 bytes, which is code point order,
//! Python's), so the columns do not depend on the protobuf runtime.
use std::cmp::Ordering;

use arrow_array::{ArrayRef, UInt32Array};

use super::columns::Values;

/// The entries of a map column to keep, in order (indices into the keys and values as decoded),
/// and the maps' offsets into them.
pub struct KeyOrder {
    pub take: Vec<u32>,
    pub offsets: Vec<i32>,
}

/// `None` when every map's keys are already strictly increasing; else the entries in key order.
pub fn key_order(keys: &Values, offsets: &[i32]) -> Result<Option<KeyOrder>, String> {
    let cmp = |a: usize, b: usize| -> Ordering {
        match keys {
            Values::Var(o, bytes) => {
                bytes[o[a] as usize..o[a + 1] as usize].cmp(&bytes[o[b] as usize..o[b + 1] as usize])
            }
            Values::I32(v) => v[a].cmp(&v[b]),
            Values::I64(v) => v[a].cmp(&v[b]),
            Values::U32(v) => v[a].cmp(&v[b]),
            Values::U64(v) => v[a].cmp(&v[b]),
            Values::Bool(v) => v.get_bit(a).cmp(&v.get_bit(b)),
            _ => Ordering::Equal,
        }
    };
    let in_order =
        offsets.windows(2).all(|w| (w[0] as usize + 1..w[1] as usize).all(|i| cmp(i - 1, i) == Ordering::Less));
    if in_order {
        return Ok(None);
    }
    let total = *offsets.last().unwrap_or(&0) as usize;
    if u32::try_from(total).is_err() {
        return Err("too many map entries in one column".into());
    }
    let mut take = Vec::with_capacity(total);
    let mut new_offsets = Vec::with_capacity(offsets.len());
    new_offsets.push(0i32);
    let mut entry: Vec<u32> = Vec::new();
    for w in offsets.windows(2) {
        entry.clear();
        entry.extend(w[0] as u32..w[1] as u32);
        // stable: of equal keys, the later entry stays later, and is the one kept
        entry.sort_by(|&a, &b| cmp(a as usize, b as usize));
        for (k, &i) in entry.iter().enumerate() {
            let last_of_key = entry.get(k + 1).is_none_or(|&next| cmp(i as usize, next as usize) != Ordering::Equal);
            if last_of_key {
                take.push(i);
            }
        }
        new_offsets.push(take.len() as i32);
    }
    Ok(Some(KeyOrder { take, offsets: new_offsets }))
}

/// The values of `array` at `indices`, in that order.
pub fn take(array: &ArrayRef, indices: &[u32]) -> Result<ArrayRef, String> {
    let indices = UInt32Array::from(indices.to_vec());
    arrow_select::take::take(array.as_ref(), &indices, None).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_maps_are_left_alone() {
        let keys = Values::I64(vec![1, 2, 3, 0, 5]);
        assert!(key_order(&keys, &[0, 3, 3, 5]).unwrap().is_none());
    }

    #[test]
    fn the_last_entry_of_a_key_wins_and_keys_are_ordered() {
        // map 1: keys 3, 1, 3 (entries 0, 1, 2); map 2: keys 2, 2 (entries 3, 4)
        let keys = Values::I64(vec![3, 1, 3, 2, 2]);
        let order = key_order(&keys, &[0, 3, 5]).unwrap().unwrap();
        assert_eq!(order.take, vec![1, 2, 4]);
        assert_eq!(order.offsets, vec![0, 2, 3]);
    }

    #[test]
    fn strings_order_by_bytes() {
        let keys = Values::Var(vec![0, 1, 3, 4], b"b\xc3\xa9a".to_vec()); // "b", "é", "a"
        let order = key_order(&keys, &[0, 3]).unwrap().unwrap();
        assert_eq!(order.take, vec![2, 0, 1]);
        assert_eq!(order.offsets, vec![0, 3]);
    }
}
