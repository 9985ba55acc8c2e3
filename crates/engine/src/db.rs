//! The database: opening (with recovery), tables, transactions, closing.

use crate::btree::{verify_tree, TreeLatch};
use crate::buffer_pool::{BufferPool, PoolStats};
use crate::control::Control;
use crate::data_file::DataFile;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::lock::LockManager;
use crate::options::{Limits, Options};
use crate::page::{self, Meta};
use crate::recovery::{self, RecoveryReport};
use crate::txn::Transaction;
use crate::txn_table::TxnTable;
use parking_lot::Mutex;
use sluice_storage::{LockGuard, OsStorage, Storage};
use sluice_wal::{Log, Lsn};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The state shared by a database handle and its transactions.
pub(crate) struct Inner {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) dir: PathBuf,
    pub(crate) options: Options,
    pub(crate) page_size: usize,
    pub(crate) limits: Limits,
    pub(crate) log: Arc<Log>,
    pub(crate) pool: BufferPool,
    pub(crate) locks: LockManager,
    pub(crate) txns: TxnTable,
    /// The redo point of the last checkpoint (its begin record): a page whose PageLSN is
    /// at or below it gets a full image logged before its next change.
    pub(crate) redo_point: AtomicU64,
    /// Structure latches by tree root.
    trees: Mutex<HashMap<PageId, Arc<TreeLatch>>>,
    /// Table roots by name (roots never move, tables are never dropped).
    pub(crate) catalog: Mutex<HashMap<String, PageId>>,
    /// One checkpoint at a time.
    pub(crate) checkpoint_lock: Mutex<()>,
    /// Where the last checkpoint began (for the log-volume trigger).
    pub(crate) last_checkpoint: AtomicU64,
    closed: AtomicBool,
    /// Test-only pause point: runs once, inside the next checkpoint, right after its
    /// begin record and redo point (to drive races with that window deterministically).
    #[cfg(test)]
    pub(crate) after_checkpoint_begin: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    _lock: Box<dyn LockGuard>,
}

impl Inner {
    /// The structure latch of the tree at `root`.
    pub(crate) fn tree_latch(&self, root: PageId) -> Arc<TreeLatch> {
        self.trees
            .lock()
            .entry(root)
            .or_insert_with(|| Arc::new(TreeLatch::new(())))
            .clone()
    }

    /// An error if the database cannot take work.
    pub(crate) fn check(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed("database"));
        }
        if let Some(p) = self.pool.poisoned() {
            return Err(Error::Poisoned(p));
        }
        if let Some(e) = self.log.poisoned() {
            return Err(Error::Poisoned(format!("log: {e}")));
        }
        Ok(())
    }

    /// Takes a checkpoint if the log grew past the configured volume since the last one
    /// (and no other checkpoint is running). Failures poison the database and surface
    /// on the next operation.
    pub(crate) fn maybe_checkpoint(&self) {
        let every = self.options.checkpoint_log_bytes;
        let since = self
            .log
            .released_lsn()
            .0
            .saturating_sub(self.last_checkpoint.load(Ordering::Acquire));
        if every > 0 && since >= every {
            if let Some(guard) = self.checkpoint_lock.try_lock() {
                let _ = crate::checkpoint::run(self, &guard);
            }
        }
    }

    fn close(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        let r = if self.check().is_ok() {
            let guard = self.checkpoint_lock.lock();
            crate::checkpoint::run(self, &guard)
        } else {
            Ok(())
        };
        self.closed.store(true, Ordering::Release);
        let closed = self.log.close().map(|_| ()).map_err(Error::from);
        r.and(closed)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Best effort; `Database::close` reports errors.
        let _ = self.close();
    }
}

