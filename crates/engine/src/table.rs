//! A table handle: a name, a B+tree root and its structure latch, bound to the database
//! instance that gave it out.

use crate::btree::TreeLatch;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::inner::Inner;
use std::sync::{Arc, Weak};

/// A table: a handle to a B+tree, used with a [`Transaction`](crate::Transaction).
/// Cheap to clone.
///
/// A handle belongs to the [`Database`](crate::Database) instance that returned it (and its clones). A
/// transaction of another database refuses it with
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) — even one whose table has
/// the same root page, which it would otherwise read and write — and so does a later
/// opening of the same directory: after a reopen, get the handle again with
/// [`Database::table`](crate::Database::table).
#[derive(Clone)]
pub struct Table {
    pub(crate) name: Arc<str>,
    pub(crate) root: PageId,
    pub(crate) latch: Arc<TreeLatch>,
    /// The database instance: compared by address. A weak reference keeps the
    /// allocation (not the database) alive, so the address cannot be reused by another
    /// instance while this handle exists.
    db: Weak<Inner>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Table({:?} at {})", self.name, self.root)
    }
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The table's root page, which also identifies it within its database.
    pub fn id(&self) -> PageId {
        self.root
    }

    /// True if the handle was given out by this database instance.
    pub(crate) fn belongs_to(&self, inner: &Arc<Inner>) -> bool {
        std::ptr::eq(self.db.as_ptr(), Arc::as_ptr(inner))
    }

    pub(crate) fn new(inner: &Arc<Inner>, name: &str, root: PageId) -> Table {
        let latch = inner.store.tree_latch(root);
        latch.hand_out();
        Table {
            name: Arc::from(name),
            root,
            latch,
            db: Arc::downgrade(inner),
        }
    }
}

/// The longest table name, in bytes.
pub const MAX_TABLE_NAME: usize = 255;

pub(crate) fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_TABLE_NAME {
        return Err(Error::InvalidArgument(format!(
            "table name of {} bytes: must be 1..={MAX_TABLE_NAME}",
            name.len()
        )));
    }
    Ok(())
}

pub(crate) fn decode_root(name: &str, v: &[u8]) -> Result<PageId> {
    let b: [u8; 8] = v
        .try_into()
        .map_err(|_| Error::Corruption(format!("catalog entry of {name:?} is malformed")))?;
    Ok(PageId(u64::from_le_bytes(b)))
}
