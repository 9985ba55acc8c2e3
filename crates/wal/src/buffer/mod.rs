//! The log buffer: a ring of bytes with four positions, and pluggable insertion.
//!
//! ```text
//!   durable ≤ written ≤ released ≤ reserved          (all LSNs, each monotone)
//!   [.. durable)            on disk and synced
//!   [durable, written)      copied out by the flush side, being written/synced
//!   [written, released)     filled, waiting for the flush side
//!   [released, reserved)    owned by inserting threads, being filled
//! ```
//! An inserter may reserve up to `written + capacity`; beyond that it waits for the flush
//! side (a record larger than the free space waits, it is not refused). Frames never cross
//! a segment end: a reservation that would is preceded by a padding frame up to the
//! boundary (see [`crate::frame`]).
//!
//! Each insertion algorithm (Aether §5, appendix A) is a module implementing
//! [`InsertAlgorithm`] on top of the shared [`BufferCore`].

mod mutex;
mod ring;

use crate::error::{Result, WalError};
use crate::frame;
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crate::wait::Parker;
use crate::Lsn;
use ring::Ring;
use std::fmt;
use std::str::FromStr;

/// Which insertion algorithm the log buffer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum InsertVariant {
    /// One mutex around reserve + copy + release (Aether Algorithm 1, the baseline).
    #[default]
    Mutex,
}

impl InsertVariant {
    /// Every variant, in the order benchmarks list them.
    pub const ALL: &'static [InsertVariant] = &[InsertVariant::Mutex];

    /// The variant's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            InsertVariant::Mutex => "mutex",
        }
    }
}

impl fmt::Display for InsertVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for InsertVariant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        InsertVariant::ALL
            .iter()
            .copied()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = InsertVariant::ALL.iter().map(|v| v.name()).collect();
                format!(
                    "unknown log-buffer variant '{s}' (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// How a log buffer is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferOptions {
    /// Ring bytes; rounded up to a power of two.
    pub capacity: usize,
    /// LSN bytes per segment; frames never cross a multiple of this.
    pub segment_bytes: u64,
    /// The insertion algorithm.
    pub variant: InsertVariant,
    /// Slots in the consolidation array (variants that consolidate).
    pub slots: usize,
}

impl Default for BufferOptions {
    fn default() -> Self {
        BufferOptions {
            capacity: 8 << 20,
            segment_bytes: 64 << 20,
            variant: InsertVariant::Mutex,
            slots: 4,
        }
    }
}

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
    /// Inserts `rec` and returns the LSN of its frame. On return the frame lies below
    /// `core.released()` or some other thread has promised to release it (delegation).
    fn insert(&self, core: &BufferCore, rec: &Record<'_>) -> Result<Lsn>;
}

/// The state every insertion algorithm shares: the ring, the positions the flush side
/// reads, and the places threads wait.
pub(crate) struct BufferCore {
    ring: Ring,
    segment_bytes: u64,
    /// Everything below is filled and may be copied out.
    released: AtomicU64,
    /// Everything below was copied out; the ring space below `written + capacity` is free.
    written: AtomicU64,
    /// Everything below is synced. Inserters stamp it into frames as the durable hint.
    durable: AtomicU64,
    /// Set when the log is poisoned or closed, so waiters stop waiting.
    stopped: AtomicBool,
    /// Inserters waiting for free ring space.
    space: Parker,
    /// The flush side waits here for work; inserters wake it when it is idle.
    pub(crate) flusher: Parker,
    /// True while the flush side sleeps without a deadline and must be woken by releases.
    pub(crate) flusher_idle: AtomicBool,
    /// Release beyond this many pending bytes wakes the flush side (group-commit `L`).
    pub(crate) wake_bytes: AtomicU64,
}

