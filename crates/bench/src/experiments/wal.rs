//! `bench wal`: threads append a record and wait for it to be durable, in a loop — the
//! group-commit benchmark. On the real disk by default.

use crate::metrics::Latency;
use hdrhistogram::Histogram;
use serde::Serialize;
use sluice_storage::{OsStorage, Storage};
use sluice_wal::{InsertVariant, Log, LogOptions, WalError};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct WalBenchConfig {
    /// Appending threads.
    pub threads: usize,
    /// Payload bytes per record.
    pub record_bytes: usize,
    /// How long to run.
    pub duration: Duration,
    /// Log directory; a fresh temporary directory (on the real disk) if `None`.
    pub dir: Option<PathBuf>,
    /// The log-buffer insertion algorithm.
    pub variant: InsertVariant,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct WalBenchResult {
    /// Appending threads.
    pub threads: usize,
    /// Payload bytes per record.
    pub record_bytes: usize,
    /// The insertion algorithm.
    pub variant: String,
    /// Seconds measured.
    pub seconds: f64,
    /// Records appended and acknowledged durable.
    pub appends: u64,
    /// Durable appends per second.
    pub appends_per_sec: f64,
    /// Syncs per second.
    pub syncs_per_sec: f64,
    /// Appends acknowledged per sync: the group-commit factor.
    pub appends_per_sync: f64,
    /// Append-to-durable latency.
    #[serde(flatten)]
    pub latency: Latency,
    /// Where the log was.
    pub dir: String,
}

/// Runs the benchmark. `tick` is called about every 100 ms with the fraction done.
pub fn run(cfg: &WalBenchConfig, mut tick: impl FnMut(f64)) -> Result<WalBenchResult, WalError> {
    let tmp;
    let dir = match &cfg.dir {
        Some(d) => d.clone(),
        None => {
            // In the working directory's file system rather than /tmp, which may be a RAM
            // disk where a sync costs nothing.
            tmp = tempfile::Builder::new()
                .prefix("sluice-bench-wal-")
                .tempdir_in(std::env::current_dir()?)?;
            tmp.path().to_path_buf()
        }
    };
    let storage: Arc<dyn Storage> = Arc::new(OsStorage);
    let log = Arc::new(Log::open(
        storage,
        &dir,
        LogOptions {
            variant: cfg.variant,
            ..LogOptions::default()
        },
    )?);
    let payload = vec![0xA5u8; cfg.record_bytes];
    let stop = Arc::new(AtomicBool::new(false));
    let syncs_before = log.stats().syncs;
    let start = Instant::now();
    let workers: Vec<_> = (0..cfg.threads)
        .map(|_| {
            let log = log.clone();
            let stop = stop.clone();
            let payload = payload.clone();
            std::thread::spawn(move || -> Result<(u64, Histogram<u64>), WalError> {
                let mut h = Histogram::<u64>::new(3).expect("histogram bounds are valid");
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let a = log.append(&payload)?;
                    log.wait_durable(a.end)?;
                    h.record(t.elapsed().as_micros() as u64).ok();
                    n += 1;
                }
                Ok((n, h))
            })
        })
        .collect();
    while start.elapsed() < cfg.duration {
        std::thread::sleep(Duration::from_millis(100).min(cfg.duration));
        tick((start.elapsed().as_secs_f64() / cfg.duration.as_secs_f64()).min(1.0));
    }
    stop.store(true, Ordering::Relaxed);
    let mut hist = Histogram::<u64>::new(3).expect("histogram bounds are valid");
    let mut appends = 0;
    let mut first_err = None;
    for w in workers {
        match w.join().expect("benchmark thread panicked") {
            Ok((n, h)) => {
                appends += n;
                hist.add(h).expect("histograms have the same bounds");
            }
            Err(e) => first_err = first_err.or(Some(e)),
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let syncs = log.stats().syncs - syncs_before;
    log.close()?;
    if let Some(e) = first_err {
        return Err(e);
    }
    Ok(WalBenchResult {
        threads: cfg.threads,
        record_bytes: cfg.record_bytes,
        variant: cfg.variant.to_string(),
        seconds,
        appends,
        appends_per_sec: appends as f64 / seconds,
        syncs_per_sec: syncs as f64 / seconds,
        appends_per_sync: appends as f64 / syncs.max(1) as f64,
        latency: Latency::of(&hist),
        dir: dir.display().to_string(),
    })
}
