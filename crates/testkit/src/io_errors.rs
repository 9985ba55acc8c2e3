//! The I/O-error sweep, as SQLite's tests do it, and the named-failure-point sweep.
//!
//! A fixed workload (open, two tables, transactions from one thread, a checkpoint, more
//! transactions, close) runs a few times on a healthy simulated disk, which counts its
//! storage operations: `N` counted operations (writes, length changes, syncs, creations,
//! renames, removals) and `R` reads, the fewest of those clean runs (the log's flush
//! daemon batches differently from run to run). Then it runs again once per *injection
//! point*: for every `k` in `0..N`, an EIO or an ENOSPC at the `k`-th counted operation,
//! once (transient) or from then on (persistent); for every `k` in `0..R`, an EIO at the
//! `k`-th read, once or from then on. Each run must end in success or in an I/O error
//! (never a panic, never a hang — a watchdog gives each run [`WATCHDOG`] — and never an
//! error that blames anything but the disk). Then the disk is healed and the machine
//! restarted, both ways: a process kill, a reopen in the same boot (from the page cache),
//! a close and a power loss; or a power loss straight after the run. Every reopened state
//! must hold every acknowledged commit and be a commit-order prefix (the crash sweep's
//! check, [`crate::crash`]), the state shown after the kill must survive the power loss,
//! and `Database::verify` must pass.
//!
//! The named-failure-point sweep ([`failpoint_sweep`]) runs the same workload and, for
//! each named point ([`sluice_storage::failpoint`]) and each time the workload reaches it,
//! kills the process there, cuts the power there, or fails the call there; the same checks
//! follow.

use crate::crash::{
    diff_message, judge, options as crash_options, read_state, run_txn, Outcome, Shape, State,
    Writes, DIR, TABLES,
};
use crate::fence::FencedStorage;
use rand::rngs::StdRng;
use rand::SeedableRng;
use sluice::{Database, Error, Options, Strategy, Table};
use sluice_storage::{FailAction, FaultKind, FaultOp, FaultPlan, SimStorage};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, Once};
use std::time::{Duration, Instant};

/// How long one run (the workload and both restarts) may take before it counts as a hang.
/// A run takes a few milliseconds; the margin is for a loaded machine.
pub const WATCHDOG: Duration = Duration::from_secs(20);

/// The workload's shape: one thread, runs of adjacent keys over a small pool, so pages
/// are evicted (written between checkpoints), and log segments fill and roll over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Phases of transactions, with a checkpoint between each two.
    pub phases: usize,
    /// Transactions per phase.
    pub txns_per_phase: usize,
    /// Adjacent keys each transaction writes (0: one to four random keys).
    pub run: u32,
    /// Keys per table.
    pub keys: u32,
    /// How pages reach the data file.
    pub strategy: Strategy,
}

impl Workload {
    /// The sweep's workload: 3 phases of 24 transactions, each writing 8 adjacent keys
    /// of 400 (or deleting them), with checkpoint sweeps.
    pub const SWEEP: Workload = Workload {
        phases: 3,
        txns_per_phase: 24,
        run: 8,
        keys: 400,
        strategy: Strategy::CheckpointSweep,
    };

