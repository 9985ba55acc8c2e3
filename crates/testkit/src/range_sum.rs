//! The range-sum workload: serializability under concurrent inserts, deletes, rollbacks
//! and range scans, checked by an invariant every committed scan must see.
//!
//! A table holds [`KEYS`] possible keys inside the scanned range (`r0000`…) and a few
//! sentinels just outside it on both sides. The values of the keys in the range always
//! sum to [`TOTAL`]: every writer transaction keeps the sum — it moves an amount from one
//! key to another, deletes a key and folds its value into another, or creates a key
//! with a value split off another — and some roll back after writing. Scanner
//! transactions sum the range (twice, checking the repeat sees the same keys: no
//! phantoms) and commit. Any committed scan that sees a sum other than `TOTAL` saw
//! part of a transaction: an uncommitted or half-seen insert or delete.
//!
//! [`run`] drives the workload on a given database, through direct transactions or an
//! agent pool, and returns what the scans saw; it stops a worker at the first error
//! that is not lock contention, so it can also be cut by a crash (then check
//! [`range_sum`] on the recovered database).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::experiment::{Agents, Outcome};
use sluice::{Database, Error, Result, Table, Transaction};
use std::sync::Mutex;

/// Keys the range can hold.
pub const KEYS: u32 = 48;
/// What the values in the range sum to, always.
pub const TOTAL: i64 = KEYS as i64 * 1000;
/// The scanned range: `[RANGE_FROM, RANGE_TO)`.
pub const RANGE_FROM: &[u8] = b"r";
/// The end of the scanned range (exclusive).
pub const RANGE_TO: &[u8] = b"s";
/// Bytes of padding after each value: fewer entries per page, so the range spans
/// several leaves (and deletes leave some empty) on small pages.
const PAD: usize = 60;

fn key(i: u32) -> Vec<u8> {
    format!("r{i:04}").into_bytes()
}

fn value(v: i64) -> Vec<u8> {
    let mut b = v.to_le_bytes().to_vec();
    b.resize(8 + PAD, b'.');
    b
}

fn decode(k: &[u8], v: &[u8]) -> Result<i64> {
    let b: [u8; 8] = v.get(..8).and_then(|b| b.try_into().ok()).ok_or_else(|| {
        Error::Corruption(format!(
            "range-sum value of {} bytes at {:?}",
            v.len(),
            String::from_utf8_lossy(k)
        ))
    })?;
    Ok(i64::from_le_bytes(b))
}

/// Creates the table and loads every key of the range with 1000 (and the sentinels
/// outside it), in one committed transaction.
pub fn setup(db: &Database, name: &str) -> Result<Table> {
    let t = db.create_table(name)?;
    let mut tx = db.begin();
    for s in [
        &b"a-below"[..],
        b"q-just-below",
        b"s-just-above",
        b"z-above",
    ] {
        tx.put(&t, s, value(-1))?;
    }
    for i in 0..KEYS {
        tx.put(&t, key(i), value(1000))?;
    }
    tx.commit()?;
    Ok(t)
}

/// The sum of the range and its keys, read by `tx` (under its locks).
pub fn scan_range(tx: &mut Transaction, t: &Table) -> Result<(i64, Vec<Vec<u8>>)> {
    let mut sum = 0i64;
    let mut keys = Vec::new();
    for e in tx.scan(t, RANGE_FROM..RANGE_TO) {
        let (k, v) = e?;
        sum += decode(&k, &v)?;
        keys.push(k);
    }
    Ok((sum, keys))
}

/// The sum of the range, read in a transaction of its own (for checking a database,
/// after the workload or after recovery).
pub fn range_sum(db: &Database, t: &Table) -> Result<i64> {
    let mut tx = db.begin();
    let (sum, _) = scan_range(&mut tx, t)?;
    tx.commit()?;
    Ok(sum)
}

/// How much work [`run`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Seeds every worker's choices (each worker gets its own stream).
    pub seed: u64,
    /// Writer workers.
    pub writers: usize,
    /// Transactions per writer.
    pub txns_per_writer: usize,
    /// Scanner workers.
    pub scanners: usize,
    /// Scan transactions per scanner.
    pub scans_per_scanner: usize,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            seed: 1,
            writers: 3,
            txns_per_writer: 120,
            scanners: 2,
            scans_per_scanner: 30,
        }
    }
}

