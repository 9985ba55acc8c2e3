//! The archiver (Tandem §2.1): a background thread that copies each finished segment to
//! an archive directory, so that the log may free it.
//!
//! A segment is *finished* once the durable LSN has reached its end: the flush daemon has
//! moved past it and synced it, and nothing writes it again until truncation frees it.
//! The archiver copies finished segments in LSN order, one at a time, through the
//! [`Storage`] seam: the whole file (header block and data) to `{name}.tmp` in the
//! archive directory, `sync_data`, rename to the segment's own name, `sync_dir`. A file
//! with a segment's name in the archive is therefore always a complete, durable copy;
//! leftover `.tmp` files (a copy a crash or a close interrupted) are removed on open. The
//! archive directory holds plain segment files, so it reads as a log of one directory
//! ([`crate::Log::open_read_only`]) from its first archived segment, and a marker naming
//! the log it archives ([`super::dirs::ARCHIVE_MARKER_NAME`]): an archive of another log
//! is refused at open, since the file names alone would pass its copies off as this
//! log's. It is a directory of its own — compared with the log's by identity, not by
//! spelling (`dirs.rs`).
//!
//! After the rename and its directory sync, the archiver appends the copy's entry to the
//! archive's `MANIFEST` (file name, LSN range, length, CRC32C; `manifest.rs`) and syncs
//! it. `archived` — the LSN below which every segment of the log is archived — only moves
//! after that: a segment counts as archived once its copy and its entry are durable. A
//! copy renamed into place whose entry a crash prevented is listed by the next open.
//! With archiving on, [`crate::Log::truncate_below`] never frees a segment at or above
//! it: a segment leaves the log only once its copy is safe.
//! On open, `archived` is the start of the log's first segment that has no copy in the
//! archive (segments below the log's start are gone and cannot be copied any more).
//!
//! With one log directory the archiver reads the segment from the device the writer
//! writes — the disk-head contention that degrades the log right after a rollover (γ in
//! Tandem §5). With several directories (`dirs.rs`) it reads from a device the
//! writer has just left.
//!
//! With a mirror ([`ArchiveMirror`], `mirror.rs`: an object store), each segment is also
//! uploaded once its local copy and entry are durable — the copy's bytes, then the whole
//! `MANIFEST` — and `archived` moves past it only after both uploads: truncation waits
//! for the mirror as it waits for the local copy. A failed upload is tried again after a
//! sleep, doubling, a bounded number of times ([`MirrorRetry`]); then it stops the
//! archiver like a local error. At open, `archived` starts at the log's first segment,
//! so nothing counts as archived until the thread has caught the mirror up: it puts the
//! `ARCHIVE_OF` marker, reads the mirror's `MANIFEST`, uploads every local copy it does
//! not list (the copy checked against its local entry first), puts the local
//! `MANIFEST`, and only then lets `archived` jump to where the local archive resumes.
//! Puts are idempotent, so whatever a crash or a failure interrupted is put again.
//!
//! A failed archive operation stops the archiver (the log itself goes on: its records are
//! durable where they are); [`crate::Log::archive_error`] reports it, and `archived` stays
//! where it was, so truncation keeps every unarchived segment. The next open starts over
//! from the first unarchived segment.

use super::dirs::ARCHIVE_MARKER_NAME;
use super::manifest::{parse_archive_manifest, ArchivedSegment, Manifest, MANIFEST_NAME};
use super::mirror::{ArchiveMirror, MirrorRetry};
use super::segment::{self, SEGMENT_HEADER_BYTES};
use super::set::SegmentSet;
use crate::error::{Result, WalError};
use crate::health::Health;
use crate::sync::{AtomicU64, Condvar, Mutex, Ordering};
use crate::Lsn;
use sluice_storage::{OpenOptions, Storage};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Bytes copied per read and write.
const COPY_CHUNK: usize = 256 << 10;
const TMP_SUFFIX: &str = ".tmp";
/// How long the archiver sleeps when nothing wakes it (a safety net: the flush daemon
/// wakes it whenever a round finishes a segment).
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// What the archiver uses of the log: its segment files (read, never written), its
/// health (the archiver stops with the log), and the durable LSN (a segment below it is
/// finished) — never the buffer, the waiters or the daemon.
pub(crate) struct ArchiveContext<'a> {
    pub(crate) segments: &'a SegmentSet,
    pub(crate) health: &'a Health,
    pub(crate) durable: &'a dyn Fn() -> Lsn,
}

#[derive(Default)]
struct State {
    stop: bool,
    error: Option<WalError>,
}

