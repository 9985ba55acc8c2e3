//! Serializability across crashes (issue 8): the range-sum workload (writers inserting,
//! deleting, moving amounts and rolling back; scanners summing the range) runs over the
//! simulated disk under every durable commit protocol, directly and through agents, and
//! the machine halts at a random operation — a power loss, or a process kill followed by a
//! reopen from the page cache and then a power loss. Every scan committed before the halt
//! saw the constant sum; every recovery (the reopen after a kill included) shows the
//! constant sum and a table that verifies: no transaction survives in part.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{CommitProtocol, Database, Options};
use sluice_storage::SimStorage;
use sluice_testkit::fence::FencedStorage;
use sluice_testkit::range_sum::{self, Via, Workload, TOTAL};
use std::time::Duration;

const SEEDS_PER_CASE: u64 = 12;

fn options(protocol: CommitProtocol) -> Options {
    let mut o = Options::small();
    o.commit = protocol;
    o.pool_pages = 24;
    o.lock_timeout = Duration::from_millis(100);
    o.checkpoint_log_bytes = 32 << 10;
    o.log.segment_bytes = 16 << 10;
    o
}

/// Reopens, checks the range and the table, and returns the sum (for the message).
fn recovered_sum(sim: &SimStorage, o: Options, what: &str) -> i64 {
    let db = Database::open_on(FencedStorage::for_incarnation(sim), "/db", o)
        .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
    let t = db.table("sums").unwrap();
    let sum = range_sum::range_sum(&db, &t).unwrap();
    db.verify()
        .unwrap_or_else(|e| panic!("{what}: verify failed: {e}"));
    db.close().unwrap();
    sum
}

fn run_seed(protocol: CommitProtocol, via: Via, seed: u64) -> (bool, usize) {
    let what = format!("{protocol} via {via:?}, seed {seed}");
    let o = options(protocol);
    let sim = SimStorage::new(seed);
    let mut rng = StdRng::seed_from_u64(seed);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", o.clone()).unwrap();
    let t = range_sum::setup(&db, "sums").unwrap();
    let kill = rng.gen_bool(0.5);
    // The workload does about 150-250 counted disk operations.
    let at = rng.gen_range(1..=220);
    if kill {
        sim.kill_at_op(at);
    } else {
        sim.crash_at_op(at);
    }
    let incarnation = sim.incarnation();
    let w = Workload {
        seed,
        writers: 3,
        txns_per_writer: 60,
        scanners: 2,
        scans_per_scanner: 15,
    };
    let r = range_sum::run(&db, &t, &w, via);
    sim.disarm_crash();
    let mid_run = sim.incarnation() > incarnation;
    if !mid_run {
        if kill {
            sim.kill_process();
        } else {
            sim.crash();
        }
    }
    drop(t);
    drop(db);
    assert_eq!(
        r.violations(),
        Vec::<String>::new(),
        "{what}: before the halt"
    );
    if kill {
        // Same boot, from the page cache; then the power goes.
        let sum = recovered_sum(&sim, o.clone(), &what);
        assert_eq!(sum, TOTAL, "{what}: the reopen after the kill");
        sim.crash();
    }
    let sum = recovered_sum(&sim, o, &what);
    assert_eq!(sum, TOTAL, "{what}: after the power loss");
    (mid_run, r.scan_sums.len())
}

#[test]
fn the_range_sum_holds_in_every_committed_scan_and_after_every_crash() {
    let durable = [
        CommitProtocol::Classic,
        CommitProtocol::Elr,
        CommitProtocol::Pipelined,
        CommitProtocol::ElrPipelined,
    ];
    let (mut seeds, mut mid, mut scans) = (0u64, 0u64, 0usize);
    for (i, p) in durable.into_iter().enumerate() {
        for via in [Via::Direct, Via::Agents(2)] {
            for s in 0..SEEDS_PER_CASE {
                let seed = 1000 * (i as u64 + 1) + 100 * matches!(via, Via::Agents(_)) as u64 + s;
                let (m, n) = run_seed(p, via, seed);
                seeds += 1;
                mid += m as u64;
                scans += n;
            }
        }
    }
    println!(
        "range sum across crashes: {seeds} seeds, {mid} halted mid-run, {scans} committed scans before the halts, all saw {TOTAL}"
    );
    assert!(mid > seeds / 3, "the halts must hit the running workload");
    assert!(
        scans > seeds as usize,
        "too few scans committed to mean anything"
    );
}
