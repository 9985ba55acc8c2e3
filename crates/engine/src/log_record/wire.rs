//! The byte fields records are made of: fixed-width little-endian numbers, LEB128
//! varints, and byte strings with a 4-byte or a varint length. What a field means, and
//! which form a record uses for it, is the codec's (`codec.rs`, `legacy.rs`); here is only
//! how each form is written and read, with the bounds every reader checks.

/// The most bytes a varint takes (a `u64` in 7-bit groups).
pub(super) const MAX_VARINT: usize = 10;
/// The most bytes a varint of a field length takes (at most [`MAX_FIELD`] · 2 + 1, 22 bits).
pub(super) const MAX_LEN_VARINT: usize = 4;
/// The largest byte string a record field may carry (a page image is at most a page).
pub(super) const MAX_FIELD: usize = 1 << 20;

const _: () = assert!((MAX_FIELD as u64) << 1 < 1 << (7 * MAX_LEN_VARINT));

/// Bytes of `v` as a varint.
pub(super) const fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// A record being encoded.
pub(super) struct Writer(pub(super) Vec<u8>);

impl Writer {
    pub(super) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(super) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// LEB128: 7 bits a byte, low first, the top bit set on all but the last.
    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    pub(super) fn field_len(&mut self, n: usize) {
        assert!(n <= MAX_FIELD, "record field of {n} bytes");
        self.varint(n as u64);
    }
    /// A byte string, fixed-width length (page images).
    pub(super) fn bytes(&mut self, b: &[u8]) {
        assert!(b.len() <= MAX_FIELD, "record field of {} bytes", b.len());
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    /// A byte string, varint length.
    pub(super) fn vbytes(&mut self, b: &[u8]) {
        self.field_len(b.len());
        self.0.extend_from_slice(b);
    }
}

/// The bytes of a record not read yet. Every read is bounded by what is left: a short
/// record is an error, never a panic.
pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err(format!(
                "record truncated: wanted {n} bytes, {} left",
                self.0.len()
            ));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    pub(super) fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    pub(super) fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    pub(super) fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    /// A LEB128 varint; at most 10 bytes, no bits beyond 64, no redundant zero groups
    /// (so each number has one encoding and re-encoding a decoded record gives its bytes).
    pub(super) fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for i in 0..MAX_VARINT {
            let b = self.u8()?;
            let group = (b & 0x7F) as u64;
            if i == MAX_VARINT - 1 && b > 1 {
                return Err("varint beyond 64 bits".into());
            }
            v |= group << (7 * i);
            if b & 0x80 == 0 {
                if b == 0 && i > 0 {
                    return Err("varint with a redundant zero group".into());
                }
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }
    pub(super) fn field_len(&mut self) -> Result<usize, String> {
        let n = self.varint()?;
        if n > MAX_FIELD as u64 {
            return Err(format!("record field of {n} bytes"));
        }
        Ok(n as usize)
    }
    /// A byte string, fixed-width length.
    pub(super) fn bytes(&mut self) -> Result<Vec<u8>, String> {
        let n = self.u32()? as usize;
        if n > MAX_FIELD {
            return Err(format!("record field of {n} bytes"));
        }
        Ok(self.take(n)?.to_vec())
    }
    /// A byte string, varint length.
    pub(super) fn vbytes(&mut self) -> Result<Vec<u8>, String> {
        let n = self.field_len()?;
        Ok(self.take(n)?.to_vec())
    }
    /// A count of items of at least `min_item` bytes each, checked against what is left.
    pub(super) fn count(&mut self, min_item: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item) > self.0.len() {
            return Err(format!("count {n} exceeds the record"));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_have_one_encoding() {
        for v in [0, 1, 127, 128, 16_383, 16_384, 1 << 35, u64::MAX] {
            let mut w = Writer(Vec::new());
            w.varint(v);
            assert_eq!(w.0.len(), varint_len(v), "{v}");
            let mut r = Reader(&w.0);
            assert_eq!(r.varint(), Ok(v));
            assert!(r.0.is_empty());
        }
        // A redundant zero group, a bit beyond 64, an eleventh byte.
        assert!(Reader(&[0x80, 0x00]).varint().is_err());
        assert!(
            Reader(&[0xFF; 9].iter().copied().chain([0x02]).collect::<Vec<_>>())
                .varint()
                .is_err()
        );
        assert!(Reader(&[0xFF; 11]).varint().is_err());
    }
}