/// The archiver's part of the log's shared state.
pub(crate) struct Archiver {
    dir: PathBuf,
    /// Every segment below this LSN is archived (durably).
    archived: AtomicU64,
    state: Mutex<State>,
    cv: Condvar,
    /// The archive's `MANIFEST`, appended to by the archiver thread alone.
    manifest: Mutex<Manifest>,
    pub(crate) bytes_archived: AtomicU64,
    pub(crate) segments_archived: AtomicU64,
    /// The mirror each archived segment is uploaded to, if any.
    mirror: Option<Arc<dyn ArchiveMirror>>,
    /// Where the local archive resumes: `archived` jumps here once the mirror has
    /// caught up (with no mirror it starts here).
    local_resume: Lsn,
}

impl Archiver {
    /// Prepares the archive directory `dir` of a log whose segments are `starts`
    /// (recovered, ascending): removes interrupted copies and finds where archiving
    /// resumes. The directory exists and was claimed for this log
    /// (`super::dirs::claim_archive`): every segment file in it is this log's copy.
    pub(crate) fn open(
        storage: &dyn Storage,
        dir: &Path,
        starts: &[Lsn],
        segment_bytes: u64,
        mirror: Option<Arc<dyn ArchiveMirror>>,
    ) -> Result<Archiver> {
        let mut archived_set = BTreeSet::new();
        for name in storage.list(dir)? {
            if name.ends_with(TMP_SUFFIX) {
                storage.remove(&dir.join(&name))?;
            } else if let Some(start) = segment::parse_segment_name(&name) {
                archived_set.insert(start);
            }
        }
        // Always, not only after a removal: a killed process may have renamed a copy into
        // place without syncing the directory (its page cache survives the kill, so the
        // copy is listed here), and trusting that listing let truncation free the log's
        // segment while the copy's name could still vanish in a power loss (the partitioned
        // crash sweep, seed 207: a kill between the rename and the directory sync, then a
        // truncation, then a power loss, lost acknowledged records). The copy's data was
        // synced before its rename, so syncing the directory makes every listed copy whole
        // and durable.
        storage.sync_dir(dir)?;
        // Every durable copy is listed in the manifest (one whose entry a crash prevented
        // is listed now); a copy that is not a whole segment is not counted archived (it
        // is copied again if the log still holds its segment).
        let copies: Vec<Lsn> = archived_set.iter().copied().collect();
        let (manifest, bad) = Manifest::open(storage, dir, &copies, segment_bytes)?;
        for b in bad {
            archived_set.remove(&b);
        }
        let resume = match starts.iter().find(|s| !archived_set.contains(s)) {
            Some(&s) => s,
            // Every segment has a copy (the newest ends exactly at the log's end), or
            // there is none.
            None => starts.last().map_or(Lsn(0), |&s| s.add(segment_bytes)),
        };
        // With a mirror, no segment of the log counts as archived until the thread has
        // shown the mirror holds it (`catch_up`).
        let start = match &mirror {
            Some(_) => starts.first().map_or(resume, |&s| s.min(resume)),
            None => resume,
        };
        Ok(Archiver {
            dir: dir.to_path_buf(),
            archived: AtomicU64::new(start.0),
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            manifest: Mutex::new(manifest),
            bytes_archived: AtomicU64::new(0),
            segments_archived: AtomicU64::new(0),
            mirror,
            local_resume: resume,
        })
    }

    /// The mirror, if any.
    pub(crate) fn mirror(&self) -> Option<&Arc<dyn ArchiveMirror>> {
        self.mirror.as_ref()
    }

    /// The archive directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every segment below this is archived.
    pub(crate) fn archived(&self) -> Lsn {
        Lsn(self.archived.load(Ordering::Acquire))
    }

    /// The error that stopped the archiver, if one did.
    pub(crate) fn error(&self) -> Option<WalError> {
        self.state.lock().error.clone()
    }

    /// Wakes the thread: a segment may have been finished. The lock is taken first, so a
    /// thread that checked the durable LSN just before it was published is already
    /// waiting (or has not yet looked) — no wake-up is lost to a check-then-wait race,
    /// which would delay the copy by a whole idle wait.
    pub(crate) fn notify(&self) {
        drop(self.state.lock());
        self.cv.notify_all();
    }

    /// Stops the thread after the chunk in progress.
    pub(crate) fn stop(&self) {
        self.state.lock().stop = true;
        self.cv.notify_all();
    }

    fn stopped(&self) -> bool {
        self.state.lock().stop
    }

