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

    /// Append `s`, for which there is room: a short one byte by byte, inlined (most values are a
    /// few bytes, and a call of `memcpy` costs more than copying them).
    #[inline(always)]
    fn copy(&mut self, s: &[u8]) {
        if s.len() > 32 {
            self.buf.extend_from_slice(s);
            return;
        }
        let len = self.buf.len();
        let spare = &mut self.buf.spare_capacity_mut()[..s.len()];
        for (d, &b) in spare.iter_mut().zip(s) {
            d.write(b);
        }
        // SAFETY: `room` reserved s.len() bytes past `len`, and the loop initialised every one
        unsafe { self.buf.set_len(len + s.len()) };
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
