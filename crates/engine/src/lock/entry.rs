//! One name's entry in the lock table (its holders, its FIFO queue, and the commit LSN
//! an early release left on it), what a grant changed, and a shard's table of entries.

use super::{LockKey, LockMode};
use crate::ids::TxnId;
use hashbrown::hash_table::Entry as Slot;
use hashbrown::{DefaultHashBuilder, HashTable};
use sluice_wal::Lsn;
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::hash::BuildHasher;

/// What a granted request changed (so the transaction knows whether to remember it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Granted {
    /// A new lock.
    New,
    /// The transaction already held it in a mode that covers the request.
    AlreadyHeld,
    /// The transaction held the name and now holds more parts of it.
    Upgraded,
}

#[derive(Default)]
pub(super) struct Entry {
    /// Inline for two holders (an exclusive lock has one; TPC-B's shared end stripes a
    /// few), so most entries allocate nothing besides their table slot.
    pub(super) granted: SmallVec<[(TxnId, LockMode); 2]>,
    pub(super) waiting: VecDeque<(TxnId, LockMode)>,
    /// Early lock release (Aether §3.1): the largest commit LSN of a transaction that
    /// released an exposing part here (record X, gap I or gap D) before its commit was
    /// durable, with every exposing part released so (`Early`). Whoever locks the name
    /// next *in a mode that conflicts with those parts* depends on that commit and must
    /// not be acknowledged before it is durable; a compatible request would have been
    /// granted beside the holder without seeing what it protected, so it depends on
    /// nothing (a reader's table lock after the table's writers, an append's end stripe
    /// after other appends). The entry outlives its last holder while the LSN is above
    /// the durable LSN.
    pub(super) early: Option<Early>,
}

/// What early releases left on a name: the largest commit LSN among them and the union
/// of the exposing parts they released (one bound for all: a request that conflicts with
/// any of the parts depends on the largest commit — conservative, never late).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Early {
    pub(super) commit: Lsn,
    pub(super) parts: LockMode,
}

impl Early {
    /// What is left after `before` and an early release of `mode` by a commit ending at
    /// `commit`, `durable` being the log's durable LSN now (what is durable is forgotten;
    /// a mode with no exposing part leaves nothing).
    pub(super) fn note(
        before: Option<Early>,
        mode: LockMode,
        commit: Lsn,
        durable: Lsn,
    ) -> Option<Early> {
        let before = before.filter(|e| e.commit > durable);
        let parts = mode.exposing();
        if parts == LockMode::NONE || commit <= durable {
            return before;
        }
        Some(match before {
            Some(e) => Early {
                commit: e.commit.max(commit),
                parts: e.parts.with(parts),
            },
            None => Early { commit, parts },
        })
    }
}

impl Entry {
    /// Notes an early release of `mode` by a commit ending at `commit` (`durable`: the
    /// log's durable LSN now, below which older notes no longer matter).
    pub(super) fn note_early(&mut self, mode: LockMode, commit: Lsn, durable: Lsn) {
        self.early = Early::note(self.early, mode, commit, durable);
    }

    /// Takes over what early releases left elsewhere (`fast.rs`, the table lock's
    /// stripes) as if they had been released here.
    pub(super) fn merge_early(&mut self, other: Early, durable: Lsn) {
        self.early = Early::note(self.early, other.parts, other.commit, durable);
    }

    /// True if the entry can leave the table: nobody holds or awaits it, and any early
    /// release it remembers is durable.
    pub(super) fn idle(&self, durable: Lsn) -> bool {
        self.granted.is_empty()
            && self.waiting.is_empty()
            && self.early.is_none_or(|e| e.commit <= durable)
    }

    /// True if nothing at all is kept here.
    pub(super) fn unused(&self) -> bool {
        self.granted.is_empty() && self.waiting.is_empty() && self.early.is_none()
    }