    /// The thread's body.
    pub(crate) fn run(&self, cx: ArchiveContext<'_>) {
        let a = self;
        let segment_bytes = cx.segments.segment_bytes;
        if let Some(m) = &a.mirror {
            match a.catch_up(&*cx.segments.storage, &**m) {
                Ok(true) => a.archived.store(a.local_resume.0, Ordering::Release),
                Ok(false) => return,
                Err(e) => {
                    a.state.lock().error = Some(e);
                    return;
                }
            }
        }
        loop {
            let next = a.archived();
            {
                let mut s = a.state.lock();
                loop {
                    if s.stop || cx.health.is_poisoned() {
                        return;
                    }
                    if (cx.durable)().0 >= next.0 + segment_bytes {
                        break;
                    }
                    s = a.cv.wait_for(s, IDLE_WAIT);
                }
            }
            let copied = a.copy(cx.segments, next).and_then(|c| {
                let Some((bytes, crc32c, data)) = c else {
                    return Ok(None);
                };
                let name = segment::segment_name(next);
                let text = {
                    let mut m = a.manifest.lock();
                    m.append(&ArchivedSegment {
                        name: name.clone(),
                        first: next,
                        end: next.add(segment_bytes),
                        len: bytes,
                        crc32c,
                    })?;
                    a.mirror.as_ref().map(|_| m.text().to_vec())
                };
                if let (Some(m), Some(data), Some(text)) = (&a.mirror, data, text) {
                    // The segment first, then the manifest that lists it.
                    if !a.upload(&**m, &name, &data)? || !a.upload(&**m, MANIFEST_NAME, &text)? {
                        return Ok(None);
                    }
                }
                Ok(Some(bytes))
            });
            match copied {
                Ok(Some(bytes)) => {
                    a.archived.store(next.0 + segment_bytes, Ordering::Release);
                    a.segments_archived.fetch_add(1, Ordering::Relaxed);
                    a.bytes_archived.fetch_add(bytes, Ordering::Relaxed);
                }
                Ok(None) => return, // stopped in the middle
                Err(e) => {
                    a.state.lock().error = Some(e);
                    return;
                }
            }
        }
    }

    /// Puts `bytes` as `name` to `mirror`, trying again after a growing sleep on failure
    /// ([`MirrorRetry`]). `Ok(false)` if the log began closing meanwhile; the last
    /// failure once the tries are spent.
    fn upload(&self, mirror: &dyn ArchiveMirror, name: &str, bytes: &[u8]) -> Result<bool> {
        let retry: MirrorRetry = mirror.retry();
        let mut tries = 0;
        loop {
            tries += 1;
            let e = match mirror.put(name, bytes) {
                Ok(()) => return Ok(true),
                Err(e) => e,
            };
            if tries >= retry.tries.max(1) {
                return Err(WalError::from(std::io::Error::new(
                    e.kind(),
                    format!(
                        "archive mirror {mirror:?}: uploading {name} failed {tries} times, \
                         the last with: {e}"
                    ),
                )));
            }
            if !self.sleep(retry.backoff(tries)) {
                return Ok(false);
            }
        }
    }

    /// Reads `name` from `mirror`, retried as [`Archiver::upload`] retries a put.
    fn download(&self, mirror: &dyn ArchiveMirror, name: &str) -> Result<Option<Option<Vec<u8>>>> {
        let retry = mirror.retry();
        let mut tries = 0;
        loop {
            tries += 1;
            let e = match mirror.get(name) {
                Ok(v) => return Ok(Some(v)),
                Err(e) => e,
            };
            if tries >= retry.tries.max(1) {
                return Err(WalError::from(std::io::Error::new(
                    e.kind(),
                    format!(
                        "archive mirror {mirror:?}: reading {name} failed {tries} times, \
                         the last with: {e}"
                    ),
                )));
            }
            if !self.sleep(retry.backoff(tries)) {
                return Ok(None);
            }
        }
    }

    /// Sleeps `d`, or less if the log begins closing: `false` then.
    fn sleep(&self, d: Duration) -> bool {
        let deadline = std::time::Instant::now() + d;
        let mut s = self.state.lock();
        loop {
            if s.stop {
                return false;
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return true;
            }
            s = self.cv.wait_for(s, deadline - now);
        }
    }

