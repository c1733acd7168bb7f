//! Column buffers that come back: the large value and offset buffers of the columnar decoders are
//! taken from, and return to, a small pool this extension owns.
//!
//! Why: one call's columns are a few MB, freed when Python drops the batch. glibc's malloc hands
//! blocks that large back to the kernel (it unmaps them, or trims the top of the heap), so the next
//! call's columns were fresh pages again, each faulted in: about 300 page faults and a fifth of a
//! flat Avro decode's time went to the kernel. A buffer in the pool stays mapped and resident.
//! Only serdes' own column buffers pass through the pool; the process's allocator is not replaced.
//!
//! How a buffer travels: a column's `Vec<T>` is taken from the pool when it first needs room
//! (`reserve`), grows like any `Vec`, and becomes an Arrow buffer in `buffer`, whose owner gives the
//! `Vec` back to the pool when the last reference to the Arrow data is dropped (by pyarrow,
//! through the C data interface's release callback, on whatever thread drops it).
//!
//! Bounded: at most `MAX_BLOCKS` buffers and `MAX_BYTES` bytes wait in the pool; a buffer smaller
//! than `MIN_BYTES` never enters (malloc keeps those in its heap itself); a buffer given back to a
//! full pool is freed. A request takes the smallest waiting buffer that fits and is at most
//! `MAX_SLACK` times the size asked for, so a small column never holds a large buffer.
use std::mem::{align_of, size_of};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use arrow_buffer::{ArrowNativeType, Buffer, ScalarBuffer};

/// Buffers smaller than this are left to malloc.
pub const MIN_BYTES: usize = 32 * 1024;
/// The most bytes waiting in the pool.
pub const MAX_BYTES: usize = 64 * 1024 * 1024;
/// The most buffers waiting in the pool.
pub const MAX_BLOCKS: usize = 256;
/// A waiting buffer serves a request of at least 1/`MAX_SLACK` of its size.
const MAX_SLACK: usize = 4;

/// A waiting buffer: the allocation of a `Vec` of elements of `size` bytes aligned to `align`.
struct Block {
    size: usize,
    align: usize,
    /// the allocation's address (a `usize`: the pool is shared between threads)
    addr: usize,
    /// capacity in elements
    capacity: usize,
}

impl Block {
    fn bytes(&self) -> usize {
        self.capacity * self.size
    }
}

struct Pool {
    blocks: Vec<Block>,
    bytes: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool { blocks: Vec::new(), bytes: 0 });

/// The bytes and buffers waiting in the pool.
#[cfg(test)]
pub fn waiting() -> (usize, usize) {
    POOL.lock().map(|p| (p.bytes, p.blocks.len())).unwrap_or((0, 0))
}

/// An empty `Vec` with room for at least `capacity` elements from the pool, if one waits there.
fn take<T: Copy>(capacity: usize) -> Option<Vec<T>> {
    let (size, align) = (size_of::<T>(), align_of::<T>());
    let want = capacity.checked_mul(size)?;
    if want < MIN_BYTES {
        return None;
    }
    let mut pool = POOL.lock().ok()?;
    let best = pool
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.size == size && b.align == align && b.capacity >= capacity)
        .filter(|(_, b)| b.bytes() / MAX_SLACK <= want)
        .min_by_key(|(_, b)| b.capacity)
        .map(|(i, _)| i)?;
    let block = pool.blocks.swap_remove(best);
    pool.bytes -= block.bytes();
    // SAFETY: the block is the allocation of a `Vec` whose element type had this size and
    // alignment (`give`), so a `Vec<T>` of its capacity frees it with the same layout; no other
    // owner is left (it was removed from the pool under the lock).
    Some(unsafe { Vec::from_raw_parts(block.addr as *mut T, 0, block.capacity) })
}

/// `v`'s allocation into the pool, or freed when it is too small or the pool is full.
fn give<T: Copy>(mut v: Vec<T>) {
    let (size, align) = (size_of::<T>(), align_of::<T>());
    let bytes = v.capacity() * size;
    if bytes < MIN_BYTES {
        return;
    }
    let Ok(mut pool) = POOL.lock() else { return };
    if pool.blocks.len() >= MAX_BLOCKS || pool.bytes + bytes > MAX_BYTES {
        return;
    }
    v.clear();
    let mut v = std::mem::ManuallyDrop::new(v);
    pool.blocks.push(Block { size, align, addr: v.as_mut_ptr() as usize, capacity: v.capacity() });
    pool.bytes += bytes;
}

/// Room in `v` for `additional` more elements: from the pool when `v` has no allocation yet or
/// must move to a larger one (its old one then goes back), else by `Vec::reserve`.
pub fn reserve<T: Copy>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() >= additional {
        return;
    }
    let Some(need) = v.len().checked_add(additional) else {
        v.reserve(additional); // (panics with capacity overflow, as `Vec` does)
        return;
    };
    // a moving `Vec` at least doubles, as `Vec::reserve` would
    let target = if v.capacity() == 0 { need } else { need.max(v.capacity().saturating_mul(2)) };
    match take::<T>(target) {
        Some(mut fresh) => {
            fresh.extend_from_slice(v);
            give(std::mem::replace(v, fresh));
        }
        None => v.reserve(target - v.len()),
    }
}

