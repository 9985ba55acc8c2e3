//! Opening a database: the checks of a directory before anything is created in it,
//! the control file against the log and the data file, the shared state assembled,
//! restart recovery, and the background threads started — read-write, or read-only
//! with nothing written.

use super::handle::{Database, Handles};
use crate::buffer_pool::BufferPool;
use crate::buffer_pool::DataFile;
use crate::checkpoint::{Checkpointer, Checkpoints};
use crate::control::{self, Checkpoint, Control};
use crate::coordination::{Hooks, PARTITION_MARKER};
use crate::data_file::file_error;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::inner::Inner;
use crate::lock::LockManager;
use crate::log_record;
use crate::log_sink::LogSink;
use crate::options::Options;
use crate::page::Meta;
use crate::propagation::Propagation;
use crate::recovery::{self, missing_segment, RecoveryReport};
use crate::store::Store;
use crate::txn_table::TxnTable;
use parking_lot::Mutex;
use sluice_storage::{LockGuard, OsStorage, Storage};
use sluice_wal::segment::{parse_segment_name, scan_dir};
use sluice_wal::{BufferOptions, Log, LogBuffer, LogOptions, Lsn, WalError};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// The data file's name in the database directory.
pub(super) const DATA: &str = "data";
/// The directory lock's name.
const LOCK: &str = "LOCK";

/// A log error at open, naming the log directory.
fn log_error(log_dir: &Path, e: WalError) -> Error {
    let dir = log_dir.display();
    match e {
        WalError::Io(e) => file_error(
            "log directory",
            log_dir,
            io::Error::new(e.kind(), e.to_string()),
        ),
        WalError::Corruption { lsn, reason } => {
            Error::Corruption(format!("log {dir} at LSN {lsn}: {reason}"))
        }
        WalError::InvalidArgument(s) => Error::InvalidArgument(format!("log {dir}: {s}")),
        e => Error::from(e),
    }
}

/// The data file must hold at least what the control file recorded at the last
/// checkpoint's sync.
fn check_data_len(file: &DataFile, data_path: &Path, control: &Control) -> Result<()> {
    let data_len = file.len()?;
    if data_len < control.data_len {
        return Err(Error::Corruption(format!(
            "data file {} is {data_len} bytes, shorter than the {} bytes the control file recorded at the last checkpoint",
            data_path.display(),
            control.data_len
        )));
    }
    Ok(())
}

/// Refuses the first two of `named` (each a role, the storage it is on and its path)
/// that are one directory, however their paths are spelt: they are compared by
/// [`sluice_storage::DirIdentity`] (device and inode; a directory not created yet by what
/// creating it would make), never by spelling. A log directory that is its database's
/// directory under another name (`D/../D`, a symlink) would share its `LOCK`; two
/// partitions' logs in one directory would write one log. Called before an open creates
/// anything.
pub(crate) fn refuse_same_dirs(named: &[(String, &dyn Storage, PathBuf)]) -> Result<()> {
    let dirs: Vec<(&dyn Storage, &Path)> =
        named.iter().map(|(_, s, p)| (*s, p.as_path())).collect();
    let Some((i, j)) = sluice_storage::find_same_dir(&dirs).map_err(Error::from)? else {
        return Ok(());
    };
    let what = |k: usize| format!("{} {}", named[k].0, named[k].2.display());
    Err(Error::InvalidArgument(format!(
        "{} is the same directory as {} (directories are compared by what they are, not by how their paths are spelt): each must be a directory of its own",
        what(j),
        what(i)
    )))
}