    /// The sweep's workload, with `SLUICE_IO_SWEEP_TXNS` transactions per phase if that
    /// is set (a longer sweep, by hand: the sweep's cost grows with the square).
    pub fn sweep_from_env() -> Workload {
        let txns = std::env::var("SLUICE_IO_SWEEP_TXNS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(Workload::SWEEP.txns_per_phase);
        Workload {
            txns_per_phase: txns,
            ..Workload::SWEEP
        }
    }

    /// The sweep's workload under another propagation strategy.
    pub fn with_strategy(self, strategy: Strategy) -> Workload {
        Workload { strategy, ..self }
    }

    fn shape(self) -> Shape {
        Shape {
            threads: 1,
            txns: self.txns_per_phase,
            keys: self.keys,
            run: self.run,
            crash_range: 0,
            large_values: false,
        }
    }
}

/// The database options of the sweeps: the crash sweep's (1 KiB pages, a 16-page pool,
/// 16 KiB log segments), with every background checkpoint off so that the workload's
/// operations come in the same order each run (the checkpoints are the workload's own).
pub fn options(strategy: Strategy) -> Options {
    let mut o = crash_options();
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = Duration::ZERO;
    o.propagation = strategy;
    // A page cleaner runs when eviction or the log asks, not on a timer: a timer's rounds
    // would add operations at times that differ from run to run.
    o.cleaner_interval = Duration::ZERO;
    o
}

/// What is injected into one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injection {
    /// Nothing: the clean run that counts the operations.
    None,
    /// `kind` at the `k`-th (0-based) counted operation, once or from then on.
    Op {
        k: u64,
        kind: FaultKind,
        persistent: bool,
    },
    /// EIO at the `k`-th (0-based) read, once or from then on.
    Read { k: u64, persistent: bool },
    /// `action` at the `nth` (1-based) reach of the named point `name`.
    Point {
        name: &'static str,
        nth: u64,
        action: FailAction,
    },
}

impl Injection {
    fn arm(self, sim: &SimStorage) {
        match self {
            Injection::None => {}
            Injection::Op {
                k,
                kind,
                persistent,
            } => {
                let plan = FaultPlan::new(FaultOp::Any, k + 1, kind);
                sim.inject(if persistent { plan.persistent() } else { plan });
            }
            Injection::Read { k, persistent } => {
                let plan = FaultPlan::new(FaultOp::Read, k + 1, FaultKind::Eio);
                sim.inject(if persistent { plan.persistent() } else { plan });
            }
            Injection::Point { name, nth, action } => sim.set_failpoint(name, nth, action),
        }
    }
}

/// How the machine restarts after a run, on a healed disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// A process kill, a reopen in the same boot (reading the page cache) that is checked,
    /// a close, then a power loss and a reopen that must show the same state.
    KillThenPowerLoss,
    /// A power loss straight after the run, then a reopen that is checked.
    PowerLoss,
}

/// What one run found.
#[derive(Debug, Clone, Default)]
pub struct RunResult {
    /// Commits acknowledged during the workload.
    pub acknowledged: u64,
    /// Acknowledged commits missing after a restart.
    pub lost: u64,
    /// The workload ended in an error (as most runs with a fault do).
    pub failed: bool,
    /// The workload reached the injection point (the operation, read or named point):
    /// a run whose operations came in another order (background threads) may end first.
    pub reached: bool,
    /// Counted operations and reads of the workload (what a clean run measures).
    pub ops: u64,
    /// Reads of the workload.
    pub reads: u64,
    /// Everything wrong about the run (empty: it passed).
    pub problem: Option<String>,
}

/// True for errors a failing disk explains: the I/O error itself, the poisoning it
/// caused, and "closed" (a database or log shut down by the failure).
fn is_clear(e: &Error) -> bool {
    e.is_io() || matches!(e, Error::Closed(_))
}

fn open(sim: &SimStorage, w: Workload) -> Result<Database, Error> {
    Database::open_on(
        FencedStorage::for_incarnation(sim),
        DIR,
        options(w.strategy),
    )
}

/// True for a named point that halts the machine (the workload then fails on its
/// dead handles, which says nothing about the error path).
fn is_halt(injection: Injection) -> bool {
    matches!(
        injection,
        Injection::Point {
            action: FailAction::Kill | FailAction::PowerLoss,
            ..
        }
    )
}

