//! The update-propagation experiment (the propagation paper §5; docs/BENCHMARKS.md,
//! "Update propagation"): TPC-B whose data fits in the buffer pool, run for a fixed time
//! with one propagation strategy ([`sluice::Strategy`]) and a checkpoint every second,
//! sampled every second — committed tps, dirty pages, REDO length (the log a restart
//! would replay) and the bytes the strategy wrote — then closed as a crash would leave
//! it and reopened, timing restart recovery.
//!
//! One run, in a fresh temporary database:
//! 1. the device's sequential write bandwidth, measured in the same directory
//!    ([`measure_device`]: 1 MiB writes through the OS storage seam, then an fsync);
//! 2. TPC-B loaded with the default strategy and closed cleanly (its final checkpoint
//!    writes every page), then reopened with the strategy under test, one checkpoint per
//!    second (`checkpoint_interval` = 1 s; the log-volume trigger is 1 GiB, so it never
//!    fires first) and a buffer pool that holds the data with room to spare
//!    ([`pool_pages`]); a consistency scan reads every page in, so the run starts with
//!    the data resident and clean;
//! 3. the workload for `seconds`: clients at full speed ([`Throughput::High`]), or paced
//!    to a fixed rate ([`Throughput::Low`]), with a sampler thread reading
//!    [`Database::backlog`](sluice::Database::backlog) and the committed count once a
//!    second;
//! 4. at once a crash ([`Database::close_as_crashed`]) and a timed reopen with the same
//!    options (restart recovery), then the consistency check: every acknowledged commit
//!    must be there.

use crate::knobs::{in_range, named_values};
use crate::workloads::driver::{self, DriverConfig};
use crate::workloads::setup::{self, Setup};
use crate::workloads::tpcb::{self, TpcbShape, TpcbTables, TpcbWorkload};
use serde::Serialize;
use sluice::experiment::Backlog;
use sluice::{CommitProtocol, Database, Error, Options, Strategy};
use sluice_storage::{OpenOptions, OsStorage, Storage};
use sluice_wal::InsertVariant;
use std::ops::Bound::{Excluded, Included};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The low-throughput scenario's default rate, transactions per second. The paper's low
/// scenario ran at about a tenth of its high one (about 1,000 against 10,000); TPC-B SF 2
/// at full speed does about 20,000 here (2 cores, a real disk, the page strategies'
/// stubs), so 2,000 keeps that ratio and stays far below what the clients can do, so
/// the pacing, not the machine, sets it. Machines differ: pass `--rate` to match.
pub const DEFAULT_LOW_RATE: f64 = 2_000.0;

/// Bytes the device measurement writes by default (in 1 MiB writes).
pub const DEFAULT_PROBE_BYTES: u64 = 256 << 20;

/// One MB, as the bandwidths are reported (the paper's MB/s).
const MB: f64 = 1e6;

/// How fast the clients go (`--throughput`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Throughput {
    /// Paced to a fixed rate ([`PropagationConfig::rate`]).
    Low,
    /// Every client submits its next transaction as soon as the last one is done.
    High,
}

named_values!(Throughput, "throughput", serialize);

/// One run's knobs.
#[derive(Debug, Clone)]
pub struct PropagationConfig {
    /// The strategy under test.
    pub strategy: Strategy,
    /// Measured time (the time series has one row per second of it).
    pub seconds: Duration,
    /// Full speed or paced.
    pub throughput: Throughput,
    /// The paced rate, transactions per second ([`Throughput::Low`] only).
    pub rate: f64,
    /// TPC-B scale factor (branches of 100,000 accounts).
    pub scale: u32,
    /// Logical clients.
    pub clients: usize,
    /// Commit protocol (the `sluice bench tpcb` default: elr-pipelined).
    pub protocol: CommitProtocol,
    /// Where the fresh temporary database goes (`None`: the current directory).
    pub dir: Option<PathBuf>,
    /// Bytes the device measurement writes; 0 skips it (then
    /// [`PropagationConfig::device_mb_per_s`] is reported, if given).
    pub probe_bytes: u64,
    /// The device bandwidth measured elsewhere in the same invocation (a sweep measures
    /// once for all its runs).
    pub device_mb_per_s: Option<f64>,
    /// A database loaded once with TPC-B at `scale` and closed cleanly ([`load_template`]):
    /// the run copies it instead of loading its own (a sweep loads once for all its
    /// runs; the copy is the same clean, propagated database a load leaves).
    pub template: Option<PathBuf>,
}

