//! Issue 8, defect 7 (log side, first half). `truncate_below` used to remove its victims
//! with `?` and update its segment list only after all of them: one failed removal left
//! removed segments in the list, and every later truncation failed on the missing file —
//! silently, since the caller discarded the error — until the disk filled. The list must
//! stay exact after every single removal, a file already missing counts as removed, and
//! the error reaches the caller.

use crate::common;

use common::*;
use sluice_storage::{FaultKind, FaultOp, FaultPlan, Storage};
use sluice_wal::{segment, Log, Lsn};
use std::path::Path;

/// The segment files in the log directory, as the disk lists them.
fn on_disk(storage: &dyn Storage) -> Vec<Lsn> {
    let names = storage.list(Path::new(DIR)).unwrap();
    names
        .iter()
        .filter_map(|n| segment::parse_segment_name(n))
        .collect()
}

#[test]
fn a_failed_segment_removal_is_reported_and_a_later_truncation_finishes_the_job() {
    let (sim, storage) = sim(51);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    let appended: Vec<_> = (0..40u8).map(|i| log.append(&[i; 1000]).unwrap()).collect();
    log.sync().unwrap();
    let before = log.segments();
    assert!(before.len() >= 5, "{before:?}");
    let cut = appended[30].lsn; // in the fourth segment
    assert_eq!(segment::segment_start(cut, 8192), before[3]);

    let second = Path::new(DIR).join(segment::segment_name(before[1]));
    sim.inject(FaultPlan::new(FaultOp::Any, 1, FaultKind::Eio).on(&second));
    let e = log
        .truncate_below(cut)
        .expect_err("the failed removal reaches the caller");
    assert!(e.is_io(), "{e}");
    assert!(e.to_string().contains(&second.display().to_string()), "{e}");
    assert_eq!(
        log.segments(),
        on_disk(&*storage),
        "the log's list is exact after a failed removal"
    );
    assert_eq!(
        log.segments()[0],
        before[1],
        "oldest first: the first one is gone"
    );

    let removed = log.truncate_below(cut).expect("a later truncation works");
    assert_eq!(removed, 2);
    assert_eq!(log.segments(), on_disk(&*storage));
    assert_eq!(log.segments()[0], before[3]);
    assert_eq!(log.start_lsn(), before[3]);

    // A segment that vanished behind the log's back counts as removed.
    let third = Path::new(DIR).join(segment::segment_name(before[3]));
    storage.remove(&third).unwrap();
    storage.sync_dir(Path::new(DIR)).unwrap();
    let cut = appended[39].lsn;
    let removed = log.truncate_below(cut).expect("a missing file is no error");
    assert_eq!(removed, 1);
    assert_eq!(log.segments(), on_disk(&*storage));

    // What is left reads back and recovers.
    let last = appended.last().unwrap();
    let records: Vec<_> = log.read_from(log.start_lsn()).unwrap().collect();
    assert!(records.iter().all(|r| r.is_ok()));
    drop(log);
    let log = Log::open(storage, DIR, small_options()).unwrap();
    assert_eq!(log.recovery().end, last.end);
}
