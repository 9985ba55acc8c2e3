//! `bench log-insert`: the log-buffer insertion microbenchmark (Aether §6.3, appendix
//! A.3–A.4).
//!
//! Threads insert records into one [`LogBuffer`] as fast as they can. The flush side only
//! frees space — a drain thread copies released bytes out and marks them written and
//! durable, with no disk — so the run measures the buffer alone, as the paper did. The
//! same run then measures the *limit*: each thread copying the same records into a private
//! ring of the same size, with no sharing at all (this machine's memory-bandwidth and
//! copy ceiling for that thread count). Throughput is reported as payload bytes per second
//! and as a fraction of that limit.

use crate::knobs::in_range;
use serde::Serialize;
use sluice_wal::{frame, BufferOptions, InsertVariant, LogBuffer, Lsn, WalError};
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Payload bytes of the small records in the outlier mix (Shore-MT's smallest record).
pub const OUTLIER_SMALL_BYTES: usize = 48;
/// Small records before each outlier.
pub const OUTLIER_RUN: usize = 60;
/// How long the drain sleeps when it has caught up.
const DRAIN_NAP: Duration = Duration::from_micros(20);
/// Most inserting threads a run may have.
pub const MAX_THREADS: usize = 1024;

/// Which records each thread inserts, in a repeating cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordMix {
    /// Every record has this many payload bytes.
    Fixed(usize),
    /// The bimodal mix of Aether Figure 11: [`OUTLIER_RUN`] records of
    /// [`OUTLIER_SMALL_BYTES`], then one of this many bytes.
    Outlier(usize),
}

impl RecordMix {
    /// Payload sizes of one cycle.
    pub fn cycle(self) -> Vec<usize> {
        match self {
            RecordMix::Fixed(b) => vec![b],
            RecordMix::Outlier(b) => {
                let mut v = vec![OUTLIER_SMALL_BYTES; OUTLIER_RUN];
                v.push(b);
                v
            }
        }
    }

    /// The size named on the command line (the fixed size, or the outlier's).
    pub fn bytes(self) -> usize {
        match self {
            RecordMix::Fixed(b) | RecordMix::Outlier(b) => b,
        }
    }

    /// The largest payload in the mix.
    pub fn largest(self) -> usize {
        self.cycle().into_iter().max().unwrap_or(0)
    }

    /// Mean payload bytes per record.
    pub fn mean(self) -> f64 {
        let c = self.cycle();
        c.iter().sum::<usize>() as f64 / c.len() as f64
    }

