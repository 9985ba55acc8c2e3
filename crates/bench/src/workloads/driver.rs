//! The closed-loop driver for transactional benchmarks.
//!
//! A *client* is logical, not a thread: it has one transaction in the system at a time,
//! and its completion (run by an agent) draws and submits its next one. So the threads
//! that exist are the agents and the log daemon, and the context switches measured are
//! the ones the commit protocol causes — agents blocking on the log — not an artefact
//! of one OS thread per client.

use crate::metrics::{self, CpuCost, Latency, Usage};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use sluice::experiment::{AgentOptions, Agents, Finished, Outcome, TimeBreakdown};
use sluice::{CommitProtocol, Database, Error, Transaction};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A workload the driver can run.
pub trait Workload: Send + Sync + 'static {
    /// One transaction's inputs.
    type Input: Send + 'static;
    /// Names of the transaction types (for per-type counts).
    fn kinds(&self) -> &'static [&'static str];
    /// Draws the next input for `client`; `seq` is unique over the whole run.
    fn input(&self, rng: &mut SmallRng, client: u32, seq: u64) -> Self::Input;
    /// The type index of an input.
    fn kind(&self, input: &Self::Input) -> usize;
    /// Runs the transaction body. `Commit(true)` / `Rollback(false)` and so on: the
    /// boolean says whether it found what it looked for (counted per type).
    fn body(&self, tx: &mut Transaction, input: &Self::Input) -> Result<Outcome<bool>, Error>;
}

/// How to run.
#[derive(Debug, Clone, Copy)]
pub struct DriverConfig {
    /// Logical clients (transactions in the system at once).
    pub clients: usize,
    /// Agent threads.
    pub agents: usize,
    /// Commit protocol.
    pub protocol: CommitProtocol,
    /// Unmeasured warm-up.
    pub warmup: Duration,
    /// Measured time.
    pub measure: Duration,
    /// Seed for the clients' random streams.
    pub seed: u64,
    /// Open-loop pacing: at most this many transactions per second are submitted (the
    /// `n`-th of the run not before `n / rate` seconds after the start), so a run can
    /// hold a fixed throughput below what the machine does; `None`: every client
    /// submits its next transaction as soon as the last one finishes.
    pub rate: Option<f64>,
    /// Record where the agents' time goes ([`DriverResult::agent_time`]).
    pub time_breakdown: bool,
}

impl DriverConfig {
    /// The agent count a protocol gets by default (docs/BENCHMARKS.md): one per client for the
    /// blocking protocols, one per core for the ones that never block on the log.
    pub fn default_agents(protocol: CommitProtocol, clients: usize) -> usize {
        if protocol.pipelined() || protocol == CommitProtocol::Async {
            metrics::cores()
        } else {
            clients
        }
    }
}

/// Per transaction type.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct KindStats {
    /// The type's name.
    pub name: &'static str,
    /// Completed in the measured window (committed or rolled back by decision).
    pub completed: u64,
    /// Of those, the ones that found what they looked for.
    pub succeeded: u64,
    /// Latency of the type's transactions.
    #[serde(flatten)]
    pub latency: Latency,
}

