//! The closed-loop driver for embedded peer engines (SQLite, RocksDB).
//!
//! Unlike sluice's driver (logical clients on a few agents), a peer's API blocks the
//! calling thread until its commit is durable, so each client is an OS thread with its
//! own connection or handle — as an application would use these engines. Inputs come
//! from the same [`TpcbGenerator`] and the same per-client seeds, so every engine runs
//! the same transactions' distribution.

use crate::tpcb::{Consistency, TpcbGenerator, TpcbInput, TpcbShape};
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
    /// Committed in the measured window.
    pub committed: u64,
    /// Committed in total, warm-up included (for the history-row check).
    pub committed_total: u64,
    /// Retried attempts in the measured window.
    pub retries: u64,
    /// Median latency from the first attempt to the acknowledged commit, µs.
    pub p50_us: u64,
    /// 99th percentile, µs.
    pub p99_us: u64,
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
    mut tick: impl FnMut(f64),
) -> Result<PeerRun, String> {
    assert!(cfg.clients > 0);
    let gen = TpcbGenerator::new(shape)?;
    let clients: Vec<P::Client> = (0..cfg.clients)
        .map(|_| peer.client())
        .collect::<Result<_, _>>()?;
    let measuring = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let seq = AtomicU64::new(0);
    let committed_total = AtomicU64::new(0);
    let fatal: Mutex<Option<String>> = Mutex::new(None);
    let start = Barrier::new(cfg.clients + 1);
    let hist = || Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("valid bounds");
    let results: Mutex<Vec<(Histogram<u64>, u64, u64)>> = Mutex::new(Vec::new());
    let mut seconds = 0.0;
    std::thread::scope(|s| {
        for (id, mut client) in clients.into_iter().enumerate() {
            let (gen, measuring, done, seq) = (&gen, &measuring, &done, &seq);
            let (committed_total, fatal, start, results) =
                (&committed_total, &fatal, &start, &results);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(
                    cfg.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                let mut h = hist();
                let (mut committed, mut retries) = (0u64, 0u64);
                start.wait();
                'run: while !done.load(Ordering::Acquire) {
                    let n = seq.fetch_add(1, Ordering::Relaxed);
                    let input = gen.next(&mut rng, cfg.run_tag << 40 | n);
                    let t0 = Instant::now();
                    let mut attempts = 0;
                    loop {
                        attempts += 1;
                        match peer.transact(&mut client, &input) {
                            Ok(()) => break,
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
                    }
                    committed_total.fetch_add(1, Ordering::Relaxed);
                    on_ack(&input);
                    if measuring.load(Ordering::Acquire) {
                        committed += 1;
                        h.record((t0.elapsed().as_micros() as u64).max(1)).ok();
                    }
                }
                results
                    .lock()
                    .expect("peer driver")
                    .push((h, committed, retries));
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
    for (h, c, r) in results.into_inner().expect("peer driver") {
        all.add(&h).expect("same bounds");
        committed += c;
        retries += r;
    }
    Ok(PeerRun {
        seconds,
        committed,
        committed_total: committed_total.load(Ordering::Relaxed),
        retries,
        p50_us: all.value_at_quantile(0.5),
        p99_us: all.value_at_quantile(0.99),
    })
}
