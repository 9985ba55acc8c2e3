//! The crash sweep: random multi-key transactions from several threads over the
//! simulated disk (in [`CrashMode::LargeValues`] with large values of up to 1 MiB too,
//! stored apart from their leaves in chunks), which fails at a seeded random point in one of four ways (each seed
//! draws one):
//!
//! * a power loss (unsynced writes kept, dropped or garbled per sector);
//! * a process kill that leaves the page cache behind: the database is reopened in the same
//!   boot, reading that cache, and the power goes later;
//! * a failed fsync (EIO or ENOSPC, once or from then on: Linux drops the failed pages from
//!   write-back but keeps them readable), then a kill or a power loss;
//! * a power loss followed by read errors during the next recovery, which must fail the
//!   open with an I/O error, never with "corruption" and never with a panic.
//!
//! Recoveries are themselves halted at random operations (power losses, and kills after a
//! kill). Every recovery that completes shows its state to a client, and that state must
//! survive every later halt: nothing a client was shown may depend on bytes the device does
//! not hold.
//!
//! The check. Every transaction that reached its commit record is a *candidate*, ordered
//! by the LSN of that record; those whose commit returned (durable) are *acknowledged*.
//! Locks are released only after the commit is durable, so a candidate's writes can be
//! overwritten only by a later candidate, and every recovered state must equal the result
//! of applying, in LSN order, some prefix of the candidates that contains every
//! acknowledged one (the prefix ends wherever the durable log ended). Rolled-back and
//! unfinished transactions are never candidates, so any trace of them is a violation; a
//! missing acknowledged write is a loss. Values are compared byte for byte, large ones
//! included (read whole from their chunks, whose length and checksum are checked), and
//! the hidden table of large values must hold exactly the chunks of the recovered large
//! values: a chunk more is a trace of a transaction that did not commit, a chunk less a
//! damaged value. Finally every table must verify: key order, tree structure, and every
//! page on disk with a valid checksum.

use crate::fence::FencedStorage;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{
    AgentOptions, Agents, CommitProtocol, Database, Error, Finished, Limits, Options,
    Outcome as TxnOutcome, Strategy, Submitter, Table, TxnId,
};
use sluice_storage::{FailAction, FaultKind, FaultOp, FaultPlan, SimStorage};
use sluice_wal::Lsn;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex};

/// What a crash sweep found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Seeds run.
    pub seeds: u64,
    /// Transactions whose commit was acknowledged, over all seeds.
    pub acknowledged: u64,
    /// Acknowledged transactions missing after recovery (must be 0).
    pub lost: u64,
    /// Under the `async` protocol only: acknowledged transactions a crash took away, as
    /// that protocol allows (the state must still be a commit prefix).
    pub lost_async: u64,
    /// Seeds whose recovered state broke a rule (must be 0).
    pub violations: u64,
    /// Seeds where the armed crash hit the running workload (not its end).
    pub crashes_mid_run: u64,
    /// Recoveries that were themselves interrupted by a crash.
    pub crashes_in_recovery: u64,
    /// Process kills (the page cache survives; a power loss follows later).
    pub process_kills: u64,
    /// Seeds whose workload hit a failed fsync (EIO or ENOSPC) and poisoned the database.
    pub failed_syncs: u64,
    /// Opens refused, as they must be, because a read failed during recovery.
    pub refused_opens: u64,
    /// Times a state shown after one recovery was found intact after a later halt.
    pub states_rechecked: u64,
    /// One line per violation, with its seed.
    pub failures: Vec<String>,
}

pub(crate) const DIR: &str = "/db";
const THREADS: usize = 4;
const TXNS_PER_THREAD: usize = 40;
const KEYS: u32 = 24;
pub(crate) const TABLES: [&str; 2] = ["a", "b"];
/// The workload does about 200-400 mutating disk operations; crashing uniformly in a range a
/// little wider lands most crashes in the middle of it.
const CRASH_RANGE: u64 = 350;
/// Under `async` the clients never wait for the log, and checkpoints run on the
/// background checkpointer, mostly after the clients are done: the workload's window
/// holds far fewer operations, so its crashes are drawn from a narrower range to land a
/// similar share while it runs. At 200 the share under a loaded machine (CI beside other
/// builds) fell to 55–80 of 300 seeds, under the test's floor of 75, the same before and
/// after the propagation work; at 100 it is 107–111.
const ASYNC_CRASH_RANGE: u64 = 100;
/// Large values up to 1 MiB write many more pages and log segments.
const LARGE_CRASH_RANGE: u64 = 1500;

pub(crate) type State = BTreeMap<(usize, Vec<u8>), Vec<u8>>;

#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(crate) writes: Vec<(usize, Vec<u8>, Option<Vec<u8>>)>,
    pub(crate) commit: Option<Lsn>,
    pub(crate) acked: bool,
}

pub(crate) fn options() -> Options {
    let mut o = Options::small();
    o.pool_pages = 16;
    o.checkpoint_log_bytes = 24 << 10;
    o.log.segment_bytes = 16 << 10;
    o
}

fn key(k: u32) -> Vec<u8> {
    format!("key{k:03}").into_bytes()
}

/// What a put writes: a short value with `pad` bytes of padding, or a large one.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ValueShape {
    Short(usize),
    Large(usize),
}

