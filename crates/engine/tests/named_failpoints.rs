//! Named failure points (`sluice_storage::failpoint`): the states between two storage
//! operations that an injection at the n-th operation reaches only by chance. For each
//! point the engine's workload reaches (`sluice_testkit::io_errors::Workload::SWEEP`) —
//! a log segment renamed before its directory sync (created, recycled or retired), log
//! bytes written before their sync, a data page written before its sync, and every step
//! of a checkpoint (after its begin record, after the data sync, after its end record,
//! the new control file renamed before its directory sync, the control file written
//! before the log is truncated) — and for every time the workload reaches it, the
//! process is killed there, the power is cut there, and the call fails with EIO there;
//! then the machine restarts on a healed disk (after a kill: a reopen in the same boot,
//! then a power loss). Every acknowledged commit must be there, every table verify, no
//! run panic or hang, and an EIO must reach the client. `SLUICE_IO_SWEEP_TXNS` sets the
//! workload's transactions per phase (24) for a longer sweep by hand.

use sluice::Strategy;
use sluice_storage::failpoint;
use sluice_testkit::io_errors::{self, Workload};

/// `deterministic`: no background thread does I/O on its own timing, so every reach the
/// clean run counted must be reached again.
fn sweep(strategy: &str, names: &[&'static str], deterministic: bool) {
    let w = Workload::sweep_from_env().with_strategy(strategy.parse::<Strategy>().unwrap());
    let (r, reaches) = io_errors::failpoint_sweep(w, names, io_errors::workers(2));
    println!(
        "named failure points, {strategy}: reaches {reaches:?}; {} injection points (reach × kill/power loss/EIO), {} reached, {} runs in {:.1} s; acknowledged {}, lost {}, panics {}, hangs {}, violations {}",
        r.points,
        r.covered,
        r.runs,
        r.elapsed.as_secs_f64(),
        r.acknowledged,
        r.lost,
        r.panics,
        r.hangs,
        r.violations
    );
    for f in r.failures.iter().take(20) {
        println!("  {f}");
    }
    for (name, hits) in &reaches {
        assert!(*hits > 0, "{strategy}: the workload never reaches {name}");
    }
    assert_eq!(reaches.len(), names.len());
    let total: u64 = reaches.iter().map(|(_, h)| h).sum();
    assert_eq!(r.points, 3 * total, "every reach of every point covered");
    assert_eq!(r.runs, 2 * r.points);
    if deterministic {
        assert_eq!(
            r.covered, r.points,
            "every reach of every point reached again"
        );
    }
    assert!(
        r.acknowledged > r.runs,
        "too little acknowledged to mean much"
    );
    assert_eq!(r.lost, 0, "{strategy}: acknowledged commits lost");
    assert_eq!(r.panics, 0, "{strategy}: panics");
    assert_eq!(r.hangs, 0, "{strategy}: hangs");
    assert_eq!(r.violations, 0, "{strategy}: {:?}", r.failures);
}

/// Every point of the engine and the log but the WAL segment archiver's (which only a
/// partitioned, archived log has: `sluice-wal`'s own tests).
const ENGINE_POINTS: [&str; 9] = [
    failpoint::SEGMENT_RENAMED,
    failpoint::SEGMENT_RETIRED,
    failpoint::LOG_WRITTEN,
    failpoint::PAGE_WRITTEN,
    failpoint::CHECKPOINT_BEGUN,
    failpoint::CHECKPOINT_DATA_SYNCED,
    failpoint::CHECKPOINT_ENDED,
    failpoint::CONTROL_RENAMED,
    failpoint::CHECKPOINT_CONTROL_WRITTEN,
];

#[test]
fn every_named_point_under_checkpoint_sweeps() {
    sweep("checkpoint-sweep", &ENGINE_POINTS, true);
}

#[test]
fn every_named_point_under_a_page_cleaner() {
    sweep("page-oldest:4", &ENGINE_POINTS, false);
}
