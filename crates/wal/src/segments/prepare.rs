//! The segment preparer: a background thread that makes all of the log's segment space
//! (allocates it, or zero-fills it: [`crate::Preallocate`]), so that the flush daemon,
//! whose rounds commits wait for, never does.
//!
//! A segment file holds the segment's first `extent` bytes, allocated and synced (see the
//! `segment` module docs). The preparer
//!
//! * creates the segment the daemon is about to need: on demand at the small
//!   [`segment::initial_extent`] (a new log's first segment, or the first one after a
//!   recovery), or ahead, at full size, once the daemon has filled half of the current one
//!   (a log that fills half a segment is busy enough to fill the next, and the
//!   allocation then happens while the current one fills; an idle database never pays
//!   for it);
//! * extends the current segment's file ahead of the daemon, doubling its extent each
//!   time the daemon has written into the second half of it.
//!
//! A segment is made from a retired one when truncation left one in the recycling pool
//! (`segment::recycle`): a header write, a sync and a rename, and space whose blocks are
//! already written (a log write over them converts no extent). The recycled file is
//! whole, so its extent is the whole segment at once. With the pool empty, the segment
//! is created as above.
//!
//! The daemon writes only below the extent the preparer has published, which is synced
//! before it is published: a log write never changes a file's size, and a crash in the
//! middle of an extension leaves bytes past the published extent that never held log
//! data. If the daemon outruns the preparer, it parks on the preparer's condition
//! variable until the extension it needs is published.

use super::segment;
use super::set::SegmentSet;
use crate::error::{Result, WalError};
use crate::health::Health;
use crate::sync::{Condvar, Mutex, MutexGuard, Ordering};
use crate::Lsn;
use sluice_storage::FileHandle;

/// What the preparer uses of the log: its segment files and its health, never the
/// buffer, the waiters or the daemon. The one thing a failed job does to the rest of the
/// log, poisoning it, is the callback [`Preparer::run`] takes.
#[derive(Clone, Copy)]
pub(crate) struct PrepareContext<'a> {
    pub(crate) segments: &'a SegmentSet,
    pub(crate) health: &'a Health,
}

/// A piece of work for the preparer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Job {
    /// Create segment `start` with `extent` data bytes.
    Create { start: Lsn, extent: u64 },
    /// Zero-fill the data bytes `[from, to)` of segment `start`.
    Extend { start: Lsn, from: u64, to: u64 },
}

#[derive(Default)]
struct State {
    /// The segment the daemon writes and its published extent: data bytes allocated and
    /// durable, below which a log write needs only an `fdatasync`.
    current: Option<(Lsn, u64)>,
    /// The extent the daemon asked the current segment to reach.
    target: u64,
    /// The segment to create next, and the extent to create it with.
    create: Option<(Lsn, u64)>,
    /// What the preparer is doing now.
    busy: Option<Job>,
    stop: bool,
}

impl State {
    /// The next job, most urgent first: the daemon may be parked on an extension.
    fn next_job(&mut self) -> Option<Job> {
        if let Some((start, extent)) = self.current {
            if self.target > extent {
                return Some(Job::Extend {
                    start,
                    from: extent,
                    to: self.target,
                });
            }
        }
        self.create
            .take()
            .map(|(start, extent)| Job::Create { start, extent })
    }
}

/// The preparer's queue and the current segment's extent.
#[derive(Default)]
pub(crate) struct Preparer {
    state: Mutex<State>,
    cv: Condvar,
}

impl Preparer {
    /// Stops the thread after the job in progress. From then on the daemon (only still
    /// running while the log closes) does its own preparing.
    pub(crate) fn stop(&self) {
        self.state.lock().stop = true;
        self.cv.notify_all();
    }

    /// Wakes whoever waits on the preparer (the daemon, parked for an extension or a new
    /// segment): it looks at the log's health again. Poisoning calls it before anything
    /// else can block on the daemon (a durable callback that closes the log joins it).
    pub(crate) fn wake(&self) {
        let _s = self.state.lock();
        self.cv.notify_all();
    }