/// Short values of varying length, so pages fill and split unevenly. With `huge`
/// ([`CrashMode::LargeValues`]), one put in ten is a large value, too long for the
/// sweep's 1 KiB pages (entries of at most 232 bytes), so it is stored apart in chunks:
/// mostly up to 8 KiB, one in ten up to 64 KiB, and one in 400 of 1 MiB (a few seeds in
/// a hundred write one).
fn draw_shape(rng: &mut StdRng, huge: bool) -> ValueShape {
    if !huge || !rng.gen_bool(0.1) {
        return ValueShape::Short(rng.gen_range(0..120));
    }
    ValueShape::Large(match rng.gen_range(0..40) {
        0 if rng.gen_bool(0.1) => 1 << 20,
        0..=3 => rng.gen_range(8 << 10..=64 << 10),
        _ => rng.gen_range(233..=8 << 10),
    })
}

/// The value a put writes: its writer and key, then padding; a large value's padding is
/// pseudo-random bytes drawn from the writer, so a misplaced or stale chunk shows.
pub(crate) fn make_value(tag: &str, k: u32, shape: ValueShape) -> Vec<u8> {
    let mut v = format!("{tag}:{k}:").into_bytes();
    match shape {
        ValueShape::Short(pad) => v.resize(v.len() + pad, b'x'),
        ValueShape::Large(len) => {
            let mut x = crc32c::crc32c(&v) as u64 | 1 << 32;
            while v.len() < len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v.push(x as u8);
            }
        }
    }
    v
}

/// One transaction of the workload: a few distinct keys in sorted order (so there are no
/// deadlocks), each written or deleted; committed or rolled back.
pub(crate) fn run_txn(
    db: &Database,
    tables: &[Table],
    rng: &mut StdRng,
    tag: String,
    log: &Mutex<Vec<Outcome>>,
    shape: Shape,
) -> Result<(), Error> {
    let mut picks: Vec<(usize, u32)> = if shape.run > 0 {
        // A run of adjacent keys: many pages of one tree in one transaction.
        let t = rng.gen_range(0..tables.len());
        let start = rng.gen_range(0..shape.keys);
        (start..start + shape.run)
            .map(|k| (t, k % shape.keys))
            .collect()
    } else {
        let n = rng.gen_range(1..=4);
        (0..n)
            .map(|_| (rng.gen_range(0..tables.len()), rng.gen_range(0..shape.keys)))
            .collect()
    };
    picks.sort_unstable();
    picks.dedup();
    let mut tx = db.begin();
    let mut writes = Vec::new();
    for (t, k) in picks {
        let kb = key(k);
        if rng.gen_bool(0.25) {
            tx.delete(&tables[t], &kb)?;
            writes.push((t, kb, None));
        } else {
            let v = make_value(&tag, k, draw_shape(rng, shape.large_values));
            tx.put(&tables[t], &kb, &v)?;
            writes.push((t, kb, Some(v)));
        }
    }
    if rng.gen_bool(0.15) {
        return tx.rollback();
    }
    let mut idx = None;
    tx.commit_observed(|commit| {
        let mut l = log.lock().expect("outcome log");
        l.push(Outcome {
            writes,
            commit,
            acked: false,
        });
        idx = Some(l.len() - 1);
    })?;
    let idx = idx.expect("a committed transaction was observed");
    log.lock().expect("outcome log")[idx].acked = true;
    Ok(())
}

pub(crate) fn read_state(db: &Database) -> Result<State, Error> {
    let mut s = State::new();
    let mut tx = db.begin();
    for (i, name) in TABLES.iter().enumerate() {
        let t = db.table(name)?;
        let mut prev: Option<Vec<u8>> = None;
        for e in tx.scan_all(&t) {
            let (k, v) = e?;
            if prev.as_ref().is_some_and(|p| p >= &k) {
                return Err(Error::Corruption(format!(
                    "table {name} scans out of order"
                )));
            }
            prev = Some(k.clone());
            s.insert((i, k), v);
        }
    }
    tx.commit()?;
    Ok(s)
}

/// Checks that the hidden table of large values holds exactly the chunks of the large
/// values in `state`: a chunk more is a trace of a transaction that did not commit (or
/// of an old value an overwrite should have deleted), a chunk less a damaged value.
fn check_chunks(db: &Database, state: &State) -> Result<(), String> {
    let want = chunks_of(db.limits(), state.iter().map(|((_, k), v)| (k, v)));
    let got = db
        .large_value_chunks()
        .map_err(|e| format!("reading the table of large values failed: {e}"))?;
    if got != want {
        return Err(format!(
            "the table of large values holds {got} chunks, but the recovered large values have {want}"
        ));
    }
    Ok(())
}

/// The chunks the large values among `rows` (key, value) occupy in the hidden table of
/// large values: a value whose key plus value exceed `max_entry` is stored apart.
pub(crate) fn chunks_of<'a>(
    limits: Limits,
    rows: impl Iterator<Item = (&'a Vec<u8>, &'a Vec<u8>)>,
) -> u64 {
    rows.filter(|(k, v)| k.len() + v.len() > limits.max_entry)
        .map(|(k, v)| {
            let c = limits.chunk_len(k.len()).expect("keys allow large values");
            v.len().div_ceil(c) as u64
        })
        .sum()
}

