//! Damaging changes to a valid encoding, for the decoders' property tests: flipped bits,
//! truncation, extension, a 4- or 8-byte field (a length, count or offset) overwritten
//! with an extreme value, and a varint of an extreme value spliced in.

use proptest::prelude::*;

/// One damaging change.
#[derive(Debug, Clone)]
pub(crate) enum Mutation {
    Flip { at: usize, bit: u8 },
    Truncate { keep: usize },
    Extend { bytes: Vec<u8> },
    Field { at: usize, wide: bool, value: u64 },
    Varint { at: usize, value: u64 },
}

fn extreme() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(u32::MAX as u64),
        Just(u64::MAX),
        Just(1 << 31),
        Just(1 << 20),
        Just((1 << 20) + 1),
        any::<u64>(),
        0u64..300,
    ]
}

pub(crate) fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
        proptest::collection::vec(any::<u8>(), 1..40).prop_map(|bytes| Mutation::Extend { bytes }),
        (any::<usize>(), any::<bool>(), extreme()).prop_map(|(at, wide, value)| Mutation::Field {
            at,
            wide,
            value
        }),
        (any::<usize>(), extreme()).prop_map(|(at, value)| Mutation::Varint { at, value }),
    ]
}

/// Up to `n` mutations.
pub(crate) fn mutations(n: usize) -> impl Strategy<Value = Vec<Mutation>> {
    proptest::collection::vec(mutation(), 1..=n)
}

pub(crate) fn apply(b: &mut Vec<u8>, ms: &[Mutation]) {
    for m in ms {
        apply_one(b, m);
    }
}

fn apply_one(b: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Extend { bytes } => b.extend_from_slice(bytes),
        _ if b.is_empty() => {}
        Mutation::Flip { at, bit } => {
            let at = at % b.len();
            b[at] ^= 1 << bit;
        }
        Mutation::Truncate { keep } => b.truncate(keep % b.len()),
        Mutation::Field { at, wide, value } => {
            let w = if *wide { 8 } else { 4 };
            if b.len() >= w {
                let at = at % (b.len() - w + 1);
                b[at..at + w].copy_from_slice(&value.to_le_bytes()[..w]);
            }
        }
        Mutation::Varint { at, value } => {
            let mut v = *value;
            let mut enc = Vec::new();
            while v >= 0x80 {
                enc.push(v as u8 | 0x80);
                v >>= 7;
            }
            enc.push(v as u8);
            let at = at % (b.len() + 1);
            b.splice(at..at, enc);
        }
    }
}
