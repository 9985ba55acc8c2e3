//! Helpers for the backup and restore tests: a recorded load (every acknowledged commit
//! with the end LSN of its commit record, as `commit_observed` reported it, and what it
//! wrote), the state a prefix of it leaves, and the state a database shows.

#![allow(dead_code)] // each test file uses part of it

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use sluice::{CommitProtocol, Database, Lsn, Options, Strategy};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const TABLE: &str = "t";
pub const KEYS: u64 = 1500;

/// Every table's entries, as a database shows them.
pub type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// One acknowledged commit: the end of its commit record, and each key it wrote with the
/// value (`None`: deleted).
#[derive(Debug, Clone)]
pub struct Commit {
    pub end: Lsn,
    pub writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// The commits of a load, in the order they were acknowledged (not LSN order).
#[derive(Default)]
pub struct Recorded {
    pub commits: Mutex<Vec<Commit>>,
    /// Commits whose record was logged but whose commit then failed: none may happen
    /// here (no faults are injected), since their outcome is not known.
    pub uncertain: AtomicU64,
}

impl Recorded {
    /// The commits in LSN order.
    pub fn in_lsn_order(&self) -> Vec<Commit> {
        let mut c = self.commits.lock().clone();
        c.sort_by_key(|c| c.end);
        c
    }

    /// The state the commits whose records end at or below `end` leave.
    pub fn state_at(&self, end: Lsn) -> State {
        let mut s = State::new();
        for c in self.in_lsn_order().into_iter().filter(|c| c.end <= end) {
            for (k, v) in c.writes {
                match v {
                    Some(v) => s.insert(k, v),
                    None => s.remove(&k),
                };
            }
        }
        s
    }
}

/// What `db` shows in table `t`.
pub fn state(db: &Database) -> State {
    let t = db.table(TABLE).unwrap();
    let mut tx = db.begin();
    let s = tx.scan_all(&t).map(|r| r.unwrap()).collect::<State>();
    tx.commit().unwrap();
    s
}

/// A progress callback for a backup or restore that sleeps a little at each step, so
/// that clients commit (and the pool writes pages) while the copy is under way.
pub fn slowly<T>(_: T) {
    std::thread::sleep(Duration::from_millis(2));
}

/// Small pages, pool and segments, so that a short load spans several segments and
/// checkpoints; `protocol` and `strategy` as given.
pub fn options(protocol: CommitProtocol, strategy: Strategy) -> Options {
    let mut o = Options::small();
    o.commit = protocol;
    o.propagation = strategy;
    o.checkpoint_log_bytes = 32 << 10;
    o.lock_timeout = Duration::from_millis(50);
    o
}

/// `threads` clients each running transactions of one to three puts or deletes of keys
/// in `0..KEYS` until `stop` (or `max` transactions each), recording each acknowledged
/// commit. Conflicts (lock timeouts, deadlock victims) roll back and are not recorded.
pub fn run_load(
    db: &Database,
    threads: usize,
    max: usize,
    seed: u64,
    stop: &AtomicBool,
    rec: &Recorded,
) {
    run_load_on(db, threads, (max, KEYS), seed, stop, rec)
}

/// [`run_load`] on the keys in `0..keys` only (a load that changes a few of the pages:
/// incremental backups copy those).
pub fn run_load_on(
    db: &Database,
    threads: usize,
    (max, keys): (usize, u64),
    seed: u64,
    stop: &AtomicBool,
    rec: &Recorded,
) {
    let t = db.table_or_create(TABLE).unwrap();
    std::thread::scope(|s| {
        for th in 0..threads {
            let (db, t) = (db.clone(), t.clone());
            s.spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed * 1000 + th as u64);
                for i in 0..max {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let mut tx = db.begin();
                    let mut writes = Vec::new();
                    let mut ok = true;
                    for _ in 0..rng.gen_range(1..=3) {
                        let k = format!("k{:03}", rng.gen_range(0..keys)).into_bytes();
                        let r = if rng.gen_range(0..5) == 0 {
                            writes.push((k.clone(), None));
                            tx.delete(&t, &k).map(|_| ())
                        } else {
                            let v = value(&format!("v{th}-{i}"), rng.gen_range(8..120));
                            writes.push((k.clone(), Some(v.clone())));
                            tx.put(&t, &k, &v).map(|_| ())
                        };
                        if r.is_err() {
                            ok = false;
                            break;
                        }
                    }
                    if !ok {
                        let _ = tx.rollback();
                        continue;
                    }
                    let mut end = None;
                    match tx.commit_observed(|e| end = e) {
                        Ok(()) => {
                            if let Some(end) = end {
                                rec.commits.lock().push(Commit { end, writes });
                            }
                        }
                        Err(_) if end.is_some() => {
                            rec.uncertain.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) => {}
                    }
                }
            });
        }
    });
}

