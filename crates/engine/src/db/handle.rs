//! The [`Database`] handle: transactions, checkpoints, closing, and what it reports.

use crate::buffer_pool::PoolStats;
use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::options::Options;
use crate::page::Limits;
use crate::propagation::Backlog;
use crate::recovery::RecoveryReport;
use crate::txn::{Retry, Transaction};
use sluice_wal::{Log, Lsn};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Counters of a database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Buffer-pool counters.
    pub pool: PoolStats,
    /// Log bytes so far (the released LSN).
    pub log_end: u64,
    /// The durable LSN.
    pub durable_lsn: u64,
    /// Active transactions.
    pub active_txns: usize,
}

/// An open database: a directory with a write-ahead log (`log/`), a data file (`data`)
/// and a control file (`CONTROL`). Cheap to clone; all clones are the same database.
#[derive(Clone)]
pub struct Database {
    /// Declared first so it is dropped first: see [`Handles`].
    pub(super) _handles: Arc<Handles>,
    pub(crate) inner: Arc<Inner>,
    pub(super) report: Arc<RecoveryReport>,
}

/// Shared by every clone of one [`Database`]. When the last clone goes, the background
/// checkpointer is stopped — waiting for a checkpoint in progress, and with it for the
/// strong reference that checkpoint holds — so the database closes (and frees its
/// directory lock) in that very drop, unless transactions still hold it.
pub(super) struct Handles {
    pub(super) inner: std::sync::Weak<Inner>,
}

