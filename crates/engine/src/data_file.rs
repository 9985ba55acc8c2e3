//! The data file: pages at `id * page_size`, through the storage seam.

use crate::error::{Error, Result};
use crate::ids::PageId;
use sluice_storage::{FileHandle, OpenOptions, Storage};
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

/// The file that holds the pages.
pub(crate) struct DataFile {
    file: Box<dyn FileHandle>,
    page_size: usize,
    path: PathBuf,
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
        Ok(DataFile {
            file,
            page_size,
            path: path.to_path_buf(),
        })
    }

    /// Opens the existing data file at `path` for reading only, as it is: no sync, no
    /// cache dropped (a read-only database changes nothing, and reads what the operating
    /// system shows).
    pub(crate) fn open_read_only(
        storage: &dyn Storage,
        path: &Path,
        page_size: usize,
    ) -> Result<DataFile> {
        let file = storage
            .open(path, OpenOptions::READ_ONLY)
            .map_err(|e| missing_or(path, e))?;
        Ok(DataFile {
            file,
            page_size,
            path: path.to_path_buf(),
        })
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
        let off = self.offset(id);
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
        self.file
            .write_at(page, self.offset(id))
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
        self.file
            .write_at(bytes, self.offset(first))
            .map_err(|e| self.error(e))
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
