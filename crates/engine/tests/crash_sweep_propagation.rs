//! The crash sweep (see `crash_sweep.rs`) with each update-propagation strategy active:
//! a page cleaner with every policy, writing pages on its own thread while transactions
//! run and checkpoints write none, and log-based propagation, replaying sorted runs onto
//! the data file at every checkpoint. 1,000 seeds per strategy (`SLUICE_PROPAGATION_SEEDS`
//! overrides); the same checks: no acknowledged commit lost, no trace of anything else,
//! every shown state survives, every table verifies.

use sluice::Strategy;
use sluice_testkit::crash::{crash_test_propagation, CrashMode};

fn sweep(strategy: &str) {
    let seeds = std::env::var("SLUICE_PROPAGATION_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let s: Strategy = strategy.parse().unwrap();
    let r = crash_test_propagation(CrashMode::Direct, s, seeds, 0, |_| {});
    println!(
        "{strategy}: {} seeds, {} crashes mid-run, {} in recovery, acknowledged {}, lost {}, violations {}",
        r.seeds, r.crashes_mid_run, r.crashes_in_recovery, r.acknowledged, r.lost, r.violations
    );
    for f in r.failures.iter().take(10) {
        println!("  {f}");
    }
    assert_eq!(r.seeds, seeds);
    assert_eq!(r.lost, 0, "{strategy}: acknowledged commits lost");
    assert_eq!(r.violations, 0, "{strategy}: {:?}", r.failures);
    assert!(
        r.acknowledged > seeds,
        "{strategy}: too little acknowledged"
    );
    assert!(
        r.crashes_mid_run > seeds / 4,
        "{strategy}: too few crashes hit the running workload"
    );
}

#[test]
fn crash_sweep_with_log_based_propagation() {
    sweep("log");
}

#[test]
fn crash_sweep_with_page_cleaner_oldest_first() {
    sweep("page-oldest:4");
}

#[test]
fn crash_sweep_with_page_cleaner_coldest_first() {
    sweep("page-coldest:4");
}

#[test]
fn crash_sweep_with_page_cleaner_hottest_first() {
    sweep("page-hottest:4");
}

#[test]
fn crash_sweep_with_page_cleaner_without_policy() {
    sweep("page-none");
}

#[test]
fn crash_sweep_with_page_cleaner_clustered() {
    sweep("page-clustered:2");
}

#[test]
fn crash_sweep_with_page_cleaner_mixed() {
    sweep("page-mixed");
}
