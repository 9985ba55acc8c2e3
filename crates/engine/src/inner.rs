//! The state a database handle shares with its transactions and agents: the page store,
//! the lock manager, the transaction table, the catalog, the checkpoint state and the
//! background checkpointer. It composes the layers below it and is known only to the
//! layers above (the transaction, the commit sequencer, the catalog, the handle): the
//! B+tree, recovery, the checkpoint and the propagation jobs are given narrow contexts,
//! never this. What they do lives with them (`checkpoint`, `propagation`); the methods
//! here only hand them their context.

use crate::checkpoint::{self, Checkpointer, Checkpointing, Checkpoints};
use crate::error::{Error, Result};
use crate::health::Health;
use crate::ids::PageId;
use crate::lock::LockManager;
use crate::options::Options;
use crate::propagation::{jobs, Occasion, Propagation};
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
    /// Update propagation: strategy, counters, run store, page cleaner and sorter.
    pub(crate) propagation: Propagation,
    /// The first failed checkpoint, background job or undecidable commit; the database
    /// refuses work from then on (`check`).
    pub(crate) health: Health,
    /// True once `open` succeeded: only then may closing checkpoint (the teardown of a
    /// failed open must do nothing that can fail or panic and mask the real error).
    pub(crate) opened: AtomicBool,
    pub(crate) closed: AtomicBool,
    /// What a partitioned database installed (`coordination`); none for an ordinary one.
    pub(crate) hooks: crate::coordination::Hooks,
    /// The directory lock, let go when the database closes (`let_go`), whoever still
    /// holds this state. `None` only for a read-only database in a directory without a
    /// `LOCK` file, and once closed.
    pub(crate) lock: Mutex<Option<Box<dyn LockGuard>>>,
    /// What `Database::metrics` reports that has no other home (`crate::metrics`).
    pub(crate) metrics: crate::metrics::Recorder,
}

impl Inner {
    /// An error if the database cannot take work.
    pub(crate) fn check(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed("database"));
        }
        self.health.check()?;
        if let Some(p) = self.store.pool.poisoned() {
            return Err(Error::Poisoned(p));
        }
        if let Some(e) = self.store.log.poisoned() {
            return Err(Error::Poisoned(format!("log: {e}")));
        }
        Ok(())
    }

    /// Called by committing threads: wakes the background checkpointer if a checkpoint
    /// is due ([`Checkpointing::wake_if_due`]). Never runs one on the calling thread.
    pub(crate) fn maybe_checkpoint(&self) {
        self.checkpointing().wake_if_due();
    }

    /// A checkpoint now, on this thread; a failure poisons the database and is returned.
    pub(crate) fn checkpoint_now(&self) -> Result<()> {
        self.checkpoint_with(false)
    }

    /// The checkpoint that ends restart recovery: under a page cleaner or log
    /// propagation it writes no page (fuzzy), so the open does not wait for the pages
    /// redo changed; under the default sweep it writes them, as every checkpoint does.
    pub(crate) fn checkpoint_after_recovery(&self) -> Result<()> {
        self.checkpointing().now(Occasion::AfterRecovery)
    }

    /// A checkpoint now; `closing`: the last one before close (or `verify`'s), which
    /// writes every dirty page whatever the strategy, so a clean close leaves nothing to
    /// redo.
    pub(crate) fn checkpoint_with(&self, closing: bool) -> Result<()> {
        let occasion = if closing {
            Occasion::Closing
        } else {
            Occasion::Routine
        };
        self.checkpointing().now(occasion)
    }

    /// What triggering and taking a checkpoint works on.
    fn checkpointing(&self) -> Checkpointing<'_> {
        Checkpointing {
            scope: checkpoint::Scope {
                store: &self.store,
                txns: &self.txns,
                storage: &*self.storage,
                dir: &self.dir,
                log_dir: &self.log_dir,
                database_id: self.database_id,
                state: &self.checkpoints,
                propagation: &self.propagation,
                keep_runs: self.options.keep_runs,
                truncation_cap: self.hooks.truncation_cap.as_ref(),
            },
            options: &self.options,
            segment_bytes: self.log_segment_bytes,
            checkpointer: &self.checkpointer,
            health: &self.health,
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
            redone_below: self.hooks.redone_below,
            progress: self.hooks.recovery_progress.as_deref(),
        }
    }

    /// Read-write, under the log strategy: opens the run store (in `archive/` of the
    /// database directory) and starts from `propagated` (`jobs::open_runs`).
    pub(crate) fn open_runs(&self, propagated: sluice_wal::Lsn) -> Result<()> {
        if self.options.read_only {
            return Ok(());
        }
        jobs::open_runs(
            &self.propagation,
            self.storage.clone(),
            &self.dir,
            propagated,
        )
    }

    /// Starts the page cleaner or the sorter, as the strategy needs (read-write only).
    pub(crate) fn start_propagation(self: &Arc<Self>) -> std::io::Result<()> {
        if self.options.read_only {
            return Ok(());
        }
        jobs::start(self)
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
        let r = self.store.log.close().map(|_| ()).map_err(Error::from);
        self.let_go();
        r
    }

    /// The end of every close: no page is written from now on, and the directory lock
    /// is released, so the directory can be opened again at once, even while clones of
    /// the handle or transactions still hold this state (their calls return
    /// [`Error::Closed`]).
    fn let_go(&self) {
        self.store.pool.close();
        drop(self.lock.lock().take());
    }

    /// Closes: background work stopped, the last checkpoint (read-write, healthy), the
    /// log closed, the directory let go. Transactions still open are rolled back: their
    /// later calls return [`Error::Closed`], nothing they wrote is committed (the closing
    /// checkpoint lists them as active, so the next open's restart recovery undoes what
    /// reached the disk), and the close returns [`Error::OpenTransactions`] with their
    /// number once it is done.
    pub(crate) fn close(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        self.checkpointer.stop();
        self.propagation.stop();
        // A poisoned database takes no final checkpoint, and its close says why: a
        // background thread (the page cleaner, the sorter, the checkpointer) may have
        // met the failure after the client's last call, and a close that returned `Ok`
        // would be the only word the client ever got about it (the I/O-error sweep found
        // such runs ending in "success" with persistent EIO on the disk).
        let r = if self.opened.load(Ordering::Acquire) && !self.options.read_only {
            self.check().and_then(|()| self.checkpoint_with(true))
        } else {
            Ok(())
        };
        self.closed.store(true, Ordering::Release);
        let open = self.txns.len();
        let closed = self.store.log.close().map(|_| ()).map_err(Error::from);
        self.let_go();
        r.and(closed).and(match open {
            0 => Ok(()),
            n => Err(Error::OpenTransactions(n)),
        })
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
    /// is healthy ([`Checkpointing::round`]).
    fn round(&self) {
        if self.check().is_ok() {
            self.checkpointing().round();
        }
    }

    /// The interval counts from the last checkpoint.
    fn period_from(&self) -> Option<Instant> {
        Some(*self.checkpoints.last_at.lock())
    }
}

impl jobs::Owner for Inner {
    fn check(&self) -> Result<()> {
        Inner::check(self)
    }

    fn propagation_context(&self) -> jobs::Context<'_> {
        jobs::Context {
            pool: &self.store.pool,
            log: &self.store.log,
            propagation: &self.propagation,
            health: &self.health,
            run_bytes: self.options.run_bytes,
            cleaner_interval: self.options.cleaner_interval,
        }
    }
}