/// What a run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DriverResult {
    /// Seconds measured.
    pub seconds: f64,
    /// Transactions committed in the window.
    pub committed: u64,
    /// Transactions rolled back by decision (e.g. TATP's failed inserts) in the window.
    pub rolled_back: u64,
    /// Transactions that failed (lock timeouts: deadlock victims) in the window.
    pub aborted: u64,
    /// Committed plus rolled-back-by-decision, per second.
    pub completed_per_sec: f64,
    /// Committed per second.
    pub committed_per_sec: f64,
    /// Latency from submission to acknowledgement.
    #[serde(flatten)]
    pub latency: Latency,
    /// Context switches and CPU of the process per completed transaction.
    #[serde(flatten)]
    pub cpu: CpuCost,
    /// Log bytes written in the measured window (framing, padding, page images and
    /// checkpoint records included: everything the log daemon wrote to segment files).
    pub log_bytes: u64,
    /// [`DriverResult::log_bytes`] per completed transaction (committed plus rolled
    /// back by decision; TPC-B rolls nothing back by decision, so there it is per
    /// committed transaction). A failed transaction's records count against the
    /// completed ones.
    pub log_bytes_per_txn: f64,
    /// Bytes of new segment files the log zero-filled in the window (not log records:
    /// the preparer's writes; recycled segments need none).
    pub zero_filled_bytes: u64,
    /// Truncated segment files reused for new ones in the window.
    pub segments_recycled: u64,
    /// Times an agent parked for lack of work in the window, per completed transaction.
    pub agent_parks_per_txn: f64,
    /// Where the agents' time went in the window, summed over the agents (with
    /// [`DriverConfig::time_breakdown`]).
    pub agent_time: Option<TimeBreakdown>,
    /// The flush daemon's gather budget at the end of the window (scheduler yields; see
    /// `GroupCommit::adaptive`).
    pub gather_budget: u64,
    /// The log's flush rounds (a write and a sync each) in the window, per completed
    /// transaction: the size of a group commit's group is its inverse.
    pub flushes_per_txn: f64,
    /// Per type.
    pub kinds: Vec<KindStats>,
    /// Transactions committed in total, warm-up included (for consistency checks).
    pub committed_total: u64,
}

struct ClientState {
    id: u32,
    rng: SmallRng,
    hist: Vec<Histogram<u64>>,
    completed: Vec<u64>,
    succeeded: Vec<u64>,
    committed: u64,
    rolled_back: u64,
    aborted: u64,
}

/// A client's next submission, deferred until its time comes ([`DriverConfig::rate`]).
type Deferred = (Instant, Box<dyn FnOnce() + Send>);

/// Holds submissions back to a rate: one thread that submits each deferred one when its
/// time comes (early, once the run is stopping, so that every client finishes).
struct Pacer {
    start: Instant,
    per_txn: Duration,
    queue: Mutex<mpsc::Sender<Deferred>>,
}

struct Run<W: Workload> {
    w: Arc<W>,
    stop: AtomicBool,
    measuring: AtomicBool,
    seq: AtomicU64,
    committed_total: Arc<AtomicU64>,
    pacer: Option<Pacer>,
    fatal: Mutex<Option<Error>>,
    finished: Mutex<Vec<ClientState>>,
    all_done: Condvar,
}

fn step<W: Workload>(run: Arc<Run<W>>, sub: sluice::experiment::Submitter, c: ClientState) {
    if run.stop.load(Ordering::Acquire) {
        run.finished.lock().expect("driver").push(c);
        run.all_done.notify_all();
        return;
    }
    let seq = run.seq.fetch_add(1, Ordering::Relaxed);
    if let Some(p) = &run.pacer {
        let due = p.start + p.per_txn.mul_f64(seq as f64);
        if due > Instant::now() {
            let r = run.clone();
            let deferred: Box<dyn FnOnce() + Send> = Box::new(move || submit(r, sub, c, seq));
            // The pacer outlives every client (the driver joins it last).
            let _ = p.queue.lock().expect("pacer").send((due, deferred));
            return;
        }
    }
    submit(run, sub, c, seq);
}

fn submit<W: Workload>(
    run: Arc<Run<W>>,
    sub: sluice::experiment::Submitter,
    mut c: ClientState,
    seq: u64,
) {
    let input = run.w.input(&mut c.rng, c.id, seq);
    let kind = run.w.kind(&input);
    let w = run.w.clone();
    let start = Instant::now();
    let next = sub.clone();
    sub.submit(
        move |tx| w.body(tx, &input),
        move |r: Result<Finished<bool>, Error>| {
            let measuring = run.measuring.load(Ordering::Acquire);
            match r {
                Ok(f) => {
                    if f.committed {
                        run.committed_total.fetch_add(1, Ordering::Relaxed);
                    }
                    if measuring {
                        if f.committed {
                            c.committed += 1;
                        } else {
                            c.rolled_back += 1;
                        }
                        c.completed[kind] += 1;
                        c.succeeded[kind] += f.value as u64;
                        let us = start.elapsed().as_micros() as u64;
                        c.hist[kind].record(us.max(1)).ok();
                    }
                }
                Err(e) if e.is_retryable() => c.aborted += measuring as u64,
                Err(e) => {
                    // Anything else (I/O, poisoning) ends the run.
                    run.fatal.lock().expect("driver").get_or_insert(e);
                    run.stop.store(true, Ordering::Release);
                }
            }
            step(run, next, c);
        },
    );
}

