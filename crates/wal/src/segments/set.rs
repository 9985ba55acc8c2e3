//! The log's segment files as a set: which exist, the directory each lives in, the first
//! LSN still in the log, the recycling pool, and truncation. The flush daemon, the
//! preparer and the archiver reach the files only through this.

use super::dirs::LogDirs;
use super::segment;
use crate::error::{Result, WalError};
use crate::sync::{AtomicU64, Mutex, Ordering};
use crate::{Lsn, Preallocate};
use sluice_storage::{FileHandle, Storage, SyncFence};
use std::io;
use std::path::Path;
use std::sync::Arc;

/// The most retired segment files the log keeps for reuse. Each holds a whole segment of
/// disk space; eight 16 MiB segments are 128 MiB the log had in use before the truncation
/// anyway.
pub const MAX_RECYCLED_SEGMENTS: usize = 8;

/// See the module docs.
pub(crate) struct SegmentSet {
    pub(crate) storage: Arc<dyn Storage>,
    /// The log's directories: segment `k` lives in the `k mod D`-th (see `dirs`).
    pub(crate) dirs: Arc<LogDirs>,
    /// LSN bytes per segment.
    pub(crate) segment_bytes: u64,
    /// Segment starts that exist on disk, ascending.
    segments: Mutex<Vec<Lsn>>,
    /// The recycling pool: the old starts of retired segment files (`segment::free_name`)
    /// whose retirement is durable, oldest first; at most [`MAX_RECYCLED_SEGMENTS`]. A
    /// retired file stays in its directory, so it only becomes a segment that maps there.
    recycled: Mutex<Vec<Lsn>>,
    /// Held for a whole `truncate_below`: two at once would race to remove the same
    /// files.
    truncation: Mutex<()>,
    /// The first LSN still in the log.
    start: AtomicU64,
    /// How new segment space is made.
    preallocate: Preallocate,
    /// Bytes of zeros written to prepare segment files.
    pub(crate) bytes_zero_filled: AtomicU64,
    /// Bytes of segment space reserved without writing.
    pub(crate) bytes_allocated: AtomicU64,
    /// Segments made from a retired segment's file.
    pub(crate) segments_recycled: AtomicU64,
    /// Every sync of a segment file after recovery goes through it (the flush daemon's
    /// and the preparer's, which write the same file): after one fails, none counts.
    pub(crate) syncs: SyncFence,
}

/// Lock stripes of a log's [`SyncFence`]: the segments the daemon and the preparer work
/// on at once (the previous, the current and the next) never share one.
const SYNC_STRIPES: usize = 4;

