//! The restore experiment (`sluice bench restore`; docs/BENCHMARKS.md, "Restore"): how
//! long a point-in-time restore of a TPC-B database takes after a stretch of load, with
//! the log replayed in time order through the buffer pool (restart recovery's redo)
//! against the single-pass restore from sorted runs — in one run, on one backup and one
//! archive, so the two are compared as a ratio on the same machine at the same time.
//!
//! One run, in a fresh temporary directory:
//! 1. TPC-B loaded into a database that archives its log continuously
//!    ([`sluice::Options::log_archive`]);
//! 2. the workload for `seconds` (clients at full speed), with an online backup
//!    ([`Database::backup_to`]) taken a quarter of the way in while the clients go on,
//!    then a clean close: the archive now holds every finished segment written since;
//! 3. `repeat` rounds, each restoring the backup rolled forward to the end of the archive
//!    once with [`Replay::LogOrder`] and once with [`Replay::SortedRuns`], the order
//!    alternating between rounds so the machine's drift hits both; each restored
//!    database is opened, verified (every page and tree) and checked with TPC-B's
//!    consistency check, and both must show the same balances and history.
//!
//! Both restores copy the same files and run the same recovery options (the restore's
//! own: the default buffer pool of [`sluice::Options`]); what differs is only how the
//! log reaches the pages. The files are read through the page cache both times (the
//! first restore of round one reads them cold from the device, or warm from the load).

use crate::workloads::driver::{self, DriverConfig};
use crate::workloads::setup::{self, Setup};
use crate::workloads::tpcb::{self, Consistency, TpcbShape, TpcbTables, TpcbWorkload};
use serde::Serialize;
use sluice::{Database, Error, Options, Replay, Restore, RestoreTarget};
use sluice_storage::{OsStorage, Storage};
use sluice_wal::InsertVariant;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What to run.
#[derive(Debug, Clone)]
pub struct RestoreConfig {
    /// TPC-B scale factor (branches of 100,000 accounts).
    pub scale: u32,
    /// Seconds of TPC-B load between the backup and the restore.
    pub seconds: f64,
    /// Logical clients of the load.
    pub clients: usize,
    /// Buffer-pool pages of the loaded database (8 KiB each).
    pub pool_pages: usize,
    /// Rounds of the two restores.
    pub repeat: usize,
    /// Log segment size of the loaded database, in KiB: all but the segment still being
    /// written when the load stops reach the archive.
    pub segment_kib: u64,
    /// Where the temporary directory goes (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Seed of the clients' random streams.
    pub seed: u64,
}

impl Default for RestoreConfig {
    fn default() -> RestoreConfig {
        RestoreConfig {
            scale: 10,
            seconds: 60.0,
            clients: 16,
            pool_pages: 16_384,
            repeat: 3,
            segment_kib: 2048,
            dir: None,
            seed: 1,
        }
    }
}

impl RestoreConfig {
    /// Checks the knobs.
    pub fn validate(&self) -> Result<(), String> {
        if self.scale == 0 || self.scale > 1_000 {
            return Err(format!("--scale {} is not in 1..=1000", self.scale));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 86_400.0) {
            return Err(format!("--seconds {} is not in (0, 86400]", self.seconds));
        }
        if self.clients == 0 || self.clients > 4096 {
            return Err(format!("--clients {} is not in 1..=4096", self.clients));
        }
        if !(64..=(1 << 22)).contains(&self.pool_pages) {
            return Err(format!(
                "--pool-pages {} is not in 64..=4194304",
                self.pool_pages
            ));
        }
        // (A segment takes the largest log record: a split's four page images.)
        if !(512..=(1 << 20)).contains(&self.segment_kib) {
            return Err(format!(
                "--segment-kib {} is not in 512..=1048576",
                self.segment_kib
            ));
        }
        if self.repeat == 0 || self.repeat > 100 {
            return Err(format!("--repeat {} is not in 1..=100", self.repeat));
        }
        Ok(())
    }
}

/// One restore.
#[derive(Debug, Clone, Serialize)]
pub struct RestoreRun {
    /// The round (from 0).
    pub round: usize,
    /// `log-order` or `sorted-runs`.
    pub replay: &'static str,
    /// The whole restore, from the call to its return (copies, replay, recovery).
    pub seconds: f64,
    /// Reading the log to find the cut and check it (`Database::restore`'s steps 1–2).
    pub scan_seconds: f64,
    /// Copying the data file and the log segments.
    pub copy_seconds: f64,
    /// Sorting the log into runs (single-pass only).
    pub sort_seconds: Option<f64>,
    /// Merging the runs onto the data file (single-pass only).
    pub apply_seconds: Option<f64>,
    /// Restart recovery of the restored database and its close (log order: analysis,
    /// redo through the buffer pool, undo, the checkpoint writing the pages; single
    /// pass: the same without redo).
    pub recovery_seconds: f64,
    /// Changes replayed onto pages (by the runs, or by recovery's redo).
    pub replayed: u64,
    /// Transactions in flight at the cut, rolled back.
    pub rolled_back: usize,
}

