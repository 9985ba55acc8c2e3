//! The consolidation array (Aether Algorithm 5, Figure 10) and the insert path the
//! consolidating variants share (Algorithm 2).
//!
//! A thread that finds the reservation lock busy joins an open slot of the array by adding
//! its frame length to the slot's state with a CAS; the offset it gets back is its place
//! in the group, and offset 0 makes it the group's leader. The leader takes the lock,
//! swaps a fresh slot from the pool into the array (so arrivals keep finding open slots),
//! closes its slot, reserves space for the whole group at once, and publishes the group's
//! position. Every member copies its record at its offset; the last one to finish
//! releases the group. Only leaders contend for the lock, so contention is bounded by the
//! number of slots, not the number of threads.
//!
//! Slot life cycle (one `u64` state):
//!
//! ```text
//!   FREE ──install (leader, under the lock)──▶ OPEN + bytes ──joins: CAS +size──▶ …
//!     ▲                                           │ close (leader): swap
//!     │                                           ▼
//!   last member: store FREE ◀── COPYING + left ◀── PENDING ── notify (leader): store
//!                              members: fetch_sub size
//! ```
//! A slot is reused only after it is FREE, and a member's bytes stay counted in `left`
//! until it has read the group's position, so nobody reads a slot after its reuse. A
//! group never exceeds `BufferCore::max_frame` bytes, so it fits a segment and its padding
//! plus the group fit the ring.

use super::{BufferCore, InsertAlgorithm, Placement, Record};
use crate::error::{Result, WalError};
use crate::sync::{spin_hint, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::wait::{Parker, SPINS};
use crate::Lsn;
use crossbeam_utils::CachePadded;

const FREE: u64 = 0;
const PENDING: u64 = 1;
/// `COPYING + n`: the group is placed; `n` of its bytes are still being copied.
const COPYING: u64 = 1 << 61;
/// `OPEN + n`: accepting members; `n` bytes joined so far.
const OPEN: u64 = 1 << 62;

struct Slot {
    state: AtomicU64,
    /// The group's placement, written by the leader before it sets `COPYING`.
    start: AtomicU64,
    base: AtomicU64,
    end: AtomicU64,
    /// Where in the array the slot is installed (meaningful while OPEN or PENDING).
    position: AtomicUsize,
    /// Members wait here for the leader's notification.
    notified: Parker,
}

/// A member's place in a group.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    slot: usize,
    /// Bytes of the group before this member; 0 for the leader.
    offset: u64,
}

/// The array of open slots and the pool behind it.
pub(crate) struct ConsolidationArray {
    /// Pool indices of the installed slots.
    array: Box<[CachePadded<AtomicUsize>]>,
    pool: Box<[CachePadded<Slot>]>,
    /// Where the next search for a FREE slot starts (only lock holders touch it).
    next_free: AtomicUsize,
    /// Leaders wait here when the pool has no FREE slot.
    freed: Parker,
    /// Most bytes one group may hold.
    group_limit: u64,
}

impl ConsolidationArray {
    pub(crate) fn new(slots: usize, group_limit: u64) -> ConsolidationArray {
        assert!(slots >= 1 && group_limit >= 16);
        // Slots leave the array when their group closes and return when its last member
        // finishes. Each thread is in at most one group, so the pool rarely runs dry; if
        // it does, a leader waits for a group to finish (which needs no lock).
        let pool_len = slots * 4 + 32;
        let pool: Box<[CachePadded<Slot>]> = (0..pool_len)
            .map(|i| {
                CachePadded::new(Slot {
                    state: AtomicU64::new(if i < slots { OPEN } else { FREE }),
                    start: AtomicU64::new(0),
                    base: AtomicU64::new(0),
                    end: AtomicU64::new(0),
                    position: AtomicUsize::new(i),
                    notified: Parker::new(),
                })
            })
            .collect();
        let array = (0..slots)
            .map(|i| CachePadded::new(AtomicUsize::new(i)))
            .collect();
        ConsolidationArray {
            array,
            pool,
            next_free: AtomicUsize::new(slots),
            freed: Parker::new(),
            group_limit,
        }
    }