impl PropagationConfig {
    /// The defaults for `strategy`: 10 s at full speed, SF 2, 64 clients, elr-pipelined,
    /// a 256 MiB device measurement.
    pub fn new(strategy: Strategy) -> PropagationConfig {
        PropagationConfig {
            strategy,
            seconds: Duration::from_secs(10),
            throughput: Throughput::High,
            rate: DEFAULT_LOW_RATE,
            scale: 2,
            clients: 64,
            protocol: CommitProtocol::ElrPipelined,
            dir: None,
            probe_bytes: DEFAULT_PROBE_BYTES,
            device_mb_per_s: None,
            template: None,
        }
    }

    /// Checks the knobs; the message names the offending one.
    pub fn validate(&self) -> Result<(), String> {
        // One sample per second: at least one second.
        in_range("seconds", self.seconds.as_secs_f64(), 1.0..=86_400.0)?;
        in_range(
            "rate (transactions per second)",
            self.rate,
            (Excluded(0.0), Included(10_000_000.0)),
        )?;
        in_range("scale", self.scale, 1..=1_000)?;
        in_range("clients", self.clients, 1..=100_000)?;
        in_range("probe bytes", self.probe_bytes, ..=64 << 30)?;
        if let Some(d) = &self.dir {
            if !d.is_dir() {
                return Err(format!("dir {} is not a directory", d.display()));
            }
        }
        Ok(())
    }
}

/// Buffer-pool pages for TPC-B at `scale` run for `seconds`: the loaded data
/// ([`crate::workloads::session::TpcbSession::pool_pages`], which leaves 16,384 pages spare) plus
/// 256 pages per second for the history the run appends (about 15,000 transactions per
/// second of 50-byte rows in half-full leaves), so no page is ever evicted; at most
/// 2^20 pages (8 GiB).
pub fn pool_pages(scale: u32, seconds: Duration) -> usize {
    let history = (seconds.as_secs_f64().ceil() as usize).saturating_mul(256);
    crate::workloads::session::TpcbSession::pool_pages(scale)
        .saturating_add(history)
        .min(1 << 20)
}

/// The device's sequential write bandwidth.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct DeviceBandwidth {
    /// Bytes written.
    pub bytes: u64,
    /// Seconds from the first write to the end of the fsync.
    pub seconds: f64,
    /// Bytes ÷ seconds, in MB/s (10^6 bytes).
    pub mb_per_s: f64,
}

/// Writes `bytes` (rounded up to whole MiB) in 1 MiB writes to a new file in `dir`
/// through the OS storage seam, syncs it, removes it, and returns the bandwidth.
pub fn measure_device(dir: &Path, bytes: u64) -> Result<DeviceBandwidth, Error> {
    const CHUNK: usize = 1 << 20;
    let storage = OsStorage::new();
    let path = dir.join(format!("device-probe-{}", std::process::id()));
    // Not zeros (a device or file system may compress or skip them) and not all one
    // page repeated: a cheap xorshift stream.
    let mut buf = vec![0u8; CHUNK];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for w in buf.chunks_exact_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w.copy_from_slice(&x.to_le_bytes());
    }
    let chunks = bytes.div_ceil(CHUNK as u64).max(1);
    let result = (|| -> Result<DeviceBandwidth, Error> {
        let f = storage.open(&path, OpenOptions::CREATE_NEW)?;
        let t0 = Instant::now();
        for i in 0..chunks {
            buf[0..8].copy_from_slice(&i.to_le_bytes());
            f.write_at(&buf, i * CHUNK as u64)?;
        }
        f.sync_data()?;
        let seconds = t0.elapsed().as_secs_f64().max(1e-9);
        let bytes = chunks * CHUNK as u64;
        Ok(DeviceBandwidth {
            bytes,
            seconds,
            mb_per_s: bytes as f64 / seconds / MB,
        })
    })();
    let removed = storage.remove(&path).and_then(|_| storage.sync_dir(dir));
    let r = result?;
    removed?;
    Ok(r)
}

