//! Issue 24: a clean close gives back the disk space the log keeps for segments to come —
//! the recycling pool's retired files and segments made ahead — which a running log uses
//! to avoid zero-filling (after deleting everything, seven recycled segments stayed beside
//! the data for good). While the log runs, truncated segments are still recycled; after
//! the close only the segments that hold records stay, and the reopened log reads them all
//! and goes on appending where it stopped.

use crate::common;

use common::*;
use sluice_storage::Storage;
use sluice_wal::{frame, segment, Log, Lsn};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const SEGMENT: u64 = 8192;
/// Frames of 1000 bytes: eight to a segment.
const PAYLOAD: usize = 1000 - frame::RECORD_HEADER;
/// Four segments and five frames of the fifth, past its half: the preparer makes the
/// sixth ahead.
const RECORDS: u32 = 37;

fn names(storage: &dyn Storage) -> Vec<String> {
    let mut v = storage.list(Path::new(DIR)).unwrap();
    v.sort();
    v
}

fn append(log: &Log, i: u32) -> Lsn {
    let a = log.append(&[(i % 251) as u8; PAYLOAD]).unwrap();
    log.wait_durable(a.end).unwrap();
    a.end
}

#[test]
fn a_clean_close_removes_retired_and_prepared_segments() {
    let (_sim, storage) = sim(7);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert_eq!(small_options().segment_bytes, SEGMENT);
    let mut end = Lsn(0);
    for i in 0..RECORDS {
        end = append(&log, i);
    }
    let keep = segment::segment_start(end, SEGMENT);
    log.truncate_below(keep).unwrap();
    let retired = |s: &dyn Storage| names(s).iter().filter(|n| n.ends_with(".wal.free")).count();
    assert!(
        retired(&*storage) > 0,
        "truncation recycles: {:?}",
        names(&*storage)
    );
    while !log.segments().iter().any(|&s| s > end) {
        std::thread::sleep(Duration::from_millis(1));
    }
    log.close().unwrap();

    assert_eq!(retired(&*storage), 0, "{:?}", names(&*storage));
    let segments: Vec<String> = names(&*storage)
        .into_iter()
        .filter(|n| n.ends_with(".wal"))
        .collect();
    assert_eq!(
        segments,
        vec![segment::segment_name(keep)],
        "only the segment holding the log's end stays"
    );

    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert_eq!(log.durable_lsn(), end);
    assert_eq!(
        read_all(&log).len() as u64,
        u64::from(RECORDS) - 8 * (keep.0 / SEGMENT)
    );
    let next = append(&log, 99);
    assert!(next > end);
    log.close().unwrap();
    let log = Log::open(Arc::clone(&storage), DIR, small_options()).unwrap();
    assert_eq!(log.durable_lsn(), next);
}