    /// `fixed` or `outlier`.
    pub fn name(self) -> &'static str {
        match self {
            RecordMix::Fixed(_) => "fixed",
            RecordMix::Outlier(_) => "outlier",
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct LogInsertConfig {
    /// The insertion algorithm.
    pub variant: InsertVariant,
    /// Inserting threads.
    pub threads: usize,
    /// The records.
    pub mix: RecordMix,
    /// Consolidation-array slots (ignored by variants that do not consolidate).
    pub slots: usize,
    /// How long the insert phase runs (the limit phase runs as long).
    pub duration: Duration,
    /// Log-buffer bytes (also the size of each thread's private ring in the limit phase).
    pub buffer_bytes: usize,
}

impl LogInsertConfig {
    /// Defaults for everything but what is measured: 4 slots, 1 s, an 8 MiB buffer.
    pub fn new(variant: InsertVariant, threads: usize, mix: RecordMix) -> Self {
        LogInsertConfig {
            variant,
            threads,
            mix,
            slots: 4,
            duration: Duration::from_secs(1),
            buffer_bytes: BufferOptions::default().capacity,
        }
    }

    fn buffer_options(&self) -> BufferOptions {
        BufferOptions {
            capacity: self.buffer_bytes,
            variant: self.variant,
            slots: self.slots,
            ..BufferOptions::default()
        }
    }

    /// Checks the configuration; the error is one line for the user.
    pub fn validate(&self) -> Result<(), String> {
        in_range("threads", self.threads, 1..=MAX_THREADS)?;
        in_range("slots", self.slots, 1..=BufferOptions::MAX_SLOTS)?;
        in_range("record size in bytes", self.mix.bytes(), 1..)?;
        let max = max_payload(self.buffer_bytes);
        in_range("record size in bytes", self.mix.largest(), ..=max).map_err(|e| {
            format!(
                "{e} (the largest the {} KiB log buffer takes)",
                self.buffer_bytes >> 10
            )
        })?;
        in_range(
            "duration in seconds",
            self.duration.as_secs_f64(),
            (Excluded(0.0), Unbounded),
        )?;
        Ok(())
    }
}

/// The largest payload a buffer of `buffer_bytes` takes.
pub fn max_payload(buffer_bytes: usize) -> usize {
    LogBuffer::new(
        &BufferOptions {
            capacity: buffer_bytes,
            ..BufferOptions::default()
        },
        Lsn::ZERO,
    )
    .map_or(0, |b| b.max_payload())
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct LogInsertResult {
    /// The insertion algorithm.
    pub variant: String,
    /// Inserting threads.
    pub threads: usize,
    /// `fixed` or `outlier`.
    pub mix: String,
    /// The record size (fixed mix) or the outlier size.
    pub record_bytes: usize,
    /// Mean payload bytes per record.
    pub mean_record_bytes: f64,
    /// Consolidation-array slots.
    pub slots: usize,
    /// Seconds the insert phase ran.
    pub seconds: f64,
    /// Records inserted.
    pub inserts: u64,
    /// Records inserted per second.
    pub inserts_per_sec: f64,
    /// Payload bytes inserted per second.
    pub bytes_per_sec: f64,
    /// Payload bytes per second of the same threads copying the same records into
    /// private rings.
    pub limit_bytes_per_sec: f64,
    /// `bytes_per_sec / limit_bytes_per_sec`.
    pub ratio_to_limit: f64,
}

/// Runs the insert phase, then the limit phase. `tick` is called about every 100 ms with
/// the fraction done.
pub fn run(cfg: &LogInsertConfig, mut tick: impl FnMut(f64)) -> Result<LogInsertResult, WalError> {
    let insert = run_inserts(cfg, |f| tick(f / 2.0))?;
    let limit = measure_limit(cfg, |f| tick(0.5 + f / 2.0));
    Ok(with_limit(insert, limit))
}

/// Fills in the limit fields of an insert-phase result.
pub fn with_limit(mut r: LogInsertResult, limit_bytes_per_sec: f64) -> LogInsertResult {
    r.limit_bytes_per_sec = limit_bytes_per_sec;
    r.ratio_to_limit = if limit_bytes_per_sec > 0.0 {
        r.bytes_per_sec / limit_bytes_per_sec
    } else {
        0.0
    };
    r
}

/// Payload buffers for one thread's cycle, filled with bytes that differ per thread.
fn payloads(mix: RecordMix, thread: usize) -> Vec<Vec<u8>> {
    mix.cycle()
        .into_iter()
        .enumerate()
        .map(|(i, len)| {
            (0..len)
                .map(|j| (thread * 31 + i * 7 + j) as u8)
                .collect::<Vec<u8>>()
        })
        .collect()
}

/// Starts and stops the measuring threads so that the clock covers exactly the time they
/// may work. (With many more threads than cores, a thread that starts the clock after a
/// barrier can leave it long after the workers did, and they work unmeasured meanwhile.)
struct Gate {
    ready: AtomicUsize,
    open: AtomicBool,
    stop: AtomicBool,
}

impl Gate {
    fn new() -> Gate {
        Gate {
            ready: AtomicUsize::new(0),
            open: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        }
    }

    /// A worker: announces itself and waits for the gate to open.
    fn enter(&self) {
        self.ready.fetch_add(1, Ordering::AcqRel);
        while !self.open.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    }

    /// True once the run is over (a worker checks before each record).
    fn closed(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The controller: waits for `workers` to be ready, opens the gate, sleeps through
    /// `duration` (reporting progress), closes it. Returns the seconds it was open.
    fn run(&self, workers: usize, duration: Duration, tick: &mut impl FnMut(f64)) -> f64 {
        while self.ready.load(Ordering::Acquire) < workers {
            std::thread::yield_now();
        }
        let start = Instant::now();
        self.open.store(true, Ordering::Release);
        wait_out(duration, start, tick);
        self.stop.store(true, Ordering::Relaxed);
        start.elapsed().as_secs_f64()
    }
}

/// Sleeps through `duration` in slices, reporting progress.
fn wait_out(duration: Duration, start: Instant, tick: &mut impl FnMut(f64)) {
    loop {
        let gone = start.elapsed();
        if gone >= duration {
            return;
        }
        std::thread::sleep((duration - gone).min(Duration::from_millis(100)));
        tick((start.elapsed().as_secs_f64() / duration.as_secs_f64()).min(1.0));
    }
}

/// The insert phase alone; the limit fields are zero.
pub fn run_inserts(
    cfg: &LogInsertConfig,
    mut tick: impl FnMut(f64),
) -> Result<LogInsertResult, WalError> {
    cfg.validate().map_err(WalError::InvalidArgument)?;
    let buf = LogBuffer::new(&cfg.buffer_options(), Lsn::ZERO)?;
    let gate = Gate::new();
    let drained = AtomicBool::new(false);
    let (inserts, bytes, seconds) = std::thread::scope(|s| {
        let drain = s.spawn(|| drain(&buf, &drained));
        let workers: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let (buf, gate) = (&buf, &gate);
                s.spawn(move || -> Result<(u64, u64), WalError> {
                    let records = payloads(cfg.mix, t);
                    let (mut n, mut bytes) = (0u64, 0u64);
                    gate.enter();
                    'run: loop {
                        for p in &records {
                            if gate.closed() {
                                break 'run;
                            }
                            buf.insert(p)?;
                            n += 1;
                            bytes += p.len() as u64;
                        }
                    }
                    Ok((n, bytes))
                })
            })
            .collect();
        let seconds = gate.run(cfg.threads, cfg.duration, &mut tick);
        let mut totals = Ok((0u64, 0u64));
        for w in workers {
            let r = w.join().expect("inserting thread panicked");
            totals = match (totals, r) {
                (Ok((n, b)), Ok((n2, b2))) => Ok((n + n2, b + b2)),
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
        }
        drained.store(true, Ordering::Release);
        drain.join().expect("drain thread panicked");
        totals.map(|(n, b)| (n, b, seconds))
    })?;
    Ok(LogInsertResult {
        variant: cfg.variant.to_string(),
        threads: cfg.threads,
        mix: cfg.mix.name().to_string(),
        record_bytes: cfg.mix.bytes(),
        mean_record_bytes: cfg.mix.mean(),
        slots: cfg.slots,
        seconds,
        inserts,
        inserts_per_sec: inserts as f64 / seconds,
        bytes_per_sec: bytes as f64 / seconds,
        limit_bytes_per_sec: 0.0,
        ratio_to_limit: 0.0,
    })
}

/// The flush side without a disk: copy released bytes out, mark them written and durable.
/// Runs until `done` is set and everything released was drained.
///
/// When it has caught up it sleeps briefly instead of waiting with
/// [`LogBuffer::wait_released`]: that marks the flush side idle, and every release would
/// then pay a wake-up — the real flush daemon only idles when nothing is pending, never
/// under load, so a benchmark that always idled would measure wake-ups, not the buffer.
/// The ring (megabytes) absorbs the few microseconds of the sleep.
fn drain(buf: &LogBuffer, done: &AtomicBool) {
    let mut staging = Vec::with_capacity(buf.capacity() as usize);
    let mut written = buf.written();
    loop {
        let finished = done.load(Ordering::Acquire);
        let released = buf.released();
        if released == written && !finished {
            std::thread::sleep(DRAIN_NAP);
            continue;
        }
        if released > written {
            staging.clear();
            buf.copy_out(written, released, &mut staging);
            buf.mark_written(released);
            buf.mark_durable(released);
            written = released;
        } else if finished {
            return;
        }
    }
}

/// The limit phase: each thread copies the same records, framed the same way (a 16-byte
/// header, payload, alignment), into a private ring of the buffer's size. Returns payload
/// bytes per second over all threads.
pub fn measure_limit(cfg: &LogInsertConfig, mut tick: impl FnMut(f64)) -> f64 {
    let gate = Gate::new();
    let ring_bytes = cfg.buffer_bytes.next_power_of_two();
    let (bytes, seconds) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let gate = &gate;
                s.spawn(move || {
                    let frames: Vec<(Vec<u8>, usize)> = payloads(cfg.mix, t)
                        .into_iter()
                        .map(|p| {
                            let mut f = vec![0u8; frame::RECORD_HEADER];
                            f.extend_from_slice(&p);
                            f.resize(frame::frame_len(p.len()) as usize, 0);
                            (f, p.len())
                        })
                        .collect();
                    // Written through once so no page faults land in the timed loop.
                    let mut ring = vec![1u8; ring_bytes];
                    let mut at = 0usize;
                    let mut bytes = 0u64;
                    gate.enter();
                    'run: loop {
                        for (f, payload) in &frames {
                            if gate.closed() {
                                break 'run;
                            }
                            let first = f.len().min(ring_bytes - at);
                            ring[at..at + first].copy_from_slice(&f[..first]);
                            ring[..f.len() - first].copy_from_slice(&f[first..]);
                            at = (at + f.len()) % ring_bytes;
                            bytes += *payload as u64;
                        }
                        std::hint::black_box(&ring);
                    }
                    bytes
                })
            })
            .collect();
        let seconds = gate.run(cfg.threads, cfg.duration, &mut tick);
        let bytes: u64 = workers
            .into_iter()
            .map(|w| w.join().expect("limit thread panicked"))
            .sum();
        (bytes, seconds)
    });
    bytes as f64 / seconds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outlier_mix_is_sixty_small_then_one_large() {
        let c = RecordMix::Outlier(4096).cycle();
        assert_eq!(c.len(), 61);
        assert!(c[..60].iter().all(|&b| b == 48));
        assert_eq!(c[60], 4096);
        assert_eq!(RecordMix::Outlier(4096).largest(), 4096);
        assert!((RecordMix::Outlier(109).mean() - 49.0).abs() < 1e-9);
    }

    #[test]
    fn every_variant_runs_and_reports_against_the_limit() {
        for &v in InsertVariant::ALL {
            let mut cfg = LogInsertConfig::new(v, 3, RecordMix::Fixed(120));
            // (60 ms once saw fewer than 100 inserts at a load of 13 on 2 cores.)
            cfg.duration = Duration::from_millis(250);
            cfg.buffer_bytes = 64 << 10; // small: the ring wraps and inserters wait
            let r = run(&cfg, |_| {}).unwrap();
            assert_eq!(r.variant, v.name());
            assert!(r.inserts > 100, "{v}: {} inserts", r.inserts);
            assert!(r.bytes_per_sec > 0.0 && r.limit_bytes_per_sec > 0.0);
            let ratio = r.bytes_per_sec / r.limit_bytes_per_sec;
            assert!((r.ratio_to_limit - ratio).abs() < 1e-12);
        }
    }

    #[test]
    fn bad_configurations_are_refused() {
        let ok = LogInsertConfig::new(InsertVariant::Atomic, 2, RecordMix::Fixed(120));
        assert!(ok.validate().is_ok());
        let bad = |f: &dyn Fn(&mut LogInsertConfig)| {
            let mut c = ok.clone();
            f(&mut c);
            c.validate().is_err()
        };
        assert!(bad(&|c| c.threads = 0));
        assert!(bad(&|c| c.slots = 0));
        assert!(bad(&|c| c.mix = RecordMix::Fixed(0)));
        assert!(bad(&|c| c.mix = RecordMix::Outlier(3 << 20)));
        assert!(bad(&|c| c.duration = Duration::ZERO));
    }
}