/// Checks the recovered state against the candidates; returns (lost, problem).
/// `durable`: acknowledged commits must survive (every protocol but `async`, whose lost
/// acknowledgements are counted but are not a violation).
pub(crate) fn judge(outcomes: &[Outcome], got: &State, durable: bool) -> (u64, Option<String>) {
    let mut cands: Vec<&Outcome> = outcomes.iter().filter(|o| o.commit.is_some()).collect();
    cands.sort_by_key(|o| o.commit);
    let acked_prefix = cands.iter().rposition(|o| o.acked).map_or(0, |i| i + 1);
    let must = if durable { acked_prefix } else { 0 };
    let mut state = State::new();
    let apply = |state: &mut State, o: &Outcome| {
        for (t, k, v) in &o.writes {
            match v {
                Some(v) => state.insert((*t, k.clone()), v.clone()),
                None => state.remove(&(*t, k.clone())),
            };
        }
    };
    for o in &cands[..must] {
        apply(&mut state, o);
    }
    let minimal = state.clone();
    for p in must..=cands.len() {
        if p > must {
            apply(&mut state, cands[p - 1]);
        }
        if &state == got {
            let lost = cands[p.min(acked_prefix)..acked_prefix]
                .iter()
                .filter(|o| o.acked)
                .count() as u64;
            return (lost, None);
        }
    }
    // No prefix matches. Count acknowledged transactions with a write not visible.
    let lost = cands[..must]
        .iter()
        .filter(|o| o.acked)
        .filter(|o| {
            o.writes
                .iter()
                .any(|(t, k, _)| minimal.get(&(*t, k.clone())) != got.get(&(*t, k.clone())))
        })
        .count() as u64;
    (
        lost,
        Some(format!(
            "recovered state matches no commit prefix ({} candidates, {must} acknowledged); {}",
            cands.len(),
            state_diff(&minimal, got)
        )),
    )
}

struct SeedResult {
    acknowledged: u64,
    lost: u64,
    lost_async: u64,
    mid_run: bool,
    in_recovery: u64,
    kills: u64,
    failed_syncs: u64,
    refused_opens: u64,
    rechecked: u64,
    problem: Option<String>,
    /// How this seed halted, named in its failure.
    halt: Option<Halt>,
}

impl SeedResult {
    fn new() -> SeedResult {
        SeedResult {
            acknowledged: 0,
            lost: 0,
            lost_async: 0,
            mid_run: false,
            in_recovery: 0,
            kills: 0,
            failed_syncs: 0,
            refused_opens: 0,
            rechecked: 0,
            problem: None,
            halt: None,
        }
    }

    fn fail(mut self, problem: String) -> SeedResult {
        self.problem = Some(match self.halt {
            Some(h) => format!("{h:?}: {problem}"),
            None => problem,
        });
        self
    }
}

/// How the sweep's transactions commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Each thread runs its transactions and commits them step by step itself (strict
    /// two-phase locking, blocking on the log).
    Direct,
    /// As `Direct`, with two threads whose transactions each write a run of 300
    /// adjacent keys (of 1,000): every transaction dirties many more pages than the
    /// 16-page pool holds, so pages are evicted mid-transaction, stay dirty across
    /// checkpoints, and recovery's redo must evict too. (This found redo stamping
    /// evicted pages with a full image's LSN and then skipping their later records.)
    LongTransactions,
    /// Logical clients submit to an agent pool committing by this protocol (two agents
    /// for the pipelined protocols, one per client otherwise).
    Agents(CommitProtocol),
    /// As `Direct`, with large values of up to 1 MiB among the short ones, and halts
    /// spread over the longer workload. (It found two recovery bugs that predate large
    /// values: `ARCHITECTURE.md`, "Large values".)
    LargeValues,
}

/// The size of a mode's workload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) threads: usize,
    pub(crate) txns: usize,
    pub(crate) keys: u32,
    /// Adjacent keys per transaction (0: one to four random keys).
    pub(crate) run: u32,
    pub(crate) crash_range: u64,
    /// One put in ten writes a large value (`draw_shape`).
    pub(crate) large_values: bool,
}

impl CrashMode {
    fn shape(self) -> Shape {
        let small = Shape {
            threads: THREADS,
            txns: TXNS_PER_THREAD,
            keys: KEYS,
            run: 0,
            crash_range: CRASH_RANGE,
            large_values: false,
        };
        match self {
            CrashMode::Direct => small,
            CrashMode::Agents(CommitProtocol::Async) => Shape {
                crash_range: ASYNC_CRASH_RANGE,
                ..small
            },
            CrashMode::Agents(_) => small,
            CrashMode::LongTransactions => Shape {
                threads: 2,
                txns: 6,
                keys: 1000,
                run: 300,
                crash_range: 3000,
                large_values: false,
            },
            CrashMode::LargeValues => Shape {
                crash_range: LARGE_CRASH_RANGE,
                large_values: true,
                ..small
            },
        }
    }
}

/// Candidates and acknowledgements collected from an agent-pool run.
/// A transaction's writes: (table index, key, new value or `None` for a delete).
type Writes = Vec<(usize, Vec<u8>, Option<Vec<u8>>)>;

