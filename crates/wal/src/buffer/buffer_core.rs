//! The state every insertion algorithm shares: the ring of bytes, the positions the flush
//! side reads (`released`, `written`, `durable`), and the places threads wait.

use super::flush_signal::FlushSignal;
use super::{parked::Turns, ring::Ring, BufferOptions};
use crate::error::{Result, WalError};
use crate::frame;
use crate::sync::{fence, AtomicBool, AtomicU64, Ordering};
use crate::wait::Parker;
use crate::Lsn;
use crossbeam_utils::CachePadded;

/// The smallest ring. Under loom the models use a tiny ring so that a few records wrap it
/// and wait for space.
const MIN_CAPACITY: usize = if cfg!(loom) { 256 } else { 4096 };
/// The smallest segment, for the same reason.
pub(super) const MIN_SEGMENT_BYTES: u64 = if cfg!(loom) { 128 } else { 4096 };

/// A record prepared for insertion: its checksum is computed before any lock is taken.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record<'a> {
    pub(crate) payload: &'a [u8],
    pub(crate) crc: u32,
    /// Bytes the frame occupies (aligned).
    pub(crate) frame_len: u64,
}

/// An insertion algorithm: reserves space for a frame, fills it, and releases it so that
/// `released` only ever covers filled bytes.
pub(crate) trait InsertAlgorithm: Send + Sync {
    /// Inserts `rec` and returns the LSN of its frame. On return the frame is filled, and
    /// it lies below `core.released()` or some other thread is bound to release it
    /// (delegation).
    fn insert(&self, core: &BufferCore, rec: &Record<'_>) -> Result<Lsn>;

    /// Wakes every thread parked inside the algorithm's own structures (the buffer has
    /// stopped; each re-checks and returns an error). Waits on the core's positions are
    /// woken by [`BufferCore::stop`].
    fn wake_all(&self);
}

/// A reservation placed in the stream: `[start, base)` is padding up to a segment end (empty
/// if none is needed), `[base, end)` is the caller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) start: Lsn,
    pub(crate) base: Lsn,
    pub(crate) end: Lsn,
}

/// The state every insertion algorithm shares: the ring, the positions the flush side
/// reads, and the places threads wait.
pub(crate) struct BufferCore {
    pub(super) ring: Ring,
    pub(super) segment_bytes: u64,
    /// The largest frame, and the largest consolidated group: small enough that padding
    /// plus a frame never exceed the ring, and no larger than a segment.
    pub(super) max_frame: u64,
    // The positions sit on their own cache lines: inserters write `released`, the flush
    // side writes `written` and `durable`, and neither should miss on the other's stores.
    /// Everything below is filled and may be copied out.
    pub(super) released: CachePadded<AtomicU64>,
    /// Everything below was copied out; the ring space below `written + capacity` is free.
    pub(super) written: CachePadded<AtomicU64>,
    /// Everything below is synced. Inserters stamp it into frames as the durable hint.
    pub(super) durable: CachePadded<AtomicU64>,
    /// Set when the log is poisoned or closed, so waiters stop waiting.
    pub(super) stopped: AtomicBool,
    /// Inserters waiting for free ring space.
    pub(super) space: Parker,
    /// Threads parked until `released` reaches their turn (see `turns`).
    pub(super) turns: Turns,
    /// The flush side's signal: releases and inserters short of space ring it.
    pub(crate) flush: FlushSignal,
}

impl BufferCore {
    pub(super) fn new(opts: &BufferOptions, start: Lsn) -> BufferCore {
        let cap = opts.capacity.max(MIN_CAPACITY).next_power_of_two();
        assert!(
            opts.segment_bytes.is_multiple_of(frame::ALIGN) && start.0.is_multiple_of(frame::ALIGN)
        );
        let max_frame = (cap as u64 / 4).min(opts.segment_bytes);
        // Padding before a frame is shorter than the frame, so a placed reservation never
        // needs more than half the ring: the lowest unreleased one can always get space.
        const _: () = assert!(MIN_CAPACITY >= 4 * frame::RECORD_HEADER);
        BufferCore {
            ring: Ring::new(cap),
            segment_bytes: opts.segment_bytes,
            max_frame,
            released: CachePadded::new(AtomicU64::new(start.0)),
            written: CachePadded::new(AtomicU64::new(start.0)),
            durable: CachePadded::new(AtomicU64::new(start.0)),
            stopped: AtomicBool::new(false),
            space: Parker::new(),
            turns: Turns::new(),
            flush: FlushSignal::new(),
        }
    }