/// How [`run`] runs its transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Each worker thread begins and commits its own transactions (the database's
    /// commit protocol; pipelined ones behave as their blocking counterparts).
    Direct,
    /// Each worker submits its transactions to a pool of this many agents (the
    /// database's commit protocol, with flush pipelining where it has it) and waits for
    /// each result.
    Agents(usize),
}

/// What [`run`] saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Writer transactions committed (changing something).
    pub committed: u64,
    /// Writer transactions rolled back on purpose, after writing.
    pub rolled_back: u64,
    /// Transactions that failed on lock contention (deadlock victims) and rolled back.
    pub contended: u64,
    /// The sum each committed scan saw (every one must be [`TOTAL`]).
    pub scan_sums: Vec<i64>,
    /// Committed scans whose repeat in the same transaction saw other keys (phantoms;
    /// must be 0).
    pub repeat_mismatches: u64,
    /// Errors other than lock contention; each ended its worker (a crash, poisoning).
    pub errors: Vec<String>,
}

impl Report {
    /// Every rule the workload checks, as one error line per broken rule.
    pub fn violations(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .scan_sums
            .iter()
            .filter(|&&s| s != TOTAL)
            .map(|s| format!("a committed scan saw the range sum to {s}, not {TOTAL}"))
            .collect();
        if self.repeat_mismatches > 0 {
            v.push(format!(
                "{} scans saw other keys when repeated in the same transaction",
                self.repeat_mismatches
            ));
        }
        v
    }
}

/// One writer transaction's choices, made before it runs (an agent's body cannot own
/// the worker's random stream).
#[derive(Debug, Clone, Copy)]
enum Plan {
    /// Move `amount` from key `a` to key `b` (both must exist).
    Move { a: u32, b: u32, amount: i64 },
    /// Delete key `a`, adding its value to key `b`.
    Fold { a: u32, b: u32 },
    /// Create key `b` (absent) with `amount` taken from key `a`.
    Split { a: u32, b: u32, amount: i64 },
}

fn plan(rng: &mut StdRng) -> (Plan, bool) {
    let a = rng.gen_range(0..KEYS);
    let mut b = rng.gen_range(0..KEYS - 1);
    if b >= a {
        b += 1;
    }
    let amount = rng.gen_range(1..500);
    let p = match rng.gen_range(0..3) {
        0 => Plan::Move { a, b, amount },
        1 => Plan::Fold { a, b },
        _ => Plan::Split { a, b, amount },
    };
    (p, rng.gen_bool(0.2))
}