impl BufferCore {
    fn new(opts: &BufferOptions, start: Lsn) -> BufferCore {
        let cap = opts.capacity.max(4096).next_power_of_two();
        assert!(
            opts.segment_bytes.is_multiple_of(frame::ALIGN) && start.0.is_multiple_of(frame::ALIGN)
        );
        BufferCore {
            ring: Ring::new(cap),
            segment_bytes: opts.segment_bytes,
            released: AtomicU64::new(start.0),
            written: AtomicU64::new(start.0),
            durable: AtomicU64::new(start.0),
            stopped: AtomicBool::new(false),
            space: Parker::new(),
            flusher: Parker::new(),
            flusher_idle: AtomicBool::new(false),
            wake_bytes: AtomicU64::new(u64::MAX),
        }
    }

    /// Ring bytes.
    pub(crate) fn capacity(&self) -> u64 {
        self.ring.capacity()
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

    /// Fails if the buffer was stopped (poisoned or closed); the caller maps this to the
    /// log's error.
    pub(crate) fn check_running(&self) -> Result<()> {
        if self.stopped.load(Ordering::Acquire) {
            Err(WalError::Closed)
        } else {
            Ok(())
        }
    }

    /// Where a frame of `total` bytes reserved at `at` is placed: if it would cross a
    /// segment end, `Some(pad)` bytes of padding fill up to the boundary first. Returns the
    /// padding length (if any) and the reservation's end.
    pub(crate) fn place(&self, at: Lsn, total: u64) -> (Option<u64>, Lsn) {
        let off = at.0 % self.segment_bytes;
        debug_assert!(total <= self.segment_bytes);
        if off + total > self.segment_bytes {
            let pad = self.segment_bytes - off;
            (Some(pad), Lsn(at.0 + pad + total))
        } else {
            (None, Lsn(at.0 + total))
        }
    }

    /// Blocks until the ring has room for every byte below `end` (the flush side has
    /// copied out everything below `end - capacity`).
    pub(crate) fn wait_for_space(&self, end: Lsn) -> Result<()> {
        let cap = self.capacity();
        let room = || self.written.load(Ordering::Acquire) + cap >= end.0;
        if room() {
            return Ok(());
        }
        // The flush side may be asleep with nothing due; it must free space now.
        self.flusher.notify_all();
        self.space
            .wait_until(|| room() || self.stopped.load(Ordering::Acquire));
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
        debug_assert!(hint <= lsn);
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

    /// Publishes `released = end`. The caller guarantees every byte below `end` is filled
    /// and that releases happen in LSN order (each call's `end` ≥ the previous one).
    pub(crate) fn publish_released(&self, end: Lsn) {
        let prev = self.released.swap(end.0, Ordering::AcqRel);
        debug_assert!(prev <= end.0, "released went backwards: {prev} -> {end}");
        self.after_release(end);
    }

    /// Advances `released` from exactly `from` to `end`; fails (returns false) if another
    /// thread moved it meanwhile. For lock-free variants.
    #[allow(dead_code)]
    pub(crate) fn try_advance_released(&self, from: Lsn, end: Lsn) -> bool {
        debug_assert!(from <= end);
        let ok = self
            .released
            .compare_exchange(from.0, end.0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if ok {
            self.after_release(end);
        }
        ok
    }

    fn after_release(&self, end: Lsn) {
        // Wake the flush side only when it sleeps with nothing due, or when enough bytes
        // are pending to meet the group-commit byte threshold; otherwise it finds the new
        // bytes on its own schedule and the insert path stays one atomic load cheaper.
        if self.flusher_idle.load(Ordering::Acquire)
            || end.0 - self.durable.load(Ordering::Relaxed)
                >= self.wake_bytes.load(Ordering::Relaxed)
        {
            self.flusher.notify_all();
        }
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
        self.stopped.store(true, Ordering::Release);
        self.space.notify_all();
        self.flusher.notify_all();
    }
}

/// A log buffer: the ring plus one insertion algorithm. The [`crate::Log`] drives it with
/// its flush daemon; the log-insert microbenchmark drives it with a flush side that only
/// frees space.
pub struct LogBuffer {
    pub(crate) core: BufferCore,
    algo: Box<dyn InsertAlgorithm>,
    max_payload: usize,
}

impl LogBuffer {
    /// A buffer whose first record goes at `start`.
    pub fn new(opts: &BufferOptions, start: Lsn) -> Result<LogBuffer> {
        if opts.segment_bytes < 4096 || !opts.segment_bytes.is_multiple_of(frame::ALIGN) {
            return Err(WalError::InvalidArgument(format!(
                "segment size {} must be at least 4096 and a multiple of {}",
                opts.segment_bytes,
                frame::ALIGN
            )));
        }
        if !start.0.is_multiple_of(frame::ALIGN) {
            return Err(WalError::InvalidArgument(format!(
                "start LSN {start} is not aligned"
            )));
        }
        let core = BufferCore::new(opts, start);
        // A frame must fit a segment, and at most a quarter of the ring so that a few
        // large records cannot wedge each other waiting for space.
        let max_frame = (core.capacity() / 4).min(opts.segment_bytes);
        let max_payload = (max_frame as usize - frame::RECORD_HEADER).min(frame::MAX_FRAME_PAYLOAD);
        let algo: Box<dyn InsertAlgorithm> = match opts.variant {
            InsertVariant::Mutex => Box::new(mutex::MutexInsert::new(start)),
        };
        Ok(LogBuffer {
            core,
            algo,
            max_payload,
        })
    }

    /// The largest payload one record may have.
    pub fn max_payload(&self) -> usize {
        self.max_payload
    }

    /// Inserts one record and returns its LSN. Blocks while the ring is full.
    pub fn insert(&self, payload: &[u8]) -> Result<Lsn> {
        if payload.len() > self.max_payload {
            return Err(WalError::InvalidArgument(format!(
                "record of {} bytes exceeds the limit of {} bytes",
                payload.len(),
                self.max_payload
            )));
        }
        self.core.check_running()?;
        let rec = Record {
            payload,
            crc: frame::payload_crc(payload),
            frame_len: frame::frame_len(payload.len()),
        };
        self.algo.insert(&self.core, &rec)
    }

    /// Everything below this is filled.
    pub fn released(&self) -> Lsn {
        self.core.released()
    }

    /// Everything below this was copied out.
    pub fn written(&self) -> Lsn {
        self.core.written()
    }

    /// Everything below this is durable.
    pub fn durable(&self) -> Lsn {
        self.core.durable()
    }

    /// Ring bytes.
    pub fn capacity(&self) -> u64 {
        self.core.capacity()
    }

    /// Copies released bytes `[from, to)` out (appending to `out`); `from` must be the
    /// written position.
    pub fn copy_out(&self, from: Lsn, to: Lsn, out: &mut Vec<u8>) {
        self.core.copy_out(from, to, out)
    }

    /// Frees ring space below `lsn` (after copying it out).
    pub fn mark_written(&self, lsn: Lsn) {
        self.core.mark_written(lsn)
    }

    /// Records that everything below `lsn` is durable.
    pub fn mark_durable(&self, lsn: Lsn) {
        self.core.mark_durable(lsn)
    }

    /// Waits until something beyond `past` is released, the buffer is stopped, or
    /// `timeout` passes; returns the released position. For flush sides.
    pub fn wait_released(&self, past: Lsn, timeout: std::time::Duration) -> Lsn {
        self.core.flusher_idle.store(true, Ordering::SeqCst);
        self.core.flusher.park_timeout(timeout, || {
            self.core.released() > past
                || self.core.space_wanted()
                || self.core.stopped.load(Ordering::Acquire)
        });
        self.core.flusher_idle.store(false, Ordering::SeqCst);
        self.core.released()
    }

    /// Stops the buffer: waiters return and later inserts fail with `Closed`.
    pub fn stop(&self) {
        self.core.stop()
    }
}
