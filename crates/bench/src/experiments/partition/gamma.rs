//! `bench partition --horizontal D`: γ, the log's degradation right after a rollover while
//! the archiver copies the old segment (Tandem §4–5), with the log over `D` directories.
//!
//! Each log directory sits behind its own emulated device ([`DeviceModel`]: a write
//! bandwidth cap that the writers saturate, and the same bandwidth for reads, so a read
//! occupies the device like a write); the archive directory sits behind a device of its
//! own. Everything lies on one in-memory [`SimStorage`] (the devices are the model, not
//! the host's disk). Writer threads append records and wait for durability, with small
//! segments so rollovers come often; the archiver is on, and a truncator frees archived
//! segments (so later segments are recycled files, not zero-filled ones — the
//! zero-filling would load the writer's device in both layouts alike).
//!
//! A sampler reads the durable LSN and the archived LSN every millisecond. An interval is
//! *contended* while a finished segment waits for or undergoes its copy (the window right
//! after a rollover while the archiver copies) and *steady* otherwise. γ = throughput in
//! contended intervals ÷ throughput in steady ones. With one directory the archiver reads
//! from the device the writer writes (γ well below 1); with two it reads from the device
//! the writer has just left (γ ≈ 1).
//!
//! With [`GammaConfig::dir`] the log and the archive lie in a directory of the caller's
//! instead, on the real disk, no model: γ of that device with the archiver on it too
//! (`sluice plan --measure`).

use serde::Serialize;
use sluice_storage::{DeviceModel, DeviceProfile, OsStorage, RoutedStorage, SimStorage, Storage};
use sluice_wal::{segment, GroupCommit, Log, LogOptions, Lsn, WalError};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct GammaConfig {
    /// Log directories (devices) the segments go round-robin to.
    pub horizontal_dirs: usize,
    /// How long to measure (after the warm-up).
    pub duration: Duration,
    /// Each log device's write and read bandwidth, bytes per second.
    pub device_bytes_per_sec: u64,
    /// LSN bytes per segment: small, so rollovers come often.
    pub segment_bytes: u64,
    /// Appending threads.
    pub threads: usize,
    /// Payload bytes per record.
    pub record_bytes: usize,
    /// A real directory to measure (a fresh temporary directory inside it holds the log
    /// directories and the archive); `None`: the emulated devices.
    pub dir: Option<PathBuf>,
}