/// A value of `len` bytes starting with `tag` (so it names its writer).
pub fn value(tag: &str, len: usize) -> Vec<u8> {
    let mut v = tag.as_bytes().to_vec();
    v.resize(len.max(v.len()), b'.');
    v
}

/// Fills table `t` with every key, in transactions of 100, recorded: a database of a few
/// hundred pages, so that a backup's copy of the data file takes many steps.
pub fn preload(db: &Database, rec: &Recorded) {
    let t = db.table_or_create(TABLE).unwrap();
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(100) {
        let mut tx = db.begin();
        let mut writes = Vec::new();
        for &k in chunk {
            let (k, v) = (format!("k{k:03}").into_bytes(), value("init", 80));
            tx.put(&t, &k, &v).unwrap();
            writes.push((k, Some(v)));
        }
        let mut end = None;
        tx.commit_observed(|e| end = e).unwrap();
        rec.commits.lock().push(Commit {
            end: end.unwrap(),
            writes,
        });
    }
    db.checkpoint().unwrap();
}

/// Runs `during` on this thread while a load of `threads` clients runs on others, then
/// stops the load; returns what `during` returned.
pub fn under_load<T: Send>(
    db: &Database,
    threads: usize,
    seed: u64,
    rec: &Arc<Recorded>,
    during: impl FnOnce() -> T + Send,
) -> T {
    under_load_on(db, (threads, KEYS), seed, rec, during)
}

/// [`under_load`] with a load on the keys in `0..keys` only ([`run_load_on`]).
pub fn under_load_on<T: Send>(
    db: &Database,
    (threads, keys): (usize, u64),
    seed: u64,
    rec: &Arc<Recorded>,
    during: impl FnOnce() -> T + Send,
) -> T {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| run_load_on(db, threads, (usize::MAX, keys), seed, &stop, rec));
        // Let the load get going before `during` starts, and go on for a while after.
        let wait_for = |n: usize| {
            while rec.commits.lock().len() < n {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        let now = || rec.commits.lock().len();
        wait_for(now() + 100);
        let out = during();
        wait_for(now() + 100);
        stop.store(true, Ordering::Relaxed);
        out
    })
}

/// The configurations the tests run under: every commit protocol with the default
/// propagation, and every propagation family with the default protocol.
pub fn configurations() -> Vec<(CommitProtocol, Strategy)> {
    let mut v: Vec<(CommitProtocol, Strategy)> = CommitProtocol::ALL
        .iter()
        .map(|p| (*p, Strategy::CheckpointSweep))
        .collect();
    for s in ["page-oldest", "log"] {
        v.push((CommitProtocol::default(), s.parse().unwrap()));
    }
    v
}

/// Waits (at most 30 s) until the archiver has copied every finished segment of `db`'s
/// log (the segment being written is archived once it is finished).
pub fn wait_archived(db: &Database) {
    let log = db.log();
    let finished = Lsn(log.durable_lsn().0 - log.durable_lsn().0 % log.segment_bytes());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while log.archived_lsn().unwrap() < finished {
        assert!(
            std::time::Instant::now() < deadline,
            "the archiver did not catch up"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
