//! The closed-loop driver for embedded peer engines (SQLite, RocksDB).
//!
//! Unlike sluice's driver (logical clients on a few agents), a peer's API blocks the
//! calling thread until its commit is durable, so each client is an OS thread with its
//! own connection or handle — as an application would use these engines. Inputs come
//! from the same [`TpcbGenerator`] and the same per-client seeds, so every engine runs
//! the same transactions' distribution.

use crate::metrics::Latency;
use crate::workloads::tatp::{TatpGenerator, TatpInput, TatpKind};
use crate::workloads::tpcb::{Consistency, TpcbGenerator, TpcbInput, TpcbShape};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// Why one attempt at a transaction failed.
#[derive(Debug)]
pub enum PeerError {
    /// The engine said to try again (busy, lock timeout, deadlock victim); the attempt
    /// was rolled back.
    Retry,
    /// Anything else: the run stops with this message.
    Fatal(String),
}

/// A peer engine loaded with TPC-B.
pub trait TpcbPeer: Sync {
    /// One client's connection or handle.
    type Client: Send;
    /// A new client.
    fn client(&self) -> Result<Self::Client, String>;
    /// Runs `input` as one transaction and commits it; returns once the engine has
    /// acknowledged the commit.
    fn transact(&self, client: &mut Self::Client, input: &TpcbInput) -> Result<(), PeerError>;
    /// The TPC-B consistency check over the engine's tables.
    fn check(&self, expected_rows: Option<u64>) -> Result<Consistency, String>;
    /// Whether an acknowledged commit is on disk under the settings in force, and
    /// those settings in words (read back from the engine where it can say).
    fn durability(&self) -> Result<(bool, String), String>;
}

/// Attempts per transaction before the run gives up (bounded, so that a livelocked
/// engine ends the run instead of spinning).
pub const MAX_ATTEMPTS: u32 = 10_000;

