//! Issue 10, item 3: segments below the truncation point are recycled — renamed and
//! reused as future segments — instead of deleted and recreated zero-filled (which doubled
//! the log's write volume under TPC-B). A recycled file keeps its old frames; they must
//! never be read as records of the new segment, wherever they lie, and must never make
//! recovery call a healthy log corrupt.

use crate::common;

use common::*;
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::frame::{self, Decoded, InvalidFrame};
use sluice_wal::{segment, Log, Lsn, WalError, MAX_RECYCLED_SEGMENTS};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const SEGMENT: u64 = 8192;
/// Payload bytes of a 1000-byte frame: eight fill a segment at the same offsets in every
/// segment (then 192 bytes of padding), so a recycled file holds an old frame exactly
/// where each new one goes.
const PAYLOAD: usize = 1000 - frame::RECORD_HEADER;

fn record(i: u32) -> Vec<u8> {
    let mut p = vec![(i % 251) as u8; PAYLOAD];
    p[..4].copy_from_slice(&i.to_le_bytes());
    p
}

/// Names in the log directory with the given suffix.
fn named(storage: &dyn Storage, suffix: &str) -> Vec<String> {
    let mut v: Vec<String> = storage
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .collect();
    v.sort();
    v
}

fn read_at(storage: &dyn Storage, name: &str, offset: u64, len: usize) -> Vec<u8> {
    let f = storage
        .open(&Path::new(DIR).join(name), OpenOptions::READ_ONLY)
        .unwrap();
    let mut buf = vec![0u8; len];
    f.read_exact_at(&mut buf, offset).unwrap();
    buf
}

