//! Exact per-tree entry counts, O(1) to read and kept across crashes.
//!
//! Each tree's count lives beside its structure latch ([`TreeLatch`]), so every handle on
//! the tree reaches it without a lookup. The rule has one home: `Btree::try_apply`, the
//! one place a leaf gains or loses a key — forward changes, rollback's compensations,
//! restart undo, large-value chunk trees — adds ±1 while it holds the tree latch (shared
//! or exclusive), right after logging the change. Redo never counts: recovery rebuilds
//! the counts from the log instead.
//!
//! Persistence: a [`Record::TreeCount`] is a snapshot of one tree's count at its own
//! LSN, appended while the tree latch is held exclusively (no change of the tree in
//! flight): every change of the tree logged before it is in the count, every change
//! after it is not. A checkpoint appends one for every tree whose count is known, after
//! its begin record; creating a tree appends one (0), dropping a tree one that forgets
//! it, and a tree counted by a scan one with the scan's result. Analysis (which reads from
//! at or before the checkpoint's begin record) takes each snapshot it meets and adds the
//! delta of every later update and compensation record of that tree (`Counts`); undo
//! then counts its compensations like any rollback. A tree with no snapshot in that
//! part of the log (a database written before counts, a tree created and left since the
//! last checkpoint by a build without them) is counted by one scan of its leaves on
//! first use of [`Store::entry_count`], under its latch held exclusively, and its count
//! is logged from then on.

use crate::btree::Btree;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::{Change, PageOp, Record};
use crate::store::Store;
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A B+tree's structure latch (see `btree`) and its entry count. The store keeps one per
/// tree, so that every handle on a tree shares both.
#[derive(Default)]
pub(crate) struct TreeLatch {
    latch: RwLock<()>,
    /// Entries in the tree now, committed or not (meaningful only if `known`).
    entries: AtomicU64,
    /// The count is exact. Changes only under the latch held exclusively, so it is
    /// stable for anyone holding the latch.
    known: AtomicBool,
}

impl TreeLatch {
    /// Holds the structure latch shared (reads and ordinary writes).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, ()> {
        self.latch.read()
    }

    /// Holds the structure latch exclusively (splits, count snapshots).
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, ()> {
        self.latch.write()
    }

    /// Adds `delta` (+1 an insert of a new key, -1 a removal) to a known count. The
    /// caller holds the latch (either way) and has logged the change.
    pub(crate) fn count(&self, delta: i64) {
        if delta != 0 && self.known.load(Ordering::Acquire) {
            // Two's complement: adding -1 as u64 wraps to a decrement.
            self.entries.fetch_add(delta as u64, Ordering::Relaxed);
        }
    }

    /// The count if known; the caller holds the latch exclusively for a consistent one.
    pub(crate) fn known_entries(&self) -> Option<u64> {
        self.known
            .load(Ordering::Acquire)
            .then(|| self.entries.load(Ordering::Acquire))
    }

    /// Sets the count (`None`: unknown). The caller holds the latch exclusively, or
    /// nobody else can reach the tree yet (recovery).
    fn set(&self, entries: Option<u64>) {
        self.entries.store(entries.unwrap_or(0), Ordering::Release);
        self.known.store(entries.is_some(), Ordering::Release);
    }
}

/// What a leaf change does to its tree's count: +1 a new key, -1 a removed one.
pub(crate) fn delta_of<O, N>(old: Option<O>, new: Option<N>) -> i64 {
    match (old.is_some(), new.is_some()) {
        (false, true) => 1,
        (true, false) => -1,
        _ => 0,
    }
}

/// The counts analysis rebuilds: the last snapshot of each tree plus the changes logged
/// after it (see the module docs). Trees absent are unknown.
#[derive(Default)]
pub(crate) struct Counts {
    known: HashMap<PageId, u64>,
}

impl Counts {
    /// Takes the record at the next LSN into account.
    pub(crate) fn see(&mut self, rec: &Record) {
        match rec {
            Record::TreeCount { tree, entries } => match entries {
                Some(n) => {
                    self.known.insert(*tree, *n);
                }
                None => {
                    self.known.remove(tree);
                }
            },
            Record::Update { tree, change, .. } => {
                let d = match change {
                    Change::Insert { .. } => 1,
                    Change::Delete { .. } => -1,
                    Change::Update { .. } | Change::Patch { .. } => 0,
                };
                self.add(*tree, d);
            }
            Record::Clr { tree, op, .. } => {
                let d = match op {
                    PageOp::Insert { .. } => 1,
                    PageOp::Remove { .. } => -1,
                    PageOp::Set { .. } | PageOp::Patch { .. } => 0,
                };
                match tree {
                    Some(t) => self.add(*t, d),
                    // A compensation written before counts named no tree: any count may
                    // be off from here until its next snapshot.
                    None if d != 0 => self.known.clear(),
                    None => {}
                }
            }
            _ => {}
        }
    }

    fn add(&mut self, tree: PageId, d: i64) {
        if d == 0 {
            return;
        }
        if let Some(n) = self.known.get_mut(&tree) {
            match n.checked_add_signed(d) {
                Some(v) => *n = v,
                // Below zero: the log disagrees with the snapshot; let a scan decide.
                None => {
                    self.known.remove(&tree);
                }
            }
        }
    }
}

impl Store {
    /// The exact number of entries in the tree at `root` now, committed or not: O(1),
    /// except once for a tree whose count is not known (see the module docs), which is
    /// counted by a scan under its latch held exclusively, and the count logged.
    // For `Transaction::len` (issue 24's table-level locks land with it).
    #[cfg_attr(not(test), allow(dead_code))]
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
    pub(crate) fn tree_created(&self, root: PageId) -> Result<()> {
        let t = self.tree_latch(root);
        let _x = t.write();
        t.set(Some(0));
        self.snapshot(root, Some(0))
    }

    /// The tree at `root` is gone: its count is forgotten (and logged as forgotten), so
    /// checkpoints stop saving it and a tree that reuses the page starts afresh.
    // For `drop_table` (issue 24, with the table-level locks).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn tree_dropped(&self, root: PageId) -> Result<()> {
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