/// One second of the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the workload started (the end of this interval).
    pub t_s: f64,
    /// Transactions committed in the interval, per second.
    pub tps: f64,
    /// Dirty pages in the buffer pool at the sample.
    pub dirty_pages: usize,
    /// REDO length at the sample: log bytes from the oldest dirty page's recovery LSN to
    /// the end of the log.
    pub redo_bytes: u64,
    /// Bytes the propagation strategy wrote in the interval (cleaner, log cleaner or
    /// checkpoint sweep; not evictions), in MB/s.
    pub write_mb_per_s: f64,
}

/// What a run measured (the JSON's `summary`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The strategy, as `--strategy` spells it.
    pub strategy: String,
    /// `low` or `high`.
    pub throughput: Throughput,
    /// The paced rate (low only).
    pub target_tps: Option<f64>,
    /// Commit protocol.
    pub commit: String,
    /// Logical clients.
    pub clients: usize,
    /// TPC-B scale factor.
    pub scale: u32,
    /// Buffer-pool pages (8 KiB).
    pub pool_pages: usize,
    /// Pages the loaded data takes (what the warm-up scan read into the pool).
    pub data_pages: u64,
    /// Seconds measured.
    pub seconds: f64,
    /// Transactions committed in the run.
    pub committed: u64,
    /// Committed per second.
    pub tps: f64,
    /// Bytes the strategy wrote in the run ÷ seconds, MB/s (10^6 bytes).
    pub write_mb_per_s: f64,
    /// Bytes the strategy wrote ÷ the time it spent propagating (reading, applying,
    /// writing and syncing), MB/s: the rate at which it drains dirty pages while it
    /// works — the size of the drain in the paper's sink analogy.
    pub busy_write_mb_per_s: f64,
    /// Bytes the strategy wrote ÷ the time its writes and syncs took, MB/s: what its I/O
    /// pattern gets from the device (compare with `device_seq_write_mb_per_s`).
    pub io_write_mb_per_s: f64,
    /// The share of the run the strategy spent propagating.
    pub busy_fraction: f64,
    /// Bytes the strategy wrote in the run.
    pub propagated_bytes: u64,
    /// Write calls those took (a cluster or a segment is one).
    pub propagation_writes: u64,
    /// Mean bytes per write (0 when none).
    pub bytes_per_write: f64,
    /// The device's sequential write bandwidth, MB/s, measured in the same run (or the
    /// same sweep); `None` when not measured.
    pub device_seq_write_mb_per_s: Option<f64>,
    /// Mean dirty pages over the samples.
    pub dirty_pages_mean: f64,
    /// Most dirty pages in one sample.
    pub dirty_pages_max: usize,
    /// Longest REDO (bytes) in one sample.
    pub redo_bytes_max: u64,
    /// REDO (bytes) at the end of the run, just before the crash.
    pub redo_bytes_final: u64,
    /// Longest REDO in the first third of the samples.
    pub redo_first_third_max: u64,
    /// Longest REDO in the last third of the samples (above the first third's: REDO
    /// grows without bound).
    pub redo_last_third_max: u64,
    /// Pages written by eviction in the run (0 when the data fits, as it should).
    pub eviction_writes: u64,
    /// How long the reopen after the crash took (restart recovery), ms.
    pub restart_ms: f64,
    /// Page changes restart recovery redid.
    pub redo_records: u64,
    /// Log records restart recovery's analysis read.
    pub recovery_log_records: u64,
    /// The consistency checks after the load and after restart passed (every
    /// acknowledged commit present).
    pub consistent: bool,
    /// What failed, if anything.
    pub violations: Vec<String>,
}

/// A run's result: the summary and the time series (one JSON object).
#[derive(Debug, Clone, Serialize)]
pub struct PropagationResult {
    /// What the run measured.
    pub summary: Summary,
    /// One row per second.
    pub series: Vec<Sample>,
    /// Things a reader should know about the setup.
    pub notes: Vec<String>,
}

/// Where a run is, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Fraction of the run done (0..1), weighted by the expected time of each stage.
    pub done: f64,
    /// The stage.
    pub what: &'a str,
}