/// What [`Database::verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Tables checked (the catalog not included).
    pub tables: usize,
    /// Entries over all tables.
    pub entries: u64,
    /// Pages in the data file, each read back from disk with a valid checksum.
    pub pages: u64,
}

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
    pub(crate) inner: Arc<Inner>,
    report: Arc<RecoveryReport>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("dir", &self.inner.dir)
            .field("page_size", &self.inner.page_size)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// Opens (creating if needed) the database in `dir` on `storage`, running restart
    /// recovery. Fails with [`Error::Locked`] if another handle holds it.
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: Options,
    ) -> Result<Database> {
        let log_dir = dir.as_ref().join("log");
        Database::open_with_log(storage.clone(), dir, storage, log_dir, options)
    }

    /// As [`Database::open`], with the log in `log_dir` on its own storage — for example
    /// on another device, or behind a [`sluice_storage::DeviceModel`] that emulates a log
    /// device with a given latency, as the commit-protocol experiments do. The same
    /// `log_dir` must be given every time the database is opened.
    pub fn open_with_log(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        log_storage: Arc<dyn Storage>,
        log_dir: impl AsRef<Path>,
        options: Options,
    ) -> Result<Database> {
        options.check()?;
        let dir = dir.as_ref().to_path_buf();
        storage.create_dir_all(&dir)?;
        let lock = storage.lock(&dir.join("LOCK")).map_err(|e| {
            if e.kind() == io::ErrorKind::WouldBlock {
                Error::Locked(dir.display().to_string())
            } else {
                Error::from(e)
            }
        })?;
        let control = Control::read(&*storage, &dir)?;
        let page_size = control.map_or(options.page_size, |c| c.page_size as usize);
        Options {
            page_size,
            ..options
        }
        .check()
        .map_err(|e| Error::Corruption(format!("control file: {e}")))?;
        let log = Arc::new(Log::open(log_storage, log_dir.as_ref(), options.log)?);
        let file = DataFile::open(&*storage, &dir.join("data"), page_size)?;
        // The data file's directory entry must be durable before anything relies on it.
        storage.sync_dir(&dir)?;
        let pool = BufferPool::new(options.pool_pages, page_size, file, log.clone());
        let inner = Inner {
            storage,
            dir,
            options,
            page_size,
            limits: Limits::for_page_size(page_size),
            log,
            pool,
            locks: LockManager::new(options.lock_timeout),
            txns: TxnTable::new(1),
            redo_point: AtomicU64::new(control.map_or(0, |c| c.begin.0)),
            trees: Mutex::new(HashMap::new()),
            catalog: Mutex::new(HashMap::new()),
            checkpoint_lock: Mutex::new(()),
            last_checkpoint: AtomicU64::new(control.map_or(0, |c| c.begin.0)),
            closed: AtomicBool::new(false),
            #[cfg(test)]
            after_checkpoint_begin: Mutex::new(None),
            _lock: lock,
        };
        let report = recovery::recover(&inner, control)?;
        {
            let guard = inner.checkpoint_lock.lock();
            crate::checkpoint::run(&inner, &guard)?;
        }
        Ok(Database {
            inner: Arc::new(inner),
            report: Arc::new(report),
        })
    }

    /// Opens (creating if needed) the database in directory `path` on the real file
    /// system with default options.
    pub fn open_path(path: impl AsRef<Path>) -> Result<Database> {
        Database::open(Arc::new(OsStorage::new()), path, Options::default())
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// Starts a transaction.
    pub fn begin(&self) -> Transaction {
        Transaction::new(self.inner.clone())
    }

    /// Takes a checkpoint now: flushes dirty pages, records the active transactions,
    /// updates the control file and truncates the log below what recovery needs.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.check()?;
        let guard = self.inner.checkpoint_lock.lock();
        crate::checkpoint::run(&self.inner, &guard)
    }

    /// Checkpoints and closes. Transactions still open fail from then on.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }

    /// What restart recovery did when this database was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.report
    }

    /// The page size.
    pub fn page_size(&self) -> usize {
        self.inner.page_size
    }

    /// Key and value size limits.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// The write-ahead log (for durable-LSN notification: `wait_durable`, `on_durable`).
    pub fn log(&self) -> &Log {
        &self.inner.log
    }

    /// Blocks until the log is durable up to `lsn`.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        self.inner.log.wait_durable(lsn)?;
        Ok(())
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        Stats {
            pool: self.inner.pool.stats(),
            log_end: self.inner.log.released_lsn().0,
            durable_lsn: self.inner.log.durable_lsn().0,
            active_txns: self.inner.txns.len(),
        }
    }

    /// Checkpoints, then checks every table (levels, key order, separators, leaf chain)
    /// and reads every page of the data file back from disk to verify its checksum.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.checkpoint()?;
        let inner = &self.inner;
        let mut report = VerifyReport::default();
        verify_tree(inner, &inner.tree_latch(PageId::CATALOG), PageId::CATALOG)?;
        for name in self.table_names()? {
            let t = self.table(&name)?;
            let r = verify_tree(inner, &t.latch, t.root)?;
            report.tables += 1;
            report.entries += r.entries;
        }
        let count = {
            let p = inner.pool.fetch(PageId::META)?;
            let g = p.read_valid()?;
            Meta::page_count(&g)
        };
        let mut buf = vec![0u8; inner.page_size];
        for id in 0..count {
            inner.pool.read_disk(PageId(id), &mut buf)?;
            if !page::checksum_ok(&buf) {
                return Err(Error::Corruption(format!(
                    "page {id} on disk fails its checksum"
                )));
            }
            page::validate(&buf, PageId(id))
                .map_err(|e| Error::Corruption(format!("page {id} on disk: {e}")))?;
        }
        report.pages = count;
        Ok(report)
    }
}
