//! The data file: pages at `id * page_size`, through the storage seam. Its write methods
//! are private to the buffer pool: every page write goes through the page-write protocol
//! (`write_protocol`).

use crate::data_file::file_error;
use crate::error::{Error, Result};
use crate::ids::PageId;
use parking_lot::{Mutex, MutexGuard};
use sluice_storage::{failpoint, FileHandle, OpenOptions, Storage, SyncFence};
use std::io;
use std::path::{Path, PathBuf};

/// The error for a data file that cannot be opened: a missing one is damage.
fn missing_or(path: &Path, e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::NotFound {
        Error::Corruption(format!(
            "data file {} is missing but the control file says the database exists",
            path.display()
        ))
    } else {
        file_error("data file", path, e)
    }
}

/// Stripes of segment locks (see [`DataFile::lock_pages`]).
const SEGMENT_STRIPES: usize = 64;

/// The file that holds the pages.
pub(crate) struct DataFile {
    file: Box<dyn FileHandle>,
    page_size: usize,
    path: PathBuf,
    /// Pages per propagation segment (log-based propagation reads and writes a segment
    /// as a unit).
    segment_pages: u64,
    /// Segment locks, striped: a page load holds its segment's lock for the read, and a
    /// landing of the page-write protocol holds the locks of its pages from reading what
    /// the file holds to writing, so no write lands between that read and its decision
    /// (an older version never lands over a newer one) and a page being loaded never
    /// reads a half-written one.
    segment_locks: Box<[Mutex<()>]>,
    /// Every sync goes through it: see [`DataFile::sync`].
    syncs: SyncFence,
    /// The most a checkpoint records as the file's length ([`DataFile::recorded_len`]):
    /// `u64::MAX` but while compaction is about to shorten the file.
    len_cap: std::sync::atomic::AtomicU64,
}

impl DataFile {
    /// Opens the data file at `path`; creates it only if `create` (a database being
    /// created): an existing database whose data file is gone is damaged, and an empty
    /// new file would hide that.
    pub(crate) fn open(
        storage: &dyn Storage,
        path: &Path,
        page_size: usize,
        create: bool,
    ) -> Result<DataFile> {
        let how = if create {
            OpenOptions::CREATE
        } else {
            OpenOptions::EXISTING
        };
        let file = storage.open(path, how).map_err(|e| missing_or(path, e))?;
        // What recovery reads must be what the device holds (`sluice_storage::settle`:
        // sync what a dead process left in the cache, then drop the cache, which after a
        // failed fsync may show pages the device never got; issue 8, defects 1 and 2). A
        // failure here refuses the open.
        sluice_storage::settle(&*file, false).map_err(|e| file_error("data file", path, e))?;
        Ok(DataFile::new(file, page_size, path))
    }

    fn new(file: Box<dyn FileHandle>, page_size: usize, path: &Path) -> DataFile {
        DataFile {
            file,
            page_size,
            path: path.to_path_buf(),
            segment_pages: ((1 << 20) / page_size as u64).max(1),
            segment_locks: (0..SEGMENT_STRIPES).map(|_| Mutex::new(())).collect(),
            syncs: SyncFence::new(1),
            len_cap: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }

    /// Sets the propagation segment size (a multiple of the page size): log-based
    /// propagation reads and writes a segment at a time, and the segment locks stripe by
    /// it.
    pub(crate) fn with_segment_bytes(mut self, bytes: usize) -> DataFile {
        self.segment_pages = (bytes / self.page_size).max(1) as u64;
        self
    }

    /// Pages per propagation segment.
    pub(crate) fn segment_pages(&self) -> u64 {
        self.segment_pages
    }

    /// The segment page `id` belongs to.
    pub(crate) fn segment_of(&self, id: PageId) -> u64 {
        id.0 / self.segment_pages
    }

    /// The segment locks of pages `[first, first + count)`: distinct stripes, taken in
    /// increasing order (a landing is the only holder of more than one, so nobody waits
    /// for a stripe while holding a higher one).
    pub(super) fn lock_pages(&self, first: PageId, count: u64) -> Vec<MutexGuard<'_, ()>> {
        assert!(count > 0);
        let last = first.0 + count - 1;
        let mut stripes: Vec<usize> = (first.0 / self.segment_pages..=last / self.segment_pages)
            .map(|seg| (seg % SEGMENT_STRIPES as u64) as usize)
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes
            .into_iter()
            .map(|i| self.segment_locks[i].lock())
            .collect()
    }

    /// The lock of the stripe page `id`'s segment falls in.
    pub(super) fn stripe_lock(&self, id: PageId) -> &Mutex<()> {
        &self.segment_locks[(self.segment_of(id) % SEGMENT_STRIPES as u64) as usize]
    }

    /// True if the stripe lock of every segment that `[first, first + count)` touches is
    /// held (by someone: a lock does not say by whom; the landing checks its own guards).
    fn stripes_held(&self, first: PageId, count: u64) -> bool {
        let last = PageId(first.0 + count.max(1) - 1);
        (self.segment_of(first)..=self.segment_of(last))
            .all(|seg| self.segment_locks[(seg % SEGMENT_STRIPES as u64) as usize].is_locked())
    }

    /// The page size.
    pub(super) fn page_size(&self) -> usize {
        self.page_size
    }

    /// Opens the existing data file at `path` for reading only. It is settled as
    /// [`DataFile::open`] settles it — synced and its cache dropped, through the
    /// read-only handle (`sluice_storage::settle`) — so that a read-only database shows
    /// only pages that survive a power loss: a sync writes no byte, and a page a killed
    /// process left unsynced in the cache would otherwise be read as if it were durable.
    pub(crate) fn open_read_only(
        storage: &dyn Storage,
        path: &Path,
        page_size: usize,
    ) -> Result<DataFile> {
        let file = storage
            .open(path, OpenOptions::READ_ONLY)
            .map_err(|e| missing_or(path, e))?;
        sluice_storage::settle(&*file, true).map_err(|e| file_error("data file", path, e))?;
        Ok(DataFile::new(file, page_size, path))
    }