fn max_of(s: &[Sample]) -> u64 {
    s.iter().map(|x| x.redo_bytes).max().unwrap_or(0)
}

/// The options of the measured run: the benchmark options (`setup::options`) with the
/// strategy, a checkpoint every second and none by log volume.
pub fn run_options(setup: &Setup, strategy: Strategy) -> Options {
    Options {
        propagation: strategy,
        checkpoint_interval: Duration::from_secs(1),
        checkpoint_log_bytes: Setup::CHECKPOINT_LOG_BYTES,
        ..setup::options(setup)
    }
}

/// The setup of a run's database in `dir` (pool, log buffer, checkpoint trigger).
fn setup_in(dir: &Path, pool: usize) -> Setup {
    Setup {
        dir: Some(dir.to_path_buf()),
        log_latency: None,
        log_buffer: InsertVariant::for_this_machine(),
        pool_pages: pool,
        checkpoint_log_bytes: Setup::CHECKPOINT_LOG_BYTES,
        adaptive_group_commit: true,
        flush: Default::default(),
        preallocate: Default::default(),
    }
}

/// Loads TPC-B at `cfg.scale` into a fresh temporary directory under `cfg.dir` (the
/// current directory by default) and closes it cleanly, for the runs of a sweep to copy
/// ([`PropagationConfig::template`]). `progress` gets the fraction loaded.
pub fn load_template(
    cfg: &PropagationConfig,
    progress: impl FnMut(f64),
) -> Result<tempfile::TempDir, Error> {
    let parent = match &cfg.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let temp = tempfile::Builder::new()
        .prefix("sluice-propagation-loaded-")
        .tempdir_in(&parent)?;
    let s = setup_in(temp.path(), pool_pages(cfg.scale, cfg.seconds));
    let bench = setup::open(&s)?;
    tpcb::load(&bench.db, &TpcbShape::standard(cfg.scale), progress)?;
    bench.close()?;
    Ok(temp)
}

/// Copies the files under `from` into `to` (directories recursively), as they are: the
/// template's database files into a run's fresh directory.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)?;
        }
    }
    Ok(())
}