    /// Parks the daemon until the preparer's state changes; fails if the log is poisoned
    /// (the preparer's own failure is one way).
    fn wait<'a>(
        &self,
        cx: PrepareContext<'_>,
        s: MutexGuard<'a, State>,
    ) -> Result<MutexGuard<'a, State>> {
        if let Some(e) = cx.health.error() {
            return Err(e);
        }
        Ok(self.cv.wait(s))
    }

    /// The file of segment `start`, which the daemon is about to write: prepared ahead, or
    /// created now by the preparer (the daemon parks meanwhile). Its extent becomes the
    /// current one.
    ///
    /// With `wait` false it never waits: `Ok(None)` if the segment is not made yet (it
    /// is asked for), for a caller that may not wait for the preparer's I/O (a
    /// committing thread on the io_uring path).
    pub(crate) fn obtain(
        &self,
        cx: PrepareContext<'_>,
        start: Lsn,
        wait: bool,
    ) -> Result<Option<Box<dyn FileHandle>>> {
        let mut s = self.state.lock();
        // The preparer notes a segment as existing once it is whole and durable.
        while !cx.segments.existing_segment(start) {
            let creating = matches!(s.busy, Some(Job::Create { start: b, .. }) if b == start);
            if s.stop && !creating {
                drop(s);
                let extent = segment::initial_extent(cx.segments.segment_bytes);
                let f = cx.segments.create(start, extent)?;
                cx.segments.note_segment(start);
                return self.adopt(cx, start, f).map(Some);
            }
            if !creating && s.create.map(|c| c.0) != Some(start) {
                s.create = Some((start, segment::initial_extent(cx.segments.segment_bytes)));
                self.cv.notify_all();
            }
            if !wait {
                return Ok(None);
            }
            s = self.wait(cx, s)?;
        }
        if s.create.map(|c| c.0) == Some(start) {
            s.create = None;
        }
        drop(s);
        let f = segment::open(&*cx.segments.storage, cx.segments.dir_of(start), start)?;
        self.adopt(cx, start, f).map(Some)
    }

    /// Makes `start`, open as `f`, the current segment, with the extent its file has.
    fn adopt(
        &self,
        cx: PrepareContext<'_>,
        start: Lsn,
        f: Box<dyn FileHandle>,
    ) -> Result<Box<dyn FileHandle>> {
        // Recovery synced every segment file, and a segment created since is synced before
        // it is noted: the whole length is durable.
        let extent = segment::extent_of_file(f.len()?, cx.segments.segment_bytes);
        let mut s = self.state.lock();
        s.current = Some((start, extent));
        s.target = extent;
        Ok(f)
    }

    /// Returns once the current segment `start` is extended past `end` of its data bytes
    /// (the end of the daemon's next write into it), parking if the preparer is behind;
    /// asks for the next extension, and for the next segment, ahead of need.
    ///
    /// With `wait` false it never waits: `Ok(false)` if the extent is short (the
    /// extension is asked for).
    pub(crate) fn reserve(
        &self,
        cx: PrepareContext<'_>,
        start: Lsn,
        end: u64,
        wait: bool,
    ) -> Result<bool> {
        let segment_bytes = cx.segments.segment_bytes;
        assert!(
            end <= segment_bytes,
            "write to {end} in a {segment_bytes}-byte segment"
        );
        let mut s = self.state.lock();
        let (current, extent) = s.current.expect("the daemon writes a segment it obtained");
        assert_eq!(current, start, "the daemon writes the current segment");
        let mut wanted = false;
        // Double the extent once the daemon writes into its second half.
        if end.saturating_mul(2) > extent && extent < segment_bytes {
            let target = extent.saturating_mul(2).max(end).min(segment_bytes);
            if target > s.target {
                s.target = target;
                wanted = true;
            }
        }
        // Create the next segment, at full size, once this one is half full.
        let next = start.add(segment_bytes);
        if end >= segment_bytes / 2
            && s.create.is_none()
            && !matches!(s.busy, Some(Job::Create { start: b, .. }) if b == next)
            && !cx.segments.existing_segment(next)
        {
            s.create = Some((next, segment_bytes));
            wanted = true;
        }
        if wanted {
            self.cv.notify_all();
        }
        loop {
            let (_, extent) = s.current.expect("still the current segment");
            if extent >= end {
                return Ok(true);
            }
            let extending = matches!(s.busy, Some(Job::Extend { .. }));
            if !wait && !s.stop {
                return Ok(false);
            }
            if s.stop && !extending {
                // Closing, and the preparer is gone: extend here.
                let to = s.target.max(end);
                drop(s);
                cx.segments.extend(start, extent, to)?;
                s = self.state.lock();
                s.current = Some((start, to));
                continue;
            }
            s = self.wait(cx, s)?;
        }
    }

    /// The thread's body; `poison` stops the log when a job fails.
    pub(crate) fn run(&self, cx: PrepareContext<'_>, poison: impl Fn(WalError)) {
        let p = self;
        loop {
            let job = {
                let mut s = p.state.lock();
                loop {
                    // Poisoned: no job can succeed any more, and one left undone (an
                    // extension nobody will publish) would be picked up again and again.
                    if s.stop || cx.health.is_poisoned() {
                        return;
                    }
                    if let Some(job) = s.next_job() {
                        s.busy = Some(job);
                        break job;
                    }
                    s = p.cv.wait(s);
                }
            };
            let r = if cx.health.is_poisoned() {
                Ok(())
            } else {
                Self::work(cx, job)
            };
            // A failed write or sync poisons the log like any other: after a failed fsync
            // the kernel may have dropped the dirty pages (the header, say), so a later
            // "successful" sync would not mean the segment is whole.
            if let Err(e) = r {
                poison(e);
            }
            let mut s = p.state.lock();
            s.busy = None;
            if let (Job::Extend { start, to, .. }, Some((current, extent))) = (job, s.current) {
                if current == start && !cx.health.is_poisoned() {
                    s.current = Some((start, extent.max(to)));
                }
            }
            drop(s);
            p.cv.notify_all();
        }
    }

    fn work(cx: PrepareContext<'_>, job: Job) -> Result<(), WalError> {
        match job {
            Job::Create { start, .. } if cx.segments.existing_segment(start) => Ok(()),
            Job::Create { start, extent } => {
                let (storage, dir) = (&*cx.segments.storage, cx.segments.dir_of(start));
                if let Some(old_start) = cx.segments.take_recycled(start) {
                    segment::recycle(
                        storage,
                        dir,
                        old_start,
                        start,
                        cx.segments.segment_bytes,
                        &cx.segments.syncs,
                    )?;
                    cx.segments
                        .segments_recycled
                        .fetch_add(1, Ordering::Relaxed);
                } else {
                    cx.segments.create(start, extent)?;
                }
                cx.segments.note_segment(start);
                Ok(())
            }
            Job::Extend { start, from, to } => cx.segments.extend(start, from, to),
        }
    }
}