    /// Where the file is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, e: io::Error) -> Error {
        file_error("data file", &self.path, e)
    }

    fn offset(&self, id: PageId) -> u64 {
        assert!(id.is_some(), "page id NONE has no place in the file");
        id.0 * self.page_size as u64
    }

    /// Reads page `id` into `buf`; bytes past the end of the file read as zeros (a page
    /// allocated but never written).
    pub(super) fn read(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        assert_eq!(buf.len(), self.page_size);
        let _seg = self.lock_pages(id, 1);
        self.read_locked(id, buf)
    }

    /// Reads pages from `first` into `buf` (whole pages) while their segment's lock is
    /// held by the caller ([`DataFile::lock_pages`]); bytes past the end read as zeros.
    pub(super) fn read_locked(&self, first: PageId, buf: &mut [u8]) -> Result<()> {
        assert_eq!(buf.len() % self.page_size, 0);
        // (Debug only: a page load reads under this too.)
        debug_assert!(
            self.stripes_held(first, (buf.len() / self.page_size) as u64),
            "page-write protocol: pages from {first} read without their segment locks \
             (a write could land half-way through the read)"
        );
        crate::data_file::read_pages(&*self.file, buf, self.offset(first))
            .map_err(|e| self.error(e))
    }

    /// Writes sealed pages from `first` while their segments' locks are held
    /// ([`DataFile::lock_pages`]); only the page-write protocol calls it.
    pub(super) fn write_locked(&self, first: PageId, pages: &[u8]) -> Result<()> {
        assert_eq!(pages.len() % self.page_size, 0);
        // One atomic load per segment (one, nearly always), beside a write system call.
        assert!(
            self.stripes_held(first, (pages.len() / self.page_size) as u64),
            "page-write protocol: pages from {first} written without their segment locks \
             (an older version could land over a newer one)"
        );
        self.file
            .write_at(pages, self.offset(first))
            .and_then(|()| self.file.failpoint(failpoint::PAGE_WRITTEN))
            .map_err(|e| self.error(e))
    }

    /// Makes every write so far durable. **After the first failed sync, every later one
    /// fails the same way** ([`SyncFence`], the rule for every file several threads
    /// sync): the page cleaner's sync failed, the checkpoint's sync on the same handle a
    /// moment later had nothing left to write and succeeded, and the checkpoint recorded
    /// a data file (and truncated a log) the device did not hold (the swarm sweep:
    /// recovery found the data file shorter than the control file said, or large values
    /// missing chunks).
    pub(crate) fn sync(&self) -> Result<()> {
        self.syncs.sync(0, &*self.file).map_err(|e| self.error(e))
    }

    /// The file's length as reads see it.
    pub(crate) fn len(&self) -> Result<u64> {
        self.file.len().map_err(|e| self.error(e))
    }

    /// The length a checkpoint records in the control file (which open then requires
    /// the file to have): the file's, or less while compaction is shortening it to
    /// [`DataFile::cap_len`], so that a crash after the truncation finds the file no
    /// shorter than the control file says.
    pub(crate) fn recorded_len(&self) -> Result<u64> {
        Ok(self
            .len()?
            .min(self.len_cap.load(std::sync::atomic::Ordering::SeqCst)))
    }

    /// Caps [`DataFile::recorded_len`] (`u64::MAX`: no cap).
    pub(crate) fn cap_len(&self, cap: u64) {
        self.len_cap.store(cap, std::sync::atomic::Ordering::SeqCst);
    }

    /// Shortens the file to `len` bytes and makes that durable (compaction, once no
    /// page at or past `len` is in the pool or needed by recovery).
    pub(super) fn truncate(&self, len: u64) -> Result<()> {
        self.file.set_len(len).map_err(|e| self.error(e))?;
        self.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage};

    /// Postmortem (issue 22, the swarm sweep): the page cleaner's sync of the data file
    /// failed; the checkpoint's sync of the same handle a moment later had nothing left
    /// to write and succeeded, so the checkpoint recorded pages the device never got.
    /// The second sync must fail too.
    #[test]
    fn a_sync_after_a_failed_sync_fails_too() {
        let sim = SimStorage::new(3);
        let f = DataFile::open(&sim, Path::new("/db-data"), 1024, true).unwrap();
        let _held = f.lock_pages(PageId(1), 1);
        f.write_locked(PageId(1), &[7u8; 1024]).unwrap();
        sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio).on("/db-data"));
        assert!(f.sync().is_err(), "the injected failure");
        sim.clear_faults();
        let again = f.sync();
        assert!(
            again.is_err(),
            "a sync after a failed one reported success for a write the device never got"
        );
        let e = again.unwrap_err().to_string();
        assert!(e.contains("an earlier sync failed"), "{e}");
    }

    /// The page-write protocol's precondition at the file: a write holds its segment's
    /// stripe lock (a landing took it), so no other writer decides in between.
    #[test]
    #[should_panic(expected = "written without their segment locks")]
    fn a_write_without_its_segment_lock_is_refused() {
        let sim = SimStorage::new(3);
        let f = DataFile::open(&sim, Path::new("/db-data"), 1024, true).unwrap();
        let _other = f.lock_pages(PageId(f.segment_pages()), 1); // another stripe
        let _ = f.write_locked(PageId(1), &[7u8; 1024]);
    }
}