/// What is in a database directory before anything is created in it.
fn survey(storage: &dyn Storage, dir: &Path) -> Result<bool> {
    let io = |e| file_error("database directory", dir, e);
    if !storage.exists(dir).map_err(io)? {
        return Ok(false);
    }
    let names = storage.list(dir).map_err(io)?;
    if names.iter().any(|n| n == control::NAME) {
        return Ok(true);
    }
    // Without CONTROL, only an interrupted creation's own files may be here: creation
    // writes CONTROL before anything else but the lock.
    let foreign: Vec<String> = names
        .into_iter()
        .filter(|n| n != LOCK && n != control::TMP)
        .collect();
    if foreign.is_empty() {
        return Ok(false);
    }
    const SHOWN: usize = 8;
    let mut list: Vec<String> = foreign
        .iter()
        .take(SHOWN)
        .map(|n| format!("`{n}`"))
        .collect();
    if foreign.len() > SHOWN {
        list.push(format!("and {} more", foreign.len() - SHOWN));
    }
    Err(Error::InvalidArgument(format!(
        "{} is not a sluice database: it has no {} and holds {}",
        dir.display(),
        control::NAME,
        list.join(", ")
    )))
}

/// A new database must not adopt a log: creation writes `CONTROL` before the log, so a
/// log without it belongs to something else (the log directory may lie outside `dir`).
/// Refuses to open a partition of a partitioned database as a database of its own: its
/// recovery would roll back transactions the coordinator committed.
fn refuse_partition(storage: &dyn Storage, dir: &Path) -> Result<()> {
    let marker = dir.join(PARTITION_MARKER);
    if storage
        .exists(&marker)
        .map_err(|e| file_error("database directory", dir, e))?
    {
        let whole = dir.parent().unwrap_or(dir);
        return Err(Error::InvalidArgument(format!(
            "{} is a partition of the partitioned database in {}: open that one (`Partitioned::open`), not the partition alone",
            dir.display(),
            whole.display()
        )));
    }
    Ok(())
}

fn refuse_foreign_log(storage: &dyn Storage, log_dir: &Path, dir: &Path) -> Result<()> {
    let io = |e| file_error("log directory", log_dir, e);
    if !storage.exists(log_dir).map_err(io)? {
        return Ok(());
    }
    let names = storage.list(log_dir).map_err(io)?;
    if let Some(seg) = names.iter().find(|n| parse_segment_name(n).is_some()) {
        return Err(Error::InvalidArgument(format!(
            "log directory {} already holds a log (`{seg}`), but {} has no {}: the log is not this database's",
            log_dir.display(),
            dir.display(),
            control::NAME
        )));
    }
    Ok(())
}

/// Refuses options whose log cannot hold the largest record the engine writes.
fn check_records_fit(options: &Options, page_size: usize, log_max: usize) -> Result<()> {
    let need = log_record::max_record_bytes(page_size, options.pool_pages);
    if need <= log_max {
        return Ok(());
    }
    let frame = sluice_wal::frame::frame_len(need);
    let segment_min = frame.max(4096);
    let buffer_min = (4 * frame).next_power_of_two();
    Err(Error::InvalidArgument(format!(
        "the log takes records of up to {log_max} bytes, but with {page_size}-byte pages and a pool of {} pages the engine writes records of up to {need} bytes (a split logs four page images): use log segment_bytes of at least {segment_min} and buffer_bytes of at least {buffer_min}",
        options.pool_pages
    )))
}

/// The largest record a log with these options would take, without creating it.
pub(super) fn probe_log_max(options: &Options) -> Result<usize> {
    let buffer = LogBuffer::new(
        &BufferOptions {
            capacity: options.log.buffer_bytes,
            segment_bytes: options.log.segment_bytes,
            variant: options.log.variant,
            slots: options.log.slots,
        },
        Lsn(0),
    )
    .map_err(|e| Error::InvalidArgument(format!("log options: {e}")))?;
    Ok(buffer.max_payload())
}

