//! Entry points for the fuzz targets (the `fuzz/` crate at the repository root): one
//! function per decoder of on-disk bytes, each running it on arbitrary input and
//! checking what it promises. They panic only if the decoder misbehaves. Not part of the
//! API: hidden and unstable; the property tests call them too.

use crate::frame::{self, Decoded};
use crate::segments::segment;
use crate::Lsn;

/// A frame at an LSN: the first 8 bytes give the LSN (aligned), the rest is the frame.
/// If the LSN's low bit is set, the frame's checksum is rewritten first so that the
/// input reaches the checks behind it. What decodes stays inside the bytes.
pub fn frame(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<8>() else {
        return;
    };
    let raw = u64::from_le_bytes(*head);
    let lsn = Lsn(raw & !(frame::ALIGN - 1));
    let mut bytes = rest.to_vec();
    if raw & 1 != 0 {
        reseal_frame(&mut bytes, lsn);
    }
    match frame::decode(&bytes, lsn) {
        Decoded::Record {
            payload,
            hint,
            frame_len,
        } => {
            assert!(frame_len <= bytes.len() as u64 && frame_len % frame::ALIGN == 0);
            assert_eq!(frame_len, frame::frame_len(payload.len()));
            assert!(hint <= lsn);
        }
        Decoded::Padding { frame_len } => {
            assert!(frame_len <= bytes.len() as u64 && frame_len >= frame::PAD_HEADER as u64);
        }
        Decoded::Invalid(why) => {
            let _ = why.describe();
        }
    }
}

/// Rewrites the checksum of the frame `bytes` starts with (record or padding, as its
/// `len_kind` says), as far as the bytes hold it. Never panics.
pub fn reseal_frame(bytes: &mut [u8], lsn: Lsn) {
    let Some(len_kind) = bytes.first_chunk::<4>().map(|b| u32::from_le_bytes(*b)) else {
        return;
    };
    if bytes.len() < frame::PAD_HEADER {
        return;
    }
    let crc = if len_kind & frame::PAD_FLAG != 0 {
        frame::pad_crc(lsn, len_kind)
    } else {
        let Some(hint) = bytes.get(8..16) else {
            return;
        };
        let hint = Lsn(u64::from_le_bytes(hint.try_into().expect("8 bytes")));
        let end = (frame::RECORD_HEADER as u64 + len_kind as u64).min(bytes.len() as u64);
        let payload = bytes.get(frame::RECORD_HEADER..end as usize).unwrap_or(&[]);
        frame::record_crc(frame::payload_crc(payload), lsn, len_kind, hint)
    };
    bytes[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// A segment header: the first 8 bytes give the start LSN its file name says, the rest
/// is the header. If the start's low bit is set, the header's checksum is rewritten
/// first. A header that decodes gives a size that keeps the segment's LSNs in range.
pub fn segment_header(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<8>() else {
        return;
    };
    let raw = u64::from_le_bytes(*head);
    let mut bytes = rest.to_vec();
    if raw & 1 != 0 && bytes.len() >= 36 {
        let crc = crc32c::crc32c(&bytes[..32]);
        bytes[32..36].copy_from_slice(&crc.to_le_bytes());
    }
    // Bit 1 of the start picks whether the name agrees with the header's own start.
    let named = if raw & 2 != 0 {
        bytes
            .get(16..24)
            .map_or(raw, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    } else {
        raw
    };
    if let Ok(size) = segment::decode_header(&bytes, Lsn(named)) {
        assert!((segment::MIN_SEGMENT_BYTES..=segment::MAX_SEGMENT_BYTES).contains(&size));
        assert!(named
            .checked_add(size)
            .is_some_and(|e| e <= segment::MAX_LSN));
        assert_eq!(segment::segment_start(Lsn(named), size), Lsn(named));
    }
}
