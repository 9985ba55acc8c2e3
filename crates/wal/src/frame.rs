//! The on-disk record frame.
//!
//! ```text
//! record:  [len_kind u32][crc u32][durable_hint u64][payload ...][zero padding to 8]
//! padding: [PAD | total u32][crc u32][zeros ...]                  (total ≥ 8, multiple of 8)
//! ```
//! * `len_kind`: payload length; the top bit marks a padding frame, whose low bits give the
//!   frame's whole size. Padding fills the gap before a segment end (frames never cross a
//!   segment end) and ranges a reservation gave up.
//! * `crc`: CRC32C over the payload, then the frame's LSN, `len_kind` and `durable_hint`
//!   (padding: LSN and `len_kind` only). Binding the LSN means a frame copied or left over
//!   at another position never verifies there.
//! * `durable_hint`: the log's durable LSN when the record was inserted. Any verifying frame
//!   thus proves that everything below its hint was synced; recovery uses the largest hint
//!   it finds to tell a torn tail (cut it) from damage inside the durable log (report it).

use crate::Lsn;

/// Frames start at multiples of this.
pub const ALIGN: u64 = 8;
/// Bytes of a record frame header.
pub const RECORD_HEADER: usize = 16;
/// Bytes of a padding frame header (the smallest padding frame).
pub const PAD_HEADER: usize = 8;
/// Top bit of `len_kind`: this is a padding frame.
pub const PAD_FLAG: u32 = 1 << 31;
/// Largest payload a frame can describe.
pub const MAX_FRAME_PAYLOAD: usize = (PAD_FLAG - 1) as usize - RECORD_HEADER;

const _: () = assert!(RECORD_HEADER.is_multiple_of(ALIGN as usize));
const _: () = assert!(PAD_HEADER == ALIGN as usize);

/// Rounds `n` up to a multiple of [`ALIGN`].
pub const fn align_up(n: u64) -> u64 {
    (n + ALIGN - 1) & !(ALIGN - 1)
}

/// Bytes a record with `payload_len` bytes occupies in the log.
pub const fn frame_len(payload_len: usize) -> u64 {
    align_up((RECORD_HEADER + payload_len) as u64)
}

/// CRC32C of a payload, computed before reservation so that the critical section only
/// folds in the 20 header bytes.
pub fn payload_crc(payload: &[u8]) -> u32 {
    crc32c::crc32c(payload)
}

/// The CRC stored in a record frame at `lsn`.
pub fn record_crc(payload_crc: u32, lsn: Lsn, len_kind: u32, hint: Lsn) -> u32 {
    let mut tail = [0u8; 20];
    tail[..8].copy_from_slice(&lsn.0.to_le_bytes());
    tail[8..12].copy_from_slice(&len_kind.to_le_bytes());
    tail[12..].copy_from_slice(&hint.0.to_le_bytes());
    crc32c::crc32c_append(payload_crc, &tail)
}

/// The CRC stored in a padding frame at `lsn`.
pub fn pad_crc(lsn: Lsn, len_kind: u32) -> u32 {
    let mut tail = [0u8; 12];
    tail[..8].copy_from_slice(&lsn.0.to_le_bytes());
    tail[8..].copy_from_slice(&len_kind.to_le_bytes());
    crc32c::crc32c(&tail)
}

/// The 16 header bytes of a record frame at `lsn`.
pub fn record_header(
    payload_len: usize,
    payload_crc: u32,
    lsn: Lsn,
    hint: Lsn,
) -> [u8; RECORD_HEADER] {
    debug_assert!(payload_len <= MAX_FRAME_PAYLOAD);
    debug_assert!(
        hint <= lsn,
        "durable hint {hint} above the record's LSN {lsn}"
    );
    let len_kind = payload_len as u32;
    let mut h = [0u8; RECORD_HEADER];
    h[..4].copy_from_slice(&len_kind.to_le_bytes());
    h[4..8].copy_from_slice(&record_crc(payload_crc, lsn, len_kind, hint).to_le_bytes());
    h[8..].copy_from_slice(&hint.0.to_le_bytes());
    h
}

/// The 8 header bytes of a padding frame of `total` bytes at `lsn`.
pub fn pad_header(total: u64, lsn: Lsn) -> [u8; PAD_HEADER] {
    assert!(
        total >= PAD_HEADER as u64 && total.is_multiple_of(ALIGN) && total < PAD_FLAG as u64,
        "bad padding size {total}"
    );
    let len_kind = PAD_FLAG | total as u32;
    let mut h = [0u8; PAD_HEADER];
    h[..4].copy_from_slice(&len_kind.to_le_bytes());
    h[4..].copy_from_slice(&pad_crc(lsn, len_kind).to_le_bytes());
    h
}

/// What a frame position holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A verified record: its payload, its hint, and the frame's total length.
    Record {
        /// The record's bytes.
        payload: &'a [u8],
        /// The durable LSN when it was inserted.
        hint: Lsn,
        /// Bytes the frame occupies (aligned).
        frame_len: u64,
    },
    /// A verified padding frame of `frame_len` bytes.
    Padding {
        /// Bytes the frame occupies.
        frame_len: u64,
    },
    /// Nothing valid starts here.
    Invalid(InvalidFrame),
}

/// Why a frame position does not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidFrame {
    /// The header is all zeros (unwritten space).
    Zero,
    /// The stated length runs past the available bytes (a segment end or the data end).
    LengthOutOfRange,
    /// The checksum does not match.
    BadCrc,
    /// A record whose durable hint lies above its own LSN.
    BadHint,
    /// Too few bytes left for a header.
    Truncated,
}