/// How to run a peer.
#[derive(Debug, Clone, Copy)]
pub struct PeerRunConfig {
    /// Clients (threads).
    pub clients: usize,
    /// Unmeasured warm-up.
    pub warmup: Duration,
    /// Measured time.
    pub measure: Duration,
    /// Seed for the clients' random streams (the same as sluice's driver uses).
    pub seed: u64,
    /// High bits of history ids, distinct per run on one database.
    pub run_tag: u64,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct PeerRun {
    /// Seconds measured.
    pub seconds: f64,
    /// Completed in the measured window (TPC-B: committed; TATP: committed or rolled
    /// back because it found nothing).
    pub committed: u64,
    /// Committed in total, warm-up included (for the history-row check).
    pub committed_total: u64,
    /// Retried attempts in the measured window.
    pub retries: u64,
    /// Latency from the first attempt to the acknowledged commit.
    pub latency: Latency,
    /// Per transaction type (TATP: in `TatpKind::ALL` order): (completed, found what it
    /// looked for), in the measured window.
    pub kinds: Vec<(u64, u64)>,
}

/// A peer engine loaded with TATP.
pub trait TatpPeer: Sync {
    /// One client's connection or handle.
    type Client: Send;
    /// A new client.
    fn client(&self) -> Result<Self::Client, String>;
    /// Runs `input` as one transaction: commits it when it found what it looked for or
    /// only read, rolls it back otherwise (as sluice's TATP does). Returns whether it
    /// found what it looked for.
    fn transact(&self, client: &mut Self::Client, input: &TatpInput) -> Result<bool, PeerError>;
    /// Whether an acknowledged commit is on disk under the settings in force, and those
    /// settings in words.
    fn durability(&self) -> Result<(bool, String), String>;
}

/// Runs TPC-B on `peer` in a closed loop. `on_ack` is called with each input whose
/// commit was acknowledged (the kill test streams them); `stop` ends the run early;
/// `tick` gets the fraction of time elapsed.
pub fn run<P: TpcbPeer>(
    peer: &P,
    shape: TpcbShape,
    cfg: &PeerRunConfig,
    on_ack: &(dyn Fn(&TpcbInput) + Sync),
    stop: &AtomicBool,
    tick: impl FnMut(f64),
) -> Result<PeerRun, String> {
    let gen = TpcbGenerator::new(shape)?;
    let clients: Vec<P::Client> = (0..cfg.clients)
        .map(|_| peer.client())
        .collect::<Result<_, _>>()?;
    let tag = cfg.run_tag;
    drive(
        clients,
        cfg,
        1,
        &|rng, n| gen.next(rng, tag << 40 | n),
        &|_| 0,
        &|c, i| peer.transact(c, i).map(|()| true),
        on_ack,
        stop,
        tick,
    )
}

/// Runs TATP on `peer` in a closed loop, inputs drawn by `gen`.
pub fn run_tatp<P: TatpPeer>(
    peer: &P,
    gen: &TatpGenerator,
    cfg: &PeerRunConfig,
    tick: impl FnMut(f64),
) -> Result<PeerRun, String> {
    let clients: Vec<P::Client> = (0..cfg.clients)
        .map(|_| peer.client())
        .collect::<Result<_, _>>()?;
    let never = AtomicBool::new(false);
    drive(
        clients,
        cfg,
        TatpKind::ALL.len(),
        &|rng, _| gen.next(rng),
        &|i: &TatpInput| {
            TatpKind::ALL
                .iter()
                .position(|&k| k == i.kind)
                .expect("a known kind")
        },
        &|c, i| peer.transact(c, i),
        &|_| {},
        &never,
        tick,
    )
}

type ClientTotals = (Histogram<u64>, u64, u64, Vec<(u64, u64)>);

/// The closed loop: one thread per client, each drawing inputs, running them until they
/// commit (retrying what the engine says to retry), and counting.
#[allow(clippy::too_many_arguments)]
fn drive<C: Send, I>(
    clients: Vec<C>,
    cfg: &PeerRunConfig,
    kinds: usize,
    input: &(dyn Fn(&mut SmallRng, u64) -> I + Sync),
    kind_of: &(dyn Fn(&I) -> usize + Sync),
    transact: &(dyn Fn(&mut C, &I) -> Result<bool, PeerError> + Sync),
    on_ack: &(dyn Fn(&I) + Sync),
    stop: &AtomicBool,
    mut tick: impl FnMut(f64),
) -> Result<PeerRun, String> {
    assert!(!clients.is_empty());
    let n_clients = clients.len();
    let measuring = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let seq = AtomicU64::new(0);
    let committed_total = AtomicU64::new(0);
    let fatal: Mutex<Option<String>> = Mutex::new(None);
    let start = Barrier::new(n_clients + 1);
    let hist = || Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("valid bounds");
    let results: Mutex<Vec<ClientTotals>> = Mutex::new(Vec::new());
    let mut seconds = 0.0;
    std::thread::scope(|s| {
        for (id, mut client) in clients.into_iter().enumerate() {
            let (measuring, done, seq) = (&measuring, &done, &seq);
            let (committed_total, fatal, start, results) =
                (&committed_total, &fatal, &start, &results);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(
                    cfg.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                let mut h = hist();
                let (mut committed, mut retries) = (0u64, 0u64);
                let mut per_kind = vec![(0u64, 0u64); kinds];
                start.wait();
                'run: while !done.load(Ordering::Acquire) {
                    let n = seq.fetch_add(1, Ordering::Relaxed);
                    let input = input(&mut rng, n);
                    let t0 = Instant::now();
                    let mut attempts = 0;
                    let found = loop {
                        attempts += 1;
                        match transact(&mut client, &input) {
                            Ok(found) => break found,
                            Err(PeerError::Retry) if attempts < MAX_ATTEMPTS => {
                                retries += measuring.load(Ordering::Acquire) as u64;
                            }
                            Err(PeerError::Retry) => {
                                let m = format!("a transaction failed {MAX_ATTEMPTS} times");
                                fatal.lock().expect("peer driver").get_or_insert(m);
                                done.store(true, Ordering::Release);
                                break 'run;
                            }
                            Err(PeerError::Fatal(m)) => {
                                fatal.lock().expect("peer driver").get_or_insert(m);
                                done.store(true, Ordering::Release);
                                break 'run;
                            }
                        }
                    };
                    committed_total.fetch_add(1, Ordering::Relaxed);
                    on_ack(&input);
                    if measuring.load(Ordering::Acquire) {
                        committed += 1;
                        let k = &mut per_kind[kind_of(&input)];
                        k.0 += 1;
                        k.1 += found as u64;
                        h.record((t0.elapsed().as_micros() as u64).max(1)).ok();
                    }
                }
                results
                    .lock()
                    .expect("peer driver")
                    .push((h, committed, retries, per_kind));
            });
        }
        start.wait();
        let total = cfg.warmup + cfg.measure;
        let t0 = Instant::now();
        let every = Duration::from_millis(100);
        let halted = || done.load(Ordering::Acquire) || stop.load(Ordering::Acquire);
        while t0.elapsed() < cfg.warmup && !halted() {
            std::thread::sleep(every.min(cfg.warmup));
            tick(t0.elapsed().as_secs_f64() / total.as_secs_f64());
        }
        let m0 = Instant::now();
        measuring.store(true, Ordering::Release);
        while m0.elapsed() < cfg.measure && !halted() {
            std::thread::sleep(every.min(cfg.measure));
            tick((t0.elapsed().as_secs_f64() / total.as_secs_f64()).min(1.0));
        }
        measuring.store(false, Ordering::Release);
        seconds = m0.elapsed().as_secs_f64();
        done.store(true, Ordering::Release);
    });
    if let Some(m) = fatal.into_inner().expect("peer driver") {
        return Err(m);
    }
    let mut all = hist();
    let (mut committed, mut retries) = (0, 0);
    let mut kinds_total = vec![(0u64, 0u64); kinds];
    for (h, c, r, k) in results.into_inner().expect("peer driver") {
        all.add(&h).expect("same bounds");
        committed += c;
        retries += r;
        for (t, x) in kinds_total.iter_mut().zip(k) {
            t.0 += x.0;
            t.1 += x.1;
        }
    }
    Ok(PeerRun {
        seconds,
        committed,
        committed_total: committed_total.load(Ordering::Relaxed),
        retries,
        latency: Latency::of(&all),
        kinds: kinds_total,
    })
}
