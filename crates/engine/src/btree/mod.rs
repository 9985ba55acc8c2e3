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
//! key) preceded, when needed, by a full page image (see `logging`). A split is one
//! [`Record::Images`] carrying the compact after-images of every page it touched (the
//! node, its new sibling, the parent, the meta page): a redo-only system action that is
//! atomic because it is one record.
//!
//! [`Record::Update`]: crate::log_record::Record::Update
//! [`Record::Images`]: crate::log_record::Record::Images

mod descend;
mod page_op;
mod scan;
mod split;
mod verify;
mod write;

pub(crate) use page_op::apply_op;
pub(crate) use scan::{scan_batch, BatchEnd};
pub(crate) use verify::verify_tree;
pub use verify::TreeReport;
pub(crate) use write::{ChangeLogger, ClrLogger, GapLocker, SetOutcome};

use parking_lot::RwLock;

/// A tree's structure latch.
pub(crate) type TreeLatch = RwLock<()>;

/// The deepest a tree may be; a longer path means a cycle in corrupt pages.
pub(crate) const MAX_DEPTH: usize = 32;