#[derive(Default)]
struct AgentLog {
    writes: HashMap<TxnId, Writes>,
    commits: HashMap<TxnId, Option<Lsn>>,
    acked: HashSet<TxnId>,
    clients_done: usize,
}

struct Client {
    tables: Vec<Table>,
    rng: Mutex<StdRng>,
    tag: String,
    log: Arc<(Mutex<AgentLog>, Condvar)>,
}

/// One client's `i`-th transaction: the same shape as [`run_txn`], submitted to agents;
/// the completion submits the next one.
fn client_step(sub: Submitter, c: Arc<Client>, i: usize) {
    if i == TXNS_PER_THREAD {
        let (l, cv) = &*c.log;
        l.lock().expect("agent log").clients_done += 1;
        cv.notify_all();
        return;
    }
    let (picks, deletes, shapes, rollback) = {
        let mut rng = c.rng.lock().expect("client rng");
        let n = rng.gen_range(1..=4);
        let mut picks: Vec<(usize, u32)> = (0..n)
            .map(|_| (rng.gen_range(0..c.tables.len()), rng.gen_range(0..KEYS)))
            .collect();
        picks.sort_unstable();
        picks.dedup();
        let deletes: Vec<bool> = picks.iter().map(|_| rng.gen_bool(0.25)).collect();
        let shapes: Vec<ValueShape> = picks.iter().map(|_| draw_shape(&mut rng, false)).collect();
        (picks, deletes, shapes, rng.gen_bool(0.15))
    };
    let body_c = c.clone();
    let tag = format!("{}.{i}", c.tag);
    let body = move |tx: &mut sluice::Transaction| {
        let mut writes = Vec::new();
        for (j, &(t, k)) in picks.iter().enumerate() {
            let kb = key(k);
            if deletes[j] {
                tx.delete(&body_c.tables[t], &kb)?;
                writes.push((t, kb, None));
            } else {
                let v = make_value(&tag, k, shapes[j]);
                tx.put(&body_c.tables[t], &kb, &v)?;
                writes.push((t, kb, Some(v)));
            }
        }
        if rollback {
            return Ok(TxnOutcome::Rollback(tx.id()));
        }
        body_c
            .log
            .0
            .lock()
            .expect("agent log")
            .writes
            .insert(tx.id(), writes);
        Ok(TxnOutcome::Commit(tx.id()))
    };
    let next = sub.clone();
    let done = move |r: Result<Finished<TxnId>, Error>| match r {
        Ok(f) => {
            if f.committed {
                c.log.0.lock().expect("agent log").acked.insert(f.value);
            }
            client_step(next, c, i + 1);
        }
        Err(_) => {
            // The crash (or a lock timeout) ends this client.
            let (l, cv) = &*c.log;
            l.lock().expect("agent log").clients_done += 1;
            cv.notify_all();
        }
    };
    sub.submit(body, done);
}

fn run_agents(
    db: &Database,
    tables: &[Table],
    protocol: CommitProtocol,
    seeds: &[u64],
    seed: u64,
) -> Vec<Outcome> {
    let log = Arc::new((Mutex::new(AgentLog::default()), Condvar::new()));
    let hook_log = log.clone();
    let agents = Agents::start_with(
        db,
        AgentOptions {
            agents: if protocol.pipelined() { 2 } else { THREADS },
            protocol: None,
            on_commit_record: Some(Arc::new(move |id, lsn| {
                hook_log
                    .0
                    .lock()
                    .expect("agent log")
                    .commits
                    .insert(id, lsn);
            })),
        },
    );
    for (t, &ts) in seeds.iter().enumerate() {
        let c = Arc::new(Client {
            tables: tables.to_vec(),
            rng: Mutex::new(StdRng::seed_from_u64(ts)),
            tag: format!("{seed}.{t}"),
            log: log.clone(),
        });
        client_step(agents.submitter(), c, 0);
    }
    {
        let (l, cv) = &*log;
        let mut g = l.lock().expect("agent log");
        while g.clients_done < seeds.len() {
            g = cv.wait(g).expect("agent log");
        }
    }
    agents.shutdown();
    let mut g = log.0.lock().expect("agent log");
    let commits = std::mem::take(&mut g.commits);
    commits
        .into_iter()
        .map(|(id, commit)| Outcome {
            writes: g.writes.remove(&id).unwrap_or_default(),
            commit,
            acked: g.acked.contains(&id),
        })
        .collect()
}

/// How the machine fails during a seed (each seed draws one). The crash sweep draws from
/// its first four ([`HALTS`]); the swarm (`crate::swarm`) from all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Halt {
    /// Power loss at a random operation: unsynced writes are kept, dropped or garbled.
    PowerLoss,
    /// The process is killed at a random operation; the page cache survives, the database
    /// is reopened in the same boot (reading that cache), and a power loss follows.
    KillThenPowerLoss,
    /// An fsync fails (EIO or ENOSPC, once or from then on; Linux drops the failed pages
    /// from write-back but keeps them readable), then a kill or a power loss.
    FsyncFailure,
    /// A power loss, then read errors during the next recovery, which must fail cleanly.
    ReadErrorsInRecovery,
    /// A write or a length change fails (EIO or ENOSPC, once or from then on), then a
    /// kill or a power loss.
    WriteFailure,
    /// A named failure point (`sluice_storage::failpoint::ALL`: the steps between two
    /// disk operations) loses the power, kills the process or fails with EIO or ENOSPC
    /// at one of its first reaches; then a kill or a power loss if it has not halted.
    Failpoint,
}

