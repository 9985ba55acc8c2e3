//! The state a database handle shares with its transactions and agents: the page store,
//! the lock manager, the transaction table, the catalog, the checkpoint state and the
//! background checkpointer. It composes the layers below it and is known only to the
//! layers above (the transaction, the commit sequencer, the catalog, the handle): the
//! B+tree, recovery and the checkpoint are given narrow contexts, never this.

use crate::checkpoint::{self, Checkpoints};
use crate::checkpointer::{self, Checkpointer, LogState, Trigger};
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::lock::LockManager;
use crate::options::Options;
use crate::propagation::Propagation;
use crate::recovery;
use crate::store::Store;
use crate::txn_table::TxnTable;
use parking_lot::Mutex;
use sluice_storage::{LockGuard, Storage};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The state shared by a database handle and its transactions.
pub(crate) struct Inner {
    /// Pages and the log.
    pub(crate) store: Store,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) dir: PathBuf,
    pub(crate) log_dir: PathBuf,
    /// LSN bytes per log segment (to name a missing segment file).
    pub(crate) log_segment_bytes: u64,
    pub(crate) options: Options,
    /// The random id chosen when the database was created (kept in `CONTROL`).
    pub(crate) database_id: u64,
    pub(crate) locks: LockManager,
    pub(crate) txns: TxnTable,
    /// Table roots by name (roots never move, tables are never dropped).
    pub(crate) catalog: Mutex<HashMap<String, PageId>>,
    pub(crate) checkpoints: Checkpoints,
    pub(crate) checkpointer: Checkpointer,
    /// Update propagation: strategy, counters, archive, page cleaner and archiver.
    pub(crate) propagation: Propagation,
    /// The first failed checkpoint; the database refuses work from then on.
    pub(crate) poison: Mutex<Option<String>>,
    /// `poison` is set (read on every operation, so no mutex in the common case).
    pub(crate) poisoned: AtomicBool,
    /// True once `open` succeeded: only then may closing checkpoint (the teardown of a
    /// failed open must do nothing that can fail or panic and mask the real error).
    pub(crate) opened: AtomicBool,
    pub(crate) closed: AtomicBool,
    /// What a partitioned database installed (`coordination`); none for an ordinary one.
    pub(crate) hooks: crate::coordination::Hooks,
    /// `None` only for a read-only database in a directory without a `LOCK` file.
    pub(crate) _lock: Option<Box<dyn LockGuard>>,
}