/// The workload; returns the first error it met (it goes on after an error while the
/// database still takes work, and always closes what it opened) and how many of the
/// tables were created (acknowledged).
fn workload(
    sim: &SimStorage,
    w: Workload,
    outcomes: &Mutex<Vec<Outcome<Writes>>>,
) -> (Option<Error>, usize) {
    let db = match open(sim, w) {
        Ok(db) => db,
        Err(e) => return (Some(e), 0),
    };
    let mut first = None;
    let mut created = 0;
    let tables: Result<Vec<Table>, Error> = TABLES
        .iter()
        .map(|n| db.create_table(n).inspect(|_| created += 1))
        .collect();
    match tables {
        Ok(tables) => {
            let mut rng = StdRng::seed_from_u64(13);
            'phases: for phase in 0..w.phases {
                for i in 0..w.txns_per_phase {
                    if db.health().is_err() {
                        break 'phases;
                    }
                    let tag = format!("{phase}.{i}");
                    if let Err(e) = run_txn(&db, &tables, &mut rng, tag, outcomes, w.shape()) {
                        first.get_or_insert(e);
                    }
                }
                if phase + 1 < w.phases {
                    if let Err(e) = db.checkpoint() {
                        first.get_or_insert(e);
                    }
                }
            }
        }
        Err(e) => first = Some(e),
    }
    if let Err(e) = db.close() {
        first.get_or_insert(e);
    }
    (first, created)
}

/// Reopens the healed disk and checks the state against the workload's outcomes;
/// returns the state, or what is wrong. `lost` gets the acknowledged commits missing.
fn reopen_and_check(
    sim: &SimStorage,
    w: Workload,
    created: usize,
    outcomes: &[Outcome<Writes>],
    lost: &mut u64,
    what: &str,
) -> Result<State, String> {
    let db = open(sim, w).map_err(|e| format!("reopen after {what} failed: {e}"))?;
    // A table whose creation was acknowledged must be there; one whose creation failed
    // may be or not (the workload commits nothing before both exist).
    let mut present = 0;
    for (i, name) in TABLES.iter().enumerate() {
        match db.table(name) {
            Ok(_) => present += 1,
            Err(Error::NotFound(_)) if i >= created => {}
            Err(e) => return Err(format!("after {what}, table {name}: {e}")),
        }
    }
    let got = if present == TABLES.len() {
        read_state(&db).map_err(|e| format!("reading the state after {what} failed: {e}"))?
    } else {
        State::new()
    };
    let (l, problem) = judge(outcomes, &got, true);
    *lost = (*lost).max(l);
    if let Some(p) = problem {
        return Err(format!("after {what}: {p}"));
    }
    db.verify()
        .map_err(|e| format!("verify after {what} failed: {e}"))?;
    db.close()
        .map_err(|e| format!("close after {what} failed: {e}"))?;
    Ok(got)
}

