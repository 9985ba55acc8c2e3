//! Crash sweep over the simulated disk: 4,000 seeds (`SLUICE_CRASH_SEEDS` overrides) of
//! random multi-key transactions from four threads, a crash at a random operation during the work and (for about half the
//! seeds) again during recovery. Every acknowledged commit must survive, nothing of a
//! rolled-back or unfinished transaction may remain, and every table must verify.

use std::time::Instant;

#[test]
fn crash_sweep_keeps_acknowledged_commits_and_nothing_else() {
    let seeds = std::env::var("SLUICE_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    let start = Instant::now();
    let r = sluice::testing::crash::crash_test(seeds, 0, |_| {});
    println!(
        "crash sweep: {} seeds in {:.1} s, {} crashes mid-run, {} crashes in recovery, acknowledged {}, lost {}, violations {}",
        r.seeds,
        start.elapsed().as_secs_f64(),
        r.crashes_mid_run,
        r.crashes_in_recovery,
        r.acknowledged,
        r.lost,
        r.violations
    );
    for f in r.failures.iter().take(20) {
        println!("  {f}");
    }
    assert_eq!(r.seeds, seeds);
    assert_eq!(r.lost, 0, "acknowledged commits lost");
    assert_eq!(r.violations, 0, "violations: {:?}", r.failures);
    assert!(
        r.acknowledged > seeds,
        "the sweep acknowledged too little to mean much"
    );
    assert!(
        r.crashes_mid_run > seeds / 3,
        "too few crashes hit the running workload"
    );
}
