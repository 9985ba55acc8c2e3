//! The store's operations on entry counts (`tree_count`): reading one, logging
//! snapshots, and counting a tree by a scan of its leaves.

use crate::btree::Btree;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::Record;
use crate::store::Store;
use crate::tree_count::{Counts, TreeLatch};
use std::sync::Arc;

impl Store {
    /// The exact number of entries in the tree at `root` now, committed or not: O(1),
    /// except once for a tree whose count is not known (see the module docs), which is
    /// counted by a scan under its latch held exclusively, and the count logged.
    pub(crate) fn entry_count(&self, root: PageId) -> Result<u64> {
        let t = self.tree_latch(root);
        if let Some(n) = t.known_entries() {
            return Ok(n);
        }
        let _x = t.write();
        if let Some(n) = t.known_entries() {
            return Ok(n);
        }
        let n = Btree::new(self, root, &t).count_leaf_entries()?;
        t.set(Some(n));
        self.snapshot(root, Some(n))?;
        Ok(n)
    }

    /// A new tree at `root` (empty): its count is 0, logged, whatever tree the page was
    /// the root of before.
    pub(crate) fn tree_created(&self, root: PageId) -> Result<Arc<TreeLatch>> {
        let t = self.fresh_latch(root);
        {
            let _x = t.write();
            t.set(Some(0));
            self.snapshot(root, Some(0))?;
        }
        Ok(t)
    }

    /// The tree at `root` is gone (its drop committed): marked dropped, so every handle
    /// on it — taken before or after, until a new tree is made on that root page —
    /// sees it, and its count forgotten (and logged as forgotten), so checkpoints stop
    /// saving it and a tree that reuses the page starts afresh. The caller holds the
    /// table's drop lock, so no transaction uses the tree.
    pub(crate) fn tree_dropped(&self, root: PageId) -> Result<()> {
        self.tree_latch(root).mark_dropped();
        self.forget_count(root)
    }

    /// Forgets the count of the tree at `root` (and logs that it is forgotten).
    pub(crate) fn forget_count(&self, root: PageId) -> Result<()> {
        let t = self.tree_latch(root);
        let _x = t.write();
        t.set(None);
        self.snapshot(root, None)
    }

    /// Installs the counts analysis rebuilt (before undo, which counts its own changes).
    pub(crate) fn install_counts(&self, counts: Counts) {
        for (tree, n) in counts.known {
            self.tree_latch(tree).set(Some(n));
        }
    }

    /// Logs a snapshot of every known count (a checkpoint, after its begin record): one
    /// record per tree, each under its latch held exclusively, which waits out the
    /// tree's changes in flight.
    pub(crate) fn log_counts(&self) -> Result<()> {
        let mut trees = self.trees_with_latches();
        trees.sort_by_key(|(root, _)| *root);
        for (root, t) in trees {
            let _x = t.write();
            if let Some(n) = t.known_entries() {
                self.snapshot(root, Some(n))?;
            }
        }
        Ok(())
    }

    /// Appends a count snapshot; the caller holds the tree latch exclusively. A
    /// read-only database logs nothing (recovery rebuilds the same counts next time).
    fn snapshot(&self, tree: PageId, entries: Option<u64>) -> Result<()> {
        if self.log.is_read_only() {
            return Ok(());
        }
        self.append(&Record::TreeCount { tree, entries })?;
        Ok(())
    }
}

impl Btree<'_> {
    /// The entries of every leaf, walking the leaf chain from the leftmost; the caller
    /// holds the tree latch exclusively (one leaf latched at a time).
    #[cfg_attr(not(test), allow(dead_code))]
    fn count_leaf_entries(&self) -> Result<u64> {
        let first = self.leaf_for(self.root, &[])?;
        let mut id = first.id();
        drop(first);
        let pages = {
            let p = self.store.pool.fetch(PageId::META)?;
            let g = p.read_valid()?;
            crate::page::Meta::page_count(&g)
        };
        let (mut n, mut seen) = (0u64, 0u64);
        while id.is_some() {
            seen += 1;
            if seen > pages {
                return Err(Error::Corruption(format!(
                    "tree {}: the leaf chain loops",
                    self.root
                )));
            }
            let p = self.store.pool.fetch(id)?;
            let g = p.read_valid()?;
            let leaf = Self::node_of(&g, id)?;
            if !leaf.is_leaf() {
                return Err(Error::Corruption(format!(
                    "tree {}: leaf chain reaches non-leaf {id}",
                    self.root
                )));
            }
            n += leaf.len() as u64;
            id = leaf.link();
        }
        Ok(n)
    }
}
