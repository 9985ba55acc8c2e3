//! The log manager: the handle [`Log`] over a log buffer, a flush daemon, segment files
//! and recovery. The state its threads share is in `shared.rs`, its options in
//! `options.rs`.

use crate::error::{io_context, Result, WalError};
use crate::flush::{Drive, FlushDaemon, RingDriver};
use crate::notify::{DurableCallback, DurableFuture};
use crate::options::FlushPath;
use crate::options::LogOptions;
use crate::reader::LogReader;
use crate::recovery::{self, RecoveryInfo};
use crate::segments::dirs::{self, LogDirs};
use crate::segments::{segment, ArchiveContext, ArchiveMirror, Archiver};
use crate::shared::Shared;
use crate::sync::Ordering;
use crate::Lsn;
use sluice_storage::Storage;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

/// How long a waiter on the io_uring path parks when the bytes it waits for are not
/// released yet (an inserter is still copying them): there is nothing to drive.
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_micros(50);

/// A snapshot of the log's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStats {
    /// `sync_data` calls issued.
    pub syncs: u64,
    /// Flush rounds completed.
    pub flushes: u64,
    /// Log bytes written to segment files.
    pub bytes_written: u64,
    /// Bytes of zeros written to prepare segment files (new files and extensions): none
    /// with [`crate::Preallocate::Allocate`] where the file system allocates.
    pub bytes_zero_filled: u64,
    /// Bytes of segment space reserved without writing (`FileHandle::allocate`).
    pub bytes_allocated: u64,
    /// Segments made from a retired segment's file instead of a new one.
    pub segments_recycled: u64,
    /// The flush daemon's gather budget now: scheduler yields a round may spend letting
    /// the last round's waiters re-join before it syncs (tuned if
    /// [`crate::GroupCommit::adaptive`]).
    pub gather_budget: u64,
    /// Segments the archiver copied to the archive directory since the log was opened
    /// (0 without archiving).
    pub segments_archived: u64,
    /// Bytes of those copies (header blocks included).
    pub bytes_archived: u64,
}

/// The flush path a log took ([`Log::flush_path`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushInfo {
    /// The path the log runs.
    pub path: FlushPath,
    /// The ring, on the io_uring path (`io_uring`; `simulated …` on a simulated disk).
    pub ring: Option<String>,
    /// Why the log runs the daemon although [`LogOptions::flush`] asked for io_uring.
    pub fallback: Option<String>,
}

impl std::fmt::Display for FlushInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.ring, &self.fallback) {
            (Some(r), _) => write!(f, "{} ({r})", self.path),
            (None, Some(why)) => write!(f, "{} (io_uring not used: {why})", self.path),
            (None, None) => write!(f, "{}", self.path),
        }
    }
}

