//! Opening a database for a benchmark: where the data and the log go, and how the log
//! device behaves.

use sluice::{Database, Error, Options};
use sluice_storage::{DeviceModel, DeviceProfile, OsStorage, Storage};
use sluice_wal::InsertVariant;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where and how to open a benchmark database.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Data directory; a fresh temporary directory in the current directory if `None`
    /// (not `/tmp`, which may be a RAM disk).
    pub dir: Option<PathBuf>,
    /// `None`: the log is on the real disk beside the data, synced for real. `Some(l)`:
    /// the log is on a RAM disk (`/dev/shm` when there is one) behind an emulated device
    /// whose every sync takes `l` — the setup of the Aether experiments, which makes the
    /// log latency a controlled variable.
    pub log_latency: Option<Duration>,
    /// The log-buffer insertion algorithm.
    pub log_buffer: InsertVariant,
    /// Buffer-pool pages (8 KiB each).
    pub pool_pages: usize,
    /// A checkpoint every this many bytes of log ([`Setup::CHECKPOINT_LOG_BYTES`] in
    /// every experiment: none inside a run). Smaller, checkpoints truncate the log during
    /// the run and the truncated segments are recycled.
    pub checkpoint_log_bytes: u64,
    /// Group commit tunes its gather at run time (`GroupCommit::adaptive`, the default)
    /// or keeps the fixed budget.
    pub adaptive_group_commit: bool,
    /// How the log makes new segment space (`LogOptions::preallocate`: allocated, the
    /// default, or zero-filled).
    pub preallocate: sluice_wal::Preallocate,
    /// How the log's rounds reach the disk (`LogOptions::flush`: a flush daemon, the
    /// default, or io_uring from the committing threads).
    pub flush: sluice_wal::FlushPath,
}

impl Setup {
    /// The experiments' checkpoint volume: 1 GiB of log, more than a run writes.
    pub const CHECKPOINT_LOG_BYTES: u64 = 1 << 30;
}

/// An open benchmark database and what keeps its directories alive.
pub struct BenchDb {
    /// The database.
    pub db: Database,
    /// The emulated log device, when there is one (its latency can be changed between
    /// runs).
    pub log_device: Option<DeviceModel<OsStorage>>,
    /// Where the data lives.
    pub dir: PathBuf,
    /// Where the log lives.
    pub log_dir: PathBuf,
    _temps: Vec<tempfile::TempDir>,
}

/// The options benchmarks use: 8 KiB pages, the given pool, a 16 MiB log buffer, 64 MiB
/// segments, and checkpoints only every `checkpoint_log_bytes` of log (1 GiB but for
/// `--checkpoint-mib`; no timer) — the commit-path experiments
/// measure logging, and a checkpoint's page flush and full-page images in the middle of
/// a 10-second run would measure propagation instead (that has experiments of its own).
pub fn options(s: &Setup) -> Options {
    let d = Options::default();
    Options {
        pool_pages: s.pool_pages.max(64),
        log: sluice_wal::LogOptions {
            buffer_bytes: 16 << 20,
            segment_bytes: 64 << 20,
            variant: s.log_buffer,
            preallocate: s.preallocate,
            flush: s.flush,
            group_commit: sluice_wal::GroupCommit {
                adaptive: s.adaptive_group_commit,
                ..d.log.group_commit
            },
            ..d.log
        },
        checkpoint_log_bytes: s.checkpoint_log_bytes,
        checkpoint_interval: std::time::Duration::ZERO,
        ..d
    }
}

fn temp_in(parent: &Path, prefix: &str) -> Result<tempfile::TempDir, Error> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(parent)
        .map_err(Error::from)
}

/// Opens (creating) the benchmark database.
pub fn open(s: &Setup) -> Result<BenchDb, Error> {
    let mut temps = Vec::new();
    let dir = match &s.dir {
        Some(d) => d.clone(),
        None => {
            let t = temp_in(&std::env::current_dir()?, "sluice-bench-")?;
            let p = t.path().to_path_buf();
            temps.push(t);
            p
        }
    };
    let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
    let (log_storage, log_dir, device): (Arc<dyn Storage>, PathBuf, _) = match s.log_latency {
        None => (storage.clone(), dir.join("log"), None),
        Some(l) => {
            let shm = Path::new("/dev/shm");
            let t = if shm.is_dir() {
                temp_in(shm, "sluice-log-")?
            } else {
                temp_in(&dir, "log-")?
            };
            let p = t.path().join("log");
            temps.push(t);
            let d = DeviceModel::new(OsStorage::new(), DeviceProfile::sync_latency(l));
            (Arc::new(d.clone()), p, Some(d))
        }
    };
    let db = Database::open_with_log(storage, &dir, log_storage, &log_dir, options(s))?;
    Ok(BenchDb {
        db,
        log_device: device,
        dir,
        log_dir,
        _temps: temps,
    })
}

impl BenchDb {
    /// Closes the database — cleanly (a final checkpoint), or as a crash at this moment
    /// would leave it ([`Database::close_as_crashed`]) — and opens the same directories
    /// again with `options`. Returns the reopened database and how long the open took
    /// (with `crashed`, that is restart recovery: its report is
    /// [`Database::recovery_report`]). Every other handle on the database (tables,
    /// agents, clones) must be gone, or the directory is still locked.
    pub fn reopen(self, options: Options, crashed: bool) -> Result<(BenchDb, Duration), Error> {
        let BenchDb {
            db,
            log_device,
            dir,
            log_dir,
            _temps,
        } = self;
        if crashed {
            db.close_as_crashed()?;
        } else {
            db.close()?;
        }
        let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
        let log_storage: Arc<dyn Storage> = match &log_device {
            Some(d) => Arc::new(d.clone()),
            None => storage.clone(),
        };
        let t0 = std::time::Instant::now();
        let db = Database::open_with_log(storage, &dir, log_storage, &log_dir, options)?;
        let took = t0.elapsed();
        Ok((
            BenchDb {
                db,
                log_device,
                dir,
                log_dir,
                _temps,
            },
            took,
        ))
    }

    /// Closes the database cleanly (a final checkpoint), reporting what failed, before
    /// its directories go.
    pub fn close(self) -> Result<(), Error> {
        let BenchDb { db, _temps, .. } = self;
        db.close()
    }

    /// Changes the emulated log device's sync latency (no-op on the real disk).
    pub fn set_log_latency(&self, l: Duration) {
        if let Some(d) = &self.log_device {
            d.set_profile(DeviceProfile::sync_latency(l));
        }
    }
}