    /// Ring bytes.
    pub(crate) fn capacity(&self) -> u64 {
        self.ring.capacity()
    }

    /// The largest frame (and consolidated group) in bytes.
    pub(crate) fn max_frame(&self) -> u64 {
        self.max_frame
    }

    /// The released position.
    pub(crate) fn released(&self) -> Lsn {
        Lsn(self.released.load(Ordering::Acquire))
    }

    /// The written (copied-out) position.
    pub(crate) fn written(&self) -> Lsn {
        Lsn(self.written.load(Ordering::Acquire))
    }

    /// The durable position.
    pub(crate) fn durable(&self) -> Lsn {
        Lsn(self.durable.load(Ordering::Acquire))
    }

    /// True once the buffer was stopped (poisoned or closed).
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Fails if the buffer was stopped (poisoned or closed); the caller maps this to the
    /// log's error.
    pub(crate) fn check_running(&self) -> Result<()> {
        if self.is_stopped() {
            Err(WalError::Closed)
        } else {
            Ok(())
        }
    }

    /// Where `total` bytes reserved at `at` are placed: if they would cross a segment end,
    /// padding fills up to the boundary first (`base > start`).
    pub(crate) fn place(&self, at: Lsn, total: u64) -> Placement {
        assert!(total <= self.max_frame, "reservation of {total} bytes");
        // (Debug only, as the rest of the insert path's checks.) A reservation is whole
        // aligned frames and never empty, so the reserved position strictly increases
        // with each one and every LSN handed out is above the last.
        debug_assert!(
            total > 0 && total.is_multiple_of(frame::ALIGN) && at.0.is_multiple_of(frame::ALIGN),
            "LSNs strictly increasing: a reservation of {total} bytes at {at} is empty or \
             not whole aligned frames"
        );
        let off = at.0 % self.segment_bytes;
        let base = if off + total > self.segment_bytes {
            at.add(self.segment_bytes - off)
        } else {
            at
        };
        let p = Placement {
            start: at,
            base,
            end: base.add(total),
        };
        debug_assert!(
            p.base.0 % self.segment_bytes + total <= self.segment_bytes
                && p.base.0 - p.start.0 < total,
            "segment boundaries: the frame of {total} bytes placed at {} crosses a segment \
             end, or its padding is longer than a frame",
            p.base
        );
        p
    }

    /// Waits for the ring space of a placed reservation and writes its padding, if any.
    ///
    /// # Safety
    /// The caller owns `[p.start, p.end)`: it reserved the range (holds the reservation
    /// lock at `p.start`, or advanced the reserved position past `p.end`) and has not
    /// released it.
    pub(crate) unsafe fn prepare(&self, p: Placement) -> Result<()> {
        // reserved ≥ released: a range its owner has not released lies at or above the
        // released position (releases are contiguous and cannot pass it). Checked before
        // any byte is written. (Debug only: the insert path's.)
        debug_assert!(
            self.released.load(Ordering::Relaxed) <= p.start.0,
            "reserved ≥ released: the reservation [{}, {}) lies below the released position {}",
            p.start,
            p.end,
            self.released.load(Ordering::Relaxed)
        );
        self.wait_for_space(p.end)?;
        if p.base > p.start {
            // SAFETY: forwarded from the caller; the space was waited for above.
            unsafe { self.fill_padding(p.start, p.base.0 - p.start.0) };
        }
        Ok(())
    }

    /// Blocks until the ring has room for every byte below `end` (the flush side has
    /// copied out everything below `end - capacity`).
    pub(crate) fn wait_for_space(&self, end: Lsn) -> Result<()> {
        let cap = self.capacity();
        let room = || self.written.load(Ordering::Acquire) + cap >= end.0;
        if room() {
            return Ok(());
        }
        // Waiting for the flush side to free ring space is waiting for the log buffer too.
        let _waiting = crate::insert_wait::Waiting::begin();
        // The flush side may be asleep with nothing due; it must free space now.
        self.flush.request();
        self.space.wait_until(|| room() || self.is_stopped());
        if room() {
            Ok(())
        } else {
            Err(WalError::Closed)
        }
    }

    /// True if some inserter waits for ring space (the flush side treats this as a reason
    /// to flush now).
    pub(crate) fn space_wanted(&self) -> bool {
        self.space.parked() > 0
    }

