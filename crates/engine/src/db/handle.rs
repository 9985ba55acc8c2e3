//! The [`Database`] handle: transactions, checkpoints, closing, and what it reports.

use crate::buffer_pool::PoolStats;
use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::options::Options;
use crate::page::Limits;
use crate::propagation::Backlog;
use crate::recovery::RecoveryReport;
use crate::txn::Transaction;
use sluice_wal::{Log, Lsn};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

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

    /// Runs `body` in a new transaction and commits it, retrying the whole transaction
    /// when it fails with a retryable error ([`Error::is_retryable`]: a deadlock victim
    /// or a lock-timeout), from the body or from the commit. Each failed attempt is rolled
    /// back before the next one, which starts after a randomised, growing pause (1 ms
    /// doubling to 64 ms, jittered, so that two victims of one deadlock do not meet
    /// again in step). After [`Database::TRANSACTION_ATTEMPTS`] attempts the last error
    /// is returned. Any other error is returned at once, after the rollback.
    ///
    /// `body` may run more than once, so it should have no effects outside the
    /// transaction (or only ones that can be repeated). Returns what the committed
    /// attempt's body returned.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = sluice::Database::open(dir.path()).unwrap();
    /// let t = db.table_or_create("counters")?;
    /// let n = db.transaction(|tx| {
    ///     let n = match tx.get_for_update(&t, b"hits")? {
    ///         Some(v) => u64::from_le_bytes(v.try_into().unwrap()) + 1,
    ///         None => 1,
    ///     };
    ///     tx.put(&t, b"hits", &n.to_le_bytes())?;
    ///     Ok(n)
    /// })?;
    /// assert_eq!(n, 1);
    /// # Ok::<(), sluice::Error>(())
    /// ```
    pub fn transaction<R>(&self, mut body: impl FnMut(&mut Transaction) -> Result<R>) -> Result<R> {
        let mut pause = Duration::from_millis(1);
        let mut attempt = 1;
        loop {
            let mut tx = self.begin();
            let r = match body(&mut tx) {
                Ok(v) => tx.commit().map(|()| v),
                Err(e) => tx.rollback().and(Err(e)),
            };
            match r {
                Err(e) if e.is_retryable() && attempt < Self::TRANSACTION_ATTEMPTS => {
                    let jitter = rand::Rng::gen_range(&mut rand::thread_rng(), 0.5..1.5);
                    std::thread::sleep(pause.mul_f64(jitter));
                    pause = (pause * 2).min(Duration::from_millis(64));
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    /// How many times [`Database::transaction`] runs a transaction that keeps failing
    /// with retryable errors before it gives up.
    pub const TRANSACTION_ATTEMPTS: u32 = 10;

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

    /// Checkpoints and closes. Transactions still open fail from then on. A database
    /// poisoned by an earlier failure (met by a client, or by a background thread after
    /// the client's last call) closes without the checkpoint and returns the poisoning.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }

    /// Closes without the final checkpoint and without writing a page: the data file
    /// and the log stay as a crash at this moment would leave them (every acknowledged
    /// commit is in the log), so the next open runs restart recovery over everything
    /// since the last checkpoint. For measuring restart time
    /// (`sluice bench propagation`) and for tests.
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
