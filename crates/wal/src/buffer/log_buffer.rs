//! A log buffer: the shared core plus one insertion algorithm.

use super::buffer_core::MIN_SEGMENT_BYTES;
use super::{
    atomic, consolidated, decoupled, delegated, hybrid, mutex, BufferCore, BufferOptions,
    InsertAlgorithm, InsertVariant, Record,
};
use crate::error::{Result, WalError};
use crate::frame;
use crate::Lsn;

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
        if opts.segment_bytes < MIN_SEGMENT_BYTES
            || !opts.segment_bytes.is_multiple_of(frame::ALIGN)
        {
            return Err(WalError::InvalidArgument(format!(
                "segment size {} must be at least {MIN_SEGMENT_BYTES} and a multiple of {}",
                opts.segment_bytes,
                frame::ALIGN
            )));
        }
        if !start.0.is_multiple_of(frame::ALIGN) {
            return Err(WalError::InvalidArgument(format!(
                "start LSN {start} is not aligned"
            )));
        }
        if opts.variant.consolidates() && !(1..=BufferOptions::MAX_SLOTS).contains(&opts.slots) {
            return Err(WalError::InvalidArgument(format!(
                "consolidation slots must be between 1 and {}, got {}",
                BufferOptions::MAX_SLOTS,
                opts.slots
            )));
        }
        let core = BufferCore::new(opts, start);
        // A frame must fit a segment, and at most a quarter of the ring so that a few
        // large records cannot wedge each other waiting for space.
        let max_payload =
            (core.max_frame() as usize - frame::RECORD_HEADER).min(frame::MAX_FRAME_PAYLOAD);
        let algo: Box<dyn InsertAlgorithm> = match opts.variant {
            InsertVariant::Mutex => Box::new(mutex::MutexInsert::new(start)),
            InsertVariant::Consolidated => Box::new(consolidated::new(&core, start, opts.slots)),
            InsertVariant::Decoupled => Box::new(decoupled::DecoupledInsert::new(start)),
            InsertVariant::Hybrid => Box::new(hybrid::new(&core, start, opts.slots)),
            InsertVariant::Delegated => Box::new(delegated::new(&core, start, opts.slots)),
            InsertVariant::Atomic => Box::new(atomic::AtomicInsert::new(&core, start)),
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
        self.core.flush.park_idle_timeout(timeout, || {
            self.core.released() > past || self.core.space_wanted() || self.core.is_stopped()
        });
        self.core.released()
    }

    /// Stops the buffer: waiters return and later inserts fail with `Closed`.
    pub fn stop(&self) {
        self.core.stop();
        self.algo.wake_all();
    }
}
