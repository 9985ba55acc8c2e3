//! Issue 8, defects 1 and 2 (log side). On Linux a failed fsync marks the dirty pages
//! clean: the records it was to sync stay readable from the page cache but never reach
//! the device, and a later fsync succeeds without writing them. A log reopened in the same
//! boot (after a process kill) must not read them back as durable: recovery syncs each
//! segment and drops its cache, so the scan sees exactly what the device holds.

use crate::common;

use common::*;
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage, Storage};
use sluice_wal::{segment, Log, Lsn};
use std::path::Path;
use std::sync::Arc;

/// Both variants, or the one `WAL_VARIANT` names (to see each one fail on its own).
fn variants() -> Vec<u64> {
    match std::env::var("WAL_VARIANT") {
        Ok(v) => vec![v.parse().expect("WAL_VARIANT is 0 or 1")],
        Err(_) => vec![0, 1],
    }
}

#[test]
fn a_log_reopened_after_a_failed_fsync_does_not_publish_the_orphaned_tail() {
    for variant in variants() {
        let sim = SimStorage::new(31 + variant);
        let log = Log::open(Arc::new(sim.pinned()), DIR, small_options()).unwrap();
        let first = payload(0, 0, 300);
        let a = log.append(&first).unwrap();
        log.wait_durable(a.end).unwrap();
        // The preparer is idle: a log this empty asks it for no extension and no next
        // segment, so the fault below hits the daemon's sync.
        assert_eq!(log.segments().len(), 1);
        let segment_zero = Path::new(DIR).join(segment::segment_name(Lsn(0)));
        sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio).on(&segment_zero));
        let b = log.append(&payload(0, 1, 300)).unwrap();
        let e = log.wait_durable(b.end).unwrap_err();
        assert!(e.is_io(), "{e}");
        sim.kill_process();
        drop(log);
        sim.clear_faults();

        let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
        let log = Log::open(storage, DIR, small_options()).unwrap();
        let mut reported = read_all(&log);
        assert_eq!(reported.first(), Some(&(a.lsn, first.clone())));
        if variant == 1 {
            let marker = payload(1, 0, 300);
            let c = log.append(&marker).unwrap();
            log.wait_durable(c.end).unwrap();
            reported.push((c.lsn, marker));
        }
        sim.crash();
        drop(log);

        let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
        let log = Log::open(storage, DIR, small_options())
            .unwrap_or_else(|e| panic!("variant {variant}: reopen after the power loss: {e}"));
        let survived = read_all(&log);
        let lsns = |records: &[(Lsn, Vec<u8>)]| records.iter().map(|r| r.0).collect::<Vec<_>>();
        assert_eq!(
            lsns(&survived),
            lsns(&reported),
            "variant {variant}: the reopened log reported records durable that a power \
             loss then took"
        );
        assert_eq!(survived, reported, "variant {variant}: intact");
    }
}