/// Runs a plan in `tx`; returns whether it changed anything (a plan whose keys are not
/// as it needs changes nothing). Keys are locked in key order, which avoids most
/// deadlocks between writers (gap locks can still close a cycle: lock timeouts).
fn apply(tx: &mut Transaction, t: &Table, plan: Plan) -> Result<bool> {
    let (a, b) = match plan {
        Plan::Move { a, b, .. } | Plan::Fold { a, b } | Plan::Split { a, b, .. } => (a, b),
    };
    let (ka, kb) = (key(a), key(b));
    let (va, vb) = if a < b {
        let va = tx.get_for_update(t, &ka)?;
        (va, tx.get_for_update(t, &kb)?)
    } else {
        let vb = tx.get_for_update(t, &kb)?;
        (tx.get_for_update(t, &ka)?, vb)
    };
    let va = va.map(|v| decode(&ka, &v)).transpose()?;
    let vb = vb.map(|v| decode(&kb, &v)).transpose()?;
    match (plan, va, vb) {
        (Plan::Move { amount, .. }, Some(x), Some(y)) => {
            tx.put(t, &ka, value(x - amount))?;
            tx.put(t, &kb, value(y + amount))?;
        }
        (Plan::Fold { .. }, Some(x), Some(y)) => {
            tx.delete(t, &ka)?;
            tx.put(t, &kb, value(y + x))?;
        }
        (Plan::Split { amount, .. }, Some(x), None) => {
            tx.put(t, &ka, value(x - amount))?;
            tx.put(t, &kb, value(amount))?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A scan transaction's body: the sum, and whether a repeat saw the same keys.
fn scan_twice(tx: &mut Transaction, t: &Table) -> Result<(i64, bool)> {
    let (sum, keys) = scan_range(tx, t)?;
    let (again, keys_again) = scan_range(tx, t)?;
    Ok((sum, keys == keys_again && sum == again))
}

/// Lock contention: the transaction was a deadlock victim (directly, or an operation
/// after that was refused because of it).
fn contended(e: &Error) -> bool {
    e.is_retryable()
}

/// What a writer transaction did.
enum Wrote {
    Committed,
    RolledBack,
    Nothing,
}

fn writer_direct(db: &Database, t: &Table, plan: Plan, rollback: bool) -> Result<Wrote> {
    let mut tx = db.begin();
    let changed = apply(&mut tx, t, plan)?;
    if !changed {
        tx.rollback()?;
        return Ok(Wrote::Nothing);
    }
    if rollback {
        tx.rollback()?;
        return Ok(Wrote::RolledBack);
    }
    tx.commit()?;
    Ok(Wrote::Committed)
}

fn writer_agents(agents: &Agents, t: &Table, plan: Plan, rollback: bool) -> Result<Wrote> {
    let t = t.clone();
    let f = agents
        .execute(move |tx| {
            let changed = apply(tx, &t, plan)?;
            Ok(match (changed, rollback) {
                (false, _) => Outcome::Rollback(Wrote::Nothing),
                (true, true) => Outcome::Rollback(Wrote::RolledBack),
                (true, false) => Outcome::Commit(Wrote::Committed),
            })
        })
        .wait()?;
    Ok(f.value)
}

fn scanner_direct(db: &Database, t: &Table) -> Result<(i64, bool)> {
    let mut tx = db.begin();
    let r = scan_twice(&mut tx, t)?;
    tx.commit()?;
    Ok(r)
}

fn scanner_agents(agents: &Agents, t: &Table) -> Result<(i64, bool)> {
    let t = t.clone();
    let f = agents
        .execute(move |tx| Ok(Outcome::Commit(scan_twice(tx, &t)?)))
        .wait()?;
    Ok(f.value)
}

/// Runs the workload on `db`'s table `t` (made by [`setup`]) and reports what every
/// committed scan saw. Workers stop at their first error other than lock contention
/// (listed in the report), so a crash or a poisoned database ends the run early.
pub fn run(db: &Database, t: &Table, w: &Workload, via: Via) -> Report {
    let agents = match via {
        Via::Direct => None,
        Via::Agents(n) => Some(Agents::start(db, n)),
    };
    let report = Mutex::new(Report::default());
    let fail = |e: Error| {
        let mut r = report.lock().expect("range-sum report");
        if contended(&e) {
            r.contended += 1;
            true
        } else {
            r.errors.push(e.to_string());
            false
        }
    };
    std::thread::scope(|s| {
        for i in 0..w.writers {
            let (agents, fail, report) = (agents.as_ref(), &fail, &report);
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(w.seed ^ (0x5772_6974 + i as u64));
                for _ in 0..w.txns_per_writer {
                    let (plan, rollback) = plan(&mut rng);
                    let r = match agents {
                        None => writer_direct(db, t, plan, rollback),
                        Some(a) => writer_agents(a, t, plan, rollback),
                    };
                    match r {
                        Ok(Wrote::Committed) => report.lock().expect("report").committed += 1,
                        Ok(Wrote::RolledBack) => report.lock().expect("report").rolled_back += 1,
                        Ok(Wrote::Nothing) => {}
                        Err(e) => {
                            if !fail(e) {
                                return;
                            }
                        }
                    }
                }
            });
        }
        for _ in 0..w.scanners {
            let (agents, fail, report) = (agents.as_ref(), &fail, &report);
            s.spawn(move || {
                for _ in 0..w.scans_per_scanner {
                    let r = match agents {
                        None => scanner_direct(db, t),
                        Some(a) => scanner_agents(a, t),
                    };
                    match r {
                        Ok((sum, same)) => {
                            let mut r = report.lock().expect("report");
                            r.scan_sums.push(sum);
                            r.repeat_mismatches += u64::from(!same);
                        }
                        Err(e) => {
                            if !fail(e) {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    if let Some(a) = agents {
        a.shutdown();
    }
    report.into_inner().expect("range-sum report")
}