/// Said once per process: the first log that falls back to the daemon says why on
/// standard error (every log's [`Log::flush_path`] keeps its reason).
static FALLBACK_SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The ring a log opened with `options` drives: `Ok(None)` on the daemon's path by
/// choice, `Err(why)` where io_uring was asked for and the storage refused it (said once
/// per process).
fn open_ring(
    storage: &dyn Storage,
    options: &LogOptions,
) -> std::result::Result<Option<Box<dyn sluice_storage::IoRing>>, String> {
    if options.flush != FlushPath::IoUring {
        return Ok(None);
    }
    storage.io_ring().map(Some).map_err(|e| {
        let why = e.to_string();
        if !FALLBACK_SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
            eprintln!("sluice: the log flushes with a daemon thread: {why}");
        }
        why
    })
}

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
    pub(crate) shared: Arc<Shared>,
    daemon: crate::sync::Mutex<Option<JoinHandle<()>>>,
    preparer: crate::sync::Mutex<Option<JoinHandle<()>>>,
    archiver: crate::sync::Mutex<Option<JoinHandle<()>>>,
    recovery: RecoveryInfo,
    /// Opened by [`Log::open_read_only`]: no threads, no appends, no disk changes.
    read_only: bool,
    /// The ring the committing threads drive, on the io_uring path (`flush/ring.rs`);
    /// `None` on the daemon's.
    ring: Option<Arc<RingDriver>>,
    /// Why the log is on the daemon's path although it asked for io_uring.
    ring_refused: Option<String>,
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
    /// segment (durable, and left by the writer) to `archive_dir` (see
    /// `segments/archive.rs`), and [`Log::truncate_below`] frees only segments already
    /// archived.
    /// [`LogStats::segments_archived`] and [`Log::archived_lsn`] show its progress.
    pub fn open_archived(
        storage: Arc<dyn Storage>,
        dirs: &[PathBuf],
        archive_dir: impl AsRef<Path>,
        options: LogOptions,
    ) -> Result<Log> {
        Log::open_inner(storage, dirs, Some((archive_dir.as_ref(), None)), options)
    }

    /// [`Log::open_archived`] with the archive mirrored to `mirror` (an object store,
    /// say): after a segment's local copy and its `MANIFEST` entry are durable, the
    /// archiver uploads the copy, then the whole `MANIFEST`, and only then counts the
    /// segment archived — so [`Log::truncate_below`] waits for the upload too. Local
    /// copies the mirror does not list yet (an upload a crash or a failure interrupted,
    /// or an archive mirrored for the first time) are uploaded first, before any
    /// segment of the log counts as archived. A failed call is retried
    /// ([`ArchiveMirror::retry`](crate::ArchiveMirror::retry)); then the archiver stops
    /// and [`Log::archive_error`] reports the failure.
    pub fn open_mirrored(
        storage: Arc<dyn Storage>,
        dirs: &[PathBuf],
        archive_dir: impl AsRef<Path>,
        mirror: Arc<dyn ArchiveMirror>,
        options: LogOptions,
    ) -> Result<Log> {
        Log::open_inner(
            storage,
            dirs,
            Some((archive_dir.as_ref(), Some(mirror))),
            options,
        )
    }

    fn open_inner(
        storage: Arc<dyn Storage>,
        dirs: &[PathBuf],
        archive: Option<(&Path, Option<Arc<dyn ArchiveMirror>>)>,
        options: LogOptions,
    ) -> Result<Log> {
        let (archive_dir, mirror) = match archive {
            Some((d, m)) => (Some(d), m),
            None => (None, None),
        };
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
            dirs::claim_archive(&*storage, a, log_id, |n| {
                segment::parse_segment_name(n).is_some()
            })?;
        }
        let rec = recovery::recover(&storage, &dirs, options.segment_bytes, false)?;
        let archiver = match archive_dir {
            Some(a) => Some(Archiver::open(
                &*storage,
                a,
                &rec.list.starts,
                rec.segment_bytes,
                mirror,
            )?),
            None => None,
        };
        let (ring, ring_refused) = match open_ring(&*storage, &options) {
            Ok(r) => (r.map(|r| Arc::new(RingDriver::new(r))), None),
            Err(why) => (None, Some(why)),
        };
        let shared = Shared::new(storage, dirs, options, &rec, Some(lock), archiver)?;
        let p = shared.clone();
        let preparer = std::thread::Builder::new()
            .name("sluice-prepare".into())
            .spawn(move || p.preparer.run(p.prepare_context(), |e| p.poison(e)))
            .map_err(WalError::from)?;
        let d = FlushDaemon::new(shared.clone(), ring.clone());
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
                        .spawn(move || {
                            let durable = || a.buffer.durable();
                            let cx = ArchiveContext {
                                segments: &a.segments,
                                health: &a.health,
                                durable: &durable,
                            };
                            a.archiver.as_ref().expect("archiving is on").run(cx)
                        })
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
            ring,
            ring_refused,
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
            ring: None,
            ring_refused: None,
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
        self.shared.segments.segment_bytes
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
            WalError::Closed => self.shared.health.error().unwrap_or(WalError::Closed),
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
        match &self.ring {
            Some(ring) => {
                // This thread drives: it starts the round, or waits in the kernel for
                // the one in flight. With nothing to drive (bytes below `lsn` not
                // released yet, an insert still copying them; or a group-commit threshold
                // not reached) it parks briefly and looks again.
                let longest = s.options.group_commit.max_delay.max(RELEASE_WAIT);
                let mut nap = RELEASE_WAIT;
                while !(s.buffer.durable() >= lsn
                    || s.health.is_poisoned()
                    || s.daemon_gone()
                    || ring.stopped())
                {
                    if ring.drive(s, Drive::Wait) || ring.busy() {
                        nap = RELEASE_WAIT;
                    } else {
                        // Nothing to drive: naps doubling up to the group-commit delay
                        // (by then the delay makes a round due), not a poll every 50 µs.
                        std::thread::park_timeout(nap);
                        nap = (nap * 2).min(longest);
                    }
                }
            }
            None => {
                s.request_flush();
                s.waiters.block_until(lsn, || {
                    s.buffer.durable() >= lsn || s.health.is_poisoned() || s.daemon_gone()
                });
            }
        }
        s.waiters.outstanding.fetch_sub(1, Ordering::SeqCst);
        let durable = s.buffer.durable();
        if durable >= lsn {
            Ok(durable)
        } else {
            Err(s.health.error().unwrap_or(WalError::Closed))
        }
    }

    /// Calls `callback` once everything below `lsn` is durable (or with the error that
    /// poisoned the log). Never blocks. If `lsn` is already durable the callback runs
    /// now, on this thread; otherwise it runs on the thread that completes the flush —
    /// the flush daemon's, or on the io_uring path whichever thread reaps the round
    /// ([`Log::poll_flush`], a waiter, the daemon as backstop) — and must be short.
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
        match &self.ring {
            // Start the round now if none is in flight; never wait.
            Some(ring) => {
                ring.drive(s, Drive::Poll);
            }
            None => s.request_flush(),
        }
        // The daemon may have published past `lsn`, or failed, between the check and the
        // registration; sweep so the callback is not stranded.
        let durable = s.buffer.durable();
        if durable >= lsn {
            let _ = s.waiters.on_durable(durable);
        } else if let Err(e) = s.check_wait() {
            s.waiters.fail_all(&e);
        }
    }

    /// On the io_uring path, reaps a completed flush round (running the callbacks it
    /// satisfies, on this thread) and starts the next if one is due, without blocking;
    /// a no-op on the daemon's path. A thread that registers [`Log::on_durable`]
    /// callbacks and has other work (an agent) calls it between pieces of that work.
    pub fn poll_flush(&self) {
        if let Some(ring) = &self.ring {
            ring.drive(&self.shared, Drive::Poll);
        }
    }

    /// On the io_uring path, blocks until the flush round in flight completes (and
    /// reaps it) — unless another thread already waits for it or none is in flight;
    /// returns true if this thread waited. An agent with nothing else to do calls it
    /// instead of parking. Always false on the daemon's path.
    pub fn wait_flush(&self) -> bool {
        match &self.ring {
            Some(ring) if ring.busy() => ring.drive(&self.shared, Drive::ReapIfFree),
            _ => false,
        }
    }

    /// The flush path this log runs, and why (if io_uring was asked for and refused).
    pub fn flush_path(&self) -> FlushInfo {
        FlushInfo {
            path: if self.ring.is_some() {
                FlushPath::IoUring
            } else {
                FlushPath::Daemon
            },
            ring: self.ring.as_ref().map(|r| r.describe.clone()),
            fallback: self.ring_refused.clone(),
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
        if let Some(ring) = &self.ring {
            // This thread drives the rounds that serve it (the next one to start does).
            while s.sync_done.load(Ordering::Acquire) < ticket
                && !s.health.is_poisoned()
                && !s.daemon_gone()
                && !ring.stopped()
            {
                ring.drive(s, Drive::Wait);
            }
        }
        s.request_flush();
        s.sync_done_parker.wait_until(|| {
            s.sync_done.load(Ordering::Acquire) >= ticket
                || s.health.is_poisoned()
                || s.daemon_gone()
        });
        if s.sync_done.load(Ordering::Acquire) >= ticket {
            Ok(s.buffer.durable())
        } else {
            Err(s.health.error().unwrap_or(WalError::Closed))
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
        self.shared.segments.starts()
    }

    /// The first LSN still in the log.
    pub fn start_lsn(&self) -> Lsn {
        self.shared.segments.start()
    }

    /// The counters.
    pub fn stats(&self) -> LogStats {
        let (s, segments) = (&self.shared.stats, &self.shared.segments);
        LogStats {
            syncs: s.syncs.load(Ordering::Relaxed),
            flushes: s.flushes.load(Ordering::Relaxed),
            bytes_written: s.bytes_written.load(Ordering::Relaxed),
            bytes_zero_filled: segments.bytes_zero_filled.load(Ordering::Relaxed),
            bytes_allocated: segments.bytes_allocated.load(Ordering::Relaxed),
            segments_recycled: segments.segments_recycled.load(Ordering::Relaxed),
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

    /// The archive's mirror, if the log was opened with one ([`Log::open_mirrored`]).
    pub fn archive_mirror(&self) -> Option<&Arc<dyn ArchiveMirror>> {
        self.shared.archiver.as_ref().and_then(|a| a.mirror())
    }

    /// The error that stopped the archiver, if one did: the log goes on, but keeps every
    /// segment from the first unarchived one (truncation frees none of them) until it is
    /// reopened.
    pub fn archive_error(&self) -> Option<WalError> {
        self.shared.archiver.as_ref().and_then(|a| a.error())
    }

    /// The log's directories, in order (segment `k` lives in the `k mod D`-th).
    pub fn dirs(&self) -> &[PathBuf] {
        self.shared.segments.dirs.all()
    }

    /// The error that poisoned the log, if any.
    pub fn poisoned(&self) -> Option<WalError> {
        self.shared.health.error()
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
            s.segments.storage.clone(),
            s.segments.dirs.clone(),
            s.segments.segment_bytes,
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
    /// [`MAX_RECYCLED_SEGMENTS`](crate::MAX_RECYCLED_SEGMENTS) in all, are renamed out of the log instead of deleted,
    /// and the preparer later makes new segments from them without allocating (a log
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
        s.segments.truncate_below(lsn, || {
            (
                s.buffer.durable(),
                s.archiver.as_ref().map(|a| a.archived()),
            )
        })
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
        // What is durable is answered as durable, even if the thread that completed its
        // round has not run its callbacks yet (on the ring path it runs them after
        // letting go of the driver); only the rest is failed.
        let _ = s.waiters.on_durable(s.buffer.durable());
        s.waiters.fail_all(&WalError::Closed);
        s.sync_done_parker.notify_all();
        let mut spares = Ok(());
        if s.health.error().is_none() {
            // Nothing writes the files any more: the disk space kept for segments to come
            // goes back (segment recycling is for a running log).
            spares = s.segments.release_spares(s.buffer.durable());
        }
        drop(s.lock.lock().take());
        if let Some(e) = s.health.error() {
            return Err(e);
        }
        spares.map_err(|e| io_context("closing the log could not remove its spare segments", e))?;
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

impl Drop for Log {
    fn drop(&mut self) {
        // Best effort: flush what was appended. Errors are visible through `close`.
        let _ = self.close();
    }
}