/// What the experiment measured.
#[derive(Debug, Clone, Serialize)]
pub struct RestoreResult {
    /// TPC-B scale factor.
    pub scale: u32,
    /// Seconds of load.
    pub load_seconds: f64,
    /// Transactions committed during the load.
    pub committed: u64,
    /// The backup's data file, bytes.
    pub data_bytes: u64,
    /// Log bytes a restore replays (from the backup's end to the archive's).
    pub log_bytes: u64,
    /// The buffer pool the restore's recovery runs with, bytes.
    pub restore_pool_bytes: u64,
    /// Every restore, in the order run.
    pub runs: Vec<RestoreRun>,
    /// Median seconds of the log-order restores.
    pub log_order_median: f64,
    /// Median seconds of the single-pass restores.
    pub sorted_runs_median: f64,
    /// Log order ÷ single pass (above 1: the single pass is faster).
    pub ratio: f64,
    /// What both restored databases showed (the same, checked).
    pub consistency: Consistency,
    /// What the reader should know.
    pub notes: Vec<String>,
}

/// Where a run stands, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Fraction done (0..1), weighted by the expected time of each stage.
    pub done: f64,
    /// The stage.
    pub what: &'a str,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs the experiment.
pub fn run(
    cfg: &RestoreConfig,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<RestoreResult, Error> {
    cfg.validate().map_err(Error::InvalidArgument)?;
    let parent = match &cfg.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let temp = tempfile::Builder::new()
        .prefix("sluice-restore-")
        .tempdir_in(&parent)?;
    let root = temp.path();
    let (dir, archive, backup) = (root.join("db"), root.join("archive"), root.join("backup"));
    // Stages weighted by their expected seconds: the load, the workload, the restores.
    let weights = [
        4.0 * cfg.scale as f64,
        cfg.seconds,
        (cfg.repeat * 2) as f64 * (2.0 + cfg.seconds / 4.0),
    ];
    let total: f64 = weights.iter().sum();
    let at = |stage: usize, f: f64| {
        (weights[..stage].iter().sum::<f64>() + weights[stage] * f.clamp(0.0, 1.0)) / total
    };
    let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
    let setup = Setup {
        dir: Some(dir.clone()),
        log_latency: None,
        log_buffer: InsertVariant::default(),
        pool_pages: cfg.pool_pages,
        checkpoint_log_bytes: 256 << 20,
        adaptive_group_commit: true,
        flush: Default::default(),
        preallocate: Default::default(),
    };
    let options = Options {
        log_archive: Some(archive.clone()),
        log: sluice_wal::LogOptions {
            // Small enough that the segment still being written when the load stops
            // (never archived) is a small part of the log replayed.
            segment_bytes: cfg.segment_kib << 10,
            ..setup::options(&setup).log
        },
        ..setup::options(&setup)
    };

    // 1. Load and back up.
    progress(Progress {
        done: 0.0,
        what: "loading TPC-B",
    });
    let db = Database::open_on(storage.clone(), &dir, options.clone())?;
    let shape = TpcbShape::standard(cfg.scale);
    let tables = tpcb::load(&db, &shape, |f| {
        progress(Progress {
            done: at(0, f * 0.9),
            what: "loading TPC-B",
        })
    })?;

    // 2. The load, and an online backup taken a quarter of the way into it.
    let workload = Arc::new(TpcbWorkload::new(tables, shape, 1).map_err(Error::InvalidArgument)?);
    let protocol = options.commit;
    let dcfg = DriverConfig {
        clients: cfg.clients,
        agents: DriverConfig::default_agents(protocol, cfg.clients),
        protocol,
        warmup: Duration::ZERO,
        measure: Duration::from_secs_f64(cfg.seconds),
        seed: cfg.seed,
        rate: None,
        time_breakdown: false,
    };
    let (load, label) = std::thread::scope(|s| {
        let backing_up = s.spawn(|| {
            std::thread::sleep(Duration::from_secs_f64(cfg.seconds / 4.0));
            db.backup_to(&backup)
        });
        let load = driver::run(&db, workload.clone(), &dcfg, |f| {
            progress(Progress {
                done: at(1, f),
                what: "TPC-B load",
            })
        });
        let label = backing_up.join().expect("the backup thread does not panic");
        (load, label)
    });
    let (load, label) = (load?, label?);
    drop(workload);
    db.close()?;
    let reach = Database::backup_reach(storage.clone(), &backup, Some(&archive))?;

    // 3. The restores, alternating which goes first.
    let mut runs = Vec::new();
    let mut shown: Option<Consistency> = None;
    let mut restore_pool_bytes = 0;
    for round in 0..cfg.repeat {
        let order = if round % 2 == 0 {
            [Replay::LogOrder, Replay::SortedRuns]
        } else {
            [Replay::SortedRuns, Replay::LogOrder]
        };
        for (i, replay) in order.into_iter().enumerate() {
            let name = match replay {
                Replay::LogOrder => "log-order",
                Replay::SortedRuns => "sorted-runs",
            };
            progress(Progress {
                done: at(2, (round * 2 + i) as f64 / (cfg.repeat * 2) as f64),
                what: name,
            });
            let dest = root.join(format!("restored-{round}-{name}"));
            let spec = Restore {
                backup: backup.clone(),
                ancestors: Vec::new(),
                archive: Some(archive.clone()),
                target: RestoreTarget::End,
                dest: dest.clone(),
                replay,
            };
            let t0 = std::time::Instant::now();
            let r = Database::restore(storage.clone(), &spec, &mut |_| {})?;
            let seconds = t0.elapsed().as_secs_f64();
            // Checked outside the timing: the restored database opens, is consistent,
            // and shows what the other way showed.
            let restored = Database::open_on(
                storage.clone(),
                &dest,
                Options {
                    log_archive: None,
                    ..options.clone()
                },
            )?;
            restore_pool_bytes = (r.pool_pages * label.page_size as usize) as u64;
            restored.verify()?;
            let t = TpcbTables::open(&restored)?;
            let c = tpcb::check(&restored, &t, None)?;
            drop(t);
            restored.close()?;
            if !c.ok() {
                return Err(Error::Corruption(format!(
                    "the {name} restore of round {round} is not consistent: {c:?}"
                )));
            }
            match &shown {
                Some(s) if *s != c => {
                    return Err(Error::Corruption(format!(
                        "the {name} restore of round {round} shows {c:?}, an earlier one {s:?}"
                    )))
                }
                _ => shown = Some(c),
            }
            remove_tree(&dest)?;
            runs.push(RestoreRun {
                round,
                replay: name,
                seconds,
                scan_seconds: r.elapsed_us.saturating_sub(
                    r.copy_us + r.recovery_us + r.single_pass.map_or(0, |p| p.sort_us + p.apply_us),
                ) as f64
                    / 1e6,
                copy_seconds: r.copy_us as f64 / 1e6,
                recovery_seconds: r.recovery_us as f64 / 1e6,
                sort_seconds: r.single_pass.map(|p| p.sort_us as f64 / 1e6),
                apply_seconds: r.single_pass.map(|p| p.apply_us as f64 / 1e6),
                replayed: r.recovery.redone + r.single_pass.map_or(0, |p| p.applied),
                rolled_back: r.recovery.losers,
            });
        }
    }
    progress(Progress {
        done: 1.0,
        what: "done",
    });
    let of = |name: &str| {
        median(
            runs.iter()
                .filter(|r| r.replay == name)
                .map(|r| r.seconds)
                .collect(),
        )
    };
    let (log_order_median, sorted_runs_median) = (of("log-order"), of("sorted-runs"));
    let log_bytes = reach.end_lsn.0.saturating_sub(label.end_lsn.0);
    let mut notes = vec![format!(
        "{} rounds, the two restores alternating which goes first; times are whole restores (copy, replay, recovery), medians compared",
        cfg.repeat
    )];
    if log_bytes == 0 {
        notes.push(
            "the archive holds none of the load's log (the segment being written is archived only once it is finished): both restores are the backup alone; raise --seconds".into(),
        );
    }
    if label.data_bytes <= restore_pool_bytes {
        notes.push(format!(
            "the data ({} MiB) fits in the restore's buffer pool ({} MiB): replay in log order never reads a page twice, so sorting is pure overhead here; raise --scale to see the single pass pay off",
            label.data_bytes >> 20,
            restore_pool_bytes >> 20
        ));
    }
    Ok(RestoreResult {
        scale: cfg.scale,
        load_seconds: cfg.seconds,
        committed: load.committed,
        data_bytes: label.data_bytes,
        log_bytes,
        restore_pool_bytes,
        runs,
        log_order_median,
        sorted_runs_median,
        ratio: if sorted_runs_median > 0.0 {
            log_order_median / sorted_runs_median
        } else {
            0.0
        },
        consistency: shown.unwrap_or_default(),
        notes,
    })
}

/// Removes a restored database's directory (to keep the run's disk use to one copy).
fn remove_tree(dir: &std::path::Path) -> Result<(), Error> {
    std::fs::remove_dir_all(dir).map_err(Error::from)
}