/// Parks (a short sleep between looks) until `done` holds: the preparer works in the
/// background.
fn eventually(mut done: impl FnMut() -> bool) {
    while !done() {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A log whose segment 0 was truncated and whose segment 2 was made from its file; then
/// `in_recycled` records were written into segment 2 and made durable. Returns the log
/// and the appended records (LSN, payload), oldest first.
fn log_with_a_recycled_segment(
    storage: &Arc<dyn Storage>,
    in_recycled: u32,
) -> (Log, Vec<(Lsn, Vec<u8>)>) {
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    let mut written = Vec::new();
    let mut append = |log: &Log, i: u32| {
        let p = record(i);
        let a = log.append(&p).unwrap();
        log.wait_durable(a.end).unwrap();
        written.push((a.lsn, p));
        a
    };
    // Segment 0 full, one record in segment 1: not half full, so segment 2 is not asked
    // for yet.
    for i in 0..9 {
        append(&log, i);
    }
    assert_eq!(log.segments(), vec![Lsn(0), Lsn(SEGMENT)]);
    let made = log.stats();
    assert_eq!(log.truncate_below(log.durable_lsn()).unwrap(), 1);
    assert_eq!(
        named(&**storage, ".wal.free"),
        vec![segment::free_name(Lsn(0))]
    );
    // Fill segment 1: the preparer makes segment 2, from segment 0's file.
    for i in 9..16 {
        append(&log, i);
    }
    for i in 16..16 + in_recycled {
        let a = append(&log, i);
        assert_eq!(segment::segment_start(a.lsn, SEGMENT), Lsn(2 * SEGMENT));
    }
    eventually(|| log.segments().contains(&Lsn(2 * SEGMENT)));
    let stats = log.stats();
    assert_eq!(stats.segments_recycled, 1, "segment 2 was recycled");
    assert!(
        named(&**storage, ".wal.free").is_empty(),
        "the pool was used"
    );
    // Segment 1 was full before the preparer made segment 2 (no extension or creation
    // asked after that), and segment 2 came from the pool: no space made since.
    assert_eq!(
        (stats.bytes_allocated, stats.bytes_zero_filled),
        (made.bytes_allocated, made.bytes_zero_filled)
    );
    (log, written)
}

#[test]
fn a_recycled_segment_replaces_a_zero_filled_one() {
    let (_sim, storage) = sim(101);
    let (log, written) = log_with_a_recycled_segment(&storage, 2);
    // The file is whole from the start: no extension is ever zero-filled into it.
    let name = segment::segment_name(Lsn(2 * SEGMENT));
    let f = storage
        .open(&Path::new(DIR).join(&name), OpenOptions::READ_ONLY)
        .unwrap();
    assert_eq!(f.len().unwrap(), segment::SEGMENT_HEADER_BYTES + SEGMENT);
    // It carries segment 0's old frames past what was written into it.
    let old = read_at(&*storage, &name, segment::SEGMENT_HEADER_BYTES + 5000, 1000);
    assert!(
        matches!(frame::decode(&old, Lsn(5000)), Decoded::Record { .. }),
        "the old frame is still there"
    );
    assert_eq!(read_all(&log), written[8..].to_vec());
}

#[test]
fn an_old_frame_exactly_where_the_next_frame_goes_is_the_end_of_the_log() {
    for crash in [false, true] {
        let (sim, storage) = sim(102);
        let (log, written) = log_with_a_recycled_segment(&storage, 3);
        let end = written.last().map(|(l, _)| l.add(1000)).unwrap();
        assert_eq!(end, Lsn(2 * SEGMENT + 3000));
        // Where the next frame goes lies segment 0's frame at LSN 3000: intact, a valid
        // frame there, and not one here.
        let name = segment::segment_name(Lsn(2 * SEGMENT));
        let old = read_at(&*storage, &name, segment::SEGMENT_HEADER_BYTES + 3000, 1000);
        match frame::decode(&old, Lsn(3000)) {
            Decoded::Record { payload, .. } => assert_eq!(payload, record(3)),
            other => panic!("segment 0's frame is gone: {other:?}"),
        }
        assert_eq!(
            frame::decode(&old, end),
            Decoded::Invalid(InvalidFrame::BadCrc)
        );
        if crash {
            sim.crash();
        } else {
            log.close().unwrap();
        }
        drop(log);

        let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
        assert_eq!(log.recovery().end, end, "crash {crash}");
        assert_eq!(read_all(&log), written[8..].to_vec(), "crash {crash}");
        // The log goes on where it ended; the old frames never come back.
        let a = log.append(b"next").unwrap();
        assert_eq!(a.lsn, end);
        log.wait_durable(a.end).unwrap();
        sim.crash();
        drop(log);
        let log = Log::open(storage, DIR, small_options()).unwrap();
        let mut expected = written[8..].to_vec();
        expected.push((end, b"next".to_vec()));
        assert_eq!(read_all(&log), expected, "crash {crash}");
    }
}

#[test]
fn a_torn_tail_before_old_frames_is_cut_and_damage_before_a_proof_is_corruption() {
    // The last record damaged: a tail, cut, though old frames follow it.
    let (disk, storage) = sim(103);
    let (log, written) = log_with_a_recycled_segment(&storage, 4);
    drop(log);
    disk.crash();
    let last = written.last().unwrap().0;
    poke(&*storage, Path::new(DIR), SEGMENT, last.add(20), b"torn");
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert_eq!(log.recovery().end, last);
    assert_eq!(read_all(&log), written[8..written.len() - 1].to_vec());
    drop(log);

    // A record damaged before a later one whose hint proves it was durable: corruption,
    // in a recycled segment as anywhere.
    let (sim, storage) = sim(104);
    let (log, written) = log_with_a_recycled_segment(&storage, 4);
    drop(log);
    sim.crash();
    let second = written[written.len() - 3].0;
    poke(
        &*storage,
        Path::new(DIR),
        SEGMENT,
        second.add(20),
        b"damage",
    );
    match Log::open(storage, DIR, small_options()) {
        Err(WalError::Corruption { lsn, .. }) => assert_eq!(lsn, second),
        Err(e) => panic!("{e}"),
        Ok(log) => panic!("opened, ending at {}", log.recovery().end),
    }
}

#[test]
fn the_pool_is_bounded_and_kept_only_while_the_log_is_open() {
    let (sim, storage) = sim(105);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    let segments = MAX_RECYCLED_SEGMENTS as u32 + 4;
    let mut last = None;
    for i in 0..segments * 8 + 1 {
        last = Some(log.append(&record(i)).unwrap());
    }
    log.wait_durable(last.unwrap().end).unwrap();
    let removed = log.truncate_below(log.durable_lsn()).unwrap();
    assert_eq!(removed, segments as usize);
    // The oldest are recycled, the rest deleted.
    let expected: Vec<String> = (0..MAX_RECYCLED_SEGMENTS as u64)
        .map(|k| segment::free_name(Lsn(k * SEGMENT)))
        .collect();
    assert_eq!(named(&*storage, ".wal.free"), expected);
    // A truncation of one segment adds nothing to a pool that holds one or more.
    for i in 0..8 {
        last = Some(log.append(&record(1000 + i)).unwrap());
    }
    log.wait_durable(last.unwrap().end).unwrap();
    eventually(|| named(&*storage, ".wal.free").len() < MAX_RECYCLED_SEGMENTS);
    assert_eq!(log.truncate_below(log.durable_lsn()).unwrap(), 1);
    let twelfth = segment::free_name(Lsn(u64::from(segments) * SEGMENT));
    assert!(!named(&*storage, ".wal.free").contains(&twelfth));
    assert!(!storage
        .exists(&Path::new(DIR).join(segment::segment_name(Lsn(u64::from(segments) * SEGMENT))))
        .unwrap());
    let end = log.close().unwrap();
    drop(log);

    // A read-only open reads around the pool and leaves it alone.
    let stats = sim.stats();
    let before = sim.list(Path::new(DIR)).unwrap();
    let ro = Log::open_read_only(storage.clone(), DIR, small_options()).unwrap();
    assert_eq!(ro.durable_lsn(), end);
    ro.close().unwrap();
    drop(ro);
    assert_only_syncs(&sim, stats, "a read-only open");
    assert_eq!(sim.list(Path::new(DIR)).unwrap(), before);

    // A read-write open starts with an empty pool: what it finds is removed.
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert!(named(&*storage, ".wal.free").is_empty());
    assert_eq!(log.recovery().end, end);
}

#[test]
fn a_retired_file_is_not_recycled_until_its_retirement_is_durable() {
    // Recycling writes a new header into the file. Before the directory sync that makes
    // its retirement durable, a power loss could undo the rename and leave the old
    // segment's name on a header for another start: corruption. So when that sync fails,
    // the retired files are left for the next open to remove, and never reused.
    let (disk, storage) = sim(106);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    let mut last = None;
    for i in 0..17 {
        last = Some(log.append(&record(i)).unwrap());
    }
    log.wait_durable(last.unwrap().end).unwrap();
    disk.inject(
        sluice_storage::FaultPlan::new(
            sluice_storage::FaultOp::Sync,
            1,
            sluice_storage::FaultKind::Eio,
        )
        .on(Path::new(DIR)),
    );
    let e = log
        .truncate_below(log.durable_lsn())
        .expect_err("the failed directory sync reaches the caller");
    assert!(e.is_io(), "{e}");
    disk.clear_faults();
    assert_eq!(
        named(&*storage, ".wal.free").len(),
        2,
        "renamed, not durable"
    );
    // Two more segments: made new (allocated), not from the retired files.
    let allocated = log.stats().bytes_allocated;
    for i in 17..40 {
        last = Some(log.append(&record(i)).unwrap());
    }
    let end = last.unwrap().end;
    log.wait_durable(end).unwrap();
    eventually(|| log.segments().len() >= 4);
    assert_eq!(log.stats().segments_recycled, 0);
    assert!(log.stats().bytes_allocated >= allocated + 2 * SEGMENT);
    assert_eq!(named(&*storage, ".wal.free").len(), 2);
    disk.crash();
    drop(log);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert_eq!(log.recovery().end, end);
    assert!(named(&*storage, ".wal.free").is_empty());
}