impl Inner {
    /// An error if the database cannot take work.
    pub(crate) fn check(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed("database"));
        }
        if self.poisoned.load(Ordering::Acquire) {
            let p = self.poison.lock().clone().expect("poisoned with a cause");
            return Err(Error::Poisoned(p));
        }
        if let Some(p) = self.store.pool.poisoned() {
            return Err(Error::Poisoned(p));
        }
        if let Some(e) = self.store.log.poisoned() {
            return Err(Error::Poisoned(format!("log: {e}")));
        }
        Ok(())
    }

    /// Refuses work from now on, for `cause` (a partitioned database whose commit
    /// outcome is in doubt after an I/O error: restart recovery decides it).
    pub(crate) fn poison_with(&self, cause: &dyn std::fmt::Display) {
        let mut p = self.poison.lock();
        if p.is_none() {
            *p = Some(cause.to_string());
        }
        self.poisoned.store(true, Ordering::Release);
    }

    /// Records a failed checkpoint: every later operation fails with it.
    pub(crate) fn poison_checkpoint(&self, cause: &dyn std::fmt::Display) {
        let mut p = self.poison.lock();
        if p.is_none() {
            *p = Some(format!("checkpoint failed: {cause}"));
        }
        self.poisoned.store(true, Ordering::Release);
    }

    /// Which trigger, if any, calls for a checkpoint now (`checkpointer::due`). Without
    /// `with_timer`, a few atomic loads: what a committing thread pays.
    pub(crate) fn checkpoint_due(&self, with_timer: bool) -> Option<Trigger> {
        let state = LogState {
            end: self.store.log.released_lsn().0,
            start: self.store.log.start_lsn().0,
            last_begin: self.checkpoints.last_begin.load(Ordering::Acquire),
            last_end: self.checkpoints.last_end.load(Ordering::Acquire),
            segment_bytes: self.log_segment_bytes,
        };
        let elapsed = with_timer.then(|| self.checkpoints.last_at.lock().elapsed());
        checkpointer::due(&self.options, state, elapsed)
    }

    /// Called by committing threads: wakes the background checkpointer if a checkpoint
    /// is due. Never runs one on the calling thread.
    ///
    /// Under the page strategy, log-space pressure also wakes the page cleaner: only
    /// written pages let the log be truncated, and its checkpoints write none.
    pub(crate) fn maybe_checkpoint(&self) {
        if self.options.read_only {
            return;
        }
        if let Some(trigger) = self.checkpoint_due(false) {
            if trigger == Trigger::Pressure
                && matches!(
                    self.propagation.strategy,
                    crate::propagation::Strategy::Page(_)
                )
            {
                self.propagation.cleaner.notify();
            }
            self.checkpointer.notify();
        }
    }

    /// A checkpoint now, on this thread; a failure poisons the database and is returned.
    pub(crate) fn checkpoint_now(&self) -> Result<()> {
        self.checkpoint_with(false)
    }

    /// The checkpoint that ends restart recovery: under a page cleaner or log
    /// propagation it writes no page (fuzzy), so the open does not wait for the pages
    /// redo changed; under the default sweep it writes them, as every checkpoint does.
    pub(crate) fn checkpoint_after_recovery(&self) -> Result<()> {
        let guard = self.checkpoints.lock.lock();
        let mut scope = self.checkpoint_scope();
        scope.fuzzy = self.propagation.strategy != crate::propagation::Strategy::CheckpointSweep;
        checkpoint::run(&scope, &guard).inspect_err(|e| self.poison_checkpoint(e))
    }

    /// A checkpoint now; `closing`: the last one before close (or `verify`'s), which
    /// writes every dirty page whatever the strategy, so a clean close leaves nothing to
    /// redo.
    pub(crate) fn checkpoint_with(&self, closing: bool) -> Result<()> {
        let guard = self.checkpoints.lock.lock();
        let mut scope = self.checkpoint_scope();
        scope.sweep_all = closing;
        checkpoint::run(&scope, &guard).inspect_err(|e| self.poison_checkpoint(e))
    }

    /// What a checkpoint works on.
    fn checkpoint_scope(&self) -> checkpoint::Scope<'_> {
        checkpoint::Scope {
            store: &self.store,
            txns: &self.txns,
            storage: &*self.storage,
            dir: &self.dir,
            log_dir: &self.log_dir,
            database_id: self.database_id,
            state: &self.checkpoints,
            propagation: &self.propagation,
            keep_archive: self.options.keep_archive,
            sweep_all: false,
            fuzzy: false,
            truncation_cap: self.hooks.truncation_cap.as_ref(),
        }
    }

    /// What restart recovery works on.
    pub(crate) fn recovery_context(&self) -> recovery::Context<'_> {
        recovery::Context {
            store: &self.store,
            txns: &self.txns,
            log_dir: &self.log_dir,
            segment_bytes: self.log_segment_bytes,
            in_doubt: self.hooks.in_doubt.as_ref(),
        }
    }

    /// Closes as a crash would: background threads stopped, no checkpoint, no page
    /// written; the log closed (what is durable stays so).
    pub(crate) fn close_without_checkpoint(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        self.checkpointer.stop();
        self.propagation.stop();
        self.closed.store(true, Ordering::Release);
        self.store.log.close().map(|_| ()).map_err(Error::from)
    }

    pub(crate) fn close(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        self.checkpointer.stop();
        self.propagation.stop();
        // A poisoned database takes no final checkpoint, and its close says why: a
        // background thread (the page cleaner, the archiver, the checkpointer) may have
        // met the failure after the client's last call, and a close that returned `Ok`
        // would be the only word the client ever got about it (the I/O-error sweep found
        // such runs ending in "success" with persistent EIO on the disk).
        let r = if self.opened.load(Ordering::Acquire) && !self.options.read_only {
            self.check().and_then(|()| self.checkpoint_with(true))
        } else {
            Ok(())
        };
        self.closed.store(true, Ordering::Release);
        let closed = self.store.log.close().map(|_| ()).map_err(Error::from);
        r.and(closed)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Best effort; `Database::close` reports errors.
        let _ = self.close();
    }
}