impl Drop for Handles {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.checkpointer.stop();
            inner.propagation.stop();
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("dir", &self.inner.dir)
            .field("page_size", &self.inner.store.page_size)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// True if the database was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.inner.options.read_only
    }

    /// The options in force: those the database was opened with, except the page size
    /// and the log's segment size, which an existing database keeps from its creation
    /// (`read_only` says whether it was opened read-only).
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// Starts a transaction.
    pub fn begin(&self) -> Transaction {
        Transaction::new(self.inner.clone())
    }

    /// Runs `body` in a new transaction and commits it, running it again in a new
    /// transaction while an attempt loses a lock conflict (a deadlock victim or a lock
    /// timeout: [`Error::is_retryable`]), from the body or from the commit, for up to
    /// 30 s ([`Retry::default`]; [`Database::transaction_with`] takes another budget).
    /// Each lost attempt is rolled back, and the next one starts after a jittered,
    /// growing pause. Returns what the committed attempt's body returned.
    ///
    /// **Errors.** The body's error type is the application's own: any `E` that a
    /// [`sluice::Error`](Error) converts into (`?` on an operation converts), and
    /// `sluice::Error` itself. A body that returns `Err` aborts: the transaction rolls
    /// back and its error comes back unchanged, not retried — unless an operation of
    /// the attempt lost a lock conflict (the transaction's [`Transaction::failure`] is
    /// retryable), whatever error the body made of it. Any other engine error, and the
    /// last retryable one once the budget is spent, is returned converted into `E`.
    ///
    /// `body` may run more than once, so it should have no effects outside the
    /// transaction (or only ones that can be repeated).
    ///
    /// **Read-modify-write.** Read a key you will write with
    /// [`Transaction::get_for_update`], which takes the write lock at once. Read with
    /// `get`, two transactions both hold a shared lock on the key and both then wait for
    /// the other's to upgrade to a write lock: a deadlock, and one of them starts over
    /// (it does get through: a retried attempt wins the conflicts it meets against
    /// fresher ones, but every round costs an attempt).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = sluice::Database::open(dir.path()).unwrap();
    /// #[derive(Debug)]
    /// enum AppError {
    ///     Db(sluice::Error),
    ///     Overdrawn,
    /// }
    /// impl From<sluice::Error> for AppError {
    ///     fn from(e: sluice::Error) -> Self {
    ///         AppError::Db(e)
    ///     }
    /// }
    ///
    /// let t = db.table_or_create("accounts")?;
    /// let r = db.transaction(|tx| {
    ///     let balance = match tx.get_for_update(&t, b"ada")? {
    ///         Some(v) => u64::from_le_bytes(v.try_into().unwrap()),
    ///         None => 0,
    ///     };
    ///     let Some(left) = balance.checked_sub(10) else {
    ///         return Err(AppError::Overdrawn); // rolled back, returned as it is
    ///     };
    ///     tx.put(&t, b"ada", left.to_le_bytes())?;
    ///     Ok(left)
    /// });
    /// assert!(matches!(r, Err(AppError::Overdrawn)));
    /// # Ok::<(), sluice::Error>(())
    /// ```
    pub fn transaction<T, E: From<Error>>(
        &self,
        body: impl FnMut(&mut Transaction) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.transaction_with(Retry::default(), body)
    }

    /// [`Database::transaction`] within the budget `retry`: so many attempts
    /// ([`Retry::attempts`]), so long ([`Retry::for_time`]), or no retry
    /// ([`Retry::never`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = sluice::Database::open(dir.path()).unwrap();
    /// use sluice::Retry;
    /// let t = db.table_or_create("t")?;
    /// db.transaction_with(Retry::attempts(3), |tx| tx.put(&t, "k", "v"))?;
    /// # Ok::<(), sluice::Error>(())
    /// ```
    pub fn transaction_with<T, E: From<Error>>(
        &self,
        retry: Retry,
        body: impl FnMut(&mut Transaction) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        crate::txn::run_retrying(&self.inner, retry, body)
    }

    /// Takes a checkpoint now, on this thread: flushes dirty pages, records the active
    /// transactions, updates the control file and truncates the log below what recovery
    /// needs. A failure is returned, and poisons the database: every later operation
    /// fails with "checkpoint failed: …".
    ///
    /// A read-only database refuses it with [`Error::ReadOnly`].
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.check()?;
        if self.inner.options.read_only {
            return Err(Error::ReadOnly);
        }
        self.inner.checkpoint_now()
    }

    /// Checkpoints and closes the database — for every clone of this handle: their
    /// later calls (and those of the [`Table`](crate::Table)s and transactions they
    /// hold) return [`Error::Closed`]. The directory is let go at once: it can be opened
    /// again as soon as this returns, in this process or another, while clones still
    /// live.
    ///
    /// **Open transactions are rolled back**, not waited for: each one's later calls
    /// return [`Error::Closed`] and nothing it wrote is committed (the closing
    /// checkpoint records it as active, so the next open's recovery undoes what of it
    /// reached the disk). The close then returns [`Error::OpenTransactions`] with their
    /// number, to say so; the database is closed all the same.
    ///
    /// A database poisoned by an earlier failure (met by a client, or by a background
    /// thread after the client's last call) closes without the checkpoint and returns
    /// the poisoning. Closing twice (through two clones) is `Ok` the second time.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }

    /// Closes without the final checkpoint and without writing a page: the data file
    /// and the log stay as a crash at this moment would leave them (every acknowledged
    /// commit is in the log), so the next open runs restart recovery over everything
    /// since the last checkpoint. For measuring restart time
    /// (`sluice bench propagation`) and for tests ([`crate::testing::close_as_crashed`]).
    #[doc(hidden)]
    pub fn close_as_crashed(self) -> Result<()> {
        self.inner.close_without_checkpoint()
    }

    /// `Ok` while the database takes work; otherwise the error every operation returns:
    /// [`Error::Closed`], or [`Error::Poisoned`] after a failed write or sync of the
    /// disk or a failed checkpoint (reopen the directory to recover).
    pub fn health(&self) -> Result<()> {
        self.inner.check()
    }

    /// What restart recovery did when this database was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.report
    }

    /// The page size.
    pub fn page_size(&self) -> usize {
        self.inner.store.page_size
    }

    /// Key and value size limits.
    pub fn limits(&self) -> Limits {
        self.inner.store.limits
    }

    /// The write-ahead log (for durable-LSN notification: `wait_durable`, `on_durable`).
    pub fn log(&self) -> &Log {
        &self.inner.store.log
    }

    /// Blocks until the log is durable up to `lsn`.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        self.inner.store.log.wait_durable(lsn)?;
        Ok(())
    }

    /// A snapshot of the database's metrics, for a service to export: commit latency,
    /// lock waits and deadlocks, log flushes and bytes, pool hits and misses, checkpoint
    /// durations ([`crate::Metrics`]). Cheap enough to call every second.
    pub fn metrics(&self) -> crate::Metrics {
        // Each counter read from its home (`crate::metrics`).
        let db = &self.inner;
        let (log, pool) = (db.store.log.stats(), db.store.pool.stats());
        crate::Metrics {
            commit_latency: db.metrics.commits.snapshot(),
            lock_waits: db.locks.lock_waits.load(Ordering::Relaxed),
            deadlocks: db.locks.deadlocks.load(Ordering::Relaxed),
            lock_timeouts: db.locks.timeouts.load(Ordering::Relaxed),
            log_flushes: log.flushes,
            log_syncs: log.syncs,
            log_bytes: log.bytes_written,
            pool_hits: pool.hits,
            pool_misses: pool.reads,
            checkpoints: db.checkpoints.durations.snapshot(),
            archive: db.store.log.archived_lsn().map(|archived| {
                let l = &db.store.log;
                crate::metrics::ArchiveMetrics {
                    dir: l
                        .archive_dir()
                        .map_or(String::new(), |d| d.display().to_string()),
                    mirror: l.archive_mirror().map(|m| format!("{m:?}")),
                    archived_lsn: archived.0,
                    unarchived_bytes: l.durable_lsn().0.saturating_sub(archived.0),
                    segments_archived: log.segments_archived,
                    bytes_archived: log.bytes_archived,
                    error: l.archive_error().map(|e| e.to_string()),
                }
            }),
        }
    }

    /// Where update propagation stands ([`Options::propagation`]): dirty pages, REDO
    /// length, and what the strategy wrote. What `sluice bench propagation` samples.
    pub fn backlog(&self) -> Backlog {
        let inner = &self.inner;
        let (dirty_pages, oldest) = inner.store.pool.dirty_summary();
        let end = inner.store.log.released_lsn().0;
        let c = &inner.propagation.counters;
        let runs = inner.propagation.runs.get();
        Backlog {
            dirty_pages,
            redo_bytes: oldest.map_or(0, |o| end.saturating_sub(o)),
            propagated_bytes: c.propagated_bytes.load(Ordering::Relaxed),
            propagation_writes: c.propagation_writes.load(Ordering::Relaxed),
            propagation_busy_us: c.busy_nanos.load(Ordering::Relaxed) / 1000,
            propagation_write_us: c.write_nanos.load(Ordering::Relaxed) / 1000,
            eviction_writes: inner.store.pool.stats().victim_writes,
            propagated_lsn: c.propagated_lsn.load(Ordering::Relaxed),
            sorted_lsn: runs.map_or(0, |a| a.sorted_lsn().0),
            sorted_bytes: runs.map_or(0, |a| a.bytes_written()),
            fallback_pages: c.fallback_pages.load(Ordering::Relaxed),
            run_damage: c.run_damage.lock().clone(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        Stats {
            pool: self.inner.store.pool.stats(),
            log_end: self.inner.store.log.released_lsn().0,
            durable_lsn: self.inner.store.log.durable_lsn().0,
            active_txns: self.inner.txns.len(),
        }
    }
}