/// An empty `Vec` with room for `capacity` elements (from the pool when one waits there).
pub fn with_capacity<T: Copy>(capacity: usize) -> Vec<T> {
    let mut v = Vec::new();
    reserve(&mut v, capacity);
    v
}

/// Room in a string or bytes column for `n` more bytes and, judged by the bytes per value so far,
/// for the values still expected (`expect` in all): one or two moves for a call's column instead
/// of a dozen doublings from empty, each a copy, and each a size the pool does not hold yet. At
/// least half again its size (a low estimate does not move it at every value).
#[cold]
#[inline(never)]
pub fn grow_bytes(bytes: &mut Vec<u8>, n: usize, values: usize, expect: usize) {
    let per_value = bytes.len().checked_div(values).map_or(n, |b| b + 1);
    let ahead = (per_value + per_value / 8).saturating_mul(expect.saturating_sub(values));
    reserve(bytes, ahead.max(n).max(bytes.len() / 2));
}

/// The owner of an Arrow buffer made from a `Vec`: gives the `Vec` back when the buffer goes.
struct Returns<T: Copy>(Vec<T>);

impl<T: Copy> Drop for Returns<T> {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.0));
    }
}

/// `v`'s elements as an Arrow buffer, without a copy; its allocation returns to the pool when the
/// buffer is dropped.
pub fn buffer<T: ArrowNativeType + std::panic::RefUnwindSafe>(mut v: Vec<T>) -> Buffer {
    if v.capacity() * size_of::<T>() < MIN_BYTES {
        return Buffer::from_vec(v);
    }
    let len = v.len() * size_of::<T>();
    let ptr = NonNull::new(v.as_mut_ptr() as *mut u8).expect("a Vec with capacity has a non-null pointer");
    // SAFETY: `ptr` is `v`'s allocation, holding `len` initialized bytes; it stays valid and
    // unchanged until the owner (which holds `v` and never touches it) is dropped with the buffer.
    unsafe { Buffer::from_custom_allocation(ptr, len, Arc::new(Returns(v))) }
}

/// `v` as a scalar buffer (`buffer`).
pub fn scalars<T: ArrowNativeType + std::panic::RefUnwindSafe>(v: Vec<T>) -> ScalarBuffer<T> {
    let len = v.len();
    ScalarBuffer::new(buffer(v), 0, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An element type nothing else pools (24 bytes aligned to 8): the other tests of the crate
    /// share the pool and run at the same time, so this one reads only its own buffers.
    #[derive(Clone, Copy, PartialEq, Debug)]
    struct Probe([u64; 3]);

    #[test]
    fn a_dropped_buffer_comes_back_and_is_taken_again() {
        let mut v: Vec<Probe> = Vec::new();
        reserve(&mut v, 10_000);
        v.extend(std::iter::repeat_n(Probe([1, 2, 3]), 10_000));
        let (addr, cap) = (v.as_ptr() as usize, v.capacity());
        drop(Returns(v));
        // a far smaller request does not take it, one of about its size does
        let mut small: Vec<Probe> = Vec::new();
        reserve(&mut small, cap / (MAX_SLACK + 1));
        assert_ne!(small.as_ptr() as usize, addr);
        let mut again: Vec<Probe> = Vec::new();
        reserve(&mut again, 9_000);
        assert_eq!(again.as_ptr() as usize, addr, "the buffer given back is taken again");
        assert!(again.is_empty() && again.capacity() == cap);
        // growing keeps the elements
        again.extend(std::iter::repeat_n(Probe([4, 5, 6]), 9_000));
        reserve(&mut again, cap);
        assert!(again.capacity() >= 9_000 + cap);
        assert!(again.iter().all(|&x| x == Probe([4, 5, 6])));
    }

    #[test]
    fn an_arrow_buffer_from_the_pool_holds_the_values() {
        let mut v: Vec<i64> = Vec::new();
        reserve(&mut v, 50_000);
        v.extend(0..50_000);
        let b = scalars(v);
        assert_eq!(b.len(), 50_000);
        assert!(b.iter().copied().eq(0..50_000));
        let small = scalars(vec![7i32; 10]); // below MIN_BYTES: an ordinary buffer
        assert_eq!(&small[..], &[7; 10]);
    }

    #[test]
    fn the_pool_stays_within_its_bounds() {
        for _ in 0..(MAX_BYTES / (8 << 20) + 2) {
            give(Vec::<u8>::with_capacity(8 << 20));
        }
        for _ in 0..(MAX_BLOCKS + 2) {
            give(Vec::<u8>::with_capacity(MIN_BYTES));
        }
        let (bytes, blocks) = waiting();
        assert!(bytes <= MAX_BYTES && blocks <= MAX_BLOCKS, "{bytes} bytes in {blocks} buffers");
    }
}
