//! The log manager: a log buffer, a flush daemon, segment files and recovery.

use crate::buffer::{BufferOptions, InsertVariant, LogBuffer};
use crate::dirs::LogDirs;
use crate::error::{Result, WalError};
use crate::flush::{FlushDaemon, DEFAULT_MAX_DELAY};
use crate::notify::{DurableCallback, DurableFuture, Waiters};
use crate::reader::LogReader;
use crate::recovery::{self, RecoveryInfo};
use crate::segment;
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crate::wait::Parker;
use crate::Lsn;
use sluice_storage::{FileHandle, LockGuard, Storage, SyncFence};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// When the flush daemon starts a round (Aether §4.1): whichever threshold is met first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupCommit {
    /// `X`: flush once this many waits (blocking or registered) are outstanding.
    pub max_waiters: usize,
    /// `L`: flush once this many bytes are pending.
    pub max_bytes: u64,
    /// `T`: flush once bytes have been pending this long.
    pub max_delay: Duration,
    /// Tune at run time how long a round lets the last round's waiters re-join before it
    /// syncs (perturb and observe on the commits completed per second: see the `gather`
    /// module); `false` keeps a fixed budget of 8 scheduler yields.
    pub adaptive: bool,
}

impl Default for GroupCommit {
    /// `X = 1`, `L = 1 MiB`, `T = 1 ms`: any waiter starts a round at once, and the
    /// commits arriving during one sync share the next — a waiter never waits for more
    /// than the sync in flight plus its own.
    fn default() -> Self {
        GroupCommit {
            max_waiters: 1,
            max_bytes: 1 << 20,
            max_delay: DEFAULT_MAX_DELAY,
            adaptive: true,
        }
    }
}

/// How a log is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOptions {
    /// LSN bytes per segment file (used when creating a new log; an existing log keeps
    /// the size in its headers).
    pub segment_bytes: u64,
    /// Log-buffer bytes (rounded up to a power of two).
    pub buffer_bytes: usize,
    /// The insertion algorithm.
    pub variant: InsertVariant,
    /// Consolidation-array slots, for the variants that consolidate.
    pub slots: usize,
    /// When the daemon flushes.
    pub group_commit: GroupCommit,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            segment_bytes: 16 << 20,
            buffer_bytes: 4 << 20,
            variant: InsertVariant::default(),
            slots: 4,
            group_commit: GroupCommit::default(),
        }
    }
}

/// Counters kept by the log.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) syncs: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) bytes_written: AtomicU64,
    pub(crate) bytes_zero_filled: AtomicU64,
    pub(crate) segments_recycled: AtomicU64,
    pub(crate) gather_budget: AtomicU64,
}

/// A snapshot of the log's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStats {
    /// `sync_data` calls issued.
    pub syncs: u64,
    /// Flush rounds completed.
    pub flushes: u64,
    /// Log bytes written to segment files.
    pub bytes_written: u64,
    /// Bytes of zeros written to prepare segment files (new files and extensions): the
    /// cost recycling saves.
    pub bytes_zero_filled: u64,
    /// Segments made from a retired segment's file instead of a new zero-filled one.
    pub segments_recycled: u64,
    /// The flush daemon's gather budget now: scheduler yields a round may spend letting
    /// the last round's waiters re-join before it syncs (tuned if
    /// [`GroupCommit::adaptive`]).
    pub gather_budget: u64,
    /// Segments the archiver copied to the archive directory since the log was opened
    /// (0 without archiving).
    pub segments_archived: u64,
    /// Bytes of those copies (header blocks included).
    pub bytes_archived: u64,
}

/// Lock stripes of a log's [`SyncFence`]: the segments the daemon and the preparer work
/// on at once (the previous, the current and the next) never share one.
const SYNC_STRIPES: usize = 4;

