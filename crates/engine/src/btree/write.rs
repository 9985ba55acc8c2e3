//! Setting a key: insert, update and delete are all "make `key` map to `new`".
//!
//! Key-range locking (see `lock/`). The caller holds record X on `k` — and for a
//! delete also gap I on `k`, taken in the same request: `k` bounds the gap below it,
//! and deleting `k` merges that gap into the next one, so a scanner that locked `k` as
//! the key after its range (gap S) or an uncommitted delete living below `k` (gap D)
//! must make the delete wait, which is what gap I conflicts with. An insert of a new key
//! `k` takes gap I on `next(k)` (the smallest key above `k` in the tree, or the table's
//! end): the gap it splits; and the gap S and gap D it holds on `next(k)` it takes on
//! `k` too, in the same latched attempt: the lower half of the split gap is named by `k`
//! from then on, and must stay as protected as the whole gap was (gap inheritance,
//! `lock/`). A delete takes gap D on `next(k)`: the gap it merges, held
//! to the end so nobody changes a gap holding an uncommitted delete (its rollback
//! re-inserts without locks); and, for an instant only (ARIES/KVL), record S on
//! `next(k)`: if `next(k)` is an uncommitted insert, its rollback (also lock-free) would
//! merge the gap again, so the delete waits for that transaction to end, without
//! holding anything that makes later updaters of `next(k)` wait. An update changes no
//! gap and takes nothing more. `next(k)` is found and locked under the leaf's X latch;
//! if the lock is not free the operation drops every latch, and the caller waits for it
//! and redoes the operation (`next(k)` may have changed meanwhile).

use crate::btree::page_op::{apply_op_at, fits, op_ref_for};

use crate::btree::{Btree, RememberedLeaf};
use crate::buffer_pool::PageWrite;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::lock::{LockMode, LockName};
use crate::log_record::{PageOp, Record, Undo};
use crate::page::{CellValue, StoredValue};
use crate::store::Store;
use crate::txn_table::TxnShared;
use sluice_wal::{Appended, Lsn};

/// A change of one key in a leaf, as a [`ChangeLogger`] logs it: `key` on `page` of
/// `tree` going from `old` to `new` (`None`: absent).
#[derive(Clone, Copy)]
pub(crate) struct LeafChange<'a> {
    pub(crate) page: PageId,
    pub(crate) tree: PageId,
    pub(crate) key: &'a [u8],
    pub(crate) old: Option<CellValue<'a>>,
    pub(crate) new: Option<CellValue<'a>>,
}

/// Logs a leaf change before it is applied (the leaf is X-latched and protected).
pub(crate) trait ChangeLogger {
    /// Appends the record of `change`.
    fn log(&mut self, store: &Store, change: LeafChange<'_>) -> Result<Appended>;
}

/// Takes gap locks for a transaction's insert or delete, under page latches.
pub(crate) trait GapLocker {
    /// Grants `mode` on `name` of the tree if that is possible without waiting, and
    /// `check` would be too (instant duration: not taken); if not, returns the name to
    /// wait for. (By value: the lock table keeps the name it is granted.) Any
    /// [`LockName::End`] stands for the table's end: the locker takes the stripes `mode`
    /// needs ([`LockName::end_stripes`]); the end has no record to check. Granted, the
    /// parts the transaction now holds on the name (on the stripes taken).
    fn try_lock(
        &mut self,
        name: LockName,
        mode: LockMode,
        check: LockMode,
    ) -> Result<LockMode, LockName>;
}

/// What became of a set.
#[derive(Debug)]
pub(crate) enum SetOutcome {
    /// Done: the old value (`None`: the key was absent).
    Done(Option<StoredValue>),
    /// Nothing was changed: this lock (a mode and an instant-duration check) was not
    /// free. Wait for it with no latch held, then set again.
    Blocked(LockName, LockMode, LockMode),
}

/// What one attempt at a latched leaf did.
enum Attempt {
    Applied(Option<StoredValue>),
    Blocked(LockName, LockMode, LockMode),
    NoRoom,
    /// `next(k)` lies beyond more than [`MAX_COUPLED`] empty leaves, or the walk would
    /// have to wait for a frame while holding the leaves behind it: try again with the
    /// tree latch exclusive, which needs no coupling.
    TooFar,
}

/// The most leaves a walk to the next key holds latched (and pinned) at once while the
/// tree latch is shared (here and in `scan.rs`). Nothing merges empty leaves, so a run
/// of them can be longer than the buffer pool; past this bound the walk is redone with
/// the tree latch exclusive, when no other reader or writer is in the tree and the
/// leaves can be let go one by one.
pub(crate) const MAX_COUPLED: usize = 4;

/// What [`Btree::lock_next`] found.
enum NextLock {
    /// Granted: every part the transaction now holds on the name.
    Locked(LockMode),
    Blocked(LockName),
    TooFar,
}

/// Logs undo steps as compensation records.
pub(crate) struct ClrLogger<'a> {
    pub(crate) txn: &'a TxnShared,
    /// Where undo continues after this step: the undone record's prevLSN.
    pub(crate) undo_next: Option<Lsn>,
}

