//! Reading the Protobuf wire format: every read bounds-checked, every malformed input an error.
//!
//! Stricter than the protobuf runtime, never looser: a varint whose tenth byte carries bits beyond
//! 64 (the runtime drops them) and a tag beyond 32 bits are errors here, so the list goes to the
//! per-record path, which decides.

/// Wire types (the low three bits of a tag).
pub const VARINT: u8 = 0;
pub const FIXED64: u8 = 1;
pub const LEN: u8 = 2;
pub const FIXED32: u8 = 5;

/// Why a frame cannot be decoded here. A static text: failures are rare and end the call.
pub type Fail = &'static str;

/// A cursor over one message's bytes.
pub struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    pub fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor { buf, at: 0 }
    }

    #[inline]
    pub fn done(&self) -> bool {
        self.at >= self.buf.len()
    }

    /// A varint of at most 10 bytes whose value fits 64 bits.
    #[inline]
    pub fn varint(&mut self) -> Result<u64, Fail> {
        let Some(&b) = self.buf.get(self.at) else { return Err("the message ends inside a varint") };
        if b < 0x80 {
            self.at += 1;
            return Ok(u64::from(b));
        }
        self.varint_slow()
    }

    #[cold]
    fn varint_slow(&mut self) -> Result<u64, Fail> {
        let mut out: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.at) else { return Err("the message ends inside a varint") };
            self.at += 1;
            if i == 9 && b > 1 {
                return Err("a varint beyond 64 bits");
            }
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err("a varint longer than 10 bytes")
    }

    /// A field tag: (field number, wire type). Field number 0 and tags beyond 32 bits are errors.
    #[inline]
    pub fn tag(&mut self) -> Result<(u32, u8), Fail> {
        let raw = self.varint()?;
        let tag = u32::try_from(raw).map_err(|_| "a field tag beyond 32 bits")?;
        let number = tag >> 3;
        if number == 0 {
            return Err("field number 0");
        }
        Ok((number, (tag & 7) as u8))
    }

    #[inline]
    pub fn fixed32(&mut self) -> Result<u64, Fail> {
        let b = self.take(4)?;
        Ok(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    }

    #[inline]
    pub fn fixed64(&mut self) -> Result<u64, Fail> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// A length-delimited value's (start, length) within this cursor's bytes.
    #[inline]
    pub fn delimited(&mut self) -> Result<(usize, usize), Fail> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| "a length beyond the address space")?;
        let start = self.at;
        self.take(n)?;
        Ok((start, n))
    }

    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Fail> {
        let end =
            self.at.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or("a length past the end of the message")?;
        let out = &self.buf[self.at..end];
        self.at = end;
        Ok(out)
    }

    /// Skip one value of an unknown field. Groups (wire types 3 and 4, deprecated, nested without
    /// a length) and the undefined wire types 6 and 7 are errors: the per-record path decides.
    #[inline]
    pub fn skip(&mut self, wire_type: u8) -> Result<(), Fail> {
        match wire_type {
            VARINT => self.varint().map(|_| ()),
            FIXED64 => self.take(8).map(|_| ()),
            LEN => self.delimited().map(|_| ()),
            FIXED32 => self.take(4).map(|_| ()),
            _ => Err("a group or an undefined wire type"),
        }
    }

    /// One value of wire type `wire_type` (varint, fixed32 or fixed64) as its raw 64 bits.
    #[inline]
    pub fn raw(&mut self, wire_type: u8) -> Result<u64, Fail> {
        match wire_type {
            VARINT => self.varint(),
            FIXED32 => self.fixed32(),
            FIXED64 => self.fixed64(),
            _ => Err("not a scalar wire type"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_bounded() {
        assert_eq!(Cursor::new(&[0x96, 0x01]).varint(), Ok(150));
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Cursor::new(&max).varint(), Ok(u64::MAX));
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(Cursor::new(&over).varint().is_err());
        assert!(Cursor::new(&[0x80; 11]).varint().is_err());
        assert!(Cursor::new(&[0x80]).varint().is_err());
    }

    #[test]
    fn lengths_past_the_end_are_errors() {
        assert!(Cursor::new(&[0x05, 1, 2]).delimited().is_err());
        let huge = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert!(Cursor::new(&huge).delimited().is_err());
        assert_eq!(Cursor::new(&[0x02, 1, 2]).delimited(), Ok((1, 2)));
    }

    #[test]
    fn tags() {
        assert_eq!(Cursor::new(&[0x08]).tag(), Ok((1, VARINT)));
        assert!(Cursor::new(&[0x02]).tag().is_err()); // field 0
        assert!(Cursor::new(&[0x80, 0x80, 0x80, 0x80, 0x10]).tag().is_err()); // beyond 32 bits
        assert!(Cursor::new(&[0x0b]).skip(3).is_err()); // a group
    }
}