pub(crate) struct Shared {
    pub(crate) storage: Arc<dyn Storage>,
    /// The log's directories: segment `k` lives in the `k mod D`-th (see `dirs`).
    pub(crate) dirs: Arc<LogDirs>,
    pub(crate) options: LogOptions,
    pub(crate) segment_bytes: u64,
    pub(crate) buffer: LogBuffer,
    pub(crate) waiters: Waiters,
    pub(crate) closing: AtomicBool,
    pub(crate) sync_requested: AtomicU64,
    pub(crate) sync_done: AtomicU64,
    pub(crate) sync_done_parker: Parker,
    pub(crate) stats: Stats,
    pub(crate) preparer: crate::prepare::Preparer,
    /// Every sync of a segment file after recovery goes through it (the flush daemon's
    /// and the preparer's, which write the same file): after one fails, none counts.
    pub(crate) syncs: SyncFence,
    /// The archiver's state, if archiving is on ([`Log::open_archived`]).
    pub(crate) archiver: Option<crate::archive::Archiver>,
    poisoned: AtomicBool,
    poison: crate::sync::Mutex<Option<Arc<io::Error>>>,
    /// Segment starts that exist on disk, ascending.
    segments: crate::sync::Mutex<Vec<Lsn>>,
    /// The recycling pool: the old starts of retired segment files (`segment::free_name`)
    /// whose retirement is durable, oldest first; at most [`MAX_RECYCLED_SEGMENTS`]. A
    /// retired file stays in its directory, so it only becomes a segment that maps there.
    recycled: crate::sync::Mutex<Vec<Lsn>>,
    /// Held for a whole `truncate_below`: two at once would race to remove the same
    /// files.
    truncation: crate::sync::Mutex<()>,
    /// The first LSN still in the log.
    start: AtomicU64,
    /// The directory lock; released by `close` so the directory can be reopened at once.
    lock: crate::sync::Mutex<Option<Box<dyn LockGuard>>>,
}

impl Shared {
    /// The state of a log whose end `rec` found.
    fn new(
        storage: Arc<dyn Storage>,
        dirs: Arc<LogDirs>,
        options: LogOptions,
        rec: &recovery::Recovered,
        lock: Option<Box<dyn LockGuard>>,
        archiver: Option<crate::archive::Archiver>,
    ) -> Result<Arc<Shared>> {
        let buffer = LogBuffer::new(
            &BufferOptions {
                capacity: options.buffer_bytes,
                segment_bytes: rec.segment_bytes,
                variant: options.variant,
                slots: options.slots,
            },
            rec.info.end,
        )?;
        buffer
            .core
            .flush
            .set_wake_bytes(options.group_commit.max_bytes);
        Ok(Arc::new(Shared {
            storage,
            dirs,
            options,
            segment_bytes: rec.segment_bytes,
            buffer,
            waiters: Waiters::new(),
            closing: AtomicBool::new(false),
            sync_requested: AtomicU64::new(0),
            sync_done: AtomicU64::new(0),
            sync_done_parker: Parker::new(),
            stats: Stats::default(),
            preparer: crate::prepare::Preparer::default(),
            syncs: SyncFence::new(SYNC_STRIPES),
            archiver,
            poisoned: AtomicBool::new(false),
            poison: crate::sync::Mutex::new(None),
            segments: crate::sync::Mutex::new(rec.list.starts.clone()),
            recycled: crate::sync::Mutex::new(Vec::new()),
            truncation: crate::sync::Mutex::new(()),
            start: AtomicU64::new(rec.info.start.0),
            lock: crate::sync::Mutex::new(lock),
        }))
    }

