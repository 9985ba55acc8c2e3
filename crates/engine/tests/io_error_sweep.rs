//! The I/O-error sweep (`sluice_testkit::io_errors`), as SQLite's tests do it: a fixed
//! workload (open, two tables, 72 transactions from one thread with a checkpoint after
//! each 24, close) is run once per storage operation of its clean run, with EIO and with
//! ENOSPC injected at that operation, once and from then on, and once per read with EIO,
//! once and from then on; after each run the disk is healed and the machine restarted,
//! by a process kill (reopen in the same boot, then a power loss) and by a power loss.
//! No run may panic, hang, lose an acknowledged commit, fail with an error that is not
//! the disk's, or leave a database that does not verify. Every operation and every read
//! is covered, under each way pages reach the data file (checkpoint sweeps, a page
//! cleaner, log-based propagation). `SLUICE_IO_SWEEP_TXNS` sets the transactions per
//! phase (24) for a longer sweep by hand.

use sluice::Strategy;
use sluice_testkit::io_errors::{self, Workload};

/// `deterministic`: no background thread does I/O on its own timing (only the log's flush
/// daemon batches differently from run to run, and the points are the operations every
/// clean run does), so every injection point must be reached.
fn sweep(strategy: &str, deterministic: bool) {
    let w = Workload::sweep_from_env().with_strategy(strategy.parse::<Strategy>().unwrap());
    let r = io_errors::io_error_sweep(w, io_errors::workers(2));
    println!(
        "I/O-error sweep, {strategy}: {} counted operations and {} reads in the clean run; {} injection points ({} × EIO/ENOSPC × transient/persistent + {} × EIO × transient/persistent), {} reached, {} runs (each point after a kill and after a power loss) in {:.1} s, {} ended in an error; acknowledged {}, lost {}, panics {}, hangs {}, violations {}",
        r.ops,
        r.reads,
        r.points,
        r.ops,
        r.reads,
        r.covered,
        r.runs,
        r.elapsed.as_secs_f64(),
        r.failed_runs,
        r.acknowledged,
        r.lost,
        r.panics,
        r.hangs,
        r.violations
    );
    for f in r.failures.iter().take(20) {
        println!("  {f}");
    }
    assert_eq!(
        r.points,
        4 * r.ops + 2 * r.reads,
        "every operation and read covered"
    );
    assert_eq!(r.runs, 2 * r.points);
    if deterministic {
        assert_eq!(
            r.covered, r.points,
            "every injection point reached; not: {:?}",
            r.uncovered
        );
    }
    assert!(
        r.ops > 100 && r.reads > 10,
        "the workload does too little I/O"
    );
    assert!(
        r.acknowledged > r.runs,
        "too little acknowledged to mean much"
    );
    assert_eq!(r.lost, 0, "{strategy}: acknowledged commits lost");
    assert_eq!(r.panics, 0, "{strategy}: panics");
    assert_eq!(r.hangs, 0, "{strategy}: hangs");
    assert_eq!(r.violations, 0, "{strategy}: {:?}", r.failures);
}

#[test]
fn every_storage_operation_can_fail_under_checkpoint_sweeps() {
    sweep("checkpoint-sweep", true);
}

#[test]
fn every_storage_operation_can_fail_under_a_page_cleaner() {
    sweep("page-oldest:4", false);
}

#[test]
fn every_storage_operation_can_fail_under_log_based_propagation() {
    sweep("log", false);
}
