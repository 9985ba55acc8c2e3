//! `sluice crash-test sim --workload tpcb` as CI runs it: TPC-B from four client threads
//! over the simulated disk under the crash sweep's halts (power loss, kill then power
//! loss, failed fsync, read errors in recovery; halts during recovery too). Every
//! recovered state must be a commit-order prefix holding every acknowledged transaction,
//! with balances that are exactly the sums of its transactions' deltas and TPC-B's
//! identities intact (`sluice_bench::experiments::tpcb_crash`).

use sluice_bench::experiments::tpcb_crash::crash_test_tpcb;

const SEEDS: u64 = 400;

#[test]
fn tpcb_over_the_simulated_disk_loses_nothing_acknowledged_and_stays_consistent() {
    let r = crash_test_tpcb(SEEDS, 0, |_| {});
    println!("{r:?}");
    assert_eq!(r.seeds, SEEDS);
    assert!(r.failures.is_empty(), "{:#?}", r.failures);
    assert_eq!(r.violations, 0);
    assert_eq!(r.lost, 0);
    // The halts must hit running work and recoveries, or the sweep proves little.
    assert!(r.acknowledged > SEEDS * 20, "too little work: {r:?}");
    assert!(
        r.crashes_mid_run > SEEDS / 3,
        "halts must hit running work: {r:?}"
    );
    assert!(
        r.crashes_in_recovery > SEEDS / 4,
        "halts must hit recoveries: {r:?}"
    );
    assert!(
        r.process_kills > 0 && r.failed_syncs > 0 && r.refused_opens > 0,
        "{r:?}"
    );
}
