//! Log tail and corruption (docs/RELIABILITY.md §4): a torn or garbage tail is cut; a bad frame
//! inside the durable log is reported with its LSN, never silently dropped; each kind of
//! bad frame and bad segment header is recognised.

use crate::common;

use common::*;
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::{frame, segment, Log, Lsn, WalError};
use std::path::Path;

/// Writes `n` records of `len` bytes, each made durable before the next, and closes.
fn write_log(storage: &std::sync::Arc<dyn Storage>, n: u32, len: usize) -> Vec<(Lsn, Lsn)> {
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    let mut out = Vec::new();
    for i in 0..n {
        let a = log.append(&vec![i as u8; len]).unwrap();
        log.wait_durable(a.end).unwrap();
        out.push((a.lsn, a.end));
    }
    log.close().unwrap();
    out
}

fn corruption_at(e: WalError) -> Lsn {
    match e {
        WalError::Corruption { lsn, .. } => lsn,
        other => panic!("expected corruption, got {other}"),
    }
}

#[test]
fn garbage_tail_is_cut_and_zeroed() {
    let (_sim, storage) = sim(1);
    let recs = write_log(&storage, 10, 100);
    let end = recs.last().unwrap().1;
    // Garbage after the end, as a crash during an unsynced write leaves it.
    poke(&*storage, Path::new(DIR), 8192, end, &[0xEE; 200]);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert_eq!(log.recovery().end, end);
    assert_eq!(log.recovery().records, 10);
    assert_eq!(log.recovery().cut_bytes, 200);
    assert_eq!(read_all(&log).len(), 10);
    log.close().unwrap();
    // The cut bytes were zeroed on disk, so a later record ending exactly there cannot be
    // followed by the old garbage.
    let f = storage
        .open(
            &Path::new(DIR).join(segment::segment_name(Lsn(0))),
            OpenOptions::EXISTING,
        )
        .unwrap();
    let mut b = [1u8; 200];
    f.read_exact_at(&mut b, segment::SEGMENT_HEADER_BYTES + end.0)
        .unwrap();
    assert!(b.iter().all(|&x| x == 0));
}

#[test]
fn torn_last_record_is_cut() {
    let (_sim, storage) = sim(2);
    let recs = write_log(&storage, 5, 300);
    let (last_lsn, _) = *recs.last().unwrap();
    // Tear the last record: its second half never reached the disk.
    poke(
        &*storage,
        Path::new(DIR),
        8192,
        last_lsn.add(160),
        &[0u8; 160],
    );
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert_eq!(log.recovery().end, last_lsn);
    assert_eq!(read_all(&log).len(), 4);
}

#[test]
fn bad_crc_inside_the_durable_log_is_corruption() {
    let (_sim, storage) = sim(3);
    let recs = write_log(&storage, 20, 100);
    // Flip a payload byte of record 5; records 6.. were inserted after 5 was durable and
    // carry hints that prove it.
    let (lsn, _) = recs[5];
    poke(&*storage, Path::new(DIR), 8192, lsn.add(20), &[0xFF]);
    let e = Log::open(storage.clone(), DIR, small_options())
        .err()
        .unwrap();
    assert_eq!(corruption_at(e.clone()), lsn);
    assert!(e.to_string().contains("checksum"), "{e}");
}

#[test]
fn zero_length_frame_inside_the_durable_log_is_corruption() {
    let (_sim, storage) = sim(4);
    let recs = write_log(&storage, 20, 100);
    let (lsn, _) = recs[3];
    poke(&*storage, Path::new(DIR), 8192, lsn, &[0u8; 16]);
    let e = Log::open(storage.clone(), DIR, small_options())
        .err()
        .unwrap();
    assert_eq!(corruption_at(e.clone()), lsn);
    assert!(e.to_string().contains("zero-length"), "{e}");
}

#[test]
fn impossible_length_inside_the_durable_log_is_corruption() {
    let (_sim, storage) = sim(5);
    let recs = write_log(&storage, 20, 100);
    let (lsn, _) = recs[2];
    poke(
        &*storage,
        Path::new(DIR),
        8192,
        lsn,
        &0x7FFF_0000u32.to_le_bytes(),
    );
    let e = Log::open(storage.clone(), DIR, small_options())
        .err()
        .unwrap();
    assert_eq!(corruption_at(e.clone()), lsn);
    assert!(e.to_string().contains("runs past"), "{e}");
}