/// One run: the workload with `injection` armed on a disk seeded with `seed`, then the
/// restart on the healed disk and its checks.
pub fn run_one(seed: u64, w: Workload, injection: Injection, restart: Restart) -> RunResult {
    let sim = SimStorage::new(seed);
    injection.arm(&sim);
    let outcomes = Mutex::new(Vec::new());
    let (error, created) = workload(&sim, w, &outcomes);
    let stats = sim.stats();
    let outcomes = outcomes.into_inner().expect("outcome log");
    let mut r = RunResult {
        acknowledged: outcomes
            .iter()
            .filter(|o| o.acked && o.commit.is_some())
            .count() as u64,
        failed: error.is_some(),
        reached: match injection {
            Injection::None => true,
            Injection::Op { k, .. } => stats.ops > k,
            Injection::Read { k, .. } => stats.reads > k,
            Injection::Point { name, nth, .. } => sim.failpoint_hits(name) >= nth,
        },
        ops: stats.ops,
        reads: stats.reads,
        ..RunResult::default()
    };
    let mut problems = Vec::new();
    if let Some(e) = &error {
        if !is_clear(e) {
            problems.push(format!(
                "the workload failed with an error that is not the disk's: {e}"
            ));
        }
        if injection == Injection::None {
            problems.push(format!("the clean run failed: {e}"));
        }
    } else if r.reached && injection != Injection::None && !is_halt(injection) {
        // Nothing here is retried silently: an operation that failed must surface, or
        // the client is told "success" about a disk that failed.
        problems.push("the fault was met, yet the workload and its close succeeded".into());
    }
    // Heal the disk, then restart.
    sim.clear_faults();
    sim.clear_failpoints();
    let checked = match restart {
        Restart::KillThenPowerLoss => {
            sim.kill_process();
            reopen_and_check(&sim, w, created, &outcomes, &mut r.lost, "a process kill").and_then(
                |shown| {
                    sim.crash();
                    let again = reopen_and_check(
                        &sim,
                        w,
                        created,
                        &outcomes,
                        &mut r.lost,
                        "the later power loss",
                    )?;
                    if again != shown {
                        return Err(diff_message(
                            "the state shown after the kill was lost in the later power loss",
                            &shown,
                            &again,
                        ));
                    }
                    Ok(())
                },
            )
        }
        Restart::PowerLoss => {
            sim.crash();
            reopen_and_check(&sim, w, created, &outcomes, &mut r.lost, "a power loss").map(|_| ())
        }
    };
    if let Err(p) = checked {
        problems.push(p);
    }
    if r.lost > 0 {
        problems.push(format!("{} acknowledged commits lost", r.lost));
    }
    if !problems.is_empty() {
        r.problem = Some(problems.join("; "));
    }
    r
}

/// Panics anywhere in the process while a sweep runs (background threads of the engine
/// included, which `catch_unwind` around a run does not see).
static PANICS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set on a thread that called a sweep: a panic there (the caller's own assertion on
    /// the report, after the sweep returned) is not the engine's. Sweeps of one test
    /// binary run in parallel and share the counter, so without this one test's failed
    /// assertion counted as a panic in every sweep still running beside it.
    static SWEEP_CALLER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn count_panics() {
    SWEEP_CALLER.with(|c| c.set(true));
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !SWEEP_CALLER.with(|c| c.get()) {
                PANICS.fetch_add(1, Ordering::SeqCst);
            }
            previous(info);
        }));
    });
}

/// What a sweep found.
#[derive(Debug, Clone, Default)]
pub struct SweepReport {
    /// Counted storage operations of the clean run (N).
    pub ops: u64,
    /// Reads of the clean run (R).
    pub reads: u64,
    /// Injection points covered: (operation or read index, or named point and reach) ×
    /// fault kind; each was run under every restart.
    pub points: u64,
    /// Injection points that at least one of their runs reached (the others' runs ended
    /// before the point: with background threads, a run's operations can differ in number
    /// and order from the clean run's).
    pub covered: u64,
    /// The injection points no run reached, by name (sorted).
    pub uncovered: Vec<String>,
    /// Runs (points × restarts).
    pub runs: u64,
    /// Runs whose workload ended in an error.
    pub failed_runs: u64,
    /// Runs whose workload never reached the injection point (its operations came in
    /// another order than the clean run's, or it ended sooner).
    pub unreached: u64,
    /// Runs that reached the injection point and still ended without an error (each is
    /// also a violation: the engine retries nothing silently, so a failed operation must
    /// reach the client).
    pub absorbed: u64,
    /// Commits acknowledged, over all runs.
    pub acknowledged: u64,
    /// Acknowledged commits missing after a restart (must be 0).
    pub lost: u64,
    /// Panics, caught in a run or anywhere in the process (must be 0).
    pub panics: u64,
    /// Runs that did not finish within [`WATCHDOG`] (must be 0).
    pub hangs: u64,
    /// Runs with a problem (panics, hangs and lost commits included; must be 0).
    pub violations: u64,
    /// One line per violation, naming its injection and restart.
    pub failures: Vec<String>,
    /// Wall time of the sweep.
    pub elapsed: Duration,
}

