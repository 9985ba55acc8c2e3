//! Issue 9 ("an empty database costs little"). Segment files used to be zero-filled to
//! their full size at creation, and the next one made as soon as the first was opened: an
//! empty log took two 16 MiB files. Now the first segment's file starts small, the
//! preparer extends it ahead of the flush daemon, and the next segment is made only once
//! the current one is half full; what the log reads back is unchanged.

use crate::common;

use common::*;
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::{segment, Log, LogOptions, Lsn};
use std::path::Path;

fn file_len(storage: &dyn Storage, start: Lsn) -> u64 {
    storage
        .open(
            &Path::new(DIR).join(segment::segment_name(start)),
            OpenOptions::EXISTING,
        )
        .unwrap()
        .len()
        .unwrap()
}

#[test]
fn an_almost_empty_log_is_one_small_file() {
    let (_sim, storage) = sim(91);
    let options = LogOptions::default();
    assert_eq!(options.segment_bytes, 16 << 20);
    let log = Log::open(storage.clone(), DIR, options).unwrap();
    let a = log.append(b"the only record").unwrap();
    log.wait_durable(a.end).unwrap();
    log.close().unwrap();
    assert_eq!(log.segments(), vec![Lsn(0)]);
    assert_eq!(
        file_len(&*storage, Lsn(0)),
        segment::SEGMENT_HEADER_BYTES + segment::INITIAL_EXTENT_BYTES
    );
    drop(log);
    let log = Log::open(storage, DIR, options).unwrap();
    assert_eq!(read_all(&log), vec![(a.lsn, b"the only record".to_vec())]);
}

#[test]
fn the_file_grows_ahead_of_the_writer_and_the_next_segment_comes_when_half_full() {
    let (_sim, storage) = sim(92);
    let options = small_options();
    let segment_bytes = options.segment_bytes;
    let log = Log::open(storage.clone(), DIR, options).unwrap();
    let mut written = Vec::new();
    let mut seq = 0;
    // Up to just below half of the first segment: one file, grown ahead of what is
    // written.
    while log.released_lsn() < Lsn(segment_bytes / 2 - 300) {
        let p = payload(0, seq, 200);
        let a = log.append(&p).unwrap();
        log.wait_durable(a.end).unwrap();
        written.push((a.lsn, p));
        seq += 1;
        assert_eq!(log.segments(), vec![Lsn(0)], "no next segment yet");
        let len = file_len(&*storage, Lsn(0));
        assert!(
            len >= segment::SEGMENT_HEADER_BYTES + a.end.0,
            "{len} < {}",
            a.end
        );
        if a.end.0 * 2 <= segment::initial_extent(segment_bytes) {
            // Not yet into the second half of the first extent: not extended yet.
            assert_eq!(
                len,
                segment::SEGMENT_HEADER_BYTES + segment::initial_extent(segment_bytes)
            );
        }
    }
    // Into the second segment: the first file is whole, the second exists.
    while log.released_lsn() < Lsn(segment_bytes + 1000) {
        let p = payload(0, seq, 200);
        let a = log.append(&p).unwrap();
        log.wait_durable(a.end).unwrap();
        written.push((a.lsn, p));
        seq += 1;
    }
    assert_eq!(
        file_len(&*storage, Lsn(0)),
        segment::SEGMENT_HEADER_BYTES + segment_bytes
    );
    assert!(log.segments().starts_with(&[Lsn(0), Lsn(segment_bytes)]));
    log.close().unwrap();
    drop(log);
    let log = Log::open(storage, DIR, options).unwrap();
    assert_eq!(read_all(&log), written);
}

#[test]
fn a_read_only_open_reads_a_short_file_to_its_end_and_never_grows_it() {
    let (sim, storage) = sim(93);
    let options = small_options();
    let log = Log::open(storage.clone(), DIR, options).unwrap();
    let mut written = Vec::new();
    for seq in 0..3 {
        let p = payload(0, seq, 100);
        let a = log.append(&p).unwrap();
        written.push((a.lsn, p));
    }
    let end = log.sync().unwrap();
    log.close().unwrap();
    drop(log);
    let short = segment::SEGMENT_HEADER_BYTES + segment::initial_extent(options.segment_bytes);
    assert_eq!(file_len(&*storage, Lsn(0)), short, "a short file");
    let before = sim.stats();

    let log = Log::open_read_only(storage.clone(), DIR, options).unwrap();
    assert_eq!(
        log.durable_lsn(),
        end,
        "the file's end is the end of its data"
    );
    assert_eq!(read_all(&log), written);
    log.close().unwrap();
    drop(log);
    assert_only_syncs(&sim, before, "a read-only open");
    assert_eq!(file_len(&*storage, Lsn(0)), short, "not grown");
    assert_eq!(
        sim.list(Path::new(DIR)).unwrap().len(),
        2,
        "no segment made: LOCK and one segment"
    );
}
