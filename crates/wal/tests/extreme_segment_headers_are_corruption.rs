//! Issue 8, defect 11. A segment header with a valid checksum but extreme values (a start
//! near the end of the LSN space, a segment size of terabytes) made recovery overflow its
//! LSN arithmetic and panic, and recovery allocated buffers as large as the header's size.
//! Recovery must answer every such directory with `Ok` or an error — never a panic — and
//! report impossible headers as `Corruption`.

use crate::common;

use common::*;
use proptest::prelude::*;
use sluice_storage::{OpenOptions, SimStorage, Storage};
use sluice_wal::{segment, Log, LogOptions, Lsn, WalError};
use std::path::Path;
use std::sync::Arc;

/// Writes a segment file named for `named` whose header says `start` and `size` (with a
/// valid checksum), `body_bytes` long after the header block.
fn put_segment(sim: &SimStorage, named: Lsn, start: Lsn, size: u64, body_bytes: u64) {
    sim.create_dir_all(Path::new(DIR)).unwrap();
    let path = Path::new(DIR).join(segment::segment_name(named));
    let f = sim.open(&path, OpenOptions::CREATE).unwrap();
    f.write_at(&segment::encode_header(start, size), 0).unwrap();
    f.set_len(segment::SEGMENT_HEADER_BYTES + body_bytes)
        .unwrap();
    f.sync_data().unwrap();
    sim.sync_dir(Path::new(DIR)).unwrap();
}

fn open(sim: &SimStorage) -> sluice_wal::Result<Log> {
    Log::open(Arc::new(sim.clone()), DIR, small_options())
}

fn expect_corruption(sim: &SimStorage, words: &str) {
    match open(sim) {
        Err(WalError::Corruption { reason, .. }) => {
            assert!(reason.contains(words), "{reason:?} lacks {words:?}")
        }
        Err(other) => panic!("expected corruption ({words}), got {other}"),
        Ok(_) => panic!("expected corruption ({words}), the log opened"),
    }
}

#[test]
fn a_segment_that_ends_past_the_lsn_space_is_corruption() {
    let sim = SimStorage::new(61);
    let start = Lsn(u64::MAX - 4095); // a multiple of 4096
    put_segment(&sim, start, start, 4096, 4096);
    expect_corruption(&sim, "LSN");
}

#[test]
fn a_segment_size_beyond_the_limit_is_corruption() {
    for size in [u64::MAX - 7, 1 << 40, 1 << 31] {
        let sim = SimStorage::new(62);
        put_segment(&sim, Lsn(0), Lsn(0), size, 8192);
        expect_corruption(&sim, "size");
    }
}

#[test]
fn a_segment_size_option_beyond_the_limit_is_refused_in_one_line() {
    let sim = SimStorage::new(63);
    let options = LogOptions {
        segment_bytes: 1 << 31,
        ..small_options()
    };
    let e = Log::open(Arc::new(sim), DIR, options).err().unwrap();
    assert!(matches!(e, WalError::InvalidArgument(_)), "{e}");
    assert!(!e.to_string().contains('\n'), "{e}");
    assert!(e.to_string().contains("at most"), "{e}");
}

/// Extreme values are the interesting ones; arbitrary ones cover the rest.
fn lsn_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(8192),
        Just(u64::MAX),
        Just(u64::MAX - 4095),
        Just(u64::MAX - 8191),
        Just(1 << 62),
        Just(1 << 63),
        (0u64..64).prop_map(|k| k * 8192),
        any::<u64>(),
    ]
}

fn size_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(4096u64),
        Just(8192),
        Just(1 << 30),
        Just((1 << 30) + 8),
        Just(1 << 40),
        Just(u64::MAX - 7),
        Just(u64::MAX),
        any::<u64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn recovery_never_panics_on_headers_with_valid_checksums(
        first_start in lsn_value(),
        size in size_value(),
        name_matches in any::<bool>(),
        second in any::<bool>(),
        body_bytes in prop_oneof![Just(8192u64), 0u64..20_000],
    ) {
        let sim = SimStorage::new(64);
        let named = if name_matches { Lsn(first_start) } else { Lsn(first_start & !0xfff) };
        put_segment(&sim, named, Lsn(first_start), size, body_bytes);
        if second {
            let next = Lsn(first_start.wrapping_add(size));
            put_segment(&sim, next, next, size, body_bytes);
        }
        let sound = size == 8192
            && first_start % 8192 == 0
            && first_start < segment::MAX_LSN - 2 * 8192
            && body_bytes == 8192;
        match open(&sim) {
            Ok(log) => {
                // What opened is a working log, even at the edge of the LSN space.
                let a = log.append(b"after").unwrap();
                log.wait_durable(a.end).unwrap();
                log.close().unwrap();
            }
            Err(e) => prop_assert!(!sound, "a sound log failed to open: {}", e),
        }
    }
}