/// Runs `cases` (injection, restart) on `workers` threads, each run in its own thread
/// under the watchdog, and adds up what they found.
fn run_cases(w: Workload, cases: &[(Injection, Restart)], workers: usize) -> SweepReport {
    count_panics();
    let panics_before = PANICS.load(Ordering::SeqCst);
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let report = Mutex::new(SweepReport::default());
    let reached: Vec<AtomicBool> = cases.iter().map(|_| AtomicBool::new(false)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(injection, restart)) = cases.get(i) else {
                    return;
                };
                let (tx, rx) = mpsc::channel();
                // Detached: a run that hangs is left behind (counted), not waited for.
                std::thread::spawn(move || {
                    let r = catch_unwind(AssertUnwindSafe(|| {
                        run_one(i as u64, w, injection, restart)
                    }));
                    let _ = tx.send(r);
                });
                let outcome = rx.recv_timeout(WATCHDOG);
                let mut rep = report.lock().expect("sweep report");
                rep.runs += 1;
                let problem = match outcome {
                    Ok(Ok(r)) => {
                        rep.acknowledged += r.acknowledged;
                        rep.lost += r.lost;
                        rep.failed_runs += r.failed as u64;
                        rep.unreached += !r.reached as u64;
                        reached[i].store(r.reached, Ordering::Relaxed);
                        rep.absorbed += (r.reached && !r.failed) as u64;
                        r.problem
                    }
                    Ok(Err(p)) => {
                        rep.panics += 1;
                        let msg = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_else(|| "panic".into());
                        Some(format!("panic: {msg}"))
                    }
                    Err(_) => {
                        rep.hangs += 1;
                        Some(format!("hang: no result within {WATCHDOG:?}"))
                    }
                };
                if let Some(p) = problem {
                    rep.violations += 1;
                    rep.failures
                        .push(format!("{injection:?}, {restart:?} (seed {i}): {p}"));
                }
            });
        }
    });
    let mut report = report.into_inner().expect("sweep report");
    let mut points = std::collections::HashMap::new();
    for (case, r) in cases.iter().zip(&reached) {
        *points.entry(format!("{:?}", case.0)).or_insert(false) |= r.load(Ordering::Relaxed);
    }
    report.covered = points.values().filter(|&&r| r).count() as u64;
    report.uncovered = points
        .into_iter()
        .filter(|&(_, r)| !r)
        .map(|(p, _)| p)
        .collect();
    report.uncovered.sort();
    // Panics on threads no run caught (the engine's own) count too.
    report.panics = report
        .panics
        .max(PANICS.load(Ordering::SeqCst) - panics_before);
    report.elapsed = start.elapsed();
    report
}

/// The clean run: counts the workload's operations and reads, and checks it.
pub fn clean_run(w: Workload) -> RunResult {
    run_one(0, w, Injection::None, Restart::PowerLoss)
}

/// Clean runs that name the injection points (see [`io_error_sweep`]).
const CLEAN_RUNS: usize = 16;

const RESTARTS: [Restart; 2] = [Restart::KillThenPowerLoss, Restart::PowerLoss];

