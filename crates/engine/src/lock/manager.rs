//! The lock manager: a sharded lock table, requests granted in FIFO order, waits that
//! park on their shard and end by grant, deadlock, timeout or stop, and release (early
//! release included).

use super::entry::{Entry, Granted, LockMap};
use super::waits_for::{Verdict, WaitsFor};
use super::{LockKey, LockMode};
use crate::error::Error;
use crate::ids::TxnId;
use hashbrown::hash_table::Entry as Slot;
use hashbrown::DefaultHashBuilder;
use parking_lot::{Condvar, Mutex};
use sluice_wal::Lsn;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const SHARDS: usize = 64;
/// A queue longer than this means runaway contention or a leak; refuse rather than grow.
const MAX_WAITERS: usize = 1 << 16;
/// A shard holding more entries than this drops the idle ones it kept for early releases.
pub(super) const PRUNE_AT: usize = 64;

/// Why a lock request was refused; the transaction turns it into an [`Error`] that names
/// the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Waited the whole lock timeout.
    Timeout { waited_ms: u64 },
    /// Would have closed a cycle in the wait-for graph.
    Deadlock { waited_ms: u64 },
    /// The queue is absurdly long (runaway contention or a leak).
    TooManyWaiters,
    /// The lock manager was stopped ([`LockManager::stop`]).
    Stopped,
}

impl Refused {
    /// The error for a request on a key of table `table` (its name).
    pub(crate) fn into_error(self, table: &str) -> Error {
        let table = table.to_string();
        match self {
            Refused::Timeout { waited_ms } => Error::LockTimeout { table, waited_ms },
            Refused::Deadlock { waited_ms } => Error::Deadlock { table, waited_ms },
            Refused::TooManyWaiters => Error::InvalidArgument(format!(
                "more than {MAX_WAITERS} waiters on one lock of table {table:?}"
            )),
            Refused::Stopped => Error::Poisoned(format!(
                "the database stopped while a lock of table {table:?} was wanted"
            )),
        }
    }
}

pub(super) struct Shard {
    pub(super) map: Mutex<LockMap>,
    cv: Condvar,
    /// Prune the idle entries kept for early releases once the map grows past this; it
    /// doubles with what survives a prune, so a transaction holding a million locks does
    /// not rescan the map on every release (amortised O(1) per release), and falls back
    /// to `PRUNE_AT` once the shard is small again.
    pub(super) prune_at: AtomicUsize,
    /// Entries the prunes of this shard have looked at (tests: a prune's cost).
    #[cfg(test)]
    pub(super) pruned_visits: AtomicUsize,
}

/// The lock table.
pub(crate) struct LockManager {
    pub(super) shards: Box<[Shard]>,
    /// Hashes names, for the shard and for the shard's table alike (one hash per
    /// request). The keys are the users', so it is seeded at random per lock manager
    /// (hashbrown's default, foldhash): an attacker who does not know the seed cannot
    /// aim keys at one shard or bucket chain. SipHash, std's choice, cost a tenth of all
    /// CPU in TPC-B (profile in the issue 8 note); foldhash is several times cheaper.
    hasher: DefaultHashBuilder,
    timeout: Duration,
    /// Taken only by waiters, after their shard's mutex (never the other way round).
    waits: Mutex<WaitsFor>,
    /// Set by [`LockManager::stop`]: no wait begins or goes on.
    stopped: std::sync::atomic::AtomicBool,
    /// Waiters chosen as another's cycle's victim that have not left yet: a waiter's
    /// wake-up looks here first, so the common case costs no trip to the graph's mutex.
    doomed: AtomicUsize,
    /// Requests that waited, and those refused as deadlock victims or after the
    /// timeout (`Database::metrics`; counted off the fast path, by waiters only).
    pub(crate) lock_waits: AtomicU64,
    pub(crate) deadlocks: AtomicU64,
    pub(crate) timeouts: AtomicU64,
}

impl LockManager {
    /// A lock manager whose requests wait at most `timeout`.
    pub(crate) fn new(timeout: Duration) -> LockManager {
        LockManager {
            shards: (0..SHARDS)
                .map(|_| Shard {
                    map: Mutex::new(LockMap::default()),
                    prune_at: AtomicUsize::new(PRUNE_AT),
                    #[cfg(test)]
                    pruned_visits: AtomicUsize::new(0),
                    cv: Condvar::new(),
                })
                .collect(),
            hasher: DefaultHashBuilder::default(),
            timeout,
            waits: Mutex::new(WaitsFor::default()),
            stopped: std::sync::atomic::AtomicBool::new(false),
            doomed: AtomicUsize::new(0),
            lock_waits: AtomicU64::new(0),
            deadlocks: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
        }
    }

