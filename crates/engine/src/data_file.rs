//! The data file: pages at `id * page_size`, through the storage seam.

use crate::error::Result;
use crate::ids::PageId;
use sluice_storage::{FileHandle, OpenOptions, Storage};
use std::path::Path;

/// The file that holds the pages.
pub(crate) struct DataFile {
    file: Box<dyn FileHandle>,
    page_size: usize,
}

impl DataFile {
    pub(crate) fn open(storage: &dyn Storage, path: &Path, page_size: usize) -> Result<DataFile> {
        let file = storage.open(path, OpenOptions::CREATE)?;
        Ok(DataFile { file, page_size })
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
            let n = self.file.read_at(&mut buf[done..], off + done as u64)?;
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
        self.file.write_at(page, self.offset(id))?;
        Ok(())
    }

    /// Makes every write so far durable.
    pub(crate) fn sync(&self) -> Result<()> {
        self.file.sync_data()?;
        Ok(())
    }
}
