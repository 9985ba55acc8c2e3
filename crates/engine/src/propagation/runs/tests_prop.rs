//! Property tests of the run decoder: runs round-trip, and no bytes (arbitrary, or a
//! valid run mutated, with its checksums resealed or not) make the reader panic,
//! allocate absurdly or loop.

use super::fuzz::{run as sorted_run, run_resealed as sorted_run_resealed};
use super::{decode_run, encode_run, RunEntry, ScanError};
use crate::alloc_probe::assert_bounded;
use crate::ids::PageId;
use crate::mutations::{apply, mutations};
use proptest::prelude::*;
use sluice_wal::Lsn;

const FROM: Lsn = Lsn(4096);
const TO: Lsn = Lsn(1 << 20);

/// Sorted entries with LSNs inside `[FROM, TO)`.
fn entries() -> impl Strategy<Value = Vec<RunEntry>> {
    proptest::collection::vec(
        (
            0u64..40,
            FROM.0..TO.0 - 1,
            1u64..64,
            proptest::collection::vec(any::<u8>(), 0..80),
        ),
        0..24,
    )
    .prop_map(|v| {
        let mut out: Vec<RunEntry> = v
            .into_iter()
            .map(|(page, lsn, len, record)| RunEntry {
                page: PageId(page),
                lsn: Lsn(lsn),
                end: Lsn((lsn + len).min(TO.0)),
                record,
            })
            .collect();
        out.sort_by_key(|e| (e.page, e.lsn));
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::test_support::prop_cases(512)))]

    #[test]
    fn runs_round_trip(es in entries(), block_bytes in 1usize..400) {
        let b = encode_run(FROM, TO, &es, block_bytes);
        let back = decode_run(&b, FROM, TO).map_err(|e| format!("{e}"));
        prop_assert_eq!(back, Ok(es));
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..400)) {
        assert_bounded(&b, sorted_run);
        assert_bounded(&b, sorted_run_resealed);
    }

    #[test]
    fn mutated_runs_are_refused_or_read_never_panic(
        es in entries(),
        block_bytes in 1usize..300,
        ms in mutations(3),
    ) {
        let mut b = encode_run(FROM, TO, &es, block_bytes);
        apply(&mut b, &ms);
        assert_bounded(&b, sorted_run);
        assert_bounded(&b, sorted_run_resealed);
        // Whatever reads back stays inside the run (the file name's range).
        let mut sealed = b.clone();
        super::reseal_run(&mut sealed);
        if let Ok(got) = decode_run(&sealed, FROM, TO) {
            prop_assert!(got.iter().all(|e| FROM <= e.lsn && e.lsn < e.end && e.end <= TO));
        }
    }
}

/// A run whose block, index and header all claim 4,294,967,295 entries, every checksum
/// valid (one real entry of page 7, LSNs [4096, 4104), empty record). The reader trusted
/// the count to size the vector it reads a block into (`Vec::with_capacity(count)` of
/// 48-byte entries: ~200 GiB), which aborted the process; now the index is refused for
/// claiming more entries than its block's bytes can hold.
#[test]
fn regression_run_block_count_of_four_billion_is_damage_not_an_abort() {
    let b = hex(concat!(
        "534c55494345524e010000000000000000100000000000000000100000000000",
        "ffffffff00000000010000000000000000000000000000007943864400000000",
        "1c000000ffffffff070000000000000000100000000000000810000000000000",
        "00000000d92841e80700000000000000400000000000000028000000ffffffff",
        "d04d1b0d6800000000000000010000000000000052554e494e444558819b98f6",
        "00000000",
    ));
    match decode_run(&b, FROM, Lsn(1 << 20)) {
        Err(ScanError::Damaged(d)) => assert!(d.what.contains("entries"), "{}", d.what),
        other => panic!("{other:?}"),
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}
