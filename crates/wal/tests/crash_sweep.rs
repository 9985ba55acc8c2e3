//! Crash sweep: several threads append and wait for durability over the simulated disk,
//! which crashes at a seeded random operation. After reopening, every record whose
//! durability was acknowledged must be present and intact, in LSN order, nothing may
//! appear that was never written, and the log must accept appends again.

mod common;

use common::*;
use rand::{Rng, SeedableRng};
use sluice_wal::Log;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

const SEEDS: u64 = 2000;
const MAX_LEN: usize = 700;

#[derive(Default)]
struct Totals {
    acknowledged: u64,
    recovered: u64,
    lost: u64,
    crashes_mid_run: u64,
    tails_cut: u64,
}

/// One seed: two crash rounds over the same disk, so recovery of a log that was itself
/// recovered (and had its tail cut) is covered too.
fn run_seed(seed: u64, totals: &mut Totals) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (sim, storage) = sim(seed);
    let opts = small_options();
    let mut acked_all: HashSet<(u32, u32)> = HashSet::new();
    let mut attempted_all: HashSet<(u32, u32)> = HashSet::new();
    let mut round_base = 0u32;
    for round in 0..2 {
        let threads = rng.gen_range(2..=4u32);
        let per_thread = rng.gen_range(5..=60u32);
        sim.crash_at_op(rng.gen_range(1..=120));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let attempted = Arc::new(Mutex::new(Vec::new()));
        if let Ok(log) = Log::open(storage.clone(), DIR, opts) {
            let log = Arc::new(log);
            std::thread::scope(|s| {
                for t in 0..threads {
                    let (log, acked, attempted) = (log.clone(), acked.clone(), attempted.clone());
                    let tid = round_base + t;
                    s.spawn(move || {
                        for seq in 0..per_thread {
                            attempted.lock().unwrap().push((tid, seq));
                            let Ok(a) = log.append(&payload(tid, seq, MAX_LEN)) else {
                                return;
                            };
                            if log.wait_durable(a.end).is_err() {
                                return;
                            }
                            acked.lock().unwrap().push((tid, seq));
                        }
                    });
                }
            });
            if sim.stats().crashes == round as u64 {
                // The workload finished before the armed crash: crash now instead.
                sim.crash();
            } else {
                totals.crashes_mid_run += 1;
            }
            drop(log);
        } else {
            assert!(
                sim.stats().crashes > round as u64,
                "seed {seed}: open failed without a crash"
            );
        }
        sim.disarm_crash();
        round_base += threads;
        acked_all.extend(acked.lock().unwrap().iter().copied());
        attempted_all.extend(attempted.lock().unwrap().iter().copied());

        // Reopen and check.
        let log = Log::open(storage.clone(), DIR, opts)
            .unwrap_or_else(|e| panic!("seed {seed} round {round}: reopen failed: {e}"));
        totals.tails_cut += (log.recovery().cut_bytes > 0) as u64;
        let recs = read_all(&log);
        let mut seen = HashSet::new();
        let mut last_seq: HashMap<u32, u32> = HashMap::new();
        let mut prev = None;
        for (lsn, p) in &recs {
            assert!(prev < Some(*lsn), "seed {seed}: LSNs not increasing");
            prev = Some(*lsn);
            let (t, q) = check_payload(p, MAX_LEN)
                .unwrap_or_else(|| panic!("seed {seed}: record at {lsn} is not one we wrote"));
            assert!(
                attempted_all.contains(&(t, q)),
                "seed {seed}: record ({t},{q}) was never appended"
            );
            assert!(seen.insert((t, q)), "seed {seed}: record ({t},{q}) twice");
            if let Some(&before) = last_seq.get(&t) {
                assert!(before < q, "seed {seed}: thread {t} out of order");
            }
            last_seq.insert(t, q);
        }
        let lost: Vec<_> = acked_all.iter().filter(|k| !seen.contains(k)).collect();
        totals.lost += lost.len() as u64;
        assert!(
            lost.is_empty(),
            "seed {seed}: acknowledged records lost: {lost:?}"
        );
        totals.recovered += recs.len() as u64;

        // The recovered log takes new appends and keeps them.
        let marker = payload(9999, seed as u32 * 2 + round, MAX_LEN);
        let a = log.append(&marker).expect("append after recovery");
        log.wait_durable(a.end).expect("durable after recovery");
        assert_eq!(log.close().unwrap(), a.end);
        let log = Log::open(storage.clone(), DIR, opts).unwrap();
        let recs = read_all(&log);
        assert_eq!(recs.last().map(|r| (&r.1, r.0)), Some((&marker, a.lsn)));
        assert!(recs.len() as u64 > 0);
        attempted_all.insert((9999, seed as u32 * 2 + round));
        drop(log);
    }
    totals.acknowledged += acked_all.len() as u64;
}

#[test]
fn acknowledged_records_survive_crashes() {
    let mut totals = Totals::default();
    for seed in 0..SEEDS {
        run_seed(seed, &mut totals);
    }
    println!(
        "wal crash sweep: {SEEDS} seeds, {} crashes mid-run, {} torn tails cut, acknowledged {}, recovered {}, lost {}",
        totals.crashes_mid_run, totals.tails_cut, totals.acknowledged, totals.recovered, totals.lost
    );
    assert_eq!(totals.lost, 0);
    assert!(
        totals.acknowledged > SEEDS,
        "the sweep acknowledged too little to mean much"
    );
    assert!(
        totals.crashes_mid_run > SEEDS / 2,
        "most crashes must hit a running workload"
    );
    assert!(
        totals.tails_cut > SEEDS / 10,
        "crashes must leave torn tails to recover from"
    );
}