    /// Writes `rec`'s frame at `lsn`.
    ///
    /// # Safety
    /// The caller owns `[lsn, lsn + rec.frame_len)` (reserved, space waited for, not yet
    /// released).
    pub(crate) unsafe fn fill_record(&self, lsn: Lsn, rec: &Record<'_>) {
        // The durable position never passes `released`, which never passes an unreleased
        // reservation, so the hint is always below the frame's own LSN.
        let hint = self.durable();
        assert!(hint <= lsn, "durable hint {hint} above the frame at {lsn}");
        let header = frame::record_header(rec.payload.len(), rec.crc, lsn, hint);
        let used = (frame::RECORD_HEADER + rec.payload.len()) as u64;
        // SAFETY: forwarded from the caller's ownership of the whole frame.
        unsafe {
            self.ring.write(lsn, &header);
            self.ring
                .write(lsn.add(frame::RECORD_HEADER as u64), rec.payload);
            let tail = rec.frame_len - used;
            if tail > 0 {
                self.ring.write(lsn.add(used), &[0u8; 8][..tail as usize]);
            }
        }
    }

    /// Writes a padding frame of `total` bytes at `lsn`.
    ///
    /// # Safety
    /// As for [`BufferCore::fill_record`], for `[lsn, lsn + total)`.
    pub(crate) unsafe fn fill_padding(&self, lsn: Lsn, total: u64) {
        // SAFETY: forwarded from the caller.
        unsafe { self.ring.write(lsn, &frame::pad_header(total, lsn)) };
    }

    /// Publishes `released = end`, advancing it from exactly `from`: the caller guarantees
    /// every byte of `[from, end)` is filled and that it holds the release turn (`released`
    /// is at `from` and nobody else may move it). Wakes whatever waits on the new position.
    pub(crate) fn publish_released(&self, from: Lsn, end: Lsn) {
        self.store_released(from, end);
        // Pairs with the fences of parked threads (turn waiters, the idle flush side): either
        // they see the new position or we see them registered. See `crate::wait::Parker`.
        fence(Ordering::SeqCst);
        if self.turns.anyone_parked() {
            self.hand_over();
        }
        self.after_release();
    }

    /// Moves `released` from `from` to `end` (the release turn is the caller's).
    pub(super) fn store_released(&self, from: Lsn, end: Lsn) {
        let prev = self.released.load(Ordering::Relaxed);
        // Releases are contiguous and monotone: whoever holds the turn starts exactly at
        // the released position and never moves it back.
        assert!(
            prev == from.0 && from <= end,
            "release of [{from}, {end}) while released is {prev}"
        );
        // (Debug only: `written` is the flush side's cache line.)
        debug_assert!(end.0 <= self.written.load(Ordering::Relaxed) + self.capacity());
        self.released.store(end.0, Ordering::Release);
    }

    pub(super) fn after_release(&self) {
        // (The caller issued the fence that orders this after the new position.)
        self.flush.released(
            self.released.load(Ordering::Relaxed),
            self.durable.load(Ordering::Relaxed),
        );
    }

    /// Copies the released bytes `[from, to)` into `out` (appending).
    pub(crate) fn copy_out(&self, from: Lsn, to: Lsn, out: &mut Vec<u8>) {
        assert!(from <= to && to <= self.released() && from >= self.written());
        let len = (to.0 - from.0) as usize;
        let at = out.len();
        out.resize(at + len, 0);
        // SAFETY: `[from, to)` is released (filled) and not yet marked written, so no
        // inserter can reserve over it; only the flush side (the caller) reads it.
        unsafe { self.ring.read(from, &mut out[at..]) };
    }

    /// Marks everything below `lsn` as copied out, freeing ring space.
    pub(crate) fn mark_written(&self, lsn: Lsn) {
        assert!(lsn <= self.released(), "written {lsn} passes released");
        let prev = self.written.swap(lsn.0, Ordering::AcqRel);
        assert!(prev <= lsn.0, "written went backwards: {prev} -> {lsn}");
        self.space.notify_all();
    }

    /// Marks everything below `lsn` as durable.
    pub(crate) fn mark_durable(&self, lsn: Lsn) {
        assert!(lsn <= self.written(), "durable {lsn} passes written");
        let prev = self.durable.swap(lsn.0, Ordering::AcqRel);
        assert!(prev <= lsn.0, "durable went backwards: {prev} -> {lsn}");
    }

    /// Stops the buffer: every waiter returns, every later insert fails.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.space.notify_all();
        self.flush.request();
        self.turns.wake_all();
    }
}