/// Before the log is opened: the log that `checkpoint` needs must be there. `read_only`:
/// look without changing anything ([`sluice_wal::segment::scan_dir_read_only`]).
fn check_log_present(
    storage: &dyn Storage,
    log_dir: &Path,
    checkpoint: Checkpoint,
    read_only: bool,
) -> Result<u64> {
    let io = |e| file_error("log directory", log_dir, e);
    let need = checkpoint.begin;
    let gone = |what: &str| {
        Error::Corruption(format!(
            "log directory {} {what}, but the control file names a checkpoint at LSN {need}, from which recovery needs the log",
            log_dir.display()
        ))
    };
    if !storage.exists(log_dir).map_err(io)? {
        return Err(gone("is missing"));
    }
    let list = if read_only {
        sluice_wal::segment::scan_dir_read_only(storage, log_dir)
    } else {
        scan_dir(storage, log_dir)
    };
    let list = list.map_err(|e| log_error(log_dir, e))?;
    let (Some(&first), Some(bytes)) = (list.starts.first(), list.segment_bytes) else {
        return Err(gone("holds no log segment"));
    };
    if need < first {
        return Err(missing_segment(log_dir, bytes, need, "the checkpoint"));
    }
    Ok(bytes)
}

/// The state of an opened database, from the log (its directory, its segment size and
/// the log itself), the options asked for, what the control file says, the data file and
/// the directory lock; restart recovery run on it from the control file's checkpoint.
#[allow(clippy::too_many_arguments)]
fn assemble_and_recover(
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    (log_dir, log_segment_bytes, log): (PathBuf, u64, Arc<Log>),
    options: Options,
    control: &Control,
    file: DataFile,
    lock: Option<Box<dyn LockGuard>>,
    hooks: Hooks,
) -> Result<(Arc<Inner>, RecoveryReport)> {
    let page_size = control.page_size as usize;
    let redo_point = control.checkpoint.map_or(Lsn(0), |c| c.begin);
    let in_force = LogOptions {
        segment_bytes: log.segment_bytes(),
        ..options.log
    };
    let log = Arc::new(LogSink::new(log));
    let pool = BufferPool::new(
        options.pool_pages,
        page_size,
        file,
        log.clone(),
        redo_point,
        options.read_only.then(|| storage.clone()),
    );
    let inner = Arc::new(Inner {
        store: Store::new(pool, log, page_size, redo_point.0),
        storage,
        dir,
        log_dir,
        log_segment_bytes,
        // What is in force: an existing database keeps its page size and its log
        // its segment size, whatever the options asked for.
        options: Options {
            page_size,
            log: in_force,
            ..options
        },
        database_id: control.database_id,
        locks: LockManager::new(options.lock_timeout),
        txns: TxnTable::new(1),
        catalog: Mutex::new(HashMap::new()),
        checkpoints: Checkpoints::new(redo_point),
        checkpointer: Checkpointer::default(),
        propagation: Propagation::new(options.propagation),
        health: Default::default(),
        opened: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        hooks,
        lock: Mutex::new(lock),
        metrics: Default::default(),
    });
    let report = recovery::recover(&inner.recovery_context(), control.checkpoint)?;
    Ok((inner, report))
}

impl Database {
    /// Opens (creating if needed) the database in `dir` on `storage` with `options`,
    /// running restart recovery, and starts its background checkpointer. Most
    /// applications want [`Database::open`] (a directory on the real file system) or
    /// [`Database::builder`]; this one is for another storage — the crash simulator
    /// ([`sluice_storage::SimStorage`]) or a device model. Fails with [`Error::Locked`] if
    /// another handle holds it, with [`Error::InvalidArgument`] for a directory that is
    /// not a sluice database or options its log cannot serve, and with
    /// [`Error::Corruption`] for a damaged one (see [`Database::open_with_log`]).
    pub fn open_on(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: Options,
    ) -> Result<Database> {
        let log_dir = dir.as_ref().join("log");
        Database::open_with_log(storage.clone(), dir, storage, log_dir, options)
    }

