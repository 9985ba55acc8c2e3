//! A flush round's steps, written once for both flush paths: which segment files the
//! bytes `[from, to)` go to, at which offsets, and which syncs make them durable
//! ([`SegmentWriter::plan`]); then what a completed round publishes ([`finish`]). The
//! daemon runs the steps on its thread ([`run`]); the ring path submits them as one
//! chain (`ring.rs`), so the two write, sync and fail identically.

use crate::error::{Result, WalError};
use crate::segments::segment;
use crate::shared::Shared;
use crate::sync::Ordering;
use crate::Lsn;
use sluice_storage::{failpoint, FileHandle, RingOp};
use std::ops::Range;
use std::sync::Arc;

/// One step of a round, in the order it must happen.
pub(crate) enum Step {
    /// Write `staging[range]` at `offset` of the segment starting at `segment`.
    Write {
        file: Arc<dyn FileHandle>,
        range: Range<usize>,
        offset: u64,
    },
    /// The named failure point after a write ([`failpoint::LOG_WRITTEN`]).
    Written { file: Arc<dyn FileHandle> },
    /// Sync the segment starting at `segment` (through its fence).
    Sync {
        segment: Lsn,
        file: Arc<dyn FileHandle>,
    },
}

impl Step {
    /// The step as a ring operation over `staging`.
    pub(crate) fn ring_op(&self, staging: &Arc<Vec<u8>>) -> RingOp {
        match self {
            Step::Write {
                file,
                range,
                offset,
            } => RingOp::Write {
                file: file.clone(),
                data: staging.clone(),
                range: range.clone(),
                offset: *offset,
            },
            Step::Written { file } => RingOp::Failpoint {
                file: file.clone(),
                name: failpoint::LOG_WRITTEN,
            },
            Step::Sync { file, .. } => RingOp::SyncData { file: file.clone() },
        }
    }
}

/// The segment the flush side appends to, kept from round to round.
#[derive(Default)]
pub(crate) struct SegmentWriter {
    current: Option<(Lsn, Arc<dyn FileHandle>)>,
}

impl SegmentWriter {
    /// The steps that write the bytes `[from, to)` (`staging[0..]` holds them) into
    /// their segments and sync every segment written — and, for an explicit sync with
    /// nothing to write, the current (or newest) segment, so that the request still
    /// reaches the disk. Obtains the next segment from the preparer when the range
    /// crosses a boundary, and reserves the space it writes (both may wait for the
    /// preparer — unless `wait` is false: then `Ok(None)` where they would, the segment
    /// or extension asked for, and nothing planned; planning again later is safe).
    pub(crate) fn plan(
        &mut self,
        s: &Shared,
        from: Lsn,
        to: Lsn,
        wait: bool,
    ) -> Result<Option<Vec<Step>>> {
        let seg_bytes = s.segments.segment_bytes;
        let mut steps = Vec::new();
        let mut finished: Vec<(Lsn, Arc<dyn FileHandle>)> = Vec::new();
        let mut at = from;
        let mut off = 0usize;
        while at < to {
            let seg = segment::segment_start(at, seg_bytes);
            if self.current.as_ref().map(|c| c.0) != Some(seg) {
                let Some(next) = s.preparer.obtain(s.prepare_context(), seg, wait)? else {
                    return Ok(None);
                };
                let next: Arc<dyn FileHandle> = Arc::from(next);
                if let Some(old) = self.current.replace((seg, next)) {
                    // A finished segment written this round: synced after the writes,
                    // before the current one (two of them in one round: the older at
                    // once).
                    if finished.len() == 1 {
                        let (segment, file) = finished.remove(0);
                        steps.push(Step::Sync { segment, file });
                    }
                    finished.push(old);
                }
            }
            let piece = (seg.0 + seg_bytes).min(to.0) - at.0;
            // Never write past the file's allocated, synced extent (the preparer's).
            if !s
                .preparer
                .reserve(s.prepare_context(), seg, at.0 + piece - seg.0, wait)?
            {
                return Ok(None);
            }
            let file = self.current.as_ref().expect("obtained above").1.clone();
            steps.push(Step::Write {
                file: file.clone(),
                range: off..off + piece as usize,
                offset: segment::SEGMENT_HEADER_BYTES + (at.0 - seg.0),
            });
            steps.push(Step::Written { file });
            at = at.add(piece);
            off += piece as usize;
        }
        for (segment, file) in finished {
            steps.push(Step::Sync { segment, file });
        }
        if self.current.is_none() {
            // An explicit sync before anything was ever written: sync the newest segment
            // if there is one.
            if let Some(seg) = s.segments.newest_segment() {
                let dir = s.segments.dir_of(seg);
                let file = segment::open(&*s.segments.storage, dir, seg)?;
                self.current = Some((seg, Arc::from(file)));
            }
        }
        if let Some((segment, file)) = &self.current {
            steps.push(Step::Sync {
                segment: *segment,
                file: file.clone(),
            });
        }
        Ok(Some(steps))
    }
}

/// Runs `steps` on this thread (the daemon's path).
pub(crate) fn run(s: &Shared, steps: &[Step], staging: &[u8]) -> Result<()> {
    for step in steps {
        match step {
            Step::Write {
                file,
                range,
                offset,
            } => file.write_at(&staging[range.clone()], *offset)?,
            Step::Written { file } => file.failpoint(failpoint::LOG_WRITTEN)?,
            Step::Sync { segment, file } => s.segments.sync(*segment, &**file)?,
        }
    }
    Ok(())
}

/// Settles the outcome of `steps` run outside this thread (the ring's chain): each
/// sync counts only through its segment's fence (`SyncFence::confirm`), and a failed
/// sync is recorded there, so the preparer's syncs of the same file see it.
/// `succeeded` steps completed; `result` is the chain's.
pub(crate) fn settle(
    s: &Shared,
    steps: &[Step],
    succeeded: usize,
    result: std::io::Result<()>,
) -> Result<()> {
    for step in &steps[..succeeded.min(steps.len())] {
        if let Step::Sync { segment, .. } = step {
            s.segments.confirm_sync(*segment, Ok(()))?;
        }
    }
    if let Err(e) = result {
        if let Some(Step::Sync { segment, .. }) = steps.get(succeeded) {
            s.segments.confirm_sync(*segment, Err(e))?;
            unreachable!("a failed sync is never confirmed");
        }
        return Err(WalError::from(e));
    }
    Ok(())
}

/// What a round that wrote and synced `[from, to)` publishes, on either path: the
/// counters, the new durable LSN, and a finished segment to the archiver. (Waking the
/// waiters is the caller's, once it holds no lock.)
pub(crate) fn finish(s: &Shared, steps: &[Step], from: Lsn, to: Lsn) {
    let syncs = steps
        .iter()
        .filter(|s| matches!(s, Step::Sync { .. }))
        .count();
    s.stats
        .bytes_written
        .fetch_add(to.0 - from.0, Ordering::Relaxed);
    s.stats.syncs.fetch_add(syncs as u64, Ordering::Relaxed);
    s.stats.flushes.fetch_add(1, Ordering::Relaxed);
    s.buffer.mark_durable(to);
    if let Some(a) = &s.archiver {
        let seg_bytes = s.segments.segment_bytes;
        if to.0 / seg_bytes > from.0 / seg_bytes {
            a.notify(); // a segment is finished: it may be archived
        }
    }
}