/// Runs the experiment `cfg` describes.
pub fn run(
    cfg: &PropagationConfig,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<PropagationResult, Error> {
    cfg.validate().map_err(Error::InvalidArgument)?;
    let parent = match &cfg.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let temp = tempfile::Builder::new()
        .prefix("sluice-propagation-")
        .tempdir_in(&parent)?;
    // Stages, weighted by their expected seconds: the probe, the load and the
    // restart are a few seconds each.
    let secs = cfg.seconds.as_secs_f64();
    let weights = [2.0, 5.0, secs, 2.0];
    let total: f64 = weights.iter().sum();
    let at = |stage: usize, f: f64| {
        (weights[..stage].iter().sum::<f64>() + weights[stage] * f.clamp(0.0, 1.0)) / total
    };
    let mut notes = Vec::new();

    progress(Progress {
        done: 0.0,
        what: "measuring the device",
    });
    let device = if cfg.probe_bytes > 0 {
        let d = measure_device(temp.path(), cfg.probe_bytes)?;
        notes.push(format!(
            "device: {:.0} MB/s sequential ({} MiB in 1 MiB writes and an fsync, {:.2} s, same directory, before the workload)",
            d.mb_per_s,
            d.bytes >> 20,
            d.seconds
        ));
        Some(d.mb_per_s)
    } else {
        cfg.device_mb_per_s
    };

    let pool = pool_pages(cfg.scale, cfg.seconds);
    let s = setup_in(temp.path(), pool);
    let shape = TpcbShape::standard(cfg.scale);
    let bench = match &cfg.template {
        Some(t) => {
            progress(Progress {
                done: at(1, 0.0),
                what: "copying the loaded database",
            });
            copy_tree(t, temp.path())?;
            setup::open(&s)?
        }
        None => {
            let what = format!("loading TPC-B SF {}", cfg.scale);
            let bench = setup::open(&s)?;
            tpcb::load(&bench.db, &shape, |f| {
                progress(Progress {
                    done: at(1, f),
                    what: &what,
                })
            })?;
            bench
        }
    };
    // The clean close's checkpoint writes every loaded page: every strategy starts from
    // the same propagated database.
    let opts = run_options(&s, cfg.strategy);
    let (bench, _) = bench.reopen(opts.clone(), false)?;
    let tables = TpcbTables::open(&bench.db)?;
    let reads0 = bench.db.stats().pool.reads;
    let c = tpcb::check(&bench.db, &tables, Some(0))?;
    let data_pages = bench.db.stats().pool.reads - reads0;
    let mut violations: Vec<String> = c
        .violations
        .into_iter()
        .map(|v| format!("after the load: {v}"))
        .collect();
    notes.push(format!(
        "buffer pool {pool} pages ({} MiB): the loaded data is {data_pages} pages, so it fits with {} pages to spare for the history the run appends",
        (pool * 8192) >> 20,
        pool.saturating_sub(data_pages as usize)
    ));

    // The run.
    let committed = Arc::new(AtomicU64::new(0));
    let agents = DriverConfig::default_agents(cfg.protocol, cfg.clients);
    let dcfg = DriverConfig {
        clients: cfg.clients,
        agents,
        protocol: cfg.protocol,
        warmup: Duration::ZERO,
        measure: cfg.seconds,
        seed: 0x5EED,
        rate: (cfg.throughput == Throughput::Low).then_some(cfg.rate),
        time_breakdown: false,
    };
    let workload =
        Arc::new(TpcbWorkload::new(tables.clone(), shape, 1).map_err(Error::InvalidArgument)?);
    let b0 = bench.db.backlog();
    let stop = AtomicBool::new(false);
    let what = format!("{} {}", cfg.strategy, cfg.throughput);
    let (r, series) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| sample(&bench.db, &committed, &b0, secs, &stop));
        let r = driver::run_counting(&bench.db, workload.clone(), &dcfg, committed.clone(), |f| {
            progress(Progress {
                done: at(2, f),
                what: &what,
            })
        });
        stop.store(true, Ordering::Release);
        let series = sampler.join().expect("the sampler does not panic");
        (r, series)
    });
    let r = r?;
    // The crash comes at once: a checkpoint or a cleaner round in between (a consistency
    // scan takes a second or more) would shrink the backlog the restart is to measure.
    // The check after restart covers the run too.
    let b1 = bench.db.backlog();
    progress(Progress {
        done: at(3, 0.0),
        what: "crash and restart",
    });
    drop((workload, tables));
    let (bench, restart) = bench.reopen(opts, true)?;
    let report = bench.db.recovery_report().clone();
    let tables = TpcbTables::open(&bench.db)?;
    let c = tpcb::check(&bench.db, &tables, Some(r.committed_total))?;
    violations.extend(
        c.violations
            .into_iter()
            .map(|v| format!("after restart: {v}")),
    );
    drop(tables);
    bench.close()?;
    progress(Progress {
        done: 1.0,
        what: "done",
    });

    let propagated = b1.propagated_bytes - b0.propagated_bytes;
    let writes = b1.propagation_writes - b0.propagation_writes;
    let busy_us = b1.propagation_busy_us - b0.propagation_busy_us;
    let write_us = b1.propagation_write_us - b0.propagation_write_us;
    let n = series.len();
    let third = n.div_ceil(3);
    let summary = Summary {
        strategy: cfg.strategy.to_string(),
        throughput: cfg.throughput,
        target_tps: (cfg.throughput == Throughput::Low).then_some(cfg.rate),
        commit: cfg.protocol.to_string(),
        clients: cfg.clients,
        scale: cfg.scale,
        pool_pages: pool,
        data_pages,
        seconds: r.seconds,
        committed: r.committed_total,
        tps: r.committed_total as f64 / r.seconds,
        write_mb_per_s: propagated as f64 / r.seconds / MB,
        busy_write_mb_per_s: if busy_us == 0 {
            0.0
        } else {
            propagated as f64 / (busy_us as f64 / 1e6) / MB
        },
        io_write_mb_per_s: if write_us == 0 {
            0.0
        } else {
            propagated as f64 / (write_us as f64 / 1e6) / MB
        },
        busy_fraction: busy_us as f64 / 1e6 / r.seconds,
        propagated_bytes: propagated,
        propagation_writes: writes,
        bytes_per_write: if writes == 0 {
            0.0
        } else {
            propagated as f64 / writes as f64
        },
        device_seq_write_mb_per_s: device,
        dirty_pages_mean: if n == 0 {
            0.0
        } else {
            series.iter().map(|x| x.dirty_pages as f64).sum::<f64>() / n as f64
        },
        dirty_pages_max: series.iter().map(|x| x.dirty_pages).max().unwrap_or(0),
        redo_bytes_max: max_of(&series),
        redo_bytes_final: b1.redo_bytes,
        redo_first_third_max: max_of(&series[..third.min(n)]),
        redo_last_third_max: max_of(&series[n - third.min(n)..]),
        eviction_writes: b1.eviction_writes - b0.eviction_writes,
        restart_ms: restart.as_secs_f64() * 1e3,
        redo_records: report.redone,
        recovery_log_records: report.records,
        consistent: violations.is_empty(),
        violations,
    };
    if summary.eviction_writes > 0 {
        notes.push(format!(
            "{} pages were written by eviction: the data outgrew the pool",
            summary.eviction_writes
        ));
    }
    Ok(PropagationResult {
        summary,
        series,
        notes,
    })
}