impl crate::worker::Job for Inner {
    /// The background checkpointer's work: a checkpoint if one is due and the database
    /// is healthy. A failure poisons the database.
    fn round(&self) {
        if self.check().is_err() || self.checkpoint_due(true).is_none() {
            return;
        }
        // A checkpoint someone asked for is running: it resets the triggers.
        let Some(guard) = self.checkpoints.lock.try_lock() else {
            return;
        };
        // A panic (a broken invariant) must not kill the thread silently and leave the
        // database running without checkpoints: it is a failed checkpoint like any other.
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            checkpoint::run(&self.checkpoint_scope(), &guard)
        }));
        match run {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.poison_checkpoint(&e),
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic".into());
                self.poison_checkpoint(&format!("panic: {msg}"));
            }
        }
    }

    /// The interval counts from the last checkpoint.
    fn period_from(&self) -> Option<Instant> {
        Some(*self.checkpoints.last_at.lock())
    }
}

/// The page cleaner's job: a round of the policy over the pool.
struct CleanerJob(std::sync::Weak<Inner>);

impl crate::worker::Job for CleanerJob {
    fn round(&self) {
        let Some(inner) = self.0.upgrade() else {
            return;
        };
        let crate::propagation::Strategy::Page(cfg) = inner.propagation.strategy else {
            return;
        };
        if inner.check().is_err() {
            return;
        }
        let r = crate::propagation::page_cleaner::round(
            &inner.store.pool,
            cfg,
            &inner.propagation.counters,
        );
        if let Err(e) = r {
            inner.poison_background("page cleaner", &e);
        }
    }
}

/// The archiver's job: archive the durable log once a run's worth has accumulated.
struct ArchiverJob(std::sync::Weak<Inner>);

impl crate::worker::Job for ArchiverJob {
    fn round(&self) {
        let Some(inner) = self.0.upgrade() else {
            return;
        };
        if inner.check().is_err() {
            return;
        }
        let Some(archive) = inner.propagation.archive.get() else {
            return;
        };
        let durable = inner.store.log.durable_lsn();
        let behind = durable.0.saturating_sub(archive.archived_lsn().0);
        if behind < inner.options.archive_run_bytes {
            return;
        }
        if let Err(e) = archive.catch_up(&inner.store.log, durable) {
            inner.poison_background("archiver", &e);
        }
    }
}

impl Inner {
    /// Records a failed background job: every later operation fails with it.
    pub(crate) fn poison_background(&self, what: &str, cause: &dyn std::fmt::Display) {
        let mut p = self.poison.lock();
        if p.is_none() {
            *p = Some(format!("{what} failed: {cause}"));
        }
        self.poisoned.store(true, Ordering::Release);
    }

    /// Log strategy, read-write: opens the archive (in `archive/` of the database
    /// directory) and starts from `propagated`, below which the data file holds every
    /// change (where restart recovery's redo began, or the end of the log if it had
    /// nothing to redo).
    pub(crate) fn open_archive(&self, propagated: sluice_wal::Lsn) -> Result<()> {
        use crate::propagation::{archive::Archive, Strategy};
        if self.options.read_only || self.propagation.strategy != Strategy::Log {
            return Ok(());
        }
        let archive = Archive::open(self.storage.clone(), &self.dir.join("archive"))?;
        let _ = self.propagation.archive.set(archive);
        self.propagation
            .counters
            .propagated_lsn
            .store(propagated.0, Ordering::Release);
        Ok(())
    }

    /// Starts the page cleaner or the archiver, as the strategy needs (read-write only).
    pub(crate) fn start_propagation(self: &Arc<Self>) -> std::io::Result<()> {
        use crate::{propagation::Strategy, worker::Job};
        if self.options.read_only {
            return Ok(());
        }
        let weak = Arc::downgrade(self);
        match self.propagation.strategy {
            Strategy::CheckpointSweep => {}
            Strategy::Page(_) => {
                // Eviction pressure: a fetch that has to write a dirty victim wakes it.
                let hook = weak.clone();
                self.store.pool.set_dirty_victim_hook(Box::new(move || {
                    if let Some(inner) = hook.upgrade() {
                        inner.propagation.cleaner.notify();
                    }
                }));
                let job: Arc<dyn Job> = Arc::new(CleanerJob(weak));
                self.propagation.cleaner.start(
                    "sluice-cleaner",
                    Arc::downgrade(&job),
                    self.options.cleaner_interval,
                )?;
                self.propagation.jobs.lock().push(job);
            }
            Strategy::Log => {
                let job: Arc<dyn Job> = Arc::new(ArchiverJob(weak));
                let period = std::time::Duration::from_millis(50);
                self.propagation
                    .archiver
                    .start("sluice-archiver", Arc::downgrade(&job), period)?;
                self.propagation.jobs.lock().push(job);
            }
        }
        Ok(())
    }
}