    /// Grants and notes the dependency an early release left, if `mode` conflicts with
    /// what was released.
    pub(super) fn grant_noting(
        &mut self,
        txn: TxnId,
        mode: LockMode,
        dep: &mut Option<Lsn>,
    ) -> Granted {
        if let Some(e) = self.early.filter(|e| mode.conflicts_with(e.parts)) {
            if dep.is_none_or(|d| d < e.commit) {
                *dep = Some(e.commit);
            }
        }
        self.grant(txn, mode)
    }
    pub(super) fn held_by(&self, txn: TxnId) -> Option<LockMode> {
        self.granted.iter().find(|g| g.0 == txn).map(|g| g.1)
    }
    /// Whom `txn`, waiting for `mode` here, waits for: every other holder of a
    /// conflicting part, and every request queued ahead of it (FIFO: it is granted only
    /// after them).
    pub(super) fn blockers(&self, txn: TxnId, mode: LockMode, out: &mut Vec<TxnId>) {
        out.clear();
        out.extend(
            self.granted
                .iter()
                .filter(|&&(t, m)| t != txn && mode.conflicts_with(m))
                .map(|g| g.0),
        );
        out.extend(self.waiting.iter().take_while(|w| w.0 != txn).map(|w| w.0));
        out.sort_unstable();
        out.dedup();
    }
    pub(super) fn compatible_with_others(&self, txn: TxnId, mode: LockMode) -> bool {
        self.granted
            .iter()
            .all(|&(t, m)| t == txn || !mode.conflicts_with(m))
    }
    pub(super) fn grant(&mut self, txn: TxnId, mode: LockMode) -> Granted {
        match self.granted.iter_mut().find(|g| g.0 == txn) {
            Some(g) => {
                assert!(
                    !g.1.covers(mode),
                    "{txn}: {:?} already covers {mode:?}",
                    g.1
                );
                g.1 = g.1.with(mode);
                Granted::Upgraded
            }
            None => {
                self.granted.push((txn, mode));
                Granted::New
            }
        }
    }

    /// Grants at once if FIFO order and compatibility allow; `None` if it must wait.
    pub(super) fn try_grant(
        &mut self,
        txn: TxnId,
        mode: LockMode,
        dep: &mut Option<Lsn>,
    ) -> Option<Granted> {
        let held = self.held_by(txn);
        if held.is_some_and(|h| h.covers(mode)) {
            return Some(Granted::AlreadyHeld);
        }
        if self.compatible_with_others(txn, mode) && (held.is_some() || self.waiting.is_empty()) {
            return Some(self.grant_noting(txn, mode, dep));
        }
        None
    }
}

/// The lock table of one shard: entries found by the hash `LockManager::hash`
/// computed once per request (it also picked the shard), where a `HashMap` hashed the
/// key a second time inside the shard.
#[derive(Default)]
pub(super) struct LockMap {
    pub(super) table: HashTable<(LockKey, Entry)>,
}

impl LockMap {
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// The entry of `key` (whose hash is `hash`), made if absent.
    pub(super) fn entry(
        &mut self,
        hash: u64,
        key: &LockKey,
        rehash: &DefaultHashBuilder,
    ) -> Slot<'_, (LockKey, Entry)> {
        self.table
            .entry(hash, |(k, _)| k == key, |(k, _)| rehash.hash_one(k))
    }

    /// The entry of `key`, made (and the key cloned) only if absent: one lookup.
    pub(super) fn get_or_insert(
        &mut self,
        hash: u64,
        key: &LockKey,
        rehash: &DefaultHashBuilder,
    ) -> &mut Entry {
        &mut self
            .entry(hash, key, rehash)
            .or_insert_with(|| (key.clone(), Entry::default()))
            .into_mut()
            .1
    }

    pub(super) fn get_mut(&mut self, hash: u64, key: &LockKey) -> Option<&mut Entry> {
        self.table.find_mut(hash, |(k, _)| k == key).map(|(_, e)| e)
    }

    pub(super) fn remove(&mut self, hash: u64, key: &LockKey) {
        if let Ok(o) = self.table.find_entry(hash, |(k, _)| k == key) {
            o.remove();
        }
    }

    pub(super) fn retain(&mut self, mut keep: impl FnMut(&Entry) -> bool) {
        self.table.retain(|(_, e)| keep(e));
    }

    #[cfg(test)]
    pub(super) fn values(&self) -> impl Iterator<Item = &Entry> {
        self.table.iter().map(|(_, e)| e)
    }
}
