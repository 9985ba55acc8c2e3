//! The data file: pages at `id * page_size`, through the storage seam.

use crate::error::{Error, Result};
use crate::ids::PageId;
use parking_lot::{Mutex, MutexGuard};
use sluice_storage::{failpoint, FileHandle, OpenOptions, Storage};
use std::io;
use std::path::{Path, PathBuf};

/// An I/O error about the file at `path`, saying which file (`what`) it is: the kind is
/// kept, so ENOSPC stays `StorageFull`.
pub(crate) fn file_error(what: &str, path: &Path, e: io::Error) -> Error {
    Error::from(io::Error::new(
        e.kind(),
        format!("{what} {}: {e}", path.display()),
    ))
}

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

/// Stripes of segment locks (see [`DataFile::lock_segment`]).
const SEGMENT_STRIPES: usize = 64;

/// The file that holds the pages.
pub(crate) struct DataFile {
    file: Box<dyn FileHandle>,
    page_size: usize,
    path: PathBuf,
    /// Pages per propagation segment (log-based propagation reads and writes a segment
    /// as a unit).
    segment_pages: u64,
    /// Segment locks, striped: every page read and write holds the lock of its segment
    /// for the I/O, and the log cleaner holds it from reading a segment to writing it
    /// back, so a page written by the buffer pool meanwhile is never overwritten by an
    /// older version, and a page being loaded never reads a half-written one.
    segment_locks: Box<[Mutex<()>]>,
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
        // What recovery reads must be what the device holds. A dead process may have left
        // page writes in the OS cache that never reached the device: sync them (so that
        // what is read stays true across a power loss), then drop the cache, because after
        // a failed fsync Linux keeps pages readable that it will never write (issue 8,
        // defects 1 and 2). A failure here refuses the open.
        file.sync_data()
            .map_err(|e| file_error("data file", path, e))?;
        file.drop_cache()
            .map_err(|e| file_error("data file", path, e))?;
        Ok(DataFile::new(file, page_size, path))
    }

    fn new(file: Box<dyn FileHandle>, page_size: usize, path: &Path) -> DataFile {
        DataFile {
            file,
            page_size,
            path: path.to_path_buf(),
            segment_pages: ((1 << 20) / page_size as u64).max(1),
            segment_locks: (0..SEGMENT_STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    /// Sets the propagation segment size (a multiple of the page size).
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

    /// Holds segment `seg` against every other page read and write in it (the log
    /// cleaner's read-modify-write of a segment).
    pub(crate) fn lock_segment(&self, seg: u64) -> MutexGuard<'_, ()> {
        self.segment_locks[(seg % SEGMENT_STRIPES as u64) as usize].lock()
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
    pub(crate) fn read(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        assert_eq!(buf.len(), self.page_size);
        let _seg = self.lock_segment(self.segment_of(id));
        self.read_locked(id, buf)
    }

    /// Reads pages from `first` into `buf` (whole pages) while their segment's lock is
    /// held by the caller ([`DataFile::lock_segment`]); bytes past the end read as zeros.
    pub(crate) fn read_locked(&self, first: PageId, buf: &mut [u8]) -> Result<()> {
        assert_eq!(buf.len() % self.page_size, 0);
        let off = self.offset(first);
        let mut done = 0;
        while done < buf.len() {
            let n = self
                .file
                .read_at(&mut buf[done..], off + done as u64)
                .map_err(|e| self.error(e))?;
            if n == 0 {
                break;
            }
            done += n;
        }
        buf[done..].fill(0);
        Ok(())
    }

    /// Writes a sealed page image. Volatile until [`DataFile::sync`].
    pub(crate) fn write(&self, id: PageId, page: &[u8]) -> Result<()> {
        assert_eq!(page.len(), self.page_size);
        let _seg = self.lock_segment(self.segment_of(id));
        self.write_locked(id, page)
    }

    /// Writes sealed pages from `first` while their segment's lock is held by the caller.
    pub(crate) fn write_locked(&self, first: PageId, pages: &[u8]) -> Result<()> {
        assert_eq!(pages.len() % self.page_size, 0);
        self.file
            .write_at(pages, self.offset(first))
            .and_then(|()| self.file.failpoint(failpoint::PAGE_WRITTEN))
            .map_err(|e| self.error(e))
    }

    /// Writes sealed images of the adjacent pages `first`, `first + 1`, ... (`bytes` is
    /// their concatenation) with one write: the page cleaner's clusters. Volatile until
    /// [`DataFile::sync`].
    pub(crate) fn write_pages(&self, first: PageId, bytes: &[u8]) -> Result<()> {
        assert!(
            !bytes.is_empty() && bytes.len().is_multiple_of(self.page_size),
            "a cluster of {} bytes is not whole pages of {}",
            bytes.len(),
            self.page_size
        );
        // One write, under the locks of every segment it spans (distinct stripes, in
        // order: only the page cleaner holds more than one, so nobody waits for a
        // stripe while holding another it needs).
        let last = first.0 + (bytes.len() / self.page_size) as u64 - 1;
        let mut stripes: Vec<usize> = (first.0 / self.segment_pages..=last / self.segment_pages)
            .map(|seg| (seg % SEGMENT_STRIPES as u64) as usize)
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        let _held: Vec<MutexGuard<'_, ()>> = stripes
            .into_iter()
            .map(|i| self.segment_locks[i].lock())
            .collect();
        self.write_locked(first, bytes)
    }

    /// Makes every write so far durable.
    pub(crate) fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| self.error(e))
    }

    /// The file's length as reads see it.
    pub(crate) fn len(&self) -> Result<u64> {
        self.file.len().map_err(|e| self.error(e))
    }
}

/// Writes a small file durably: `bytes` into `dir/tmp` (created or truncated), synced,
/// renamed to `dir/name`, and the directory synced; errors name the file as `what`.
/// `renamed` names the failure point between the rename and the directory sync.
pub(crate) fn write_durably(
    storage: &dyn Storage,
    dir: &Path,
    (tmp, name): (&str, &str),
    bytes: &[u8],
    what: &str,
    renamed: Option<&'static str>,
) -> Result<()> {
    let path = dir.join(name);
    let io = |e| file_error(what, &path, e);
    let tmp = dir.join(tmp);
    let f = storage
        .open(
            &tmp,
            OpenOptions {
                truncate: true,
                ..OpenOptions::CREATE
            },
        )
        .map_err(io)?;
    f.write_at(bytes, 0).map_err(io)?;
    f.sync_data().map_err(io)?;
    drop(f);
    storage.rename(&tmp, &path).map_err(io)?;
    if let Some(point) = renamed {
        storage.failpoint(point, &path).map_err(io)?;
    }
    storage.sync_dir(dir).map_err(io)?;
    Ok(())
}