    /// Joins an open slot with `size` bytes (Algorithm 5, `slot_join`). Returns `None`
    /// if every slot stayed closed or full for a whole probe round; the caller then takes
    /// the lock and inserts on its own.
    pub(crate) fn join(&self, size: u64) -> Option<Ticket> {
        assert!(size <= self.group_limit);
        let n = self.array.len();
        let first = probe_start(n);
        for k in 0..2 * n {
            let slot = self.array[(first + k) % n].load(Ordering::Acquire);
            let state = &self.pool[slot].state;
            let mut cur = state.load(Ordering::Acquire);
            while cur >= OPEN && cur - OPEN + size <= self.group_limit {
                match state.compare_exchange_weak(
                    cur,
                    cur + size,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        return Some(Ticket {
                            slot,
                            offset: cur - OPEN,
                        })
                    }
                    Err(now) => cur = now,
                }
            }
        }
        None
    }

    /// The leader, holding the reservation lock, swaps a fresh slot into its slot's place
    /// and closes the group (`slot_close`). Returns the group's bytes.
    fn close(&self, t: Ticket, core: &BufferCore) -> Result<u64> {
        assert_eq!(t.offset, 0, "only the leader closes");
        let slot = &self.pool[t.slot];
        let position = slot.position.load(Ordering::Relaxed);
        assert_eq!(self.array[position].load(Ordering::Relaxed), t.slot);
        let fresh = self.take_free(core)?;
        let f = &self.pool[fresh];
        f.position.store(position, Ordering::Relaxed);
        f.state.store(OPEN, Ordering::Release);
        self.array[position].store(fresh, Ordering::Release);
        // New arrivals now find the fresh slot; close ours.
        let state = slot.state.swap(PENDING, Ordering::AcqRel);
        assert!(state >= OPEN, "closed a slot that was not open: {state:#x}");
        let bytes = state - OPEN;
        assert!(bytes > 0 && bytes <= self.group_limit);
        Ok(bytes)
    }

    /// A FREE slot from the pool (the caller holds the reservation lock, so nobody else
    /// takes one meanwhile).
    fn take_free(&self, core: &BufferCore) -> Result<usize> {
        let n = self.pool.len();
        let find = || {
            let from = self.next_free.load(Ordering::Relaxed);
            (0..n)
                .map(|k| (from + k) % n)
                .find(|&i| self.pool[i].state.load(Ordering::Acquire) == FREE)
        };
        let mut found = find();
        if found.is_none() {
            let _waiting = crate::insert_wait::Waiting::begin();
            self.freed.wait_until(|| {
                found = find();
                found.is_some() || core.is_stopped()
            });
        }
        let i = found.ok_or(WalError::Closed)?;
        self.next_free.store((i + 1) % n, Ordering::Relaxed);
        Ok(i)
    }

    /// The leader publishes the group's placement (Algorithm 5, `slot_notify`).
    fn notify(&self, t: Ticket, bytes: u64, p: Placement) {
        let slot = &self.pool[t.slot];
        slot.start.store(p.start.0, Ordering::Relaxed);
        slot.base.store(p.base.0, Ordering::Relaxed);
        slot.end.store(p.end.0, Ordering::Relaxed);
        let prev = slot.state.swap(COPYING + bytes, Ordering::AcqRel);
        assert_eq!(prev, PENDING);
        slot.notified.notify_all();
    }

    /// A member waits for its leader's notification (`slot_wait`); returns the group's
    /// placement.
    fn wait(&self, t: Ticket, core: &BufferCore) -> Result<Placement> {
        let slot = &self.pool[t.slot];
        // Our own bytes are still counted, so the state cannot pass COPYING while we wait.
        let placed = || {
            let s = slot.state.load(Ordering::Acquire);
            (COPYING..OPEN).contains(&s)
        };
        let _waiting = crate::insert_wait::Waiting::unless(placed);
        let mut ready = false;
        for _ in 0..SPINS {
            if placed() {
                ready = true;
                break;
            }
            spin_hint();
        }
        if !ready {
            slot.notified.wait_until(|| placed() || core.is_stopped());
            if !placed() {
                return Err(WalError::Closed);
            }
        }
        Ok(Placement {
            start: Lsn(slot.start.load(Ordering::Relaxed)),
            base: Lsn(slot.base.load(Ordering::Relaxed)),
            end: Lsn(slot.end.load(Ordering::Relaxed)),
        })
    }

    /// A member has copied its `size` bytes (`slot_release`). Returns true for the last
    /// one, which must release the group; the slot is then FREE again.
    fn leave(&self, t: Ticket, size: u64) -> bool {
        let slot = &self.pool[t.slot];
        // AcqRel: the last member's release must follow every member's copy.
        let prev = slot.state.fetch_sub(size, Ordering::AcqRel);
        assert!(
            prev >= COPYING + size && prev < OPEN,
            "bad slot state {prev:#x}"
        );
        if prev - size > COPYING {
            return false;
        }
        // Everybody else has read the placement (they read it before leaving).
        slot.state.store(FREE, Ordering::Release);
        self.freed.notify_all();
        true
    }

    /// Wakes every thread parked on a slot or on the pool (the buffer stopped).
    fn wake_all(&self) {
        self.freed.notify_all();
        for s in self.pool.iter() {
            s.notified.notify_all();
        }
    }
}