    /// Brings the mirror level with the local archive (see the module docs): the
    /// marker, every local copy the mirror's `MANIFEST` does not list, then the local
    /// `MANIFEST`. `Ok(false)` if the log began closing meanwhile.
    fn catch_up(&self, storage: &dyn Storage, mirror: &dyn ArchiveMirror) -> Result<bool> {
        let read = |name: &str| -> Result<Vec<u8>> {
            let f = storage.open(&self.dir.join(name), OpenOptions::READ_ONLY)?;
            let mut bytes = vec![0u8; usize::try_from(f.len()?).unwrap_or(usize::MAX)];
            f.read_exact_at(&mut bytes, 0)?;
            Ok(bytes)
        };
        // A mirror serves one log, as a local archive does: one whose marker names
        // another log is refused, never written over (its objects have this log's names).
        let marker = read(ARCHIVE_MARKER_NAME)?;
        let Some(theirs) = self.download(mirror, ARCHIVE_MARKER_NAME)? else {
            return Ok(false);
        };
        match theirs {
            Some(m) if m != marker => {
                return Err(WalError::InvalidArgument(format!(
                    "archive mirror {mirror:?} holds the archive of another log (its \
                     {ARCHIVE_MARKER_NAME} differs from {}'s): a mirror serves one log",
                    self.dir.display()
                )))
            }
            Some(_) => {}
            None => {
                if !self.upload(mirror, ARCHIVE_MARKER_NAME, &marker)? {
                    return Ok(false);
                }
            }
        }
        let Some(remote) = self.download(mirror, MANIFEST_NAME)? else {
            return Ok(false);
        };
        // A copy counts as uploaded where the mirror's manifest lists it with this
        // copy's length and CRC32C; a mirror manifest that does not read lists nothing:
        // everything is put again.
        let uploaded: BTreeSet<(Lsn, u64, u32)> = remote
            .and_then(|b| parse_archive_manifest(&b).ok())
            .map(|es| es.iter().map(|e| (e.first, e.len, e.crc32c)).collect())
            .unwrap_or_default();
        let (entries, text) = {
            let m = self.manifest.lock();
            (m.entries()?, m.text().to_vec())
        };
        for e in entries
            .iter()
            .filter(|e| !uploaded.contains(&(e.first, e.len, e.crc32c)))
        {
            if self.stopped() {
                return Ok(false);
            }
            let bytes = read(&e.name)?;
            let crc = crc32c::crc32c(&bytes);
            if bytes.len() as u64 != e.len || crc != e.crc32c {
                return Err(WalError::Corruption {
                    lsn: e.first,
                    reason: format!(
                        "archived copy {} is {} bytes with CRC32C {crc:08x}, its MANIFEST \
                         entry says {} bytes with {:08x}: it is not uploaded to the mirror",
                        self.dir.join(&e.name).display(),
                        bytes.len(),
                        e.len,
                        e.crc32c
                    ),
                });
            }
            if !self.upload(mirror, &e.name, &bytes)? {
                return Ok(false);
            }
        }
        self.upload(mirror, MANIFEST_NAME, &text)
    }

    /// Copies finished segment `start` into the archive (see the module docs) and returns
    /// the bytes copied, their CRC32C and, with a mirror, the bytes themselves (for the
    /// upload); `None` if the log began closing in the middle (the temporary file is
    /// left for the next open to remove).
    #[allow(clippy::type_complexity)]
    fn copy(
        &self,
        segments: &SegmentSet,
        start: Lsn,
    ) -> Result<Option<(u64, u32, Option<Vec<u8>>)>> {
        let storage = &*segments.storage;
        let name = segment::segment_name(start);
        let source = segment::open_read(storage, segments.dir_of(start), start)?;
        let whole = SEGMENT_HEADER_BYTES + segments.segment_bytes;
        let len = source.len()?;
        // The daemon wrote the segment to its end, which the preparer had extended it to
        // first: a finished segment's file is whole.
        if len < whole {
            return Err(WalError::Corruption {
                lsn: start,
                reason: format!(
                    "finished segment file is {len} bytes, shorter than a whole segment \
                     ({whole}): it cannot be archived"
                ),
            });
        }
        let tmp = self.dir.join(format!("{name}{TMP_SUFFIX}"));
        let target = storage.open(&tmp, OpenOptions::CREATE)?;
        target.set_len(0)?;
        let mut buf = vec![0u8; COPY_CHUNK];
        let (mut off, mut crc) = (0u64, 0u32);
        let mut data = self
            .mirror
            .as_ref()
            .map(|_| Vec::with_capacity(usize::try_from(whole).unwrap_or(0)));
        while off < whole {
            if self.stopped() {
                return Ok(None);
            }
            let n = (whole - off).min(COPY_CHUNK as u64) as usize;
            source.read_exact_at(&mut buf[..n], off)?;
            target.write_at(&buf[..n], off)?;
            crc = crc32c::crc32c_append(crc, &buf[..n]);
            if let Some(d) = &mut data {
                d.extend_from_slice(&buf[..n]);
            }
            off += n as u64;
        }
        target.sync_data()?;
        drop(target);
        storage.rename(&tmp, &self.dir.join(&name))?;
        storage.failpoint(
            sluice_storage::failpoint::ARCHIVE_RENAMED,
            &self.dir.join(&name),
        )?;
        storage.sync_dir(&self.dir)?;
        Ok(Some((whole, crc, data)))
    }
}