    /// Syncs segment `start`'s file `f` through the log's [`SyncFence`].
    pub(crate) fn sync_segment(&self, start: Lsn, f: &dyn FileHandle) -> Result<()> {
        let key = crate::segment::fence_key(start, self.segment_bytes);
        Ok(self.syncs.sync(key, f)?)
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    pub(crate) fn poison_error(&self) -> Option<WalError> {
        if self.is_poisoned() {
            self.poison.lock().clone().map(WalError::Poisoned)
        } else {
            None
        }
    }

    /// Records the first failure and stops everything. Later failures are ignored: the
    /// first one is the cause.
    pub(crate) fn poison(&self, e: WalError) {
        let err = match e {
            WalError::Io(e) | WalError::Poisoned(e) => e,
            other => Arc::new(io::Error::other(other.to_string())),
        };
        {
            let mut p = self.poison.lock();
            if p.is_none() {
                *p = Some(err.clone());
            }
        }
        self.poisoned.store(true, Ordering::Release);
        self.buffer.stop();
        // Before the callbacks run: one of them may close the log, which joins the
        // daemon, which may be parked on the preparer (the preparer's own failure is the
        // usual reason it poisons).
        self.preparer.wake();
        self.waiters.fail_all(&WalError::Poisoned(err));
        self.sync_done_parker.notify_all();
    }

    pub(crate) fn existing_segment(&self, start: Lsn) -> bool {
        self.segments.lock().binary_search(&start).is_ok()
    }

    pub(crate) fn note_segment(&self, start: Lsn) {
        let mut s = self.segments.lock();
        if let Err(i) = s.binary_search(&start) {
            s.insert(i, start);
        }
    }

    /// Counts zeros written to prepare segment files.
    pub(crate) fn note_zero_fill(&self, bytes: u64) {
        self.stats
            .bytes_zero_filled
            .fetch_add(bytes, Ordering::Relaxed);
    }

    /// The directory segment `start` lives in.
    pub(crate) fn dir_of(&self, start: Lsn) -> &Path {
        self.dirs.dir_of(start, self.segment_bytes)
    }

    /// Takes the oldest retired file in segment `start`'s directory from the recycling
    /// pool, if there is one: the preparer makes segment `start` from it.
    pub(crate) fn take_recycled(&self, start: Lsn) -> Option<Lsn> {
        let mut pool = self.recycled.lock();
        let index = self.dirs.index_of(start, self.segment_bytes);
        let at = pool
            .iter()
            .position(|&old| self.dirs.index_of(old, self.segment_bytes) == index)?;
        Some(pool.remove(at))
    }

    /// Drops a removed segment from the list; it must be the oldest.
    fn forget_segment(&self, start: Lsn) {
        let mut segments = self.segments.lock();
        assert_eq!(
            segments.first(),
            Some(&start),
            "segments are removed oldest first"
        );
        segments.remove(0);
    }

    pub(crate) fn newest_segment(&self) -> Option<Lsn> {
        self.segments.lock().last().copied()
    }

    /// The error a call should return if the log cannot take work.
    fn check(&self) -> Result<()> {
        if let Some(e) = self.poison_error() {
            return Err(e);
        }
        if self.closing.load(Ordering::Acquire) {
            return Err(WalError::Closed);
        }
        Ok(())
    }
}

/// The most retired segment files the log keeps for reuse. Each holds a whole segment of
/// disk space; eight 16 MiB segments are 128 MiB the log had in use before the truncation
/// anyway.
pub const MAX_RECYCLED_SEGMENTS: usize = 8;

/// Refuses a segment size the log cannot use.
fn check_options(options: &LogOptions) -> Result<()> {
    let bounds = segment::MIN_SEGMENT_BYTES..=segment::MAX_SEGMENT_BYTES;
    if !bounds.contains(&options.segment_bytes)
        || !options.segment_bytes.is_multiple_of(crate::frame::ALIGN)
    {
        return Err(WalError::InvalidArgument(format!(
            "segment size {} must be at least {}, at most {} and a multiple of {}",
            options.segment_bytes,
            segment::MIN_SEGMENT_BYTES,
            segment::MAX_SEGMENT_BYTES,
            crate::frame::ALIGN
        )));
    }
    Ok(())
}

/// Where an appended record lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Appended {
    /// The record's LSN (its frame's first byte).
    pub lsn: Lsn,
    /// The position just past its frame: the record is durable once the durable LSN
    /// reaches this.
    pub end: Lsn,
}

/// A write-ahead log in a directory.
///
/// ```
/// use std::sync::Arc;
/// use sluice_storage::SimStorage;
/// use sluice_wal::{Log, LogOptions};
///
/// let storage = Arc::new(SimStorage::new(7));
/// let log = Log::open(storage.clone(), "/db/log", LogOptions::default()).unwrap();
/// let rec = log.append(b"hello").unwrap();
/// log.wait_durable(rec.end).unwrap();          // blocks until synced
/// let last = log.close().unwrap();
/// assert_eq!(last, rec.end);
///
/// let log = Log::open(storage, "/db/log", LogOptions::default()).unwrap();
/// let records: Vec<_> = log.read_from(log.start_lsn()).unwrap()
///     .map(|r| r.unwrap().payload).collect();
/// assert_eq!(records, vec![b"hello".to_vec()]);
/// ```
pub struct Log {
    shared: Arc<Shared>,
    daemon: crate::sync::Mutex<Option<JoinHandle<()>>>,
    preparer: crate::sync::Mutex<Option<JoinHandle<()>>>,
    archiver: crate::sync::Mutex<Option<JoinHandle<()>>>,
    recovery: RecoveryInfo,
    /// Opened by [`Log::open_read_only`]: no threads, no appends, no disk changes.
    read_only: bool,
}