/// The pacer's thread: submits each deferred client at its time, or at once when
/// `stop` is set; ends when `done` is set and nothing is queued.
fn pace(rx: mpsc::Receiver<Deferred>, stop: impl Fn() -> bool, done: Arc<AtomicBool>) {
    loop {
        match rx.recv_timeout(Duration::from_millis(10)) {
            Ok((due, go)) => {
                loop {
                    let now = Instant::now();
                    if now >= due || stop() {
                        break;
                    }
                    std::thread::sleep((due - now).min(Duration::from_millis(10)));
                }
                go();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if done.load(Ordering::Acquire) {
                    return;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Runs `workload` on `db` as `cfg` says. `tick` gets the fraction of time elapsed.
pub fn run<W: Workload>(
    db: &Database,
    workload: Arc<W>,
    cfg: &DriverConfig,
    tick: impl FnMut(f64),
) -> Result<DriverResult, Error> {
    run_counting(db, workload, cfg, Arc::new(AtomicU64::new(0)), tick)
}

/// [`run`], counting every committed transaction (warm-up included) in `committed` as
/// it is acknowledged, so that another thread can sample the throughput while it runs.
pub fn run_counting<W: Workload>(
    db: &Database,
    workload: Arc<W>,
    cfg: &DriverConfig,
    committed: Arc<AtomicU64>,
    mut tick: impl FnMut(f64),
) -> Result<DriverResult, Error> {
    assert!(cfg.clients > 0 && cfg.agents > 0);
    if let Some(r) = cfg.rate {
        assert!(r.is_finite() && r > 0.0, "a rate is a positive number");
    }
    let kinds = workload.kinds();
    let agents = Agents::start_with(
        db,
        AgentOptions {
            agents: cfg.agents,
            protocol: Some(cfg.protocol),
            on_commit_record: None,
            time_breakdown: cfg.time_breakdown,
        },
    );
    let committed0 = committed.load(Ordering::Relaxed);
    let (pace_tx, pace_rx) = mpsc::channel::<Deferred>();
    let pacer = cfg.rate.map(|r| Pacer {
        start: Instant::now(),
        per_txn: Duration::from_secs_f64(1.0 / r),
        queue: Mutex::new(pace_tx),
    });
    let run = Arc::new(Run {
        w: workload,
        stop: AtomicBool::new(false),
        measuring: AtomicBool::new(false),
        seq: AtomicU64::new(0),
        committed_total: committed,
        pacer,
        fatal: Mutex::new(None),
        finished: Mutex::new(Vec::new()),
        all_done: Condvar::new(),
    });
    let pacer_done = Arc::new(AtomicBool::new(false));
    let pacer_thread = if run.pacer.is_some() {
        let (r, done) = (run.clone(), pacer_done.clone());
        Some(
            std::thread::Builder::new()
                .name("driver-pacer".into())
                .spawn(move || pace(pace_rx, || r.stop.load(Ordering::Acquire), done))?,
        )
    } else {
        drop(pace_rx);
        None
    };
    let hist = || Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("valid bounds");
    for id in 0..cfg.clients as u32 {
        let c = ClientState {
            id,
            rng: SmallRng::seed_from_u64(
                cfg.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            hist: kinds.iter().map(|_| hist()).collect(),
            completed: vec![0; kinds.len()],
            succeeded: vec![0; kinds.len()],
            committed: 0,
            rolled_back: 0,
            aborted: 0,
        };
        step(run.clone(), agents.submitter(), c);
    }
    let total = cfg.warmup + cfg.measure;
    let t0 = Instant::now();
    let tick_every = Duration::from_millis(100);
    while t0.elapsed() < cfg.warmup && !run.stop.load(Ordering::Acquire) {
        std::thread::sleep(tick_every.min(cfg.warmup));
        tick(t0.elapsed().as_secs_f64() / total.as_secs_f64());
    }
    let u0 = Usage::now();
    let log0 = db.log().stats();
    let parks0 = agents.stats().parks;
    let time0 = agents.time_breakdown();
    let m0 = Instant::now();
    run.measuring.store(true, Ordering::Release);
    while m0.elapsed() < cfg.measure && !run.stop.load(Ordering::Acquire) {
        std::thread::sleep(tick_every.min(cfg.measure));
        tick((t0.elapsed().as_secs_f64() / total.as_secs_f64()).min(1.0));
    }
    run.measuring.store(false, Ordering::Release);
    let seconds = m0.elapsed().as_secs_f64();
    let agent_time = agents
        .time_breakdown()
        .zip(time0)
        .map(|(t1, t0)| t1.since(&t0));
    // Bytes the daemon wrote, not the released LSN: the same window's records trail into
    // the next flush by at most one group-commit round, against ~10^5 of them measured.
    let log1 = db.log().stats();
    let parks = agents.stats().parks - parks0;
    let log_bytes = log1.bytes_written - log0.bytes_written;
    let usage = Usage::now().since(&u0);
    run.stop.store(true, Ordering::Release);
    {
        let mut f = run.finished.lock().expect("driver");
        while f.len() < cfg.clients {
            f = run.all_done.wait(f).expect("driver");
        }
    }
    pacer_done.store(true, Ordering::Release);
    if let Some(t) = pacer_thread {
        t.join().expect("the pacer does not panic");
    }
    agents.shutdown();
    if let Some(e) = run.fatal.lock().expect("driver").take() {
        return Err(e);
    }
    let clients = std::mem::take(&mut *run.finished.lock().expect("driver"));
    let mut all = hist();
    let mut per_kind: Vec<KindStats> = kinds
        .iter()
        .map(|&name| KindStats {
            name,
            ..KindStats::default()
        })
        .collect();
    let mut kind_hist: Vec<Histogram<u64>> = kinds.iter().map(|_| hist()).collect();
    let (mut committed, mut rolled_back, mut aborted) = (0, 0, 0);
    for c in &clients {
        committed += c.committed;
        rolled_back += c.rolled_back;
        aborted += c.aborted;
        for k in 0..kinds.len() {
            per_kind[k].completed += c.completed[k];
            per_kind[k].succeeded += c.succeeded[k];
            kind_hist[k].add(&c.hist[k]).expect("same bounds");
            all.add(&c.hist[k]).expect("same bounds");
        }
    }
    for (k, h) in per_kind.iter_mut().zip(&kind_hist) {
        k.latency = Latency::of(h);
    }
    let completed = committed + rolled_back;
    Ok(DriverResult {
        seconds,
        committed,
        rolled_back,
        aborted,
        completed_per_sec: completed as f64 / seconds,
        committed_per_sec: committed as f64 / seconds,
        latency: Latency::of(&all),
        cpu: CpuCost::of(&usage, completed, seconds),
        log_bytes,
        log_bytes_per_txn: log_bytes as f64 / completed.max(1) as f64,
        zero_filled_bytes: log1.bytes_zero_filled - log0.bytes_zero_filled,
        segments_recycled: log1.segments_recycled - log0.segments_recycled,
        agent_parks_per_txn: parks as f64 / completed.max(1) as f64,
        agent_time,
        gather_budget: log1.gather_budget,
        flushes_per_txn: (log1.flushes - log0.flushes) as f64 / completed.max(1) as f64,
        kinds: per_kind,
        committed_total: run.committed_total.load(Ordering::Relaxed) - committed0,
    })
}