    /// As [`Database::open_on`], with the log in `log_dir` on its own storage — for example
    /// on another device, or behind a [`sluice_storage::DeviceModel`] that emulates a log
    /// device with a given latency, as the commit-protocol experiments do. The same
    /// `log_dir` must be given every time the database is opened.
    ///
    /// A directory is a sluice database if it holds `CONTROL`. One without it is created
    /// if it is missing, empty, or holds only the leftovers of an interrupted creation
    /// (`LOCK`, `CONTROL.tmp`); anything else is refused with [`Error::InvalidArgument`]
    /// before a file is created in it. An existing database whose log, checkpoint segment
    /// or data file is missing or shorter than the control file records fails with
    /// [`Error::Corruption`] naming the file.
    ///
    /// With [`Options::read_only`] it opens an existing database and changes nothing on
    /// either storage (see [`Builder::read_only`](crate::Builder::read_only)).
    pub fn open_with_log(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        log_storage: Arc<dyn Storage>,
        log_dir: impl AsRef<Path>,
        options: Options,
    ) -> Result<Database> {
        Database::open_hooked(
            storage,
            dir,
            log_storage,
            log_dir,
            options,
            Hooks::default(),
        )
    }

    /// As [`Database::open_with_log`], with the hooks of a partition of a partitioned
    /// database (`coordination`); a partition's directory opened without them is refused.
    pub(crate) fn open_hooked(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        log_storage: Arc<dyn Storage>,
        log_dir: impl AsRef<Path>,
        options: Options,
        hooks: Hooks,
    ) -> Result<Database> {
        options.check()?;
        let dir = dir.as_ref().to_path_buf();
        let log_dir = log_dir.as_ref().to_path_buf();
        let _span =
            tracing::info_span!("open", dir = %dir.display(), read_only = options.read_only)
                .entered();
        if !hooks.partition {
            refuse_partition(&*storage, &dir)?;
        }
        crate::backup_label::refuse_backup(&*storage, &dir, options.read_only)?;
        let mut named = vec![
            ("database directory".into(), &*storage, dir.clone()),
            ("log directory".into(), &*log_storage, log_dir.clone()),
        ];
        if let Some(a) = options.log_archive.as_ref().filter(|_| !options.read_only) {
            // The archive is on the log's storage. Log-based propagation's runs live in
            // `archive/` of the database directory: not a log archive's place.
            named.push((
                "propagation runs directory".into(),
                &*storage,
                dir.join(crate::propagation::runs::DIR),
            ));
            named.push(("log archive".into(), &*log_storage, a.clone()));
        }
        refuse_same_dirs(&named)?;
        if options.read_only {
            return Database::open_read_only_with_log(
                storage,
                dir,
                log_storage,
                log_dir,
                options,
                hooks,
            );
        }
        let dir_io = |e| file_error("database directory", &dir, e);
        if !survey(&*storage, &dir)? {
            // A new database: refuse what it could not live with before creating it.
            refuse_foreign_log(&*log_storage, &log_dir, &dir)?;
            check_records_fit(&options, options.page_size, probe_log_max(&options)?)?;
        }
        storage.create_dir_all(&dir).map_err(dir_io)?;
        let lock = storage.lock(&dir.join(LOCK)).map_err(|e| {
            if e.kind() == io::ErrorKind::WouldBlock {
                Error::Locked(dir.display().to_string())
            } else {
                dir_io(e)
            }
        })?;
        // Directory entries a dead process created or renamed (a new CONTROL, the data
        // file) may still be only in the cache: make them durable before trusting them.
        storage.sync_dir(&dir).map_err(dir_io)?;
        // Under the lock, look again: another opener may have created it meanwhile.
        let control = match Control::read(&*storage, &dir)? {
            Some(c) => c,
            None => {
                if survey(&*storage, &dir)? {
                    return Err(Error::Corruption(format!(
                        "{} appeared in {} while it was being opened",
                        control::NAME,
                        dir.display()
                    )));
                }
                refuse_foreign_log(&*log_storage, &log_dir, &dir)?;
                // The control file first: from here on the directory is a database.
                let c = Control::created(options.page_size);
                c.write(&*storage, &dir)?;
                c
            }
        };
        let page_size = control.page_size as usize;
        let mut log_segment_bytes = options.log.segment_bytes;
        if let Some(cp) = control.checkpoint {
            log_segment_bytes = check_log_present(&*log_storage, &log_dir, cp, false)?;
        }
        let log = match (&options.log_archive, &options.archive_mirror) {
            (None, _) => Log::open(log_storage, &log_dir, options.log),
            (Some(a), None) => {
                Log::open_archived(log_storage, std::slice::from_ref(&log_dir), a, options.log)
            }
            (Some(a), Some(m)) => Log::open_mirrored(
                log_storage,
                std::slice::from_ref(&log_dir),
                a,
                m.0.clone(),
                options.log,
            ),
        };
        let log = Arc::new(log.map_err(|e| log_error(&log_dir, e))?);
        check_records_fit(&options, page_size, log.max_record_bytes())?;
        let data_path = dir.join(DATA);
        let file = DataFile::open(
            &*storage,
            &data_path,
            page_size,
            control.checkpoint.is_none(),
        )?
        .with_segment_bytes(options.propagation_segment_bytes);
        check_data_len(&file, &data_path, &control)?;
        // The data file's directory entry must be durable before anything relies on it.
        storage.sync_dir(&dir).map_err(dir_io)?;
        let (inner, report) = assemble_and_recover(
            storage,
            dir,
            (log_dir, log_segment_bytes, log),
            options,
            &control,
            file,
            Some(lock),
            hooks,
        )?;
        inner.open_runs(report.redo_from.unwrap_or(report.log_end))?;
        inner.checkpoint_after_recovery()?;
        Database::finish_open(inner, report)
    }

