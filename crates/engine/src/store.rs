//! The page store: the buffer pool and the log that every page change is logged to.
//!
//! The narrow context the B+tree, recovery and the checkpoint work with: they change
//! pages and log the changes, and need nothing else of the database (not its locks,
//! transactions, options or files). [`Inner`](crate::inner::Inner) owns one.
//!
//! Torn-page protection (PostgreSQL's full_page_writes): the first change to a page whose
//! last full image is at or below a checkpoint's redo point is preceded by a full image
//! of the page in the log. Redo starts at or before that redo point, so for any page that
//! could have been torn by a write after the checkpoint the log holds a complete image to
//! restart from; records before that image are skipped for a page that fails its
//! checksum. The rule every page write must keep is enforced in
//! `BufferPool::write_frame`; the argument is in `checkpoint` and ARCHITECTURE.md.

use crate::buffer_pool::{BufferPool, PageWrite};
use crate::error::Result;
use crate::ids::PageId;
use crate::log_record::Record;
use crate::log_sink::LogSink;
use crate::page::Limits;
use parking_lot::{Mutex, RwLock};
use sluice_wal::Appended;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) use crate::tree_count::TreeLatch;

/// The buffer pool, the log, and what logging a page change needs.
pub(crate) struct Store {
    pub(crate) pool: BufferPool,
    /// The log — through a sink that, for a read-only database, sends the records
    /// recovery's undo writes nowhere (see [`LogSink`]).
    pub(crate) log: Arc<LogSink>,
    pub(crate) page_size: usize,
    pub(crate) limits: Limits,
    /// The redo point of the last checkpoint (its begin record): a page whose last full
    /// image is at or below it gets a new one logged before its next change.
    pub(crate) redo_point: AtomicU64,
    /// Structure latches and entry counts by tree root (`tree_count`).
    trees: Mutex<HashMap<PageId, Arc<TreeLatch>>>,
    /// Held shared by every allocation of pages (a split, a new table's root until its
    /// latch is registered); exclusively while compaction decides which pages nothing
    /// reaches and shortens the file, and while a dropped tree is freed (`space`).
    /// Taken before any page latch, never while holding one.
    pub(crate) space_gate: RwLock<()>,

    /// Test-only pause point: runs once, in the next split, after its record is logged
    /// and before its pages are installed and stamped (their X latches held throughout).
    #[cfg(test)]
    pub(crate) after_split_logged: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Store {
    pub(crate) fn new(
        pool: BufferPool,
        log: Arc<LogSink>,
        page_size: usize,
        redo_point: u64,
    ) -> Store {
        Store {
            pool,
            log,
            page_size,
            limits: Limits::for_page_size(page_size),
            redo_point: AtomicU64::new(redo_point),
            trees: Mutex::new(HashMap::new()),
            space_gate: RwLock::new(()),
            #[cfg(test)]
            after_split_logged: Mutex::new(None),
        }
    }

    /// The structure latch of the tree at `root`.
    pub(crate) fn tree_latch(&self, root: PageId) -> Arc<TreeLatch> {
        self.trees.lock().entry(root).or_default().clone()
    }

    /// A new latch for a new tree at `root`, replacing the one of a dropped tree whose
    /// root the page was (`Store::tree_created`).
    pub(crate) fn fresh_latch(&self, root: PageId) -> Arc<TreeLatch> {
        let t = Arc::new(TreeLatch::default());
        self.trees.lock().insert(root, t.clone());
        t
    }

    /// Every tree the store has a latch for, with it.
    pub(crate) fn trees_with_latches(&self) -> Vec<(PageId, Arc<TreeLatch>)> {
        let trees = self.trees.lock();
        trees.iter().map(|(r, t)| (*r, t.clone())).collect()
    }

    /// The roots of the trees whose structure latch something holds besides the store:
    /// a table handle, an operation, a root allocated and not yet in the catalog
    /// (`allocate_root`), a drop not yet committed or freed (its transaction holds the
    /// table). Compaction counts their pages in use even where the catalog does not
    /// reach them.
    pub(crate) fn latched_roots(&self) -> Vec<PageId> {
        self.trees
            .lock()
            .iter()
            .filter(|(_, t)| Arc::strong_count(t) > 1)
            .map(|(r, _)| *r)
            .collect()
    }

    /// Appends a record that belongs to no transaction.
    pub(crate) fn append(&self, rec: &Record) -> Result<Appended> {
        debug_assert!(rec.txn().is_none());
        Ok(self.log.append(&rec.encode())?)
    }

    /// Logs a full image of the X-latched page if its last image is at or below the
    /// current redo point, and stamps it. Call before logging a change to an existing
    /// page. This keeps images off the write path in the normal case: a page changed
    /// after the redo point R already has an image after R, so a checkpoint's sweep and
    /// later evictions write it without one (`BufferPool::write_frame` enforces the rule
    /// for the rare page that raced a checkpoint).
    pub(crate) fn protect_page(&self, w: &mut PageWrite<'_>) -> Result<()> {
        let redo = self.redo_point.load(Ordering::SeqCst);
        if w.image_lsn() <= redo {
            self.pool.log_full_image(w)?;
        }
        Ok(())
    }
}