    /// The database stopped for good (a transaction's rollback could not finish, and its
    /// locks stay held over changes it could not undo): every wait ends now, and every
    /// later one at once, with [`Refused::Stopped`], instead of waiting out the lock
    /// timeout for a lock that will never be released.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        for shard in self.shards.iter() {
            // Under the shard's mutex, so no waiter misses the wake-up between its check
            // of `stopped` and its wait.
            let _map = shard.map.lock();
            shard.cv.notify_all();
        }
    }

    /// The hash of a name, computed once per request: its bits 32..38 pick the shard,
    /// and the shard's table uses the whole of it. hashbrown takes a bucket from the low
    /// bits and a tag from the top seven, so the shard's bits, from the middle, leave
    /// both as spread within a shard as across shards.
    fn hash(&self, key: &LockKey) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The shard of a name whose hash is `hash`.
    fn shard(&self, hash: u64) -> &Shard {
        &self.shards[Self::shard_no(hash)]
    }

    /// The index of the shard of a name whose hash is `hash`.
    fn shard_no(hash: u64) -> usize {
        (hash >> 32) as usize % SHARDS
    }

    /// Grants `mode` on `key` to `txn` if that is possible without waiting (callable
    /// under page latches). A dependency on an early-released commit is folded into
    /// `dep`.
    #[cfg(test)]
    pub(crate) fn try_lock(
        &self,
        txn: TxnId,
        key: &LockKey,
        mode: LockMode,
        dep: &mut Option<Lsn>,
    ) -> Option<Granted> {
        self.try_lock_checked(txn, key, mode, LockMode::NONE, dep)
            .map(|(g, _)| g)
    }

    /// Grants `mode` on `key` to `txn` if that is possible without waiting (callable
    /// under page latches) and `check` would be granted too, without taking `check`: an
    /// *instant-duration* lock (ARIES/KVL), which waits out a conflicting holder but
    /// keeps nobody waiting afterwards. The name's early-release dependency is folded
    /// into `dep` as for any grant. Granted, it also returns every part `txn` now holds
    /// on `key` (what an insert inherits from its next key, the `lock` module docs), found in the
    /// same lookup.
    pub(crate) fn try_lock_checked(
        &self,
        txn: TxnId,
        key: &LockKey,
        mode: LockMode,
        check: LockMode,
        dep: &mut Option<Lsn>,
    ) -> Option<(Granted, LockMode)> {
        let hash = self.hash(key);
        let shard = self.shard(hash);
        let mut map = shard.map.lock();
        // One lookup; the key is cloned only when a new entry is inserted.
        match map.entry(hash, key, &self.hasher) {
            Slot::Occupied(o) => {
                let (_, e) = o.into_mut();
                if !e.compatible_with_others(txn, check) {
                    return None;
                }
                let g = e.try_grant(txn, mode, dep)?;
                let holds = e.held_by(txn).expect("granted");
                debug_assert!(holds.covers(mode));
                Some((g, holds))
            }
            Slot::Vacant(v) => {
                let mut e = Entry::default();
                let g = e.try_grant(txn, mode, dep);
                assert_eq!(g, Some(Granted::New), "a fresh entry grants at once");
                v.insert((key.clone(), e));
                Some((Granted::New, mode))
            }
        }
    }

    /// Grants `mode` on `key` to `txn`, parking until it can (FIFO) or the timeout
    /// passes. Must not be called while holding a page or tree latch.
    /// A dependency on an early-released commit is folded into `dep`.
    #[cfg(test)]
    pub(crate) fn lock(
        &self,
        txn: TxnId,
        key: &LockKey,
        mode: LockMode,
        dep: &mut Option<Lsn>,
    ) -> std::result::Result<Granted, Refused> {
        self.lock_as(txn, 0, key, mode, dep)
    }

    /// [`LockManager::lock`] for a transaction of `seniority` (attempts at the same work
    /// it lost before): in a deadlock, the waiter of least seniority on the cycle is the
    /// victim, the requester when it is among the least (`WaitsFor`).
    pub(crate) fn lock_as(
        &self,
        txn: TxnId,
        seniority: u32,
        key: &LockKey,
        mode: LockMode,
        dep: &mut Option<Lsn>,
    ) -> std::result::Result<Granted, Refused> {
        let hash = self.hash(key);
        let shard_no = Self::shard_no(hash);
        let shard = self.shard(hash);
        let mut map = shard.map.lock();
        let e = map.get_or_insert(hash, key, &self.hasher);
        if let Some(g) = e.try_grant(txn, mode, dep) {
            return Ok(g);
        }
        if e.waiting.len() >= MAX_WAITERS {
            return Err(Refused::TooManyWaiters);
        }
        if self.stopped.load(Ordering::SeqCst) {
            if e.unused() {
                map.remove(hash, key);
            }
            return Err(Refused::Stopped);
        }
        if e.held_by(txn).is_some() {
            e.waiting.push_front((txn, mode));
        } else {
            e.waiting.push_back((txn, mode));
        }
        self.lock_waits.fetch_add(1, Ordering::Relaxed);
        // From here to the return (granted or refused) the request waits.
        let _waiting = crate::breakdown::enter(crate::breakdown::Activity::LockWait);
        let start = Instant::now();
        let deadline = start + self.timeout;
        let (mut blockers, mut fresh) = (Vec::new(), Vec::new());
        e.blockers(txn, mode, &mut blockers);
        // `recheck`: the shard's mutex was let go (to wake a victim elsewhere), so a
        // wake-up may have been missed: look at the queue again before parking.
        let (mut deadlock, mut recheck) = self.judge(txn, seniority, shard_no, &blockers, &mut map);
        loop {
            let timed_out = !deadlock
                && !std::mem::take(&mut recheck)
                && !self.stopped.load(Ordering::SeqCst)
                && shard.cv.wait_until(&mut map, deadline).timed_out();
            let stopped = self.stopped.load(Ordering::SeqCst);
            // Chosen as the victim of a cycle another waiter closed (checked under the
            // shard's mutex, which the waiter that chose it takes to wake us).
            deadlock = deadlock
                || (self.doomed.load(Ordering::SeqCst) > 0 && self.waits.lock().is_doomed(txn));
            let e = map.get_mut(hash, key).expect("an entry with waiters stays");
            let first = e.waiting.front().map(|w| w.0) == Some(txn);
            if !deadlock && !stopped && first && e.compatible_with_others(txn, mode) {
                self.leave_graph(txn);
                e.waiting.pop_front();
                let g = if e.held_by(txn).is_some_and(|h| h.covers(mode)) {
                    Granted::AlreadyHeld
                } else {
                    e.grant_noting(txn, mode, dep)
                };
                // The next waiter may be compatible too (S after S, I after I).
                shard.cv.notify_all();
                return Ok(g);
            }
            if !deadlock && !stopped && !timed_out {
                // Woken but not granted (any release on the shard wakes every waiter
                // there). Only a new blocker can close a cycle: then record and search
                // again. Blockers that left (in a FIFO queue, mostly finished
                // transactions, which never wait again) stay in the graph harmlessly
                // until we stop waiting, and cost no trip to the graph's mutex.
                e.blockers(txn, mode, &mut fresh);
                if fresh.iter().any(|t| !blockers.contains(t)) {
                    std::mem::swap(&mut fresh, &mut blockers);
                    (deadlock, recheck) = self.judge(txn, seniority, shard_no, &blockers, &mut map);
                }
                continue;
            }
            self.leave_graph(txn);
            e.waiting.retain(|w| w.0 != txn);
            if e.unused() {
                map.remove(hash, key);
            }
            // Our leaving may unblock whoever queued behind us.
            shard.cv.notify_all();
            let waited_ms = start.elapsed().as_millis() as u64;
            return Err(if stopped {
                Refused::Stopped
            } else if deadlock {
                self.deadlocks.fetch_add(1, Ordering::Relaxed);
                Refused::Deadlock { waited_ms }
            } else {
                self.timeouts.fetch_add(1, Ordering::Relaxed);
                Refused::Timeout { waited_ms }
            });
        }
    }

    /// Records that `txn` waits for `blockers` (holding `map`, its shard's mutex, whose
    /// index is `shard_no`); returns whether it is the victim of the cycle that closes,
    /// and whether `map` was let go meanwhile. If another
    /// waiter is the victim, that one's shard is woken so that it sees it: at once if it
    /// is this shard (it wakes when this waiter parks), else with `map` let go meanwhile
    /// (a shard's mutex is never taken under another's).
    fn judge(
        &self,
        txn: TxnId,
        seniority: u32,
        shard_no: usize,
        blockers: &[TxnId],
        map: &mut parking_lot::MutexGuard<'_, LockMap>,
    ) -> (bool, bool) {
        let verdict = self.waits.lock().wait(txn, seniority, shard_no, blockers);
        match verdict {
            Verdict::Wait => (false, false),
            Verdict::Victim => (true, false),
            Verdict::Doomed { shard, .. } => {
                self.doomed.fetch_add(1, Ordering::SeqCst);
                let theirs = &self.shards[shard];
                if shard == shard_no {
                    theirs.cv.notify_all();
                    (false, false)
                } else {
                    parking_lot::MutexGuard::unlocked(map, || {
                        let _map = theirs.map.lock();
                        theirs.cv.notify_all();
                    });
                    (false, true)
                }
            }
        }
    }

    /// `txn` stops waiting: out of the wait-for graph (and off the doomed count).
    fn leave_graph(&self, txn: TxnId) {
        if self.waits.lock().done(txn) {
            self.doomed.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Grants `key` to each of `holders` in its mode, as if each had taken it here, and
    /// notes `early` as if released here: locks moved in from the table lock's fast path
    /// (`fast.rs`). They are compatible with every lock granted here by construction
    /// (weak table locks; a strong one is requested only after the move), and their
    /// holders may already hold the name here (they then hold the union).
    pub(super) fn take_over(
        &self,
        key: &LockKey,
        holders: impl Iterator<Item = (TxnId, LockMode)>,
        early: Option<super::entry::Early>,
        durable: Lsn,
    ) {
        let hash = self.hash(key);
        let shard = self.shard(hash);
        let mut map = shard.map.lock();
        let e = map.get_or_insert(hash, key, &self.hasher);
        for (txn, mode) in holders {
            debug_assert!(
                e.compatible_with_others(txn, mode),
                "{txn}: {mode:?} moved in conflicts"
            );
            match e.held_by(txn) {
                Some(h) if h.covers(mode) => {}
                _ => {
                    e.grant(txn, mode);
                }
            }
        }
        if let Some(early) = early {
            e.merge_early(early, durable);
        }
    }

    /// Releases `txn`'s locks on `keys` and wakes the waiters behind them.
    #[cfg(test)]
    pub(crate) fn unlock_all<'a>(&self, txn: TxnId, keys: impl IntoIterator<Item = &'a LockKey>) {
        self.release(txn, keys, None, Lsn(u64::MAX));
    }

    /// Releases `txn`'s locks on `keys`. With `early = Some(commit_end)` the commit is
    /// not yet durable (early lock release): each lock with an exposing part (record X,
    /// gap I, gap D) leaves `commit_end` on its name for the next holder to depend on.
    /// `durable` is the log's durable LSN now, used to forget dependencies that no
    /// longer matter.
    pub(crate) fn release<'a>(
        &self,
        txn: TxnId,
        keys: impl IntoIterator<Item = &'a LockKey>,
        early: Option<Lsn>,
        durable: Lsn,
    ) {
        for key in keys {
            let hash = self.hash(key);
            let shard = self.shard(hash);
            let mut map = shard.map.lock();
            // One lookup, which also removes the entry if it is left idle.
            let Ok(mut o) = map.table.find_entry(hash, |(k, _)| k == key) else {
                panic!("{txn} releases a lock it does not hold");
            };
            let (_, e) = o.get_mut();
            let Some(i) = e.granted.iter().position(|g| g.0 == txn) else {
                panic!("{txn} did not hold the lock");
            };
            let (_, mode) = e.granted.swap_remove(i);
            if let Some(end) = early {
                e.note_early(mode, end, durable);
            }
            let wake = !e.waiting.is_empty();
            if e.idle(durable) {
                o.remove();
            }
            let prune_at = shard.prune_at.load(Ordering::Relaxed);
            if map.len() > prune_at {
                #[cfg(test)]
                shard.pruned_visits.fetch_add(map.len(), Ordering::Relaxed);
                map.retain(|e| !e.idle(durable));
                shard
                    .prune_at
                    .store(PRUNE_AT.max(2 * map.len()), Ordering::Relaxed);
            } else if prune_at > PRUNE_AT && map.len() <= PRUNE_AT / 2 {
                // The crowd has left: back to the steady-state threshold, so entries kept
                // for early releases are bounded as before.
                shard.prune_at.store(PRUNE_AT, Ordering::Relaxed);
            }
            if wake {
                shard.cv.notify_all();
            }
        }
    }

    /// Names with granted or waiting locks (for tests and leak checks).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                s.map
                    .lock()
                    .values()
                    .filter(|e| !e.granted.is_empty() || !e.waiting.is_empty())
                    .count()
            })
            .sum()
    }

    /// True if no lock is held or awaited.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
