//! The state a log's threads share: the handle's callers, the flush daemon, the segment
//! preparer and the archiver. The daemon reads all of it; the preparer and the archiver
//! see only the narrow contexts made here ([`Shared::prepare_context`], the archiver's
//! in `log.rs`): the segment files and the log's health.

use crate::buffer::{BufferOptions, LogBuffer};
use crate::error::{Result, WalError};
use crate::health::Health;
use crate::notify::Waiters;
use crate::options::LogOptions;
use crate::recovery;
use crate::segments::dirs::LogDirs;
use crate::segments::{Archiver, PrepareContext, Preparer, SegmentSet};
use crate::sync::{AtomicBool, AtomicU64, Mutex, Ordering};
use crate::wait::Parker;
use sluice_storage::{LockGuard, Storage};
use std::sync::Arc;

/// Counters kept by the log (the segment files' are in [`SegmentSet`], the archiver's in
/// [`Archiver`]).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) syncs: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) bytes_written: AtomicU64,
    pub(crate) gather_budget: AtomicU64,
}

pub(crate) struct Shared {
    /// The segment files: where they live, which exist, the recycling pool.
    pub(crate) segments: SegmentSet,
    pub(crate) health: Health,
    pub(crate) options: LogOptions,
    pub(crate) buffer: LogBuffer,
    pub(crate) waiters: Waiters,
    pub(crate) closing: AtomicBool,
    pub(crate) sync_requested: AtomicU64,
    pub(crate) sync_done: AtomicU64,
    pub(crate) sync_done_parker: Parker,
    pub(crate) stats: Stats,
    pub(crate) preparer: Preparer,
    /// The archiver's state, if archiving is on ([`crate::Log::open_archived`]).
    pub(crate) archiver: Option<Archiver>,
    /// The directory lock; released by `close` so the directory can be reopened at once.
    pub(crate) lock: Mutex<Option<Box<dyn LockGuard>>>,
}

impl Shared {
    /// The state of a log whose end `rec` found.
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        dirs: Arc<LogDirs>,
        options: LogOptions,
        rec: &recovery::Recovered,
        lock: Option<Box<dyn LockGuard>>,
        archiver: Option<Archiver>,
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
            segments: SegmentSet::new(
                storage,
                dirs,
                rec.segment_bytes,
                rec.list.starts.clone(),
                rec.info.start,
                options.preallocate,
            ),
            health: Health::new(),
            options,
            buffer,
            waiters: Waiters::new(),
            closing: AtomicBool::new(false),
            sync_requested: AtomicU64::new(0),
            sync_done: AtomicU64::new(0),
            sync_done_parker: Parker::new(),
            stats: Stats::default(),
            preparer: Preparer::default(),
            archiver,
            lock: Mutex::new(lock),
        }))
    }

    /// What the preparer may use: the segment files and the log's health.
    pub(crate) fn prepare_context(&self) -> PrepareContext<'_> {
        PrepareContext {
            segments: &self.segments,
            health: &self.health,
        }
    }

    /// Records the first failure and stops everything. Later failures are ignored: the
    /// first one is the cause.
    pub(crate) fn poison(&self, e: WalError) {
        let err = self.health.poison(e);
        self.buffer.stop();
        // Before the callbacks run: one of them may close the log, which joins the
        // daemon, which may be parked on the preparer (the preparer's own failure is the
        // usual reason it poisons).
        self.preparer.wake();
        self.waiters.fail_all(&WalError::Poisoned(err));
        self.sync_done_parker.notify_all();
    }

    /// The error a call should return if the log cannot take work.
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(e) = self.health.error() {
            return Err(e);
        }
        if self.closing.load(Ordering::Acquire) {
            return Err(WalError::Closed);
        }
        Ok(())
    }

    /// The error a wait should return if nothing will become durable any more.
    pub(crate) fn check_wait(&self) -> Result<()> {
        if let Some(e) = self.health.error() {
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
