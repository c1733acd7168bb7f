//! The byte buffer both Avro writers append to: the per-record encoder (`avro_encode`) and the
//! columnar one (`arrow_encode`). One place for how Avro's zig-zag varints and length-prefixed
//! blobs are written, and for the allocation rule: every write makes room first with
//! `try_reserve`, so data too large to allocate is an [`OutOfMemory`] the caller turns into its
//! own error (a `MemoryError`, a refusal), never Rust's abort on a failed allocation.
use std::marker::PhantomData;

/// A write that could not get its room: `wanted` more bytes after `len`.
#[derive(Debug)]
pub(crate) struct OutOfMemory {
    pub wanted: usize,
    pub len: usize,
}

/// `v` as Avro's zig-zag varint (at most 10 bytes), into `buf`, which must have the room.
#[inline(always)]
pub(crate) fn put_long(buf: &mut Vec<u8>, v: i64) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        buf.push((n as u8) | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
}

/// The buffer; `E` is the writer's own error, which a failed allocation becomes.
pub(crate) struct AvroOut<E> {
    pub buf: Vec<u8>,
    error: PhantomData<fn() -> E>,
}

impl<E: From<OutOfMemory>> AvroOut<E> {
    pub fn new(buf: Vec<u8>) -> Self {
        AvroOut { buf, error: PhantomData }
    }

    #[inline(always)]
    pub fn room(&mut self, n: usize) -> Result<(), E> {
        if self.buf.capacity() - self.buf.len() >= n {
            return Ok(());
        }
        self.grow(n)
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) -> Result<(), E> {
        self.buf.try_reserve(n).map_err(|_| E::from(OutOfMemory { wanted: n, len: self.buf.len() }))
    }

    /// Append `s`, for which there is room. Most values are a few bytes, and a call of `memcpy`
    /// costs more than copying them, so up to 32 bytes are copied inline: two (possibly
    /// overlapping) unaligned words of the widest size that fits, a branch or two, no loop.
    #[inline(always)]
    fn copy(&mut self, s: &[u8]) {
        let n = s.len();
        if n > 32 {
            self.buf.extend_from_slice(s);
            return;
        }
        let len = self.buf.len();
        debug_assert!(self.buf.capacity() - len >= n);
        // SAFETY: `room` reserved n bytes past `len`; every read is within `s` (offsets 0 and
        // n - w of a w-byte word with w <= n) and every write within those n bytes, so together
        // the two words write each of the n bytes; then `len + n` bytes are initialised.
        unsafe {
            let src = s.as_ptr();
            let dst = self.buf.as_mut_ptr().add(len);
            if n >= 16 {
                dst.cast::<u128>().write_unaligned(src.cast::<u128>().read_unaligned());
                dst.add(n - 16).cast::<u128>().write_unaligned(src.add(n - 16).cast::<u128>().read_unaligned());
            } else if n >= 8 {
                dst.cast::<u64>().write_unaligned(src.cast::<u64>().read_unaligned());
                dst.add(n - 8).cast::<u64>().write_unaligned(src.add(n - 8).cast::<u64>().read_unaligned());
            } else if n >= 4 {
                dst.cast::<u32>().write_unaligned(src.cast::<u32>().read_unaligned());
                dst.add(n - 4).cast::<u32>().write_unaligned(src.add(n - 4).cast::<u32>().read_unaligned());
            } else {
                for i in 0..n {
                    *dst.add(i) = *src.add(i);
                }
            }
            self.buf.set_len(len + n);
        }
    }

    #[inline(always)]
    pub fn byte(&mut self, b: u8) -> Result<(), E> {
        self.room(1)?;
        self.buf.push(b);
        Ok(())
    }

    #[inline(always)]
    pub fn long(&mut self, v: i64) -> Result<(), E> {
        self.room(10)?;
        put_long(&mut self.buf, v);
        Ok(())
    }

    #[inline(always)]
    pub fn raw(&mut self, s: &[u8]) -> Result<(), E> {
        self.room(s.len())?;
        self.copy(s);
        Ok(())
    }

    /// A length-prefixed string or bytes.
    #[inline(always)]
    pub fn blob(&mut self, s: &[u8]) -> Result<(), E> {
        self.room(s.len().saturating_add(10))?;
        put_long(&mut self.buf, s.len() as i64);
        self.copy(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Oom;

    impl From<OutOfMemory> for Oom {
        fn from(_: OutOfMemory) -> Oom {
            Oom
        }
    }

    #[test]
    fn raw_and_blob_append_every_length_exactly() {
        // every length across the inline sizes and past them, after every alignment of the buffer
        for before in 0..17usize {
            for n in 0..48usize {
                let s: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
                let mut out: AvroOut<Oom> = AvroOut::new((0..before as u8).collect());
                out.raw(&s).unwrap();
                out.blob(&s).unwrap();
                let mut want: Vec<u8> = (0..before as u8).collect();
                want.extend_from_slice(&s);
                put_long(&mut want, n as i64);
                want.extend_from_slice(&s);
                assert_eq!(out.buf, want, "{n} bytes after {before}");
            }
        }
    }
}