impl InvalidFrame {
    /// A short description for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            InvalidFrame::Zero => "zero-length frame (unwritten space)",
            InvalidFrame::LengthOutOfRange => "frame length runs past the segment end",
            InvalidFrame::BadCrc => "frame checksum mismatch",
            InvalidFrame::BadHint => "frame durable hint above its own LSN",
            InvalidFrame::Truncated => "truncated frame header",
        }
    }
}

/// Decodes the frame starting at `bytes[0]`, which lives at `lsn`. `bytes` extends to the
/// end of the segment's data (a frame may not go past it). Never panics on any input.
pub fn decode(bytes: &[u8], lsn: Lsn) -> Decoded<'_> {
    if bytes.len() < PAD_HEADER {
        return Decoded::Invalid(InvalidFrame::Truncated);
    }
    let len_kind = u32::from_le_bytes(bytes[..4].try_into().unwrap());
    let crc = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
    if len_kind & PAD_FLAG != 0 {
        let total = (len_kind & !PAD_FLAG) as u64;
        if total < PAD_HEADER as u64 || !total.is_multiple_of(ALIGN) || total > bytes.len() as u64 {
            return Decoded::Invalid(InvalidFrame::LengthOutOfRange);
        }
        if pad_crc(lsn, len_kind) != crc {
            return Decoded::Invalid(InvalidFrame::BadCrc);
        }
        return Decoded::Padding { frame_len: total };
    }
    if bytes.len() < RECORD_HEADER {
        return Decoded::Invalid(InvalidFrame::Truncated);
    }
    if bytes[..RECORD_HEADER].iter().all(|&b| b == 0) {
        return Decoded::Invalid(InvalidFrame::Zero);
    }
    let len = len_kind as usize;
    let total = frame_len(len);
    if total > bytes.len() as u64 {
        return Decoded::Invalid(InvalidFrame::LengthOutOfRange);
    }
    let hint = Lsn(u64::from_le_bytes(bytes[8..16].try_into().unwrap()));
    let payload = &bytes[RECORD_HEADER..RECORD_HEADER + len];
    if record_crc(payload_crc(payload), lsn, len_kind, hint) != crc {
        return Decoded::Invalid(InvalidFrame::BadCrc);
    }
    if hint > lsn {
        return Decoded::Invalid(InvalidFrame::BadHint);
    }
    Decoded::Record {
        payload,
        hint,
        frame_len: total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encode(payload: &[u8], lsn: Lsn, hint: Lsn) -> Vec<u8> {
        let mut v = record_header(payload.len(), payload_crc(payload), lsn, hint).to_vec();
        v.extend_from_slice(payload);
        v.resize(frame_len(payload.len()) as usize, 0);
        v
    }

    #[test]
    fn record_round_trips_and_binds_its_lsn() {
        let f = encode(b"hello", Lsn(64), Lsn(8));
        assert_eq!(f.len(), 24);
        match decode(&f, Lsn(64)) {
            Decoded::Record {
                payload,
                hint,
                frame_len,
            } => {
                assert_eq!(payload, b"hello");
                assert_eq!(hint, Lsn(8));
                assert_eq!(frame_len, 24);
            }
            other => panic!("{other:?}"),
        }
        // The same bytes at another position do not verify.
        assert_eq!(decode(&f, Lsn(72)), Decoded::Invalid(InvalidFrame::BadCrc));
    }

    #[test]
    fn each_bad_frame_is_named() {
        assert_eq!(
            decode(&[0u8; 32], Lsn(0)),
            Decoded::Invalid(InvalidFrame::Zero)
        );
        assert_eq!(
            decode(&[0u8; 4], Lsn(0)),
            Decoded::Invalid(InvalidFrame::Truncated)
        );
        let mut f = encode(b"abcdefgh", Lsn(0), Lsn(0));
        f[17] ^= 1;
        assert_eq!(decode(&f, Lsn(0)), Decoded::Invalid(InvalidFrame::BadCrc));
        // Impossible length: runs past the end of what is there.
        let f = encode(b"abcdefgh", Lsn(0), Lsn(0));
        assert_eq!(
            decode(&f[..20], Lsn(0)),
            Decoded::Invalid(InvalidFrame::LengthOutOfRange)
        );
        // A hint above the record's own LSN is invalid even with a matching CRC (forged
        // here by hand: the encoder refuses to write one).
        let mut f = encode(b"x", Lsn(16), Lsn(8));
        f[8..16].copy_from_slice(&24u64.to_le_bytes());
        let crc = record_crc(payload_crc(b"x"), Lsn(16), 1, Lsn(24));
        f[4..8].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(decode(&f, Lsn(16)), Decoded::Invalid(InvalidFrame::BadHint));
    }

    #[test]
    fn padding_round_trips() {
        let mut f = pad_header(24, Lsn(40)).to_vec();
        f.resize(24, 0);
        assert_eq!(decode(&f, Lsn(40)), Decoded::Padding { frame_len: 24 });
        assert_eq!(decode(&f, Lsn(48)), Decoded::Invalid(InvalidFrame::BadCrc));
        assert_eq!(
            decode(&f[..16], Lsn(40)),
            Decoded::Invalid(InvalidFrame::LengthOutOfRange)
        );
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), lsn in any::<u64>()) {
            let _ = decode(&bytes, Lsn(lsn));
        }

        #[test]
        fn any_payload_round_trips(payload in proptest::collection::vec(any::<u8>(), 0..300), at in 0u64..1_000_000) {
            let lsn = Lsn(at * ALIGN);
            let f = encode(&payload, lsn, Lsn(lsn.0 / 2 / ALIGN * ALIGN));
            match decode(&f, lsn) {
                Decoded::Record { payload: p, .. } => prop_assert_eq!(p, &payload[..]),
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
