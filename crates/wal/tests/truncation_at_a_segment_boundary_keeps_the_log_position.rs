//! Issue 8, defect 7 (log side, second half). With the durable end exactly on a segment
//! boundary and the next segment not made yet (the preparer had not got to it, or a crash
//! lost its unsynced entry), `truncate_below(end)` removed every segment: the reopened
//! log found none and restarted its LSNs at 0, under a database whose pages carry LSNs
//! from the old numbering. The segment holding the last durable byte is never removed.

use crate::common;

use common::*;
use sluice_wal::{frame, segment, Log, Lsn};
use std::path::Path;
use std::time::Duration;

#[test]
fn truncating_at_a_segment_boundary_never_forgets_the_log_position() {
    let (_sim, storage) = sim(52);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    // Sixteen 512-byte frames fill the first 8 KiB segment exactly.
    let payload_bytes = 512 - frame::RECORD_HEADER;
    let mut end = Lsn(0);
    for i in 0..16u8 {
        end = log.append(&vec![i; payload_bytes]).unwrap().end;
    }
    log.wait_durable(end).unwrap();
    assert_eq!(end, Lsn(8192));
    while log.segments().len() < 2 {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(log.close().unwrap(), end);
    drop(log);
    // The state in which the next segment does not exist yet.
    let next = Path::new(DIR).join(segment::segment_name(end));
    storage.remove(&next).unwrap();
    storage.sync_dir(Path::new(DIR)).unwrap();

    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert_eq!((log.recovery().end, log.segments()), (end, vec![Lsn(0)]));
    log.truncate_below(end).unwrap();
    assert!(!log.segments().is_empty(), "the log kept no segment");
    drop(log);

    let log = Log::open(storage, DIR, small_options()).unwrap();
    assert_eq!(
        log.recovery().end,
        end,
        "the reopened log forgot its position"
    );
    let a = log.append(b"next").unwrap();
    assert_eq!(a.lsn, end, "LSNs go on where they were");
    log.wait_durable(a.end).unwrap();
}