impl SegmentSet {
    /// The segments `starts` (ascending) of a log that starts at `start`.
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        dirs: Arc<LogDirs>,
        segment_bytes: u64,
        starts: Vec<Lsn>,
        start: Lsn,
        preallocate: Preallocate,
    ) -> SegmentSet {
        SegmentSet {
            storage,
            dirs,
            segment_bytes,
            segments: Mutex::new(starts),
            recycled: Mutex::new(Vec::new()),
            truncation: Mutex::new(()),
            start: AtomicU64::new(start.0),
            preallocate,
            bytes_zero_filled: AtomicU64::new(0),
            bytes_allocated: AtomicU64::new(0),
            segments_recycled: AtomicU64::new(0),
            syncs: SyncFence::new(SYNC_STRIPES),
        }
    }

    /// Syncs segment `start`'s file `f` through the log's [`SyncFence`].
    pub(crate) fn sync(&self, start: Lsn, f: &dyn FileHandle) -> Result<()> {
        Ok(self
            .syncs
            .sync(segment::fence_key(start, self.segment_bytes), f)?)
    }

    /// Settles a sync of segment `start` that ran outside the fence (a ring's), which
    /// returned `result` (`SyncFence::confirm`).
    pub(crate) fn confirm_sync(&self, start: Lsn, result: std::io::Result<()>) -> Result<()> {
        Ok(self
            .syncs
            .confirm(segment::fence_key(start, self.segment_bytes), result)?)
    }

    pub(crate) fn existing_segment(&self, start: Lsn) -> bool {
        self.segments.lock().binary_search(&start).is_ok()
    }

    pub(crate) fn note_segment(&self, start: Lsn) {
        // A segment file made at a start that is not a boundary would hold frames at
        // offsets no reader looks for them at (once per segment made: a plain assert).
        assert!(
            start.0.is_multiple_of(self.segment_bytes),
            "segment boundaries: a segment noted at {start}, not a multiple of {}",
            self.segment_bytes
        );
        let mut s = self.segments.lock();
        if let Err(i) = s.binary_search(&start) {
            s.insert(i, start);
        }
    }

    /// Counts `bytes` of segment space made as `made` says.
    fn note_made(&self, made: segment::Made, bytes: u64) {
        let counter = match made {
            segment::Made::Allocated => &self.bytes_allocated,
            segment::Made::Zeroed => &self.bytes_zero_filled,
            segment::Made::Nothing => return,
        };
        counter.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Creates segment `start`'s file, whole and durable, with `extent` data bytes made as
    /// the log's [`Preallocate`] says (counted in `bytes_allocated` or
    /// `bytes_zero_filled`). The caller notes the segment (`note_segment`).
    pub(crate) fn create(&self, start: Lsn, extent: u64) -> Result<Box<dyn FileHandle>> {
        let (f, made) = segment::create(
            &*self.storage,
            self.dir_of(start),
            start,
            self.segment_bytes,
            extent,
            self.preallocate,
            &self.syncs,
        )?;
        self.note_made(made, extent);
        Ok(f)
    }

    /// Extends existing segment `start`'s file from `from` to `to` data bytes, made and
    /// counted as in [`SegmentSet::create`], and synced.
    pub(crate) fn extend(&self, start: Lsn, from: u64, to: u64) -> Result<()> {
        let f = segment::open(&*self.storage, self.dir_of(start), start)?;
        let key = segment::fence_key(start, self.segment_bytes);
        let made = segment::extend(&*f, from, to, self.preallocate, &self.syncs, key)?;
        self.note_made(made, to - from);
        Ok(())
    }

    /// The directory segment `start` lives in.
    pub(crate) fn dir_of(&self, start: Lsn) -> &Path {
        self.dirs.dir_of(start, self.segment_bytes)
    }

    /// Takes the oldest retired file in segment `start`'s directory from the recycling
    /// pool, if there is one: the preparer makes segment `start` from it.
    pub(crate) fn take_recycled(&self, start: Lsn) -> Option<Lsn> {
        let mut pool = self.recycled.lock();
        let index = self.dirs.index_of(start, self.segment_bytes);
        let at = pool
            .iter()
            .position(|&old| self.dirs.index_of(old, self.segment_bytes) == index)?;
        Some(pool.remove(at))
    }

    /// Drops a removed segment from the list; it must be the oldest.
    fn forget_segment(&self, start: Lsn) {
        let mut segments = self.segments.lock();
        assert_eq!(
            segments.first(),
            Some(&start),
            "segments are removed oldest first"
        );
        segments.remove(0);
    }

    pub(crate) fn newest_segment(&self) -> Option<Lsn> {
        self.segments.lock().last().copied()
    }

    /// The start LSNs of the segment files on disk, ascending.
    pub(crate) fn starts(&self) -> Vec<Lsn> {
        self.segments.lock().clone()
    }

    /// The first LSN still in the log.
    pub(crate) fn start(&self) -> Lsn {
        Lsn(self.start.load(Ordering::Acquire))
    }

    /// Removes the segments that lie wholly below `lsn`, oldest first, keeping the one
    /// that holds the last durable byte and, with archiving, every one not archived yet:
    /// `bounds` gives the durable LSN and the archived one (if archiving is on) as they
    /// are once this truncation runs alone. See [`crate::Log::truncate_below`].
    pub(crate) fn truncate_below(
        &self,
        lsn: Lsn,
        bounds: impl FnOnce() -> (Lsn, Option<Lsn>),
    ) -> Result<usize> {
        let _one_at_a_time = self.truncation.lock();
        let (durable, archived) = bounds();
        let Some(last_durable_byte) = durable.0.checked_sub(1) else {
            return Ok(0); // nothing durable, nothing to keep or remove
        };
        // Without the segment that holds the last durable byte, a reopened log would find
        // no segment (when the next one is not made yet) and restart its LSNs at 0.
        let keep_from = segment::segment_start(Lsn(last_durable_byte), self.segment_bytes);
        let mut limit = lsn.min(keep_from);
        if let Some(archived) = archived {
            // A segment leaves the log only once its copy is safe.
            limit = limit.min(archived);
        }
        let victims: Vec<Lsn> = self
            .segments
            .lock()
            .iter()
            .copied()
            .filter(|&st| st.0 + self.segment_bytes <= limit.0)
            .collect();
        assert!(victims.windows(2).all(|w| w[0] < w[1]));
        // Files to retire for recycling, per directory (a retired file only becomes a
        // segment of its own directory): up to as many as this call removes there, less
        // what the pool already holds there; and at most MAX_RECYCLED_SEGMENTS in all.
        let index = |l: Lsn| self.dirs.index_of(l, self.segment_bytes);
        let (mut room, mut total_room) = {
            let pool = self.recycled.lock();
            let mut room = vec![0usize; self.dirs.count()];
            for &v in &victims {
                room[index(v)] += 1;
            }
            for r in &mut room {
                *r = (*r).min(MAX_RECYCLED_SEGMENTS);
            }
            for &p in pool.iter() {
                room[index(p)] = room[index(p)].saturating_sub(1);
            }
            (room, MAX_RECYCLED_SEGMENTS.saturating_sub(pool.len()))
        };
        // Oldest first: a crash keeps a prefix of the directory operations, so whatever
        // survives it is still a contiguous run of segments. Across several directories
        // (devices) a crash keeps a prefix of each one's operations, not of all of them
        // together, so a directory's changes are made durable before the next victim, in
        // another directory, is touched: otherwise a crash could keep a later removal and
        // undo an earlier one, and the next open would find a gap.
        let mut removed = 0;
        let mut retired = Vec::new();
        let mut failure = None;
        let mut unsynced: Option<&Path> = None;
        for &victim in &victims {
            let dir = self.dir_of(victim);
            if let Some(prev) = unsynced.filter(|&p| p != dir) {
                if let Err(e) = self.settle_retirements(prev, &mut retired) {
                    failure = Some(e);
                    unsynced = None;
                    break;
                }
            }
            unsynced = Some(dir);
            // Raise the start first, so that no reader is handed a segment being removed.
            // Only truncation moves it, under its lock; after a failed removal it may
            // already be past the victim, and it never moves back.
            let start = self.start.load(Ordering::Acquire);
            self.start
                .store(start.max(victim.0 + self.segment_bytes), Ordering::Release);
            let path = dir.join(segment::segment_name(victim));
            let recycle = if room[index(victim)] > 0 && total_room > 0 {
                self.whole_file(&path)
            } else {
                Ok(false)
            };
            let outcome = recycle.and_then(|whole| {
                if whole {
                    segment::retire(&*self.storage, dir, victim).map(|()| {
                        room[index(victim)] -= 1;
                        total_room -= 1;
                        retired.push(victim)
                    })
                } else {
                    self.storage.remove(&path)
                }
            });
            match outcome {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
            self.forget_segment(victim);
            removed += 1;
        }
        if let Some(dir) = unsynced {
            if let Err(e) = self.settle_retirements(dir, &mut retired) {
                failure.get_or_insert(e);
            }
        }
        debug_assert!(self.recycled.lock().len() <= MAX_RECYCLED_SEGMENTS);
        match failure {
            Some(e) => Err(WalError::from(e)),
            None => Ok(removed),
        }
    }

    /// At a clean close, with the daemon and the preparer stopped and everything appended
    /// durable at `durable`: removes the disk space kept for segments to come, which a
    /// closed log does not need — the retired files of the recycling pool, and segments
    /// made ahead that start above `durable` (they hold no record). Newest segment first,
    /// each directory synced before the next is touched, so a crash at any point leaves
    /// a contiguous run of segments that still holds the last durable byte (a segment
    /// made ahead is one a crash could as well have caught before it was made). The
    /// next open makes what it needs, as after a crash.
    pub(crate) fn release_spares(&self, durable: Lsn) -> io::Result<()> {
        let _one_at_a_time = self.truncation.lock();
        let ahead: Vec<Lsn> = self
            .segments
            .lock()
            .iter()
            .rev()
            .copied()
            .filter(|&st| st > durable)
            .collect();
        for start in ahead {
            let dir = self.dir_of(start);
            match self.storage.remove(&dir.join(segment::segment_name(start))) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            self.storage.sync_dir(dir)?;
            self.segments.lock().retain(|&s| s != start);
        }
        let pool = std::mem::take(&mut *self.recycled.lock());
        for (i, &old) in pool.iter().enumerate() {
            let dir = self.dir_of(old);
            match self.storage.remove(&dir.join(segment::free_name(old))) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    // Left to the next open, which removes every retired file it finds.
                    self.recycled.lock().extend(&pool[i..]);
                    return Err(e);
                }
                _ => {}
            }
        }
        let mut dirs: Vec<&Path> = pool.iter().map(|&old| self.dir_of(old)).collect();
        dirs.dedup();
        for dir in dirs {
            self.storage.sync_dir(dir)?;
        }
        Ok(())
    }

    /// Syncs `dir` after removals and retirements in it; then the retired files in
    /// `retired` (all in `dir`) join the recycling pool.
    fn settle_retirements(&self, dir: &Path, retired: &mut Vec<Lsn>) -> io::Result<()> {
        let done = if retired.is_empty() {
            self.storage.sync_dir(dir)
        } else {
            // Renamed out of the log, not yet durably: a named point for tests.
            (self
                .storage
                .failpoint(sluice_storage::failpoint::SEGMENT_RETIRED, dir))
            .and_then(|()| self.storage.sync_dir(dir))
        };
        match done {
            // Only now may the preparer write the retired files: before the sync a power
            // loss could undo a rename and leave the old segment's name on a file whose
            // header names another start.
            Ok(()) => self.recycled.lock().append(retired),
            // The renames may or may not survive; the files are left to the next open,
            // which removes what it finds.
            Err(_) => retired.clear(),
        }
        done
    }

    /// True if the segment file at `path` holds a whole segment (header and all its data
    /// bytes), so that recycling it saves a whole segment of new space; false if it is
    /// missing.
    fn whole_file(&self, path: &Path) -> io::Result<bool> {
        let len = match self
            .storage
            .open(path, sluice_storage::OpenOptions::READ_ONLY)
        {
            Ok(f) => f.len()?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        Ok(len >= segment::SEGMENT_HEADER_BYTES + self.segment_bytes)
    }
}
