//! The crash sweep with large values (`CrashMode::LargeValues`): 1,000 seeds
//! (`SLUICE_LARGE_CRASH_SEEDS` overrides) of the crash sweep's workload, in which one put
//! in ten writes a value stored apart from its leaf (up to 8 KiB, one in ten up to 64 KiB,
//! one in 400 of 1 MiB), halted by each of the four halts. Every acknowledged value must
//! be there byte for byte after recovery, no value of an unfinished or rolled-back
//! transaction may show, even in part, and the table of chunks must hold exactly the
//! chunks of the recovered values.

use std::time::Instant;

#[test]
fn large_values_survive_crashes_whole_or_not_at_all() {
    let seeds = std::env::var("SLUICE_LARGE_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let start = Instant::now();
    let r = sluice_testkit::crash::crash_test_large_values(seeds, 50_000, |_| {});
    println!(
        "large-value crash sweep: {} seeds in {:.1} s, {} crashes mid-run, {} in recovery, {} process kills, {} failed fsyncs, {} opens refused on read errors, {} shown states rechecked, acknowledged {}, lost {}, violations {}",
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
    assert!(r.acknowledged > seeds, "the sweep acknowledged too little");
    assert!(
        r.crashes_mid_run > seeds / 3,
        "too few crashes hit the running workload"
    );
    assert!(r.process_kills > seeds / 5, "too few process kills");
    assert!(r.failed_syncs > seeds / 20, "too few failed fsyncs");
    assert!(r.refused_opens > 0, "no read error ever reached recovery");
}
