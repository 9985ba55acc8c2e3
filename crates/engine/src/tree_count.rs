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
//! first use of `Store::entry_count`, under its latch held exclusively, and its count
//! is logged from then on.
//!
//! This module holds what the store and the B+tree both use (the latch with its count,
//! and analysis' arithmetic); the operations on counts that need both are in
//! `btree/count.rs`.

use crate::ids::PageId;
use crate::log_record::{Change, PageOp, Record};
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A B+tree's structure latch (see `btree`), its entry count, and whether the tree's
/// table has been dropped. The store keeps one per tree, so that every handle on a tree
/// shares them; a drop marks it (`Store::tree_dropped`) and a new tree on the same root
/// page replaces it (`Store::tree_created`), so old handles stay marked.
#[derive(Default)]
pub(crate) struct TreeLatch {
    latch: RwLock<()>,
    /// A drop of the tree's table committed.
    dropped: AtomicBool,
    /// The transaction that created the tree's table rolled back: the table never
    /// existed, and a handle on it is refused as on a dropped one.
    abandoned: AtomicBool,
    /// The table's weak table locks while no strong one is about (`lock/fast.rs`).
    pub(crate) table_locks: crate::lock::FastTable,
    /// Handed out in this opening: to a table handle, or for a tree created. Compaction
    /// counts such a tree in use wherever the catalog's pages show it (`Store::live_roots`).
    handed_out: AtomicBool,
    /// Entries in the tree now, committed or not (meaningful only if `known`).
    entries: AtomicU64,
    /// The count is exact. Changes only under the latch held exclusively, so it is
    /// stable for anyone holding the latch.
    known: AtomicBool,
    /// How many times the latch was taken exclusively: every change of which leaf holds
    /// which keys (a split, a cut-back) happens under it, so while this is unchanged a
    /// leaf found for a key is still that key's leaf (`btree/remembered.rs`). Changes
    /// only under the latch held exclusively, so it is stable for anyone holding it.
    epoch: AtomicU64,
    /// Changes that used a remembered leaf, and those of them that used its slot too
    /// (tests: that the path is taken).
    #[cfg(test)]
    pub(crate) remembered: [AtomicU64; 2],
}

impl TreeLatch {
    /// True once a drop of the tree's table committed.
    pub(crate) fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    /// Marks the latch handed out (a table handle, a new tree).
    pub(crate) fn hand_out(&self) {
        if !self.handed_out.load(Ordering::Relaxed) {
            self.handed_out.store(true, Ordering::Release);
        }
    }

    /// True once handed out in this opening.
    pub(crate) fn handed_out(&self) -> bool {
        self.handed_out.load(Ordering::Acquire)
    }

    /// Marks the tree dropped (`Store::tree_dropped`).
    pub(crate) fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::Release);
    }

    /// Marks the tree's table as never created: its creating transaction rolled back
    /// (before it let the table's drop lock go).
    pub(crate) fn mark_abandoned(&self) {
        self.abandoned.store(true, Ordering::Release);
    }

    /// True once the transaction that created the tree's table rolled back.
    pub(crate) fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire)
    }

    /// Holds the structure latch shared (reads and ordinary writes).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, ()> {
        self.latch.read()
    }

    /// Holds the structure latch exclusively (splits, count snapshots), and starts a
    /// new structure epoch.
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, ()> {
        let g = self.latch.write();
        // Relaxed: a reader takes the latch (acquire) after this holder lets it go
        // (release), so it sees the new epoch.
        self.epoch.fetch_add(1, Ordering::Relaxed);
        g
    }

    /// Counts a change that used a remembered leaf (tests).
    #[cfg(test)]
    pub(crate) fn note_remembered(&self) {
        self.remembered[0].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a change that used a remembered leaf's slot (tests).
    #[cfg(test)]
    pub(crate) fn note_remembered_slot(&self) {
        self.remembered[1].fetch_add(1, Ordering::Relaxed);
    }

    /// The structure epoch (see the field); the caller holds the latch, shared or
    /// exclusive.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
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
    pub(crate) fn set(&self, entries: Option<u64>) {
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
    pub(crate) known: HashMap<PageId, u64>,
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
