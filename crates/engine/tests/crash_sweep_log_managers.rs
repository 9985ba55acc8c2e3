//! Crash sweep of a database partitioned over 2 and 3 log managers (`Partitioned`) on the
//! simulated disk: threads run transfers between accounts in tables of different
//! partitions (some in one partition, most across two or three), each also writing a
//! marker row in every table it touches, while the disk loses power or the process is
//! killed at a seeded random operation — in the middle of the work, between a
//! participant's flush and the coordinator's commit record, or in a checkpoint — and
//! again, up to twice, during recovery.
//!
//! After the last recovery: the balances still sum to what was loaded (no transfer is
//! half there), each transaction's markers are in all the tables it touched or in none
//! (no partial transaction is visible), every acknowledged commit is present in every
//! partition it wrote (under the durable protocols), and every partition verifies.
//! `SLUICE_LOG_MANAGER_SEEDS` raises the seeds per layout (default 1,000: 2,000 in all).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{CommitProtocol, Options, Partitioned, PartitionedTable};
use sluice_storage::SimStorage;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const DIR: &str = "/db";
const ACCOUNTS: u32 = 6;
const INITIAL: i64 = 100;
const THREADS: u64 = 2;
const TXNS: u32 = 12;
/// Counted operations of a run are about this many: crash points are drawn below it.
const CRASH_RANGE: u64 = 110;