impl Default for GammaConfig {
    fn default() -> Self {
        GammaConfig {
            horizontal_dirs: 1,
            duration: Duration::from_secs(4),
            device_bytes_per_sec: 16 << 20,
            segment_bytes: 1 << 20,
            threads: 8,
            record_bytes: 4000,
            dir: None,
        }
    }
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct GammaResult {
    /// Log directories.
    pub horizontal_dirs: usize,
    /// Contended throughput ÷ steady throughput.
    pub gamma: f64,
    /// Durable log throughput over the whole measured time, MB/s (10^6 bytes).
    pub log_mb_per_s: f64,
    /// Throughput while the archiver had a finished segment to copy, MB/s.
    pub contended_mb_per_s: f64,
    /// Throughput while it had none, MB/s.
    pub steady_mb_per_s: f64,
    /// Seconds counted as contended.
    pub contended_seconds: f64,
    /// Seconds counted as steady.
    pub steady_seconds: f64,
    /// Segment rollovers during the measurement.
    pub rollovers: u64,
    /// Segments the archiver copied (warm-up included).
    pub segments_archived: u64,
    /// Segments made from recycled files (warm-up included).
    pub segments_recycled: u64,
    /// Each log device's bandwidth, MB/s (`None`: a real directory, no model).
    pub device_mb_per_s: Option<f64>,
    /// LSN bytes per segment.
    pub segment_bytes: u64,
    /// Seconds measured.
    pub seconds: f64,
}

/// One sample: when, the durable LSN, the archived LSN.
type Sample = (Instant, Lsn, Lsn);

/// The log directories' and the archive's storage: a real directory's (with the
/// temporary directory that holds them, removed when dropped), or the emulated devices.
#[allow(clippy::type_complexity)]
fn storages(
    cfg: &GammaConfig,
) -> Result<
    (
        Arc<dyn Storage>,
        Vec<PathBuf>,
        PathBuf,
        Option<tempfile::TempDir>,
    ),
    WalError,
> {
    assert!(cfg.horizontal_dirs >= 1 && cfg.threads >= 1 && cfg.device_bytes_per_sec > 0);
    Ok(match &cfg.dir {
        Some(d) => {
            let temp = tempfile::Builder::new()
                .prefix("sluice-gamma-")
                .tempdir_in(d)?;
            let dirs = (0..cfg.horizontal_dirs)
                .map(|i| temp.path().join(format!("log{i}")))
                .collect();
            let archive = temp.path().join("archive");
            let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
            (storage, dirs, archive, Some(temp))
        }
        None => {
            let (storage, dirs, archive) = emulated(cfg);
            (storage, dirs, archive, None)
        }
    })
}

/// The emulated devices: each log directory behind its own bandwidth cap (reads too),
/// the archive behind a fast one, all on one in-memory disk.
fn emulated(cfg: &GammaConfig) -> (Arc<dyn Storage>, Vec<PathBuf>, PathBuf) {
    let disk = SimStorage::new(0x6a3a);
    let device = DeviceProfile {
        sync_latency: Duration::from_micros(50),
        bandwidth_bytes_per_sec: Some(cfg.device_bytes_per_sec),
        read_bandwidth_bytes_per_sec: Some(cfg.device_bytes_per_sec),
        ..DeviceProfile::none()
    };
    let mut storage = RoutedStorage::new(Arc::new(disk.clone()));
    let dirs: Vec<PathBuf> = (0..cfg.horizontal_dirs)
        .map(|i| PathBuf::from(format!("/dev{i}/log")))
        .collect();
    for i in 0..cfg.horizontal_dirs {
        let model = DeviceModel::new(disk.clone(), device);
        storage = storage.mount(format!("/dev{i}"), Arc::new(model));
    }
    // The archive's own device, fast enough that the copy is bound by reading the log.
    let archive = PathBuf::from("/archive");
    let archive_device = DeviceModel::new(disk.clone(), DeviceProfile::none());
    storage = storage.mount(&archive, Arc::new(archive_device));
    let storage: Arc<dyn Storage> = Arc::new(storage);
    (storage, dirs, archive)
}

/// Runs the measurement. `tick` is called about every 100 ms with the fraction done.
pub fn run(cfg: &GammaConfig, mut tick: impl FnMut(f64)) -> Result<GammaResult, WalError> {
    let (storage, dirs, archive, _temp) = storages(cfg)?;
    let options = LogOptions {
        segment_bytes: cfg.segment_bytes,
        group_commit: GroupCommit {
            adaptive: false,
            ..GroupCommit::default()
        },
        ..LogOptions::default()
    };
    let log = Arc::new(Log::open_archived(storage, &dirs, &archive, options)?);
    let s = log.segment_bytes();
    let stop = Arc::new(AtomicBool::new(false));
    let payload = vec![0x5Au8; cfg.record_bytes];
    let mut workers = Vec::new();
    for _ in 0..cfg.threads {
        let (log, stop, payload) = (log.clone(), stop.clone(), payload.clone());
        workers.push(std::thread::spawn(move || -> Result<(), WalError> {
            while !stop.load(Ordering::Relaxed) {
                let a = log.append(&payload)?;
                log.wait_durable(a.end)?;
            }
            Ok(())
        }));
    }
    // Warm-up: until a few segments were recycled (the first ones are zero-filled, and
    // the log's first file is extended step by step).
    let warm_deadline = Instant::now() + Duration::from_secs(10);
    while log.stats().segments_recycled < 2 * cfg.horizontal_dirs as u64
        && Instant::now() < warm_deadline
    {
        free_archived(&log)?;
        std::thread::sleep(Duration::from_millis(1));
    }
    let start = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    let mut last_tick = start;
    while start.elapsed() < cfg.duration {
        let archived = log.archived_lsn().expect("archiving is on");
        samples.push((Instant::now(), log.durable_lsn(), archived));
        free_archived(&log)?;
        std::thread::sleep(Duration::from_millis(1));
        if last_tick.elapsed() >= Duration::from_millis(100) {
            last_tick = Instant::now();
            tick((start.elapsed().as_secs_f64() / cfg.duration.as_secs_f64()).min(1.0));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut first_err = None;
    for w in workers {
        if let Err(e) = w.join().expect("benchmark thread panicked") {
            first_err = first_err.or(Some(e));
        }
    }
    let stats = log.stats();
    let archive_error = log.archive_error();
    log.close()?;
    if let Some(e) = first_err.or(archive_error) {
        return Err(e);
    }
    Ok(summarise(cfg, &samples, s, stats))
}

/// Frees every archived segment, so the preparer recycles them.
fn free_archived(log: &Log) -> Result<(), WalError> {
    if let Some(a) = log.archived_lsn() {
        if a > log.start_lsn() {
            log.truncate_below(a)?;
        }
    }
    Ok(())
}

fn summarise(
    cfg: &GammaConfig,
    samples: &[Sample],
    segment_bytes: u64,
    stats: sluice_wal::LogStats,
) -> GammaResult {
    let (mut busy_bytes, mut busy_secs, mut idle_bytes, mut idle_secs) = (0u64, 0.0, 0u64, 0.0);
    let mut rollovers = 0;
    for w in samples.windows(2) {
        let ((t0, d0, a0), (t1, d1, _)) = (w[0], w[1]);
        let secs = (t1 - t0).as_secs_f64();
        let bytes = d1.0 - d0.0;
        rollovers += d1.0 / segment_bytes - d0.0 / segment_bytes;
        // A finished segment (wholly below the durable segment) not yet archived: the
        // archiver is copying it (or about to).
        if segment::segment_start(d0, segment_bytes) > a0 {
            busy_bytes += bytes;
            busy_secs += secs;
        } else {
            idle_bytes += bytes;
            idle_secs += secs;
        }
    }
    let mb = |bytes: u64, secs: f64| {
        if secs > 0.0 {
            bytes as f64 / secs / 1e6
        } else {
            0.0
        }
    };
    let contended = mb(busy_bytes, busy_secs);
    let steady = mb(idle_bytes, idle_secs);
    let seconds = busy_secs + idle_secs;
    GammaResult {
        horizontal_dirs: cfg.horizontal_dirs,
        gamma: if steady > 0.0 {
            contended / steady
        } else {
            0.0
        },
        log_mb_per_s: mb(busy_bytes + idle_bytes, seconds),
        contended_mb_per_s: contended,
        steady_mb_per_s: steady,
        contended_seconds: busy_secs,
        steady_seconds: idle_secs,
        rollovers,
        segments_archived: stats.segments_archived,
        segments_recycled: stats.segments_recycled,
        device_mb_per_s: cfg
            .dir
            .is_none()
            .then(|| cfg.device_bytes_per_sec as f64 / 1e6),
        segment_bytes,
        seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_measures_rollovers_and_both_kinds_of_interval() {
        let cfg = GammaConfig {
            horizontal_dirs: 2,
            duration: Duration::from_millis(600),
            device_bytes_per_sec: 32 << 20,
            segment_bytes: 256 << 10,
            threads: 4,
            record_bytes: 2000,
            dir: None,
        };
        let r = run(&cfg, |_| {}).unwrap();
        assert!(r.rollovers > 0, "{r:?}");
        assert!(r.segments_archived > 0, "{r:?}");
        assert!(r.log_mb_per_s > 0.0 && r.gamma > 0.0, "{r:?}");
    }
}