    /// The end of every open, after recovery (and, read-write, its checkpoint): checks
    /// the catalog and starts the background checkpointer (read-write only).
    fn finish_open(inner: Arc<Inner>, report: RecoveryReport) -> Result<Database> {
        let db = Database {
            _handles: Arc::new(Handles {
                inner: Arc::downgrade(&inner),
            }),
            inner,
            report: Arc::new(report),
        };
        db.check_catalog()?;
        db.inner.opened.store(true, Ordering::Release);
        if !db.inner.options.read_only {
            let background: Weak<dyn crate::worker::Job> =
                Arc::downgrade(&db.inner) as Weak<dyn crate::worker::Job>;
            db.inner
                .checkpointer
                .start(
                    "sluice-checkpoint",
                    background,
                    db.inner.options.checkpoint_interval,
                )
                .map_err(|e| Error::Io(Arc::new(e)))?;
            db.inner
                .start_propagation()
                .map_err(|e| Error::Io(Arc::new(e)))?;
        }
        Ok(db)
    }

    /// Opens the existing database in `dir` read-only (see [`crate::Builder::read_only`]):
    /// the open path that writes nothing. Where a read-write open creates, writes and
    /// checkpoints, this one only looks: a shared lock on `LOCK` (none if the file is
    /// absent: a copy), the control file, the log (`Log::open_read_only`: a torn tail left
    /// in place, no threads) and the data file, all opened read-only. Like a read-write
    /// open, it first makes durable what it will trust — the directory, the control
    /// file, the log and the data file are synced through read-only handles and their
    /// caches dropped (`sluice_storage::settle`; a sync changes no byte) — so that nothing
    /// it shows a client can be taken away by a power loss after a writer was killed.
    /// Restart recovery then runs as usual, into a buffer pool that never writes a page
    /// back and with the records undo would log sent nowhere ([`LogSink`]); once it is
    /// over the sink refuses everything, and no checkpointer is started.
    fn open_read_only_with_log(
        storage: Arc<dyn Storage>,
        dir: PathBuf,
        log_storage: Arc<dyn Storage>,
        log_dir: PathBuf,
        options: Options,
        hooks: Hooks,
    ) -> Result<Database> {
        debug_assert!(options.read_only);
        let dir_io = |e| file_error("database directory", &dir, e);
        if !storage.exists(&dir).map_err(dir_io)? {
            return Err(dir_io(io::Error::new(
                io::ErrorKind::NotFound,
                "does not exist (a read-only open creates nothing)",
            )));
        }
        let lock = match storage.lock_shared(&dir.join(LOCK)) {
            Ok(g) => Some(g),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(Error::Locked(dir.display().to_string()));
            }
            Err(e) => return Err(dir_io(e)),
        };
        // Entries a killed writer created or renamed without syncing (a new CONTROL) are
        // made durable before they are trusted, as a read-write open does.
        sluice_storage::settle_dir(&*storage, &dir, true).map_err(dir_io)?;
        let not_a_database = |why: String| {
            Error::InvalidArgument(format!(
                "{} is not a sluice database: {why} (a read-only open creates nothing)",
                dir.display()
            ))
        };
        if !survey(&*storage, &dir)? {
            return Err(not_a_database(format!("it has no {}", control::NAME)));
        }
        let Some(control) = Control::read_only(&*storage, &dir)? else {
            return Err(not_a_database(format!(
                "its {} vanished while it was being opened",
                control::NAME
            )));
        };
        let Some(checkpoint) = control.checkpoint else {
            // Creation writes CONTROL, then the log and the data file, and the first
            // checkpoint ends it: no data was ever committed here.
            return Err(Error::InvalidArgument(format!(
                "the creation of the database in {} was interrupted before its first checkpoint: open it read-write once to finish it (`sluice verify {}` does; `Database::open` in code)",
                dir.display(),
                dir.display()
            )));
        };
        let page_size = control.page_size as usize;
        let log_segment_bytes = check_log_present(&*log_storage, &log_dir, checkpoint, true)?;
        let log = Log::open_read_only(log_storage, &log_dir, options.log)
            .map_err(|e| log_error(&log_dir, e))?;
        let data_path = dir.join(DATA);
        let file = DataFile::open_read_only(&*storage, &data_path, page_size)?;
        check_data_len(&file, &data_path, &control)?;
        let (inner, report) = assemble_and_recover(
            storage,
            dir,
            (log_dir, log_segment_bytes, Arc::new(log)),
            options,
            &control,
            file,
            lock,
            hooks,
        )?;
        // From here on nothing may produce a log record, not even in memory.
        inner.store.log.seal();
        Database::finish_open(inner, report)
    }

    /// Every table root in the catalog must be a page the meta page allocated (and not
    /// one of the two fixed pages): a root past the end reads as zeros, and the damage
    /// would surface only at some later read.
    fn check_catalog(&self) -> Result<()> {
        let count = {
            let p = self.inner.store.pool.fetch(PageId::META)?;
            let g = p.read_valid()?;
            Meta::page_count(&g)
        };
        for name in self.table_names()? {
            let root = self.table(&name)?.id();
            if root.0 < 2 || root.0 >= count {
                return Err(Error::Corruption(format!(
                    "catalog: table {name:?} has its root at page {} but the data file {} holds pages 2..{count}",
                    root.0,
                    self.inner.store.pool.data_path().display()
                )));
            }
        }
        Ok(())
    }

    /// Opens (creating if needed) the database in directory `path` on the real file
    /// system with default options (see [`Database::builder`] for others).
    pub fn open(path: impl AsRef<Path>) -> Result<Database> {
        Database::open_on(Arc::new(OsStorage::new()), path, Options::default())
    }

    /// Opens the existing database in directory `path` on the real file system
    /// read-only, with default options: the same as
    /// `Database::builder(path).read_only(true).open()` — see
    /// [`Builder::read_only`](crate::Builder::read_only) for what that means. Fails with
    /// [`Error::Locked`] while a read-write handle holds the database.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Database> {
        Database::builder(path).read_only(true).open()
    }
}
