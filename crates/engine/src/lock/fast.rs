//! The fast path of the table lock (PostgreSQL's "fast-path locking", `lock.c`): the
//! weak table locks — [`TableLock::Read`](super::TableLock) and
//! [`TableLock::Write`](super::TableLock), which every get, scan, put and delete takes on
//! its first use of a table — are compatible with each other, and only the rare strong
//! ones (`Count`, `Drop`) conflict with them. So while no strong request is about, a
//! weak one is recorded in one of the table's [`TABLE_STRIPES`] stripes (the one the
//! transaction id picks, as in the lock table) under that stripe's own mutex, and never
//! touches the lock table: no hash, no shard, no entry. (Measured before this path, in
//! one run of `scripts/ab.sh` against the same build with the weak table locks skipped:
//! the lock-table requests and releases cost TPC-B 5–10 % and TATP 5–18 % of their
//! throughput.)
//!
//! **Strong requests.** A strong request first announces itself ([`FastTable::begin_strong`]:
//! the table's `strong` count goes up), and from then on every new weak request of the
//! table goes to the lock table, where it queues behind the strong one as any request.
//! Then it moves every weak lock recorded in the stripes into the lock table, granted
//! there to its holder on the holder's stripe's name, as if the holder had taken it
//! there — so the strong request waits for them like for any holder, and the wait-for
//! graph sees whom it waits for (a deadlock through a table lock is found, not timed
//! out). It moves too what early releases left in the stripes (the largest commit LSN of
//! a writer that released before its commit was durable): the strong request conflicts
//! with a writer's gap I and so depends on that commit, as on any early release. The
//! count goes down when the strong lock is released ([`FastTable::end_strong`]); a
//! strong holder with an exposing part (a drop, or a create: it holds its new table's
//! drop lock) released early leaves its commit LSN on the table first, and every weak
//! request on the fast path depends on it — as one in the lock table would, through the
//! entries it left there, since every weak mode conflicts with a drop's.
//!
//! **Why no weak lock is missed.** A weak request reads `strong` under its stripe's
//! mutex; a strong request raises `strong` before it takes each stripe's mutex to move
//! the stripe's locks out. Either the weak request's critical section comes first —
//! then its lock is in the stripe when the strong request looks — or the strong
//! request's does, and then the weak request sees `strong` raised and goes to the lock
//! table.
//!
//! **Release.** A transaction releases a weak lock it took here in its stripe if it is
//! still there, and in the lock table if a strong request moved it ([`FastTable::release`]
//! says which, under the stripe's mutex, so the move and the release never cross).
//! A transaction that wants more of a table it holds on the fast path while a strong
//! request is about moves its own lock first ([`FastTable::move_own`]), so that it holds
//! one lock on its stripe's name, in one place.

use super::entry::Early;
use super::{LockKey, LockManager, LockMode, LockName, TABLE_STRIPES};
use crate::ids::{PageId, TxnId};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use sluice_wal::Lsn;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// One stripe: the weak locks recorded there, and what their early releases left.
#[derive(Default)]
struct Stripe {
    /// Holders and the modes they hold (record S, gap I, or both).
    holders: SmallVec<[(TxnId, LockMode); 4]>,
    /// The early releases of exposing parts (a writer's gap I) not yet durable.
    early: Option<Early>,
}

/// A table's fast-path table locks (one per tree, beside its latch: every handle on the
/// table reaches it without a lookup).
#[derive(Default)]
pub(crate) struct FastTable {
    /// Strong requests begun and not yet released. Raised before the stripes are
    /// looked at; read by weak requests under their stripe's mutex.
    strong: AtomicU32,
    /// The largest commit LSN of a strong holder with an exposing part (a drop, or a
    /// create, which holds its new table's drop lock) released early: every weak mode
    /// conflicts with it, so a weak request on the fast path depends on it, as one in
    /// the lock table would through the entries it left there (0: none). Raised before
    /// `strong` goes down.
    strong_early: AtomicU64,
    /// A cache line each: transactions on different stripes share nothing.
    stripes: [CachePadded<Mutex<Stripe>>; TABLE_STRIPES as usize],
}