/// The sampler: once a second from now until `seconds` have passed or `stop` is set,
/// reads the backlog and the committed count.
fn sample(
    db: &Database,
    committed: &AtomicU64,
    b0: &Backlog,
    seconds: f64,
    stop: &AtomicBool,
) -> Vec<Sample> {
    let t0 = Instant::now();
    let mut out = Vec::new();
    let (mut last_t, mut last_c, mut last_b) =
        (0.0, committed.load(Ordering::Relaxed), b0.propagated_bytes);
    let mut k = 1u64;
    loop {
        let due = (k as f64).min(seconds);
        if due <= last_t {
            return out;
        }
        let at = t0 + Duration::from_secs_f64(due);
        while Instant::now() < at {
            if stop.load(Ordering::Acquire) {
                return out;
            }
            std::thread::sleep((at - Instant::now()).min(Duration::from_millis(20)));
        }
        let b = db.backlog();
        let c = committed.load(Ordering::Relaxed);
        let t = t0.elapsed().as_secs_f64();
        let dt = (t - last_t).max(1e-9);
        out.push(Sample {
            t_s: (t * 1000.0).round() / 1000.0,
            tps: (c - last_c) as f64 / dt,
            dirty_pages: b.dirty_pages,
            redo_bytes: b.redo_bytes,
            write_mb_per_s: b.propagated_bytes.saturating_sub(last_b) as f64 / dt / MB,
        });
        (last_t, last_c, last_b) = (t, c, b.propagated_bytes);
        k += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_names_round_trip() {
        for t in [Throughput::Low, Throughput::High] {
            assert_eq!(t.to_string().parse::<Throughput>(), Ok(t));
        }
        assert!("medium".parse::<Throughput>().is_err());
    }

    #[test]
    fn validation_names_the_bad_knob() {
        let bad = |edit: fn(&mut PropagationConfig), mentions: &str| {
            let mut c = PropagationConfig::new(Strategy::default());
            edit(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.contains(mentions), "{e:?} lacks {mentions:?}");
        };
        PropagationConfig::new(Strategy::default())
            .validate()
            .unwrap();
        bad(|c| c.seconds = Duration::ZERO, "seconds");
        bad(|c| c.rate = f64::NAN, "rate");
        bad(|c| c.scale = 0, "scale");
        bad(|c| c.clients = 0, "clients");
    }

    #[test]
    fn the_pool_holds_the_data_and_the_history() {
        let p = pool_pages(2, Duration::from_secs(10));
        assert!(p >= crate::workloads::session::TpcbSession::pool_pages(2) + 2_560);
        assert_eq!(pool_pages(1, Duration::from_secs(86_400)), 1 << 20);
    }

    #[test]
    fn the_device_measurement_writes_syncs_and_removes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = measure_device(dir.path(), 2 << 20).unwrap();
        assert_eq!(d.bytes, 2 << 20);
        assert!(d.mb_per_s > 0.0 && d.seconds > 0.0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