const HALTS: [Halt; 4] = [
    Halt::PowerLoss,
    Halt::KillThenPowerLoss,
    Halt::FsyncFailure,
    Halt::ReadErrorsInRecovery,
];

/// A seed's workload does a few dozen syncs; failing one in this range lands most
/// failures in the middle of it.
const SYNC_RANGE: u64 = 40;

/// How a run armed with a [`Halt`] ended ([`Armed::end_run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunEnd {
    /// The halt struck while the work ran (not after it).
    pub(crate) mid_run: bool,
    /// The process was killed (mid-run or after): the page cache survives until a
    /// later power loss.
    pub(crate) killed: bool,
}

impl Halt {
    /// Every halt, in the order the swarm draws them.
    pub(crate) const ALL: [Halt; 6] = [
        Halt::PowerLoss,
        Halt::KillThenPowerLoss,
        Halt::FsyncFailure,
        Halt::ReadErrorsInRecovery,
        Halt::WriteFailure,
        Halt::Failpoint,
    ];

    /// A short name, for a failure line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Halt::PowerLoss => "power",
            Halt::KillThenPowerLoss => "kill",
            Halt::FsyncFailure => "fsync",
            Halt::ReadErrorsInRecovery => "read-errors",
            Halt::WriteFailure => "write",
            Halt::Failpoint => "failpoint",
        }
    }

    /// Arms the halt on `sim` for a run of about `range` counted disk operations (the
    /// halt strikes at one drawn from `1..=range`); `data_files` are the data files a
    /// third of the fsync failures aim at (a checkpoint's sync fails too). The run
    /// starts now: [`Armed::end_run`] ends it.
    pub(crate) fn arm(
        self,
        sim: &SimStorage,
        rng: &mut StdRng,
        range: u64,
        data_files: &[String],
    ) -> Armed {
        let kind = |rng: &mut StdRng| {
            if rng.gen_bool(0.5) {
                FaultKind::Eio
            } else {
                FaultKind::Enospc
            }
        };
        match self {
            Halt::PowerLoss | Halt::ReadErrorsInRecovery => {
                sim.crash_at_op(rng.gen_range(1..=range))
            }
            Halt::KillThenPowerLoss => sim.kill_at_op(rng.gen_range(1..=range)),
            Halt::FsyncFailure => {
                let kind = kind(rng);
                // Log syncs outnumber data-file syncs (one per checkpoint) by far: aim a third
                // of the failures at the data file so that a checkpoint's sync fails too.
                let mut plan = if rng.gen_bool(1.0 / 3.0) {
                    // (No draw for a single file: the crash sweep's seeds replay as before.)
                    let file = match data_files {
                        [one] => one,
                        many => &many[rng.gen_range(0..many.len())],
                    };
                    FaultPlan::new(FaultOp::Sync, rng.gen_range(1..=2), kind).on(file)
                } else {
                    FaultPlan::new(FaultOp::Sync, rng.gen_range(1..=SYNC_RANGE), kind)
                };
                if rng.gen_bool(0.5) {
                    plan = plan.persistent();
                }
                sim.inject(plan);
            }
            Halt::WriteFailure => {
                let kind = kind(rng);
                let mut plan = FaultPlan::new(FaultOp::Write, rng.gen_range(1..=range), kind);
                if rng.gen_bool(0.5) {
                    plan = plan.persistent();
                }
                sim.inject(plan);
            }
            Halt::Failpoint => {
                let all = sluice_storage::failpoint::ALL;
                let name = all[rng.gen_range(0..all.len())];
                let action = match rng.gen_range(0..4) {
                    0 => FailAction::Kill,
                    1 => FailAction::Error(kind(rng)),
                    _ => FailAction::PowerLoss,
                };
                sim.set_failpoint(name, rng.gen_range(1..=3), action);
            }
        }
        Armed {
            halt: self,
            incarnation: sim.incarnation(),
            kills: sim.killed_count(),
        }
    }
}

/// A [`Halt`] armed for a run that has begun.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Armed {
    halt: Halt,
    incarnation: u64,
    kills: u64,
}

impl Armed {
    /// After the run: disarms what [`Halt::arm`] armed and, if the halt has not struck,
    /// halts the machine now (a kill after a kill halt, and after half the failed syncs,
    /// writes and failure points; a power loss otherwise).
    pub(crate) fn end_run(self, sim: &SimStorage, rng: &mut StdRng) -> RunEnd {
        sim.clear_faults();
        sim.clear_failpoints();
        sim.disarm_crash();
        if sim.incarnation() > self.incarnation {
            return RunEnd {
                mid_run: true,
                killed: sim.killed_count() > self.kills,
            };
        }
        let kill = self.halt == Halt::KillThenPowerLoss
            || (matches!(
                self.halt,
                Halt::FsyncFailure | Halt::WriteFailure | Halt::Failpoint
            ) && rng.gen_bool(0.5));
        if kill {
            sim.kill_process();
        } else {
            sim.crash();
        }
        RunEnd {
            mid_run: false,
            killed: kill,
        }
    }
}

