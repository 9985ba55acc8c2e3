//! Setting a key: insert, update and delete are all "make `key` map to `new`".

use crate::btree::page_op::{apply_op, fits, op_for};
use crate::btree::TreeLatch;
use crate::buffer_pool::PageWrite;
use crate::db::Inner;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::Record;
use crate::txn_table::TxnShared;
use sluice_wal::{Appended, Lsn};

/// Logs a leaf change before it is applied (the leaf is X-latched and protected).
pub(crate) trait ChangeLogger {
    /// Appends the record for `key` on `page` of `tree` going from `old` to `new`.
    fn log(
        &mut self,
        inner: &Inner,
        page: PageId,
        tree: PageId,
        key: &[u8],
        old: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<Appended>;
}

/// Logs undo steps as compensation records.
pub(crate) struct ClrLogger<'a> {
    pub(crate) txn: &'a TxnShared,
    /// Where undo continues after this step: the undone record's prevLSN.
    pub(crate) undo_next: Option<Lsn>,
}

impl ChangeLogger for ClrLogger<'_> {
    fn log(
        &mut self,
        inner: &Inner,
        page: PageId,
        _tree: PageId,
        key: &[u8],
        old: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<Appended> {
        let op = op_for(key, old, new).expect("only real changes are logged");
        let txn = self.txn.id;
        let undo_next = self.undo_next;
        self.txn.append(&inner.log, |prev| Record::Clr {
            txn,
            prev,
            page,
            op,
            undo_next,
        })
    }
}

impl Inner {
    /// Makes `key` map to `new` (`None`: absent) in the tree at `root`; returns the old
    /// value. The caller holds the key's X lock (or is recovery).
    pub(crate) fn tree_set(
        &self,
        latch: &TreeLatch,
        root: PageId,
        key: &[u8],
        new: Option<&[u8]>,
        logger: &mut dyn ChangeLogger,
    ) -> Result<Option<Vec<u8>>> {
        {
            let _shared = latch.read();
            let (_, leaf) = self.descend(root, key)?;
            let mut w = leaf.write_valid()?;
            if let Some(old) = self.try_apply(&mut w, root, key, new, logger)? {
                return Ok(old);
            }
        }
        let _exclusive = latch.write();
        let leaf = self.make_room(root, key, new)?;
        let mut w = leaf.write_valid()?;
        self.try_apply(&mut w, root, key, new, logger)?
            .ok_or_else(|| Error::Corruption(format!("no room in tree {root} after a split")))
    }

    /// Applies the change if the leaf has room: `Some(old)` if done (or nothing to do),
    /// `None` if the leaf must split first.
    fn try_apply(
        &self,
        w: &mut PageWrite<'_>,
        root: PageId,
        key: &[u8],
        new: Option<&[u8]>,
        logger: &mut dyn ChangeLogger,
    ) -> Result<Option<Option<Vec<u8>>>> {
        let (old, room) = {
            let n = Self::node_of(w.bytes(), w.id())?;
            if !n.is_leaf() {
                return Err(Error::Corruption(format!(
                    "descent ended at non-leaf {}",
                    w.id()
                )));
            }
            let old = n.search(key).ok().map(|i| n.value(i).to_vec());
            let room = fits(&n, key, old.as_deref(), new);
            (old, room)
        };
        if old.as_deref() == new {
            return Ok(Some(old));
        }
        if !room {
            return Ok(None);
        }
        self.protect_page(w)?;
        let a = logger.log(self, w.id(), root, key, old.as_deref(), new)?;
        let op = op_for(key, old.as_deref(), new).expect("a real change");
        apply_op(w.bytes_mut(), &op).expect("the change was checked to apply before logging");
        w.mark_dirty(a.lsn, a.end);
        Ok(Some(old))
    }

    /// The value of `key` in the tree at `root`. The caller holds an S or X lock on it.
    pub(crate) fn tree_get(
        &self,
        latch: &TreeLatch,
        root: PageId,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let _shared = latch.read();
        let (_, leaf) = self.descend(root, key)?;
        let g = leaf.read_valid()?;
        let n = Self::node_of(&g, leaf.id())?;
        Ok(n.search(key).ok().map(|i| n.value(i).to_vec()))
    }
}