/// Where a thread starts probing the array: spread over the slots so threads do not all
/// pile onto one. Under loom, a fixed start keeps executions deterministic.
fn probe_start(n: usize) -> usize {
    #[cfg(loom)]
    {
        let _ = n;
        0
    }
    #[cfg(not(loom))]
    {
        use std::cell::Cell;
        thread_local! {
            static SEED: Cell<u32> = const { Cell::new(0) };
        }
        SEED.with(|s| {
            let mut x = s.get();
            if x == 0 {
                // Any distinct non-zero seed per thread: the address of its own seed.
                x = (s as *const Cell<u32> as usize as u32) | 1;
            }
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            s.set(x);
            x as usize % n
        })
    }
}

/// How a consolidating variant orders groups and releases them.
pub(crate) trait GroupRelease: Send + Sync {
    /// True if a group may be reserved only after the previous one is released (the lock
    /// is, in effect, held from reservation to release: consolidated, `C`).
    const SERIAL: bool;
    /// Releases the filled range `[start, end)` (a group or a solo insert).
    fn release(&self, core: &BufferCore, start: Lsn, end: Lsn) -> Result<()>;
}

/// The insert path of Algorithm 2 over the consolidation array, with the release step
/// left to `R`.
pub(crate) struct Consolidating<R> {
    /// The reserved position, guarded by the reservation lock (`L` in the paper).
    reserved: Mutex<Lsn>,
    array: ConsolidationArray,
    release: R,
}

impl<R: GroupRelease> Consolidating<R> {
    pub(crate) fn new(core: &BufferCore, start: Lsn, slots: usize, release: R) -> Self {
        Consolidating {
            reserved: Mutex::new(start),
            array: ConsolidationArray::new(slots, core.max_frame()),
            release,
        }
    }

    /// Takes the reservation lock; in serial mode, also waits until the previous
    /// reservation is released (the lock then stands for "reserved and not yet released",
    /// as in the paper, where the group's last member releases the lock itself). The wait
    /// happens without the lock: a thread that has to park for it must not keep running
    /// threads from reserving once the turn comes (with more threads than cores, it may
    /// not run again for a while).
    fn lock_turn(&self, core: &BufferCore) -> Result<MutexGuard<'_, Lsn>> {
        loop {
            let g = crate::insert_wait::lock(&self.reserved);
            let at = *g;
            if !R::SERIAL || core.released() == at {
                return Ok(g);
            }
            drop(g);
            core.wait_turn(at)?;
        }
    }

    /// Inserts alone: reserve, fill, release. The caller holds the lock (and, in serial
    /// mode, the turn).
    fn solo(
        &self,
        core: &BufferCore,
        rec: &Record<'_>,
        mut reserved: MutexGuard<'_, Lsn>,
    ) -> Result<Lsn> {
        let p = core.place(*reserved, rec.frame_len);
        *reserved = p.end;
        drop(reserved);
        // SAFETY: we advanced the reserved position past `p.end` under the lock; the range
        // is ours until released, and `prepare` waits for its space.
        unsafe {
            core.prepare(p)?;
            core.fill_record(p.base, rec);
        }
        self.release.release(core, p.start, p.end)?;
        Ok(p.base)
    }
}

impl<R: GroupRelease> InsertAlgorithm for Consolidating<R> {
    fn insert(&self, core: &BufferCore, rec: &Record<'_>) -> Result<Lsn> {
        // No contention: insert alone (Algorithm 2, lines 2–5). In serial mode the lock
        // counts as free only if no group is still copying.
        if let Some(g) = self.reserved.try_lock() {
            if !R::SERIAL || core.released() == *g {
                return self.solo(core, rec, g);
            }
        }
        let Some(t) = self.array.join(rec.frame_len) else {
            // Every slot was closed or full: wait for the lock like the baseline.
            return self.solo(core, rec, self.lock_turn(core)?);
        };
        let group = if t.offset == 0 {
            // Wait for the previous group before closing ours, so that arrivals during the
            // wait still join us.
            let mut g = self.lock_turn(core)?;
            let bytes = self.array.close(t, core)?;
            let p = core.place(*g, bytes);
            *g = p.end;
            drop(g);
            // SAFETY: the group's range is reserved (the reserved position is past it) and
            // not released before its last member finishes; only the leader writes the
            // padding in front of it.
            unsafe { core.prepare(p)? };
            self.array.notify(t, bytes, p);
            p
        } else {
            self.array.wait(t, core)?
        };
        let lsn = group.base.add(t.offset);
        assert!(lsn.add(rec.frame_len) <= group.end);
        // SAFETY: `[lsn, lsn + frame_len)` is our part of the group's reservation (offsets
        // tile the group); the leader waited for its space before notifying.
        unsafe { core.fill_record(lsn, rec) };
        if self.array.leave(t, rec.frame_len) {
            self.release.release(core, group.start, group.end)?;
        }
        Ok(lsn)
    }

    fn wake_all(&self) {
        self.array.wake_all();
    }
}