fn seeds() -> u64 {
    std::env::var("SLUICE_LOG_MANAGER_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

fn options(commit: CommitProtocol) -> Options {
    let mut o = Options::small();
    o.pool_pages = 16;
    o.checkpoint_log_bytes = 24 << 10;
    o.log.segment_bytes = 16 << 10;
    o.lock_timeout = Duration::from_millis(200);
    o.commit = commit;
    o
}

fn open(sim: &SimStorage, k: usize, commit: CommitProtocol) -> sluice::Result<Partitioned> {
    let mut b = Partitioned::builder(DIR)
        .log_managers(k)
        .options(options(commit))
        .storage(Arc::new(sim.pinned()));
    for i in 0..k {
        b = b.assign(&format!("t{i}"), i);
    }
    b.open()
}

fn account(a: u32) -> Vec<u8> {
    format!("acct{a}").into_bytes()
}

#[derive(Debug)]
struct Outcome {
    tag: String,
    tables: Vec<usize>,
    acked: bool,
}

#[derive(Default, Debug)]
struct Totals {
    acknowledged: u64,
    mid_run: u64,
    in_recovery: u64,
    in_doubt_committed: u64,
    participant_losers: u64,
    cross_partition_commits: u64,
}

fn one_seed(seed: u64, k: usize, totals: &mut Totals) -> Result<(), String> {
    let sim = SimStorage::new(seed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let commit = [
        CommitProtocol::Classic,
        CommitProtocol::Elr,
        CommitProtocol::ElrPipelined,
        CommitProtocol::Async,
    ][rng.gen_range(0..4)];
    let durable = commit != CommitProtocol::Async;
    let db = open(&sim, k, commit).map_err(|e| format!("create: {e}"))?;
    let tables: Vec<PartitionedTable> = (0..k)
        .map(|i| db.create_table(&format!("t{i}")))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tables: {e}"))?;
    let mut tx = db.begin();
    for t in &tables {
        for a in 0..ACCOUNTS {
            tx.put(t, account(a), INITIAL.to_le_bytes())
                .map_err(|e| format!("load: {e}"))?;
        }
    }
    tx.commit().map_err(|e| format!("load: {e}"))?;
    db.checkpoint()
        .map_err(|e| format!("load checkpoint: {e}"))?;

    let kill = rng.gen_bool(0.3);
    let at = rng.gen_range(1..=CRASH_RANGE);
    if kill {
        sim.kill_at_op(at);
    } else {
        sim.crash_at_op(at);
    }
    let incarnation = sim.incarnation();
    let outcomes = Mutex::new(Vec::new());
    let thread_seeds: Vec<u64> = (0..THREADS).map(|_| rng.gen()).collect();
    std::thread::scope(|s| {
        for (t, &ts) in thread_seeds.iter().enumerate() {
            let (db, tables, outcomes) = (&db, &tables, &outcomes);
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(ts);
                for i in 0..TXNS {
                    let tag = format!("m{seed}.{t}.{i}");
                    // One partition in four transactions; the others span two or all.
                    let mut parts: Vec<usize> = if rng.gen_bool(0.25) {
                        vec![rng.gen_range(0..k)]
                    } else if k == 3 && rng.gen_bool(0.3) {
                        vec![0, 1, 2]
                    } else {
                        let a = rng.gen_range(0..k);
                        let b = (a + rng.gen_range(1..k)) % k;
                        vec![a, b]
                    };
                    parts.sort_unstable();
                    let from = (parts[0], rng.gen_range(0..ACCOUNTS));
                    let mut to = (*parts.last().unwrap(), rng.gen_range(0..ACCOUNTS));
                    if to == from {
                        to.1 = (to.1 + 1) % ACCOUNTS;
                    }
                    let amount: i64 = rng.gen_range(1..=20);
                    let mut tx = db.begin();
                    let r = (|| {
                        // Locks in one order (partition, account): no cross-partition
                        // deadlock for the lock timeout to break.
                        let mut ends = [(from, -amount), (to, amount)];
                        ends.sort_by_key(|e| e.0);
                        for ((p, a), delta) in ends {
                            let v = tx.get_for_update(&tables[p], account(a))?.expect("loaded");
                            let b = i64::from_le_bytes(v.try_into().expect("8 bytes"));
                            tx.put(&tables[p], account(a), (b + delta).to_le_bytes())?;
                        }
                        for &p in &parts {
                            tx.put(&tables[p], tag.as_bytes(), b"")?;
                        }
                        Ok::<_, sluice::Error>(())
                    })();
                    let r = match r {
                        Ok(()) => tx.commit(),
                        Err(e) => tx.rollback().and(Err(e)),
                    };
                    let acked = r.is_ok();
                    outcomes.lock().unwrap().push(Outcome {
                        tag,
                        tables: parts,
                        acked,
                    });
                    if let Err(e) = r {
                        if !e.is_retryable() {
                            return;
                        }
                    }
                }
            });
        }
    });
    sim.disarm_crash();
    let crashed = sim.incarnation() > incarnation;
    if std::env::var("SWEEP_DEBUG").is_ok() && !crashed {
        let o = outcomes.lock().unwrap();
        eprintln!(
            "seed {seed} {commit:?} before the halt: {:?}",
            check(&db, k, &o, durable)
        );
    }
    if crashed {
        totals.mid_run += 1;
    } else if kill {
        sim.kill_process();
    } else {
        sim.crash();
    }
    drop(tables);
    drop(db);
    let outcomes = outcomes.into_inner().unwrap();
    totals.acknowledged += outcomes.iter().filter(|o| o.acked).count() as u64;
    totals.cross_partition_commits += outcomes
        .iter()
        .filter(|o| o.acked && o.tables.len() > 1)
        .count() as u64;

    // Halts during recovery: up to two, each a power loss (or, after a kill, another kill).
    for _ in 0..2 {
        if !rng.gen_bool(0.5) {
            break;
        }
        let before = sim.incarnation();
        let n = rng.gen_range(1..=80);
        if kill && rng.gen_bool(0.5) {
            sim.kill_at_op(n);
        } else {
            sim.crash_at_op(n);
        }
        let r = open(&sim, k, commit);
        sim.disarm_crash();
        if sim.incarnation() > before {
            totals.in_recovery += 1;
            drop(r);
            continue;
        }
        let db = r.map_err(|e| format!("recovery failed: {e}"))?;
        check(&db, k, &outcomes, durable)?;
        drop(db);
        sim.crash();
    }
    if kill {
        // A kill leaves the page cache: the power goes too before the last open.
        sim.crash();
    }
    let db = open(&sim, k, commit).map_err(|e| format!("recovery failed: {e}"))?;
    for (i, r) in db.recovery_reports().iter().enumerate() {
        totals.in_doubt_committed += r.in_doubt_committed as u64;
        if i > 0 {
            totals.participant_losers += r.losers as u64;
        }
    }
    check(&db, k, &outcomes, durable)?;
    db.close().map_err(|e| format!("close: {e}"))
}

fn check(db: &Partitioned, k: usize, outcomes: &[Outcome], durable: bool) -> Result<(), String> {
    let tables: Vec<PartitionedTable> = (0..k)
        .map(|i| db.table(&format!("t{i}")))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tables after recovery: {e}"))?;
    let mut tx = db.begin();
    let mut sum = 0i64;
    let mut markers = vec![BTreeSet::new(); k];
    for (i, t) in tables.iter().enumerate() {
        for row in tx.scan(t, ..).map_err(|e| e.to_string())? {
            let (key, v) = row.map_err(|e| format!("scan: {e}"))?;
            if key.starts_with(b"acct") {
                sum += i64::from_le_bytes(v.try_into().map_err(|_| "balance of 8 bytes")?);
            } else {
                markers[i].insert(String::from_utf8(key).map_err(|_| "marker not utf-8")?);
            }
        }
    }
    tx.commit().map_err(|e| e.to_string())?;
    let want = INITIAL * (k as i64) * i64::from(ACCOUNTS);
    if sum != want {
        return Err(format!(
            "balances sum to {sum}, not {want}: a transfer is half there"
        ));
    }
    for o in outcomes {
        let present: Vec<usize> = o
            .tables
            .iter()
            .copied()
            .filter(|&p| markers[p].contains(&o.tag))
            .collect();
        if !present.is_empty() && present.len() != o.tables.len() {
            return Err(format!(
                "{} is in partitions {present:?} of {:?}: a partial transaction is visible",
                o.tag, o.tables
            ));
        }
        if durable && o.acked && present.is_empty() {
            return Err(format!(
                "{} (partitions {:?}) was acknowledged and is lost",
                o.tag, o.tables
            ));
        }
    }
    db.verify().map_err(|e| format!("verify: {e}"))?;
    Ok(())
}

fn sweep(k: usize, first: u64) {
    let mut totals = Totals::default();
    let n = seeds();
    let mut failures = Vec::new();
    for seed in first..first + n {
        if let Err(e) = one_seed(seed, k, &mut totals) {
            failures.push(format!("seed {seed}: {e}"));
        }
    }
    println!("{k} log managers, {n} seeds: {totals:?}");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The sweep reached the cases it is for.
    assert!(totals.mid_run > n / 4, "too few halts mid-run: {totals:?}");
    assert!(
        totals.in_recovery > 0,
        "no halt during recovery: {totals:?}"
    );
    assert!(totals.cross_partition_commits > 0, "{totals:?}");
    assert!(
        totals.in_doubt_committed > 0,
        "no part was committed from the coordinator's record: {totals:?}"
    );
    assert!(
        totals.participant_losers > 0,
        "no participant rolled back a part: {totals:?}"
    );
}

#[test]
fn crash_sweep_two_log_managers() {
    sweep(2, 0);
}

#[test]
fn crash_sweep_three_log_managers() {
    sweep(3, 1_000_000);
}