impl FastTable {
    /// Records `mode` (a weak table lock: record S or gap I) for `txn` on its stripe
    /// `stripe`, if no strong request is about: a first use (`first`), or more parts for
    /// a transaction whose lock is still recorded here. False: take it in the lock table
    /// (after [`FastTable::move_own`] if the transaction holds one here).
    ///
    /// Taken, `dep` gets the commit of the latest strong holder that released early
    /// (`strong_early`) if it is later than `dep` and than `durable` (a closure: the
    /// log's durable LSN, read only then).
    pub(crate) fn try_weak(
        &self,
        txn: TxnId,
        stripe: u16,
        mode: LockMode,
        first: bool,
        dep: &mut Option<Lsn>,
        durable: impl FnOnce() -> Lsn,
    ) -> bool {
        let mut s = self.stripes[usize::from(stripe)].lock();
        if self.strong.load(Ordering::Acquire) != 0 {
            return false;
        }
        match s.holders.iter_mut().find(|h| h.0 == txn) {
            Some(h) => h.1 = h.1.with(mode),
            // Not first and not here: a strong request moved it to the lock table, where
            // the transaction must take the rest too.
            None if !first => return false,
            None => s.holders.push((txn, mode)),
        }
        drop(s);
        let early = self.strong_early.load(Ordering::Relaxed);
        if early != 0 && dep.is_none_or(|d| d.0 < early) {
            if Lsn(early) > durable() {
                *dep = Some(Lsn(early));
            } else {
                // Durable: forgotten, so that later requests read no log state at all
                // (the durable LSN's cache line is the flusher's). A later early release
                // that raced in stays (the exchange fails).
                let _ = self.strong_early.compare_exchange(
                    early,
                    0,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
        }
        true
    }

    /// A strong request on `table` begins: no weak request is recorded here from now
    /// until [`FastTable::end_strong`], and every one recorded is moved into `locks`,
    /// with what early releases left (`durable`: the log's durable LSN now). The caller
    /// then requests its own mode in `locks`, and must call `end_strong` once that is
    /// released, or refused and never to be held.
    pub(crate) fn begin_strong(&self, locks: &LockManager, table: PageId, durable: Lsn) {
        self.strong.fetch_add(1, Ordering::SeqCst);
        for (i, s) in self.stripes.iter().enumerate() {
            let mut s = s.lock();
            let early = s.early.take().filter(|e| e.commit > durable);
            if s.holders.is_empty() && early.is_none() {
                continue;
            }
            let key = LockKey {
                table,
                name: LockName::Table(i as u16),
            };
            locks.take_over(&key, s.holders.drain(..), early, durable);
        }
    }

    /// A strong request begun with [`FastTable::begin_strong`] is over (released, or
    /// refused), in mode `mode`, released early by a commit ending at `early` if so.
    pub(crate) fn end_strong(&self, mode: LockMode, early: Option<Lsn>) {
        if let Some(commit) = early.filter(|_| mode.exposing() != LockMode::NONE) {
            self.strong_early.fetch_max(commit.0, Ordering::Relaxed);
        }
        let was = self.strong.fetch_sub(1, Ordering::Release);
        debug_assert!(was > 0, "a strong table lock ends that did not begin");
    }

    /// Moves `txn`'s lock on `stripe` into `locks`, if it is still recorded here.
    pub(crate) fn move_own(
        &self,
        locks: &LockManager,
        table: PageId,
        txn: TxnId,
        stripe: u16,
        durable: Lsn,
    ) {
        let mut s = self.stripes[usize::from(stripe)].lock();
        if let Some(i) = s.holders.iter().position(|h| h.0 == txn) {
            let held = s.holders.swap_remove(i);
            let key = LockKey {
                table,
                name: LockName::Table(stripe),
            };
            locks.take_over(&key, std::iter::once(held), None, durable);
        }
    }

    /// Releases `txn`'s lock on `stripe` if it is still recorded here (true), leaving
    /// `early`'s commit LSN behind for a strong request if it held an exposing part (as
    /// [`LockManager::release`] does). False: a strong request moved it, and the caller
    /// releases it in the lock table.
    pub(crate) fn release(
        &self,
        txn: TxnId,
        stripe: u16,
        early: Option<Lsn>,
        durable: Lsn,
    ) -> bool {
        let mut s = self.stripes[usize::from(stripe)].lock();
        let Some(i) = s.holders.iter().position(|h| h.0 == txn) else {
            return false;
        };
        let (_, mode) = s.holders.swap_remove(i);
        if let Some(commit) = early {
            s.early = Early::note(s.early, mode, commit, durable);
        }
        true
    }

    /// Weak locks recorded in the stripes (tests).
    #[cfg(test)]
    pub(crate) fn recorded(&self) -> usize {
        self.stripes.iter().map(|s| s.lock().holders.len()).sum()
    }
}
