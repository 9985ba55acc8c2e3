//! Crash sweep over the simulated disk: 4,000 seeds (`SLUICE_CRASH_SEEDS` overrides) of
//! random multi-key transactions from four threads. Each seed halts the machine at a random
//! operation in one of four ways (power loss; a process kill, a reopen from the page cache
//! and a later power loss; a failed fsync then a kill or a power loss; a power loss then
//! read errors in recovery), and for about half the seeds again during recovery. Every
//! acknowledged commit must survive, nothing of a rolled-back or unfinished transaction may
//! remain, every state a recovery showed must survive later halts, and every table must
//! verify.

use std::time::Instant;

#[test]
fn crash_sweep_keeps_acknowledged_commits_and_nothing_else() {
    let seeds = std::env::var("SLUICE_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    let start = Instant::now();
    let r = sluice_testkit::crash::crash_test(seeds, 0, |_| {});
    println!(
        "crash sweep: {} seeds in {:.1} s, {} crashes mid-run, {} crashes in recovery, {} process kills, {} failed fsyncs, {} opens refused on read errors, {} shown states rechecked, acknowledged {}, lost {}, violations {}",
        r.seeds,
        start.elapsed().as_secs_f64(),
        r.crashes_mid_run,
        r.crashes_in_recovery,
        r.process_kills,
        r.failed_syncs,
        r.refused_opens,
        r.states_rechecked,
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
    // Each mode must actually happen, or the sweep proves less than it says.
    assert!(r.process_kills > seeds / 5, "too few process kills");
    assert!(r.failed_syncs > seeds / 20, "too few failed fsyncs");
    assert!(r.refused_opens > 0, "no read error ever reached recovery");
    assert!(
        r.states_rechecked > seeds / 4,
        "too few shown states rechecked"
    );
}