#[test]
fn record_crossing_a_segment_end_is_never_written_and_is_corruption_if_found() {
    let (_sim, storage) = sim(6);
    // 1000-byte records in 8 KiB segments: the 9th would cross the first boundary, so the
    // log pads to the boundary and starts it in the next segment.
    let recs = write_log(&storage, 12, 1000);
    for (lsn, end) in &recs {
        assert_eq!(
            lsn.0 / 8192,
            (end.0 - 1) / 8192,
            "record [{lsn}, {end}) crosses a segment end"
        );
    }
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert_eq!(read_all(&log).len(), 12);
    log.close().unwrap();
    // Forge a frame header whose length runs over the first segment's end, at the padding
    // position, with a valid checksum: the reader must refuse it, not read into segment 2.
    let pad_at = recs[7].1;
    let len = 2000usize;
    let header = frame::record_header(len, frame::payload_crc(&vec![0u8; len]), pad_at, Lsn(0));
    poke(&*storage, Path::new(DIR), 8192, pad_at, &header);
    let e = Log::open(storage.clone(), DIR, small_options())
        .err()
        .unwrap();
    assert_eq!(corruption_at(e), pad_at);
}

fn segment_path(start: Lsn) -> std::path::PathBuf {
    Path::new(DIR).join(segment::segment_name(start))
}

fn rewrite_header(storage: &dyn Storage, start: Lsn, f: impl FnOnce(&mut [u8])) {
    let file = storage
        .open(&segment_path(start), OpenOptions::EXISTING)
        .unwrap();
    let mut h = [0u8; 64];
    file.read_exact_at(&mut h, 0).unwrap();
    f(&mut h);
    file.write_at(&h, 0).unwrap();
    file.sync_data().unwrap();
}

fn open_err(storage: &std::sync::Arc<dyn Storage>) -> String {
    Log::open(storage.clone(), DIR, small_options())
        .err()
        .expect("open must fail")
        .to_string()
}

#[test]
fn each_bad_segment_header_is_reported() {
    type Damage = Box<dyn Fn(&dyn Storage)>;
    let cases: Vec<(&str, Damage)> = vec![
        (
            "magic",
            Box::new(|s| rewrite_header(s, Lsn(8192), |h| h[0] = b'X')),
        ),
        (
            "checksum",
            Box::new(|s| rewrite_header(s, Lsn(8192), |h| h[17] ^= 1)),
        ),
        (
            "name says",
            Box::new(|s| {
                rewrite_header(s, Lsn(8192), |h| {
                    h.copy_from_slice(&[0u8; 64]);
                    h[..36].copy_from_slice(&segment::encode_header(Lsn(16384), 8192));
                })
            }),
        ),
        (
            "differs from earlier",
            Box::new(|s| {
                rewrite_header(s, Lsn(8192), |h| {
                    h[..36].copy_from_slice(&segment::encode_header(Lsn(8192), 4096))
                })
            }),
        ),
        (
            "missing",
            Box::new(|s| {
                s.remove(&segment_path(Lsn(8192))).unwrap();
                s.sync_dir(Path::new(DIR)).unwrap();
            }),
        ),
        (
            "the segment file ends at LSN",
            Box::new(|s| {
                let f = s
                    .open(&segment_path(Lsn(8192)), OpenOptions::EXISTING)
                    .unwrap();
                f.set_len(5000).unwrap();
                f.sync_data().unwrap();
            }),
        ),
    ];
    for (words, damage) in cases {
        let (_sim, storage) = sim(7);
        write_log(&storage, 30, 1000); // four segments
        damage(&*storage);
        let e = open_err(&storage);
        assert!(e.contains(words), "case {words:?}: got {e:?}");
    }
}

#[test]
fn leftover_temporary_segment_is_removed() {
    let (_sim, storage) = sim(8);
    write_log(&storage, 3, 100);
    let tmp = Path::new(DIR).join(format!("{}.tmp", segment::segment_name(Lsn(8192))));
    storage
        .open(&tmp, OpenOptions::CREATE)
        .unwrap()
        .write_at(b"junk", 0)
        .unwrap();
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert_eq!(read_all(&log).len(), 3);
    assert!(!storage.exists(&tmp).unwrap());
}
