//! Regression (found by the commit-protocol crash sweep after checkpoints moved to the
//! background): when the segment preparer failed, poisoning ran the durable callbacks on
//! the preparer's own thread; a callback that dropped the last owner of the log made
//! `Log::close` join the preparer from itself and panic ("Resource deadlock avoided"),
//! and the callbacks after it never ran. Closing from the preparer must skip that join,
//! as closing from the flush daemon already did.

use crate::common;

use common::*;
use sluice_storage::{FaultKind, FaultOp, FaultPlan};
use sluice_wal::{segment, Log, Lsn};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn a_callback_may_drop_the_last_owner_of_the_log_while_the_preparer_poisons_it() {
    let (sim, storage) = sim(3);
    let opts = small_options();
    // The preparer makes segment 1 once the daemon has filled half of segment 0: fail
    // every write of its temporary file.
    let tmp = format!(
        "{DIR}/{}.tmp",
        segment::segment_name(Lsn(opts.segment_bytes))
    );
    sim.inject(
        FaultPlan::new(FaultOp::Write, 1, FaultKind::Eio)
            .persistent()
            .on(tmp),
    );
    let log = Arc::new(Log::open(storage, DIR, opts).unwrap());
    let done_rx = last_owner_in_a_callback(&log);
    // Fill segment 0 past its half, so the preparer starts on segment 1. (An append may
    // already meet the poison.)
    let record = [7u8; 600];
    for _ in 0..(opts.segment_bytes as usize / 2 / record.len() + 1) {
        let _ = log.append(&record);
    }
    drop(log);
    let failed = done_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback must run to its end: closing the log from it must not panic");
    assert!(failed, "the callback is answered with the poison");
}
