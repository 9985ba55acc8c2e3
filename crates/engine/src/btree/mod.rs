//! B+tree tables.
//!
//! Concurrency: each tree has a structure latch (an `RwLock`). Reads and ordinary writes
//! hold it shared, so internal nodes never change under them: they read internal nodes
//! under brief S latches without coupling, and S- or X-latch only the leaf. A write that
//! finds its leaf full drops everything and retakes the structure latch exclusively to
//! split (top-down along the path, one node per split), then writes. Splits are rare, so
//! serialising them per tree costs little and keeps the protocol obviously correct.
//!
//! Logging: leaf changes are physiological [`Record::Update`]s (redo by page, undo by
//! key) preceded, when needed, by a full page image (see `store`). A split is one
//! [`Record::Images`] carrying the compact after-images of every page it touched (the
//! node, its new sibling, the parent, the meta page): a redo-only system action that is
//! atomic because it is one record.
//!
//! [`Record::Update`]: crate::log_record::Record::Update
//! [`Record::Images`]: crate::log_record::Record::Images

mod count;
mod descend;
mod page_op;
mod remembered;
mod reverse;
mod scan;
mod split;
mod verify;
mod write;

pub(crate) use page_op::apply_op;
pub(crate) use remembered::RememberedLeaf;
pub(crate) use scan::{scan_batch, BatchEnd};
pub use verify::TreeReport;
pub(crate) use write::{ChangeLogger, ClrLogger, GapLocker, LeafChange, SetOutcome};

use crate::ids::PageId;
use crate::store::Store;

/// A B+tree: its root page and structure latch, on a page store. Its operations
/// (`get`, `set`, `set_locking`, `scan_batch`, `verify`) need the store (pages and the
/// log) and, for a change, a [`ChangeLogger`] that says how the change is logged; they know
/// nothing of transactions, locks or the database around them. Cheap to make for each
/// operation.
pub(crate) struct Btree<'s> {
    pub(crate) store: &'s Store,
    pub(crate) root: PageId,
    pub(crate) latch: &'s TreeLatch,
    /// Keys arrive in ascending runs anywhere in the tree (a large value's chunks), so a
    /// leaf that overflows on a key past its last keeps full everywhere, not only at the
    /// tree's end (see `make_room`).
    pub(crate) runs: bool,
}

impl<'s> Btree<'s> {
    pub(crate) fn new(store: &'s Store, root: PageId, latch: &'s TreeLatch) -> Btree<'s> {
        Btree {
            store,
            root,
            latch,
            runs: false,
        }
    }

    /// The same tree, for keys that arrive in ascending runs inside it (`runs`).
    pub(crate) fn for_runs(mut self) -> Btree<'s> {
        self.runs = true;
        self
    }

    /// Checks the tree's structure (see `verify`).
    pub(crate) fn verify(&self) -> crate::error::Result<TreeReport> {
        verify::verify_tree(self)
    }

    /// Checks the tree's structure and that its entry count matches it (see `verify`).
    pub(crate) fn verify_counted(&self) -> crate::error::Result<TreeReport> {
        verify::verify_tree_and_count(self)
    }
}

pub(crate) use crate::store::TreeLatch;

pub(crate) use crate::page::MAX_DEPTH;