/// Recovers with halts: up to twice (each time with probability one half) a recovery is
/// halted at one of its first `ops` counted disk operations — by a power loss, or after a
/// kill by another kill half the time; `halted` counts them. A recovery the halt missed
/// shows its state to a client (`shown`), and then the machine halts anyway, so that the
/// next open recovers once more from whatever that close left.
pub(crate) fn halted_recoveries<D>(
    sim: &SimStorage,
    rng: &mut StdRng,
    killed: bool,
    ops: u64,
    halted: &mut u64,
    mut open: impl FnMut() -> Result<D, Error>,
    mut shown: impl FnMut(D) -> Result<(), String>,
) -> Result<(), String> {
    for _ in 0..2 {
        if !rng.gen_bool(0.5) {
            break;
        }
        let before = sim.incarnation();
        let n = rng.gen_range(1..=ops);
        if killed && rng.gen_bool(0.5) {
            sim.kill_at_op(n);
        } else {
            sim.crash_at_op(n);
        }
        let r = open();
        sim.disarm_crash();
        if sim.incarnation() > before {
            *halted += 1;
            drop(r);
            continue;
        }
        match r {
            Ok(db) => shown(db)?,
            Err(e) => return Err(format!("recovery failed: {e}")),
        }
        // Recovery finished and the handle closed: halt anyway, so the next open
        // recovers once more from whatever that close left.
        if killed && rng.gen_bool(0.5) {
            sim.kill_process();
        } else {
            sim.crash();
        }
    }
    Ok(())
}

/// Opens with read errors injected (the n-th read from now fails with EIO, once or from
/// then on): the open must fail with an I/O error — never report corruption, never panic
/// — or succeed where the failed reads were not needed. Returns whether it refused; the
/// power goes afterwards.
pub(crate) fn open_with_read_errors<D>(
    sim: &SimStorage,
    rng: &mut StdRng,
    open: impl FnOnce() -> Result<D, Error>,
) -> Result<bool, String> {
    let mut plan = FaultPlan::new(FaultOp::Read, rng.gen_range(1..=200), FaultKind::Eio);
    if rng.gen_bool(0.5) {
        plan = plan.persistent();
    }
    sim.inject(plan);
    let r = open();
    sim.clear_faults();
    let refused = match r {
        Err(e) if is_disk_error(&e) => true,
        Err(e) => {
            return Err(format!(
                "a read error during recovery was reported as something else: {e}"
            ))
        }
        Ok(db) => {
            drop(db);
            false
        }
    };
    sim.crash();
    Ok(refused)
}

/// The next incarnation of the database on the rebooted (or still running) machine.
fn reopen(sim: &SimStorage, options: Options) -> Result<Database, Error> {
    Database::open(FencedStorage::for_incarnation(sim), DIR, options)
}

/// True for errors a failing disk explains (an injected fault or a halt), as opposed to
/// errors that mean the engine is wrong (corruption, a panic-free but false refusal).
pub(crate) fn is_disk_error(e: &Error) -> bool {
    e.is_io()
}

/// A workload the crash sweep runs, halts and checks ([`sweep`]): the multi-key
/// transactions of [`crash_test`] (checked against a model), or TPC-B
/// (`sluice_bench::experiments::tpcb_crash`). The sweep owns the halts — which one a seed draws, when
/// it strikes, the halts during recovery, the recheck that what one recovery showed
/// survives the next — and the workload says what to run and what a recovered database
/// must hold.
pub trait SweepWorkload {
    /// What a recovered database shows a client; every later recovery must show the
    /// same.
    type Shown: PartialEq;
    /// The database's options.
    fn options(&self) -> Options;
    /// The mid-run halt strikes at an operation drawn from `1..=crash_range()`: a little
    /// more than the run's mutating disk operations.
    fn crash_range(&self) -> u64;
    /// Whether acknowledged commits must survive (false under `async`: a loss is
    /// counted as `lost_async`, not a violation).
    fn durable(&self) -> bool {
        true
    }
    /// Prepares the new database before the halt is armed (tables, a load).
    fn setup(&mut self, db: &Database) -> Result<(), Error>;
    /// Runs the work with the halt armed, until it is done or the halt stops it,
    /// drawing what it needs from `rng`; drops every handle on `db` it holds.
    fn run(&mut self, db: &Database, rng: &mut StdRng);
    /// Transactions whose commit was acknowledged (after [`SweepWorkload::run`]).
    fn acknowledged(&self) -> u64;
    /// Reads and checks a recovered database: how many acknowledged transactions are
    /// missing, and the state it shows or what is wrong with it.
    fn check(&self, db: &Database) -> (u64, Result<Self::Shown, String>);
    /// How a later recovery's state differs from one shown before (for the failure).
    fn diff(&self, before: &Self::Shown, after: &Self::Shown) -> String;
    /// New work on the finally recovered database (it must take it).
    fn after_recovery(&self, db: &Database) -> Result<(), Error>;
}

/// The key-value workload of [`crash_test`] as a [`SweepWorkload`].
struct KvWorkload {
    mode: CrashMode,
    strategy: Strategy,
    seed: u64,
    tables: Vec<Table>,
    outcomes: Vec<Outcome>,
}

