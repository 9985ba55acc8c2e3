//! Property tests of the log's decoders (frames and segment headers): valid encodings
//! round-trip, and no bytes (arbitrary, or a valid encoding mutated, its checksum
//! resealed or not) make a decoder panic. The same checks as the fuzz targets
//! (`crate::fuzzing`); `PROPTEST_CASES` raises the case counts.

use crate::frame::{self, Decoded, ALIGN};
use crate::fuzzing;
use crate::segments::segment::{self, MAX_LSN, MAX_SEGMENT_BYTES, MIN_SEGMENT_BYTES};
use crate::Lsn;
use proptest::prelude::*;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A damaging change to an encoding.
#[derive(Debug, Clone)]
enum Mutation {
    Flip {
        at: usize,
        bit: u8,
    },
    Truncate {
        keep: usize,
    },
    Extend {
        bytes: Vec<u8>,
    },
    /// Overwrites a 4- or 8-byte field with an extreme value.
    Field {
        at: usize,
        wide: bool,
        value: u64,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let extreme = prop_oneof![
        Just(0u64),
        Just(u32::MAX as u64),
        Just(u64::MAX),
        Just(frame::PAD_FLAG as u64),
        Just(frame::PAD_FLAG as u64 | 8),
        Just((frame::PAD_FLAG - 1) as u64),
        any::<u64>(),
        0u64..400,
    ];
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
        proptest::collection::vec(any::<u8>(), 1..40).prop_map(|bytes| Mutation::Extend { bytes }),
        // Length fields sit at the start: favour them.
        (
            prop_oneof![Just(0usize), Just(8), Just(16), Just(24), any::<usize>()],
            any::<bool>(),
            extreme
        )
            .prop_map(|(at, wide, value)| Mutation::Field { at, wide, value }),
    ]
}

fn mutate(b: &mut Vec<u8>, m: &Mutation) {
    if b.is_empty() {
        return;
    }
    match m {
        Mutation::Flip { at, bit } => {
            let at = at % b.len();
            b[at] ^= 1 << bit;
        }
        Mutation::Truncate { keep } => b.truncate(keep % b.len()),
        Mutation::Extend { bytes } => b.extend_from_slice(bytes),
        Mutation::Field { at, wide, value } => {
            let w = if *wide { 8 } else { 4 };
            if b.len() >= w {
                let at = at % (b.len() - w + 1);
                b[at..at + w].copy_from_slice(&value.to_le_bytes()[..w]);
            }
        }
    }
}

fn record(payload: &[u8], lsn: Lsn, hint: Lsn) -> Vec<u8> {
    let mut v =
        frame::record_header(payload.len(), frame::payload_crc(payload), lsn, hint).to_vec();
    v.extend_from_slice(payload);
    v.resize(frame::frame_len(payload.len()) as usize, 0);
    v
}

/// A valid frame (record or padding) at an aligned LSN, followed by more bytes.
fn valid_frame() -> impl Strategy<Value = (Lsn, Vec<u8>)> {
    (
        0u64..(1 << 40),
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 0..200),
        1u64..40,
        proptest::collection::vec(any::<u8>(), 0..32),
    )
        .prop_map(|(at, pad, payload, pad_units, after)| {
            let lsn = Lsn(at * ALIGN);
            let mut b = if pad {
                let mut b = frame::pad_header(pad_units * ALIGN, lsn).to_vec();
                b.resize((pad_units * ALIGN) as usize, 0);
                b
            } else {
                record(&payload, lsn, Lsn(lsn.0 / 3 / ALIGN * ALIGN))
            };
            b.extend_from_slice(&after);
            (lsn, b)
        })
}

/// The fuzz target's input: the LSN (low bit: reseal), then the frame.
fn frame_input(lsn: Lsn, reseal: bool, bytes: &[u8]) -> Vec<u8> {
    let mut v = (lsn.0 | reseal as u64).to_le_bytes().to_vec();
    v.extend_from_slice(bytes);
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(1024)))]

    #[test]
    fn frames_from_arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
        fuzzing::frame(&b);
    }

    #[test]
    fn valid_frames_round_trip((lsn, b) in valid_frame()) {
        match frame::decode(&b, lsn) {
            Decoded::Record { payload, frame_len, .. } => {
                prop_assert_eq!(frame_len, frame::frame_len(payload.len()));
                prop_assert_eq!(payload, &b[frame::RECORD_HEADER..frame::RECORD_HEADER + payload.len()]);
            }
            Decoded::Padding { frame_len } => prop_assert!(frame_len >= frame::PAD_HEADER as u64),
            Decoded::Invalid(why) => prop_assert!(false, "{:?}", why),
        }
    }

    #[test]
    fn mutated_frames_never_panic(
        (lsn, mut b) in valid_frame(),
        ms in proptest::collection::vec(mutation(), 1..4),
        reseal in any::<bool>(),
    ) {
        for m in &ms {
            mutate(&mut b, m);
        }
        fuzzing::frame(&frame_input(lsn, reseal, &b));
    }

    #[test]
    fn segment_headers_round_trip(k in 0u64..(1 << 20), size_units in (MIN_SEGMENT_BYTES / ALIGN)..=(MAX_SEGMENT_BYTES / ALIGN)) {
        let size = size_units * ALIGN;
        let start = (k * size).min(MAX_LSN - size) / size * size;
        let h = segment::encode_header(Lsn(start), size);
        prop_assert_eq!(segment::decode_header(&h, Lsn(start)).ok(), Some(size));
    }

    #[test]
    fn segment_headers_from_arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..80)) {
        fuzzing::segment_header(&b);
    }

    #[test]
    fn mutated_segment_headers_never_panic(
        k in 0u64..(1 << 20),
        size_units in (MIN_SEGMENT_BYTES / ALIGN)..=(MAX_SEGMENT_BYTES / ALIGN),
        ms in proptest::collection::vec(mutation(), 1..4),
        how in 0u64..4,
    ) {
        let size = size_units * ALIGN;
        let start = (k * size).min(MAX_LSN - size) / size * size;
        let mut b = segment::encode_header(Lsn(start), size).to_vec();
        for m in &ms {
            mutate(&mut b, m);
        }
        let mut input = (start & !3 | how).to_le_bytes().to_vec();
        input.extend_from_slice(&b);
        fuzzing::segment_header(&input);
    }
}