/// The I/O-error sweep over `w`: every counted operation `k` of the clean run with EIO
/// and ENOSPC, transient and persistent; every read with EIO, transient and persistent;
/// each run under both restarts. Panics if the clean run fails.
pub fn io_error_sweep(w: Workload, workers: usize) -> SweepReport {
    // The log's flush daemon batches what it finds in the buffer when it wakes, so even a
    // one-thread workload does a write and a sync more or fewer from run to run (over 72
    // clean runs of the checkpoint-sweep workload: 330 operations 63 times, 332 eight
    // times, 338 once). The points are the operations and reads every run does: the
    // fewest of several clean runs. One clean run that happened to be long named points
    // the usual run never reaches. They run `workers` at a time, as the sweep's runs do:
    // a run beside another batches more and does fewer operations (a CI run whose clean
    // runs ran alone named points 326 and 327 that two of the sweep's never reached).
    let runs: Vec<RunResult> = (0..CLEAN_RUNS)
        .collect::<Vec<_>>()
        .chunks(workers.max(1))
        .flat_map(|batch| {
            std::thread::scope(|s| {
                let running: Vec<_> = batch.iter().map(|_| s.spawn(|| clean_run(w))).collect();
                running
                    .into_iter()
                    .map(|h| h.join().expect("a clean run does not panic"))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for c in &runs {
        assert!(
            c.problem.is_none() && !c.failed,
            "the clean run failed: {:?}",
            c.problem
        );
    }
    let clean = RunResult {
        ops: runs.iter().map(|c| c.ops).min().expect("clean runs"),
        reads: runs.iter().map(|c| c.reads).min().expect("clean runs"),
        ..RunResult::default()
    };
    let mut points = Vec::new();
    for k in 0..clean.ops {
        for kind in [FaultKind::Eio, FaultKind::Enospc] {
            for persistent in [false, true] {
                points.push(Injection::Op {
                    k,
                    kind,
                    persistent,
                });
            }
        }
    }
    for k in 0..clean.reads {
        for persistent in [false, true] {
            points.push(Injection::Read { k, persistent });
        }
    }
    let cases: Vec<(Injection, Restart)> = points
        .iter()
        .flat_map(|&p| RESTARTS.map(|r| (p, r)))
        .collect();
    let mut report = run_cases(w, &cases, workers);
    report.ops = clean.ops;
    report.reads = clean.reads;
    report.points = points.len() as u64;
    report
}

/// What the workload does at each named point: how often every clean run reaches it
/// (the fewest of `CLEAN_RUNS`: the flush daemon's batching moves a reach or two from run
/// to run, as it moves operations; see [`io_error_sweep`]).
pub fn failpoint_reaches(w: Workload) -> Vec<(&'static str, u64)> {
    let mut fewest: Vec<(&'static str, u64)> = sluice_storage::failpoint::ALL
        .iter()
        .map(|&name| (name, u64::MAX))
        .collect();
    for _ in 0..CLEAN_RUNS {
        let sim = SimStorage::new(0);
        for name in sluice_storage::failpoint::ALL {
            sim.set_failpoint(name, u64::MAX, FailAction::Count);
        }
        let outcomes = Mutex::new(Vec::new());
        if let (Some(e), _) = workload(&sim, w, &outcomes) {
            panic!("the clean run failed: {e}");
        }
        for (name, hits) in &mut fewest {
            *hits = (*hits).min(sim.failpoint_hits(name));
        }
    }
    fewest
}

/// The named-failure-point sweep: for each point in `names` and each time the clean
/// workload reaches it, a process kill, a power loss, and an EIO there; each run under
/// both restarts. Returns the report and the reaches of each point.
pub fn failpoint_sweep(
    w: Workload,
    names: &[&'static str],
    workers: usize,
) -> (SweepReport, Vec<(&'static str, u64)>) {
    let reaches: Vec<(&'static str, u64)> = failpoint_reaches(w)
        .into_iter()
        .filter(|(n, _)| names.contains(n))
        .collect();
    let mut points = Vec::new();
    for &(name, hits) in &reaches {
        for nth in 1..=hits {
            for action in [
                FailAction::Kill,
                FailAction::PowerLoss,
                FailAction::Error(FaultKind::Eio),
            ] {
                points.push(Injection::Point { name, nth, action });
            }
        }
    }
    let cases: Vec<(Injection, Restart)> = points
        .iter()
        .flat_map(|&p| RESTARTS.map(|r| (p, r)))
        .collect();
    let mut report = run_cases(w, &cases, workers);
    report.points = points.len() as u64;
    (report, reaches)
}

/// Worker threads for a sweep: the machine's cores, at most `cap`.
pub fn workers(cap: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(cap)
        .max(1)
}