impl Log {
    /// Opens the log in `dir` (creating it if needed), recovers its end, and starts the
    /// flush daemon. Fails with [`WalError::Locked`] if another process or another open
    /// `Log` holds the directory, and with [`WalError::Corruption`] if the durable log is
    /// damaged.
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: LogOptions,
    ) -> Result<Log> {
        Log::open_dirs(storage, &[dir.as_ref().to_path_buf()], options)
    }

    /// [`Log::open`] for a log partitioned horizontally over several directories
    /// (devices): segment `k` lives in `dirs[k mod D]`, so each rollover moves the writer
    /// to the next directory (see the `dirs` module). The first directory holds the lock.
    /// A log must always be opened with the directories it was created with, in the same
    /// order: a directory missing, extra, swapped or from another log is refused with
    /// [`WalError::InvalidArgument`] naming it. One directory is exactly [`Log::open`].
    pub fn open_dirs(
        storage: Arc<dyn Storage>,
        dirs: &[PathBuf],
        options: LogOptions,
    ) -> Result<Log> {
        Log::open_inner(storage, dirs, None, options)
    }

    /// [`Log::open_dirs`] with archiving on: a background thread copies each finished
    /// segment (durable, and left by the writer) to `archive_dir` (see the `archive`
    /// module), and [`Log::truncate_below`] frees only segments already archived.
    /// [`LogStats::segments_archived`] and [`Log::archived_lsn`] show its progress.
    pub fn open_archived(
        storage: Arc<dyn Storage>,
        dirs: &[PathBuf],
        archive_dir: impl AsRef<Path>,
        options: LogOptions,
    ) -> Result<Log> {
        Log::open_inner(storage, dirs, Some(archive_dir.as_ref()), options)
    }

    fn open_inner(
        storage: Arc<dyn Storage>,
        dirs: &[PathBuf],
        archive_dir: Option<&Path>,
        options: LogOptions,
    ) -> Result<Log> {
        let dirs = Arc::new(LogDirs::new(dirs)?);
        check_options(&options)?;
        // Before anything is created: the log's directories and its archive are distinct
        // directories, whatever their spelling (an archive that is a log directory under
        // another name would "copy" each segment onto itself, and truncation free it).
        dirs.refuse_aliases(&*storage, archive_dir)?;
        let first = dirs.first().to_path_buf();
        // The storage's errors name the path; nothing to add.
        storage.create_dir_all(&first)?;
        let lock = storage.lock(&first.join("LOCK")).map_err(|e| {
            if e.kind() == io::ErrorKind::WouldBlock {
                WalError::Locked(first.display().to_string())
            } else {
                WalError::from(e)
            }
        })?;
        dirs.check_markers(&*storage, |d| segment::has_segments(&*storage, d), false)?;
        if let Some(a) = archive_dir {
            // The archive must be this log's (or new), before recovery or the archiver
            // trusts a file name in it.
            let log_id = dirs.log_id(&*storage)?;
            storage.create_dir_all(a)?;
            crate::dirs::claim_archive(&*storage, a, log_id)?;
        }
        let rec = recovery::recover(&storage, &dirs, options.segment_bytes, false)?;
        let archiver = match archive_dir {
            Some(a) => Some(crate::archive::Archiver::open(
                &*storage,
                a,
                &rec.list.starts,
                rec.segment_bytes,
            )?),
            None => None,
        };
        let shared = Shared::new(storage, dirs, options, &rec, Some(lock), archiver)?;
        let p = shared.clone();
        let preparer = std::thread::Builder::new()
            .name("sluice-prepare".into())
            .spawn(move || crate::prepare::Preparer::run(p))
            .map_err(WalError::from)?;
        let d = FlushDaemon::new(shared.clone());
        let handle = std::thread::Builder::new()
            .name("sluice-flush".into())
            .spawn(move || d.run())
            .map_err(WalError::from)?;
        let archiver = match &shared.archiver {
            Some(_) => {
                let a = shared.clone();
                Some(
                    std::thread::Builder::new()
                        .name("sluice-archive".into())
                        .spawn(move || crate::archive::Archiver::run(a))
                        .map_err(WalError::from)?,
                )
            }
            None => None,
        };
        Ok(Log {
            shared,
            daemon: crate::sync::Mutex::new(Some(handle)),
            preparer: crate::sync::Mutex::new(Some(preparer)),
            archiver: crate::sync::Mutex::new(archiver),
            recovery: rec.info,
            read_only: false,
        })
    }

    /// Opens the existing log in `dir` for reading only — a log another process may read
    /// while no process writes it, or a copy of one (a backup, a crashed process's
    /// directory). It writes nothing and starts no thread: no file or directory is
    /// created (a missing directory is an error), written, renamed or removed, a torn
    /// tail is left in place (the log ends before it) and leftover temporary files stay.
    /// It takes a *shared* lock on `dir/LOCK` (so it fails with [`WalError::Locked`]
    /// while a writer holds the log, and several read-only openers coexist); a directory
    /// without a `LOCK` file — a copy — is read without a lock.
    ///
    /// Before it reads, it makes what it will trust durable, as [`Log::open`] does: it
    /// syncs the directory and each segment through read-only handles and drops their
    /// cached pages. A sync changes no byte; it makes bytes already there durable — the
    /// unsynced writes a killed process left in the page cache included — so that no
    /// record it shows can be taken away by a later power loss. A file system that
    /// cannot sync at all (`sluice_storage::cannot_sync`: `EINVAL` or `EROFS`, read-only
    /// media) is read as it is: it holds no writes to make durable. Any other sync error
    /// refuses the open. [`Log::read_from`] works up to the end found; [`Log::append`],
    /// [`Log::sync`], [`Log::truncate_below`] and waits past that end fail with
    /// [`WalError::ReadOnly`].
    pub fn open_read_only(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: LogOptions,
    ) -> Result<Log> {
        Log::open_dirs_read_only(storage, &[dir.as_ref().to_path_buf()], options)
    }

    /// [`Log::open_read_only`] for a log of several directories ([`Log::open_dirs`]): the
    /// directories are checked the same way, and the lock is taken in the first.
    pub fn open_dirs_read_only(
        storage: Arc<dyn Storage>,
        dirs: &[PathBuf],
        options: LogOptions,
    ) -> Result<Log> {
        let dirs = Arc::new(LogDirs::new(dirs)?);
        let dir = dirs.first().to_path_buf();
        check_options(&options)?;
        dirs.refuse_aliases(&*storage, None)?;
        if !storage.exists(&dir)? {
            return Err(WalError::from(io::Error::new(
                io::ErrorKind::NotFound,
                format!("log directory {} does not exist", dir.display()),
            )));
        }
        let lock = match storage.lock_shared(&dir.join("LOCK")) {
            Ok(g) => Some(g),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(WalError::Locked(dir.display().to_string()));
            }
            Err(e) => return Err(WalError::from(e)),
        };
        dirs.check_markers(&*storage, |d| segment::has_segments(&*storage, d), true)?;
        let rec = recovery::recover(&storage, &dirs, options.segment_bytes, true)?;
        let shared = Shared::new(storage, dirs, options, &rec, lock, None)?;
        Ok(Log {
            shared,
            daemon: crate::sync::Mutex::new(None),
            preparer: crate::sync::Mutex::new(None),
            archiver: crate::sync::Mutex::new(None),
            recovery: rec.info,
            read_only: true,
        })
    }

    /// True if the log was opened with [`Log::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The error for a call a read-only log cannot serve, if this is one.
    fn refuse_if_read_only(&self) -> Result<()> {
        if self.read_only {
            return Err(WalError::ReadOnly);
        }
        Ok(())
    }

    /// What recovery found when this log was opened.
    pub fn recovery(&self) -> &RecoveryInfo {
        &self.recovery
    }

    /// LSN bytes per segment of this log: the size its segments were created with (an
    /// existing log keeps its own, whatever [`LogOptions::segment_bytes`] asked for).
    pub fn segment_bytes(&self) -> u64 {
        self.shared.segment_bytes
    }

    /// The largest payload [`Log::append`] takes.
    pub fn max_record_bytes(&self) -> usize {
        self.shared.buffer.max_payload()
    }

    /// Appends a record. Returns once it is in the log buffer (not yet durable): wait for
    /// `end` with [`Log::wait_durable`] or register with [`Log::on_durable`].
    pub fn append(&self, payload: &[u8]) -> Result<Appended> {
        self.refuse_if_read_only()?;
        self.shared.check()?;
        let lsn = self.shared.buffer.insert(payload).map_err(|e| match e {
            WalError::Closed => self.shared.poison_error().unwrap_or(WalError::Closed),
            e => e,
        })?;
        Ok(Appended {
            lsn,
            end: lsn.add(crate::frame::frame_len(payload.len())),
        })
    }

    /// Blocks until everything below `lsn` is durable; returns the durable LSN then.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<Lsn> {
        let s = &*self.shared;
        let durable = s.buffer.durable();
        if durable >= lsn {
            return Ok(durable);
        }
        // Nothing read-only ever becomes durable: do not wait for it.
        self.refuse_if_read_only()?;
        s.check_wait()?;
        s.waiters.outstanding.fetch_add(1, Ordering::SeqCst);
        s.request_flush();
        s.waiters.block_until(lsn, || {
            s.buffer.durable() >= lsn || s.is_poisoned() || s.daemon_gone()
        });
        s.waiters.outstanding.fetch_sub(1, Ordering::SeqCst);
        let durable = s.buffer.durable();
        if durable >= lsn {
            Ok(durable)
        } else {
            Err(s.poison_error().unwrap_or(WalError::Closed))
        }
    }

    /// Calls `callback` once everything below `lsn` is durable (or with the error that
    /// poisoned the log). Never blocks. If `lsn` is already durable the callback runs
    /// now, on this thread; otherwise it runs on the flush daemon's thread and must be
    /// short.
    pub fn on_durable(&self, lsn: Lsn, callback: DurableCallback) {
        let s = &*self.shared;
        let durable = s.buffer.durable();
        if durable >= lsn {
            return callback(Ok(durable));
        }
        if let Err(e) = self.refuse_if_read_only().and_then(|()| s.check_wait()) {
            return callback(Err(e));
        }
        s.waiters.register(lsn, callback);
        s.request_flush();
        // The daemon may have published past `lsn`, or failed, between the check and the
        // registration; sweep so the callback is not stranded.
        let durable = s.buffer.durable();
        if durable >= lsn {
            let _ = s.waiters.on_durable(durable);
        } else if let Err(e) = s.check_wait() {
            s.waiters.fail_all(&e);
        }
    }

    /// A future resolving once everything below `lsn` is durable.
    pub fn durable_future(&self, lsn: Lsn) -> DurableFuture {
        let s = &*self.shared;
        let durable = s.buffer.durable();
        if durable >= lsn {
            return DurableFuture::ready(Ok(durable));
        }
        let (f, cb) = DurableFuture::pending();
        self.on_durable(lsn, cb);
        f
    }

    /// Writes and syncs everything released so far — and issues a sync even if nothing
    /// new is buffered. Returns the durable LSN.
    pub fn sync(&self) -> Result<Lsn> {
        self.refuse_if_read_only()?;
        let s = &*self.shared;
        s.check()?;
        let ticket = s.sync_requested.fetch_add(1, Ordering::AcqRel) + 1;
        s.request_flush();
        s.sync_done_parker.wait_until(|| {
            s.sync_done.load(Ordering::Acquire) >= ticket || s.is_poisoned() || s.daemon_gone()
        });
        if s.sync_done.load(Ordering::Acquire) >= ticket {
            Ok(s.buffer.durable())
        } else {
            Err(s.poison_error().unwrap_or(WalError::Closed))
        }
    }

    /// Everything below this is durable.
    pub fn durable_lsn(&self) -> Lsn {
        self.shared.buffer.durable()
    }

    /// Everything below this is in the log buffer, filled.
    pub fn released_lsn(&self) -> Lsn {
        self.shared.buffer.released()
    }

    /// The start LSNs of the segment files on disk, ascending (the newest may be
    /// prepared ahead and still empty).
    pub fn segments(&self) -> Vec<Lsn> {
        self.shared.segments.lock().clone()
    }

    /// The first LSN still in the log.
    pub fn start_lsn(&self) -> Lsn {
        Lsn(self.shared.start.load(Ordering::Acquire))
    }

    /// The counters.
    pub fn stats(&self) -> LogStats {
        let s = &self.shared.stats;
        LogStats {
            syncs: s.syncs.load(Ordering::Relaxed),
            flushes: s.flushes.load(Ordering::Relaxed),
            bytes_written: s.bytes_written.load(Ordering::Relaxed),
            bytes_zero_filled: s.bytes_zero_filled.load(Ordering::Relaxed),
            segments_recycled: s.segments_recycled.load(Ordering::Relaxed),
            gather_budget: s.gather_budget.load(Ordering::Relaxed),
            segments_archived: self
                .shared
                .archiver
                .as_ref()
                .map_or(0, |a| a.segments_archived.load(Ordering::Relaxed)),
            bytes_archived: self
                .shared
                .archiver
                .as_ref()
                .map_or(0, |a| a.bytes_archived.load(Ordering::Relaxed)),
        }
    }

    /// With archiving on, the LSN below which every segment is archived (durably copied
    /// to the archive directory); `None` without archiving.
    pub fn archived_lsn(&self) -> Option<Lsn> {
        self.shared.archiver.as_ref().map(|a| a.archived())
    }

    /// The archive directory, if archiving is on.
    pub fn archive_dir(&self) -> Option<&Path> {
        self.shared.archiver.as_ref().map(|a| a.dir())
    }

    /// The error that stopped the archiver, if one did: the log goes on, but keeps every
    /// segment from the first unarchived one (truncation frees none of them) until it is
    /// reopened.
    pub fn archive_error(&self) -> Option<WalError> {
        self.shared.archiver.as_ref().and_then(|a| a.error())
    }

    /// The log's directories, in order (segment `k` lives in the `k mod D`-th).
    pub fn dirs(&self) -> &[PathBuf] {
        self.shared.dirs.all()
    }

    /// The error that poisoned the log, if any.
    pub fn poisoned(&self) -> Option<WalError> {
        self.shared.poison_error()
    }

    /// Reads the durable records from `from` (a record boundary, at or above
    /// [`Log::start_lsn`]) to the durable end, in LSN order.
    pub fn read_from(&self, from: Lsn) -> Result<LogReader> {
        let s = &*self.shared;
        if from < self.start_lsn() || from > s.buffer.durable() || !from.0.is_multiple_of(8) {
            return Err(WalError::InvalidArgument(format!(
                "cannot read from LSN {from}: the log holds [{}, {})",
                self.start_lsn(),
                s.buffer.durable()
            )));
        }
        Ok(LogReader::new(
            s.storage.clone(),
            s.dirs.clone(),
            s.segment_bytes,
            from,
            s.buffer.durable(),
        ))
    }

    /// Removes the segments that lie wholly below `lsn` (the caller no longer needs their
    /// records for recovery or archiving), oldest first. The segment holding the last
    /// durable byte is always kept, so the log never forgets its position. Returns how
    /// many segments were removed.
    ///
    /// Removed segments are *recycled*: up to as many as this call removes, and at most
    /// [`MAX_RECYCLED_SEGMENTS`] in all, are renamed out of the log instead of deleted,
    /// and the preparer later makes new segments from them without zero-filling (a log
    /// that needed `k` segments since the last truncation is likely to need `k` more
    /// before the next). The rest, and any file shorter than a whole segment, are
    /// deleted. A [`crate::LogReader`] still reading a removed segment may find it
    /// rewritten: it reports corruption, never another segment's records.
    ///
    /// A file that is already missing counts as removed. The first removal that fails
    /// stops the truncation and is returned (the segments before it are gone, the list
    /// [`Log::segments`] stays exact, and a later call goes on from there); so is a failed
    /// sync of the directory.
    pub fn truncate_below(&self, lsn: Lsn) -> Result<usize> {
        self.refuse_if_read_only()?;
        let s = &*self.shared;
        s.check()?;
        let _one_at_a_time = s.truncation.lock();
        let Some(last_durable_byte) = s.buffer.durable().0.checked_sub(1) else {
            return Ok(0); // nothing durable, nothing to keep or remove
        };
        // Without the segment that holds the last durable byte, a reopened log would find
        // no segment (when the next one is not made yet) and restart its LSNs at 0.
        let keep_from = segment::segment_start(Lsn(last_durable_byte), s.segment_bytes);
        let mut limit = lsn.min(keep_from);
        if let Some(a) = &s.archiver {
            // A segment leaves the log only once its copy is safe.
            limit = limit.min(a.archived());
        }
        let victims: Vec<Lsn> = s
            .segments
            .lock()
            .iter()
            .copied()
            .filter(|&st| st.0 + s.segment_bytes <= limit.0)
            .collect();
        assert!(victims.windows(2).all(|w| w[0] < w[1]));
        // Files to retire for recycling, per directory (a retired file only becomes a
        // segment of its own directory): up to as many as this call removes there, less
        // what the pool already holds there; and at most MAX_RECYCLED_SEGMENTS in all.
        let index = |l: Lsn| s.dirs.index_of(l, s.segment_bytes);
        let (mut room, mut total_room) = {
            let pool = s.recycled.lock();
            let mut room = vec![0usize; s.dirs.count()];
            for &v in &victims {
                room[index(v)] += 1;
            }
            for r in &mut room {
                *r = (*r).min(MAX_RECYCLED_SEGMENTS);
            }
            for &p in pool.iter() {
                room[index(p)] = room[index(p)].saturating_sub(1);
            }
            (room, MAX_RECYCLED_SEGMENTS.saturating_sub(pool.len()))
        };
        // Oldest first: a crash keeps a prefix of the directory operations, so whatever
        // survives it is still a contiguous run of segments. Across several directories
        // (devices) a crash keeps a prefix of each one's operations, not of all of them
        // together, so a directory's changes are made durable before the next victim, in
        // another directory, is touched: otherwise a crash could keep a later removal and
        // undo an earlier one, and the next open would find a gap.
        let mut removed = 0;
        let mut retired = Vec::new();
        let mut failure = None;
        let mut unsynced: Option<&Path> = None;
        for &victim in &victims {
            let dir = s.dir_of(victim);
            if let Some(prev) = unsynced.filter(|&p| p != dir) {
                if let Err(e) = self.settle_retirements(prev, &mut retired) {
                    failure = Some(e);
                    unsynced = None;
                    break;
                }
            }
            unsynced = Some(dir);
            // Raise the start first, so that no reader is handed a segment being removed.
            // Only truncation moves it, under its lock; after a failed removal it may
            // already be past the victim, and it never moves back.
            let start = s.start.load(Ordering::Acquire);
            s.start
                .store(start.max(victim.0 + s.segment_bytes), Ordering::Release);
            let path = dir.join(segment::segment_name(victim));
            let recycle = if room[index(victim)] > 0 && total_room > 0 {
                self.whole_file(&path)
            } else {
                Ok(false)
            };
            let outcome = recycle.and_then(|whole| {
                if whole {
                    segment::retire(&*s.storage, dir, victim).map(|()| {
                        room[index(victim)] -= 1;
                        total_room -= 1;
                        retired.push(victim)
                    })
                } else {
                    s.storage.remove(&path)
                }
            });
            match outcome {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
            s.forget_segment(victim);
            removed += 1;
        }
        if let Some(dir) = unsynced {
            if let Err(e) = self.settle_retirements(dir, &mut retired) {
                failure.get_or_insert(e);
            }
        }
        debug_assert!(s.recycled.lock().len() <= MAX_RECYCLED_SEGMENTS);
        match failure {
            Some(e) => Err(WalError::from(e)),
            None => Ok(removed),
        }
    }

    /// Syncs `dir` after removals and retirements in it; then the retired files in
    /// `retired` (all in `dir`) join the recycling pool.
    fn settle_retirements(&self, dir: &Path, retired: &mut Vec<Lsn>) -> io::Result<()> {
        let s = &*self.shared;
        let done = if retired.is_empty() {
            s.storage.sync_dir(dir)
        } else {
            // Renamed out of the log, not yet durably: a named point for tests.
            (s.storage
                .failpoint(sluice_storage::failpoint::SEGMENT_RETIRED, dir))
            .and_then(|()| s.storage.sync_dir(dir))
        };
        match done {
            // Only now may the preparer write the retired files: before the sync a power
            // loss could undo a rename and leave the old segment's name on a file whose
            // header names another start.
            Ok(()) => s.recycled.lock().append(retired),
            // The renames may or may not survive; the files are left to the next open,
            // which removes what it finds.
            Err(_) => retired.clear(),
        }
        done
    }

    /// True if the segment file at `path` holds a whole segment (header and all its data
    /// bytes), so that recycling it saves a whole zero-fill; false if it is missing.
    fn whole_file(&self, path: &Path) -> io::Result<bool> {
        let s = &*self.shared;
        let len = match s.storage.open(path, sluice_storage::OpenOptions::READ_ONLY) {
            Ok(f) => f.len()?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        Ok(len >= segment::SEGMENT_HEADER_BYTES + s.segment_bytes)
    }

    /// Flushes and syncs everything appended, stops the daemon, and returns the final
    /// durable LSN. Later calls (and every other method) return [`WalError::Closed`].
    pub fn close(&self) -> Result<Lsn> {
        if self.read_only {
            return self.close_read_only();
        }
        let handle = self.daemon.lock().take();
        let Some(handle) = handle else {
            return Err(WalError::Closed);
        };
        let s = &*self.shared;
        s.closing.store(true, Ordering::Release);
        s.request_flush();
        if handle.thread().id() == std::thread::current().id() {
            // Closed from a durable callback running on the daemon (it dropped the last
            // owner of this log): the daemon cannot join itself. It sees `closing` and
            // exits once the callback returns; everything durable stays durable.
            s.preparer.stop();
            if let Some(a) = &s.archiver {
                a.stop();
            }
            return Ok(s.buffer.durable());
        }
        let _ = handle.join();
        s.preparer.stop();
        if let Some(a) = &s.archiver {
            a.stop();
        }
        if let Some(t) = self.archiver.lock().take() {
            let _ = t.join();
        }
        if let Some(p) = self.preparer.lock().take() {
            // Closed from a callback that the preparer's poisoning ran (it dropped the last
            // owner of this log): the preparer cannot join itself; it has stopped and exits
            // once the callback returns.
            if p.thread().id() != std::thread::current().id() {
                let _ = p.join();
            }
        }
        s.buffer.stop();
        s.waiters.fail_all(&WalError::Closed);
        s.sync_done_parker.notify_all();
        drop(s.lock.lock().take());
        if let Some(e) = s.poison_error() {
            return Err(e);
        }
        Ok(s.buffer.durable())
    }
}

impl Log {
    /// [`Log::close`] of a read-only log: no thread to stop, nothing to flush.
    fn close_read_only(&self) -> Result<Lsn> {
        let s = &*self.shared;
        if s.closing.swap(true, Ordering::AcqRel) {
            return Err(WalError::Closed);
        }
        s.buffer.stop();
        s.waiters.fail_all(&WalError::Closed);
        drop(s.lock.lock().take());
        Ok(s.buffer.durable())
    }
}

impl Shared {
    fn check_wait(&self) -> Result<()> {
        if let Some(e) = self.poison_error() {
            return Err(e);
        }
        if self.daemon_gone() {
            return Err(WalError::Closed);
        }
        Ok(())
    }

    /// Wakes the flush daemon after changing what it decides on (a wait counted, a sync
    /// requested, closing): the one way anything outside the buffer asks for a flush.
    pub(crate) fn request_flush(&self) {
        self.buffer.core.flush.request();
    }

    /// True once the daemon has stopped for good (closing and drained).
    pub(crate) fn daemon_gone(&self) -> bool {
        self.closing.load(Ordering::Acquire) && self.buffer.core.check_running().is_err()
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        // Best effort: flush what was appended. Errors are visible through `close`.
        let _ = self.close();
    }
}