impl ChangeLogger for ClrLogger<'_> {
    fn log(&mut self, store: &Store, change: LeafChange<'_>) -> Result<Appended> {
        let LeafChange {
            page,
            tree,
            key,
            old,
            new,
        } = change;
        // Only the changed bytes when that is smaller (see `log_record::Delta`).
        let op = PageOp::between(key, old, new).expect("only real changes are logged");
        let txn = self.txn.id;
        let undo_next = self.undo_next;
        self.txn.append(&store.log, |prev| Record::Clr {
            txn,
            prev,
            page,
            tree: Some(tree),
            op,
            undo_next,
        })
    }
}

impl Btree<'_> {
    /// Makes `key` map to `new` (`None`: absent) in the tree, taking no gap
    /// locks; returns the old value. For rollback and restart undo, whose transaction's
    /// own locks cover what they undo.
    pub(crate) fn set(
        &self,
        key: &[u8],
        new: Option<CellValue<'_>>,
        logger: &mut dyn ChangeLogger,
    ) -> Result<Option<StoredValue>> {
        match self.set_locking(key, new, logger, None, None)? {
            SetOutcome::Done(old) => Ok(old),
            SetOutcome::Blocked(..) => unreachable!("no gap is locked without a locker"),
        }
    }

    /// Undoes a change of `key` (rollback and restart undo alike): `key` maps to its
    /// value before the change again, logged by `logger` as a compensation. A patch is
    /// undone from the value it made, which the transaction's locks kept as it left it
    /// (its later changes to the key are undone first). An error if the tree disagrees
    /// with `undo` (the message says how).
    pub(crate) fn undo(
        &self,
        key: &[u8],
        undo: &Undo,
        logger: &mut dyn ChangeLogger,
    ) -> Result<()> {
        let current = match undo.reads_current() {
            true => self.get(key)?,
            false => None,
        };
        let before = undo
            .undone(current.as_ref())
            .map_err(|e| Error::Corruption(format!("undo in tree {}: {e}", self.root)))?;
        self.set(key, before.as_ref().map(StoredValue::as_cell), logger)
            .map(drop)
    }

    /// Makes `key` map to `new` in the tree. The caller holds the key's record
    /// X lock (or is undo). With `gaps`, an insert or delete first try-locks its next
    /// key (module docs) and returns [`SetOutcome::Blocked`], changing nothing, if the
    /// lock is not free. `seen`: where a read of the same key found it
    /// (`remembered.rs`), to be used if the tree has not changed since.
    pub(crate) fn set_locking(
        &self,
        key: &[u8],
        new: Option<CellValue<'_>>,
        logger: &mut dyn ChangeLogger,
        mut gaps: Option<&mut dyn GapLocker>,
        seen: Option<RememberedLeaf>,
    ) -> Result<SetOutcome> {
        let (root, latch) = (self.root, self.latch);
        {
            let _shared = latch.read();
            let (leaf, seen) = self.leaf_for_change(key, seen)?;
            let mut w = leaf.write_valid()?;
            let at = seen.and_then(|s| s.slot_in(&w));
            // Shared tree latch: a walk over a long run of empty leaves stops (TooFar)
            // and is redone below, exclusively.
            let gaps = gaps.as_deref_mut();
            match self.try_apply(&mut w, root, key, new, logger, gaps, false, at)? {
                Attempt::Applied(old) => return Ok(SetOutcome::Done(old)),
                Attempt::Blocked(n, m, c) => return Ok(SetOutcome::Blocked(n, m, c)),
                Attempt::NoRoom | Attempt::TooFar => {}
            }
        }
        // The space gate before the tree latch, always (`make_room`): a compaction
        // holds the gate exclusively while its checkpoint takes every tree latch.
        let _space = self.store.space_gate.read();
        let _exclusive = latch.write();
        let leaf = self.make_room(root, key, new.map(|v| v.bytes))?;
        let mut w = leaf.write_valid()?;
        match self.try_apply(&mut w, root, key, new, logger, gaps, true, None)? {
            Attempt::Applied(old) => Ok(SetOutcome::Done(old)),
            Attempt::Blocked(n, m, c) => Ok(SetOutcome::Blocked(n, m, c)),
            Attempt::NoRoom => Err(Error::Corruption(format!(
                "no room in tree {root} after a split"
            ))),
            Attempt::TooFar => unreachable!("an exclusive walk has no bound"),
        }
    }

    /// Applies the change if the leaf has room and its gap locks are free. `exclusive`:
    /// the tree latch is held exclusively. `at`: the key's slot in the leaf if known
    /// (a remembered leaf whose cells did not change, `remembered.rs`).
    #[allow(clippy::too_many_arguments)]
    fn try_apply<'g>(
        &self,
        w: &mut PageWrite<'_>,
        root: PageId,
        key: &[u8],
        new: Option<CellValue<'_>>,
        logger: &mut dyn ChangeLogger,
        gaps: Option<&mut (dyn GapLocker + 'g)>,
        exclusive: bool,
        at: Option<Result<usize, usize>>,
    ) -> Result<Attempt> {
        let (old, room, at) = {
            let n = Self::node_of(w.bytes(), w.id())?;
            if !n.is_leaf() {
                return Err(Error::Corruption(format!(
                    "descent ended at non-leaf {}",
                    w.id()
                )));
            }
            let at = match at {
                Some(at) => {
                    debug_assert_eq!(at, n.search(key), "a remembered slot that moved");
                    #[cfg(test)]
                    self.latch.note_remembered_slot();
                    at
                }
                None => n.search(key),
            };
            let old = at.ok().map(|i| n.cell_value(i).to_owned());
            let room = fits(
                &n,
                key,
                old.as_ref().map(|o| &o.bytes[..]),
                new.map(|v| v.bytes),
            );
            (old, room, at)
        };
        // Where next(k) is in this leaf: after k if present, else where k would go.
        let next = match at {
            Ok(i) => i + 1,
            Err(i) => i,
        };
        if old.as_ref().map(StoredValue::as_cell) == new {
            return Ok(Attempt::Applied(old));
        }
        if !room {
            return Ok(Attempt::NoRoom);
        }
        // What next(k) needs (and checks for an instant): an update changes no gap.
        let gap = match (&old, new) {
            (None, Some(_)) => Some((LockMode::GAP_I, LockMode::NONE)),
            (Some(_), None) => Some((LockMode::GAP_D, LockMode::RECORD_S)),
            _ => None,
        };
        if let (Some((mode, check)), Some(locker)) = (gap, gaps) {
            let holds = match self.lock_next(w, next, mode, check, locker, exclusive)? {
                NextLock::Locked(holds) => holds,
                NextLock::Blocked(name) => return Ok(Attempt::Blocked(name, mode, check)),
                NextLock::TooFar => return Ok(Attempt::TooFar),
            };
            // An insert splits the gap below next(k): the half below k, named k from
            // now on, inherits what the transaction holds on the whole (module docs).
            // Taken before k is in the leaf, under its X latch: nobody can reach the
            // new gap before it is protected.
            let inherited = holds.inherited_by_insert();
            if mode == LockMode::GAP_I && inherited != LockMode::NONE {
                // Only a gap I left on k's name while k was absent (its holder inserted
                // below k, then k was deleted) can be in the way: wait for its holder.
                if let Err(name) = locker.try_lock(LockName::key(key), inherited, LockMode::NONE) {
                    return Ok(Attempt::Blocked(name, inherited, LockMode::NONE));
                }
            }
        }
        self.store.protect_page(w)?;
        let old_cell = old.as_ref().map(StoredValue::as_cell);
        let change = LeafChange {
            page: w.id(),
            tree: root,
            key,
            old: old_cell,
            new,
        };
        let a = logger.log(self.store, change)?;
        let op = op_ref_for(key, old_cell, new).expect("a real change");
        // The leaf stayed X-latched since the search: its slot still holds.
        apply_op_at(w.bytes_mut(), op, at).expect("the change was checked to apply before logging");
        w.mark_dirty(a.lsn, a.end);
        // The tree latch is held (shared or exclusive) from the log append to here, so a
        // count snapshot, which holds it exclusively, sees the change in both or neither.
        self.latch.count(crate::tree_count::delta_of(old_cell, new));
        Ok(Attempt::Applied(old))
    }

    /// Try-locks `mode` (if `check` is free too) on the name of the first key at or
    /// after slot `at` of the
    /// X-latched leaf `w` — following the leaf chain to the right if needed; the table's
    /// end if there is none — while every leaf up to the one holding it is latched
    /// (S latches, taken left to right while `w` is held, the order scans couple in, so
    /// latching cannot deadlock; leaves may be empty, as nothing merges them). Holding
    /// them means the name cannot be deleted, nor a key inserted before it, between
    /// finding it and locking it. The tree latch is held, so the chain cannot change.
    /// With it held shared, a walk that would couple more than [`MAX_COUPLED`] leaves
    /// stops with [`NextLock::TooFar`]; held exclusively (`exclusive`), nobody else is
    /// in the tree, so each leaf is let go as the walk leaves it.
    fn lock_next(
        &self,
        w: &PageWrite<'_>,
        at: usize,
        mode: LockMode,
        check: LockMode,
        locker: &mut dyn GapLocker,
        exclusive: bool,
    ) -> Result<NextLock> {
        let n = Self::node_of(w.bytes(), w.id())?;
        let try_name =
            |locker: &mut dyn GapLocker, name: LockName| match locker.try_lock(name, mode, check) {
                Ok(holds) => NextLock::Locked(holds),
                Err(name) => NextLock::Blocked(name),
            };
        if at < n.len() {
            return Ok(try_name(locker, LockName::key(n.key(at))));
        }
        let mut next = n.link();
        // Guards first in each pair, so they drop before the pins.
        let mut coupled = Vec::new();
        while next.is_some() {
            // Shared, the walk holds the leaves behind it: it must not wait for a frame
            // while holding them (`BufferPool::try_fetch`), so a full pool sends it to the
            // exclusive walk, which holds one leaf at a time.
            let p = if exclusive {
                self.store.pool.fetch(next)?
            } else {
                match self.store.pool.try_fetch(next)? {
                    Some(p) => p,
                    None => return Ok(NextLock::TooFar),
                }
            };
            let g = p.read_valid()?;
            let leaf = Self::node_of(&g, next)?;
            if !leaf.is_leaf() {
                return Err(Error::Corruption(format!(
                    "leaf chain from {} reaches non-leaf {next}",
                    w.id()
                )));
            }
            if !leaf.is_empty() {
                return Ok(try_name(locker, LockName::key(leaf.key(0))));
            }
            next = leaf.link();
            if !exclusive {
                if coupled.len() == MAX_COUPLED {
                    return Ok(NextLock::TooFar);
                }
                coupled.push((g, p));
            }
        }
        Ok(try_name(locker, LockName::End(0)))
    }

    /// The value of `key` in the tree. The caller holds an S or X lock on it.
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<StoredValue>> {
        self.get_remembering(key).map(|(v, _)| v)
    }
}