impl SweepWorkload for KvWorkload {
    type Shown = State;

    fn options(&self) -> Options {
        let mut opts = options();
        opts.propagation = self.strategy;
        opts.commit = match self.mode {
            CrashMode::Agents(p) => p,
            // Record, durable, release: strict two-phase locking.
            CrashMode::Direct | CrashMode::LongTransactions | CrashMode::LargeValues => {
                CommitProtocol::Classic
            }
        };
        opts
    }

    fn crash_range(&self) -> u64 {
        self.mode.shape().crash_range
    }

    fn durable(&self) -> bool {
        !matches!(self.mode, CrashMode::Agents(CommitProtocol::Async))
    }

    fn setup(&mut self, db: &Database) -> Result<(), Error> {
        self.tables = TABLES
            .iter()
            .map(|n| db.create_table(n))
            .collect::<Result<_, _>>()?;
        Ok(())
    }

    fn run(&mut self, db: &Database, rng: &mut StdRng) {
        let (mode, seed) = (self.mode, self.seed);
        let tables = std::mem::take(&mut self.tables);
        let shape = mode.shape();
        let seeds: Vec<u64> = (0..shape.threads).map(|_| rng.gen()).collect();
        if let CrashMode::Agents(p) = mode {
            self.outcomes = run_agents(db, &tables, p, &seeds, seed);
            return;
        }
        let outcomes = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for (t, &ts) in seeds.iter().enumerate() {
                let (tables, outcomes) = (&tables, &outcomes);
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(ts);
                    for i in 0..shape.txns {
                        let tag = format!("{seed}.{t}.{i}");
                        if run_txn(db, tables, &mut rng, tag, outcomes, shape).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        self.outcomes = outcomes.into_inner().expect("outcome log");
    }

    fn acknowledged(&self) -> u64 {
        self.outcomes
            .iter()
            .filter(|o| o.acked && o.commit.is_some())
            .count() as u64
    }

    fn check(&self, db: &Database) -> (u64, Result<State, String>) {
        let got = match read_state(db) {
            Ok(s) => s,
            Err(e) => return (0, Err(format!("reading a recovered state failed: {e}"))),
        };
        let (lost, problem) = judge(&self.outcomes, &got, self.durable());
        if let Some(p) = problem {
            return (lost, Err(p));
        }
        if let Err(p) = check_chunks(db, &got) {
            return (lost, Err(p));
        }
        (lost, Ok(got))
    }

    fn diff(&self, before: &State, after: &State) -> String {
        state_diff(before, after)
    }

    fn after_recovery(&self, db: &Database) -> Result<(), Error> {
        let t = db.table(TABLES[0])?;
        let mut tx = db.begin();
        tx.put(&t, b"after", b"recovery")?;
        tx.commit()
    }
}

fn run_seed<W: SweepWorkload>(seed: u64, w: &mut W) -> SeedResult {
    let mut rng = StdRng::seed_from_u64(seed);
    let halt = HALTS[rng.gen_range(0..HALTS.len())];
    let sim = SimStorage::new(seed);
    let mut res = SeedResult::new();
    res.halt = Some(halt);
    let opts = w.options();
    let options = || opts;
    let setup = (|| {
        let db = reopen(&sim, options())?;
        w.setup(&db)?;
        Ok::<_, Error>(db)
    })();
    let db = match setup {
        Ok(x) => x,
        Err(e) => return res.fail(format!("setup failed: {e}")),
    };
    let armed = halt.arm(&sim, &mut rng, w.crash_range(), &[format!("{DIR}/data")]);
    w.run(&db, &mut rng);
    let failed_sync = halt == Halt::FsyncFailure && db.health().is_err();
    res.failed_syncs += failed_sync as u64;
    let end = armed.end_run(&sim, &mut rng);
    res.mid_run = end.mid_run;
    res.kills += end.killed as u64;
    drop(db);
    res.acknowledged = w.acknowledged();
    let durable = w.durable();

    // Recover, halting during recovery up to twice (a power loss or, after a kill, another
    // kill). A recovery that completes shows its state to a client; that state must
    // survive every later halt, power losses included (nothing a client was shown may
    // depend on data the device does not hold).
    let mut shown: Option<W::Shown> = None;
    let check_shown = |db: &Database, res: &mut SeedResult, shown: &mut Option<W::Shown>| {
        let (lost, got) = w.check(db);
        if lost > 0 {
            res.lost = res.lost.max(lost);
        }
        let got = got?;
        if let Some(before) = shown.as_ref() {
            if before != &got {
                return Err(format!(
                    "a state shown to a client after an earlier recovery was lost; {}",
                    w.diff(before, &got)
                ));
            }
            res.rechecked += 1;
        }
        *shown = Some(got);
        Ok::<(), String>(())
    };

    let killed = end.killed;
    let mut halted = 0;
    let r = halted_recoveries(
        &sim,
        &mut rng,
        killed,
        60,
        &mut halted,
        || reopen(&sim, options()),
        |db| check_shown(&db, &mut res, &mut shown),
    );
    res.in_recovery += halted;
    if let Err(p) = r {
        return res.fail(p);
    }
    if killed {
        // Reopen in the same boot from the page cache and show the state to a client;
        // then the power goes.
        match reopen(&sim, options()) {
            Ok(db) => {
                if let Err(p) = check_shown(&db, &mut res, &mut shown) {
                    return res.fail(p);
                }
                drop(db);
            }
            Err(e) => return res.fail(format!("recovery after a kill failed: {e}")),
        }
        sim.crash();
    }
    if halt == Halt::ReadErrorsInRecovery {
        match open_with_read_errors(&sim, &mut rng, || reopen(&sim, options())) {
            Ok(refused) => res.refused_opens += refused as u64,
            Err(p) => return res.fail(p),
        }
    }
    let db = match reopen(&sim, options()) {
        Ok(db) => db,
        Err(e) => return res.fail(format!("recovery failed: {e}")),
    };
    if let Err(p) = check_shown(&db, &mut res, &mut shown) {
        return res.fail(p);
    }
    if let Err(e) = db.verify() {
        return res.fail(format!("verify failed: {e}"));
    }
    // The recovered database takes new work.
    let after = w.after_recovery(&db).and_then(|()| db.close());
    if let Err(e) = after {
        return res.fail(format!("work after recovery failed: {e}"));
    }
    if !durable {
        res.lost_async = std::mem::take(&mut res.lost);
    }
    res
}

pub(crate) fn diff_message(what: &str, before: &State, after: &State) -> String {
    format!("{what}; {}", state_diff(before, after))
}

/// Up to three keys whose values differ, each with the writer tags of both values
/// (`seed.thread.txn`, or `-` for absent), so a failure names the transactions involved.
pub(crate) fn state_diff(want: &State, got: &State) -> String {
    let tag = |v: Option<&Vec<u8>>| match v {
        None => "-".to_string(),
        Some(v) => {
            let end = v.iter().position(|&b| b == b':').unwrap_or(v.len().min(24));
            format!("{}({} B)", String::from_utf8_lossy(&v[..end]), v.len())
        }
    };
    let keys: std::collections::BTreeSet<_> = want
        .keys()
        .chain(got.keys())
        .filter(|k| want.get(k) != got.get(k))
        .collect();
    let diff: Vec<String> = keys
        .into_iter()
        .take(3)
        .map(|k| {
            format!(
                "{}:{} want {} got {}",
                k.0,
                String::from_utf8_lossy(&k.1),
                tag(want.get(k)),
                tag(got.get(k))
            )
        })
        .collect();
    format!("differing keys {diff:?}")
}

/// The crash sweep with large values ([`CrashMode::LargeValues`]).
pub fn crash_test_large_values(
    seeds: u64,
    first_seed: u64,
    progress: impl FnMut(u64),
) -> CrashReport {
    crash_test_mode(CrashMode::LargeValues, seeds, first_seed, progress)
}

/// Runs `seeds` seeds starting at `first_seed`, calling `progress` with each seed
/// finished. Panics inside a seed are caught and reported as violations.
pub fn crash_test(seeds: u64, first_seed: u64, progress: impl FnMut(u64)) -> CrashReport {
    crash_test_mode(CrashMode::Direct, seeds, first_seed, progress)
}

/// As [`crash_test`], committing as `mode` says.
pub fn crash_test_mode(
    mode: CrashMode,
    seeds: u64,
    first_seed: u64,
    progress: impl FnMut(u64),
) -> CrashReport {
    crash_test_propagation(mode, Strategy::default(), seeds, first_seed, progress)
}

/// As [`crash_test_mode`], with update propagation by `strategy` (a page cleaner
/// running on its own thread, or log-based propagation at every checkpoint).
pub fn crash_test_propagation(
    mode: CrashMode,
    strategy: Strategy,
    seeds: u64,
    first_seed: u64,
    progress: impl FnMut(u64),
) -> CrashReport {
    sweep(seeds, first_seed, progress, |seed| KvWorkload {
        mode,
        strategy,
        seed,
        tables: Vec::new(),
        outcomes: Vec::new(),
    })
}

/// Runs `seeds` seeds of the workload `make(seed)` returns, starting at `first_seed`,
/// each halted and recovered as the module says, calling `progress` with each seed
/// finished. Panics inside a seed are caught and reported as violations.
pub fn sweep<W: SweepWorkload>(
    seeds: u64,
    first_seed: u64,
    mut progress: impl FnMut(u64),
    mut make: impl FnMut(u64) -> W,
) -> CrashReport {
    let mut report = CrashReport::default();
    for seed in first_seed..first_seed + seeds {
        let r = catch_unwind(AssertUnwindSafe(|| run_seed(seed, &mut make(seed)))).unwrap_or_else(
            |p| {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                SeedResult::new().fail(format!("panic: {msg}"))
            },
        );
        report.seeds += 1;
        report.acknowledged += r.acknowledged;
        report.lost += r.lost;
        report.lost_async += r.lost_async;
        report.crashes_mid_run += r.mid_run as u64;
        report.crashes_in_recovery += r.in_recovery;
        report.process_kills += r.kills;
        report.failed_syncs += r.failed_syncs;
        report.refused_opens += r.refused_opens;
        report.states_rechecked += r.rechecked;
        if let Some(p) = r.problem {
            report.violations += 1;
            report.failures.push(format!("seed {seed}: {p}"));
        }
        progress(seed);
    }
    report
}
