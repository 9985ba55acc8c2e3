//! Where a read-only pool puts the pages restart recovery changed when it needs their
//! frames: a temporary file outside the database directory.
//!
//! A read-only database never writes a page back, yet recovery changes pages in memory
//! (redo of what the log holds past the last checkpoint, undo of the losers); after a
//! `kill -9` of a busy writer they can be far more than the pool holds. Before, such an
//! open failed ("the buffer pool is too small for this read-only database"). Now a dirty
//! victim of a read-only pool is copied here instead of to the data file, and a later
//! fetch of its page reads it back from here instead of from the data file (issue 24,
//! item 1).
//!
//! Why not through the storage seam. The seam (`sluice_storage::Storage`) opens files by
//! path, and every path the engine has is in or beside the database; a scratch file that
//! lives nowhere is not something the seam can give today. Nothing in it needs the seam's
//! guarantees either: it holds no durable state (it is unlinked from the start and dies
//! with the process; a crash loses nothing a reopen would not rebuild from the log), and
//! the crash simulator has nothing to simulate in it. So it is `tempfile::tempfile()`: an
//! anonymous file in the system's temporary directory (`TMPDIR`), never in the database
//! directory and never named, created at the first spill only.

use crate::error::{Error, Result};
use crate::ids::PageId;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The spill file and where each spilled page is in it.
pub(super) struct Spill {
    page_size: usize,
    inner: Mutex<SpillFile>,
}

#[derive(Default)]
struct SpillFile {
    /// Created at the first spill.
    file: Option<File>,
    /// Page id to slot (the page is at `slot * page_size`). A page spilled again reuses
    /// its slot, so the file never holds more slots than the database has pages.
    slots: HashMap<PageId, u64>,
}

impl Spill {
    pub(super) fn new(page_size: usize) -> Spill {
        Spill {
            page_size,
            inner: Mutex::new(SpillFile::default()),
        }
    }

    fn error(what: &str, e: std::io::Error) -> Error {
        Error::Io(std::sync::Arc::new(std::io::Error::new(
            e.kind(),
            format!(
                "{what} the temporary file that holds the pages restart recovery changed in memory (in {}; set TMPDIR to use another directory): {e}",
                std::env::temp_dir().display()
            ),
        )))
    }

    /// Stores `page` (sealed) as the current version of page `id`.
    pub(super) fn put(&self, id: PageId, page: &[u8]) -> Result<()> {
        assert_eq!(page.len(), self.page_size);
        let mut s = self.inner.lock();
        if s.file.is_none() {
            s.file = Some(tempfile::tempfile().map_err(|e| Spill::error("creating", e))?);
        }
        let next = s.slots.len() as u64;
        let slot = *s.slots.entry(id).or_insert(next);
        let file = s.file.as_ref().expect("created above");
        file.write_all_at(page, slot * self.page_size as u64)
            .map_err(|e| Spill::error("writing to", e))
    }

    /// Reads page `id` into `buf` if it was spilled; false (and `buf` untouched) if not.
    pub(super) fn get(&self, id: PageId, buf: &mut [u8]) -> Result<bool> {
        assert_eq!(buf.len(), self.page_size);
        let s = self.inner.lock();
        let Some(&slot) = s.slots.get(&id) else {
            return Ok(false);
        };
        let file = s.file.as_ref().expect("a slot implies the file");
        file.read_exact_at(buf, slot * self.page_size as u64)
            .map_err(|e| Spill::error("reading from", e))?;
        Ok(true)
    }

    /// The pages spilled so far.
    pub(super) fn pages(&self) -> Vec<PageId> {
        self.inner.lock().slots.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spilled_page_reads_back_its_last_version_and_others_read_nothing() {
        let s = Spill::new(512);
        let mut buf = vec![9u8; 512];
        assert!(!s.get(PageId(3), &mut buf).unwrap());
        assert_eq!(buf, vec![9u8; 512], "untouched");
        s.put(PageId(3), &[1u8; 512]).unwrap();
        s.put(PageId(5), &[2u8; 512]).unwrap();
        s.put(PageId(3), &[3u8; 512]).unwrap();
        assert!(s.get(PageId(3), &mut buf).unwrap());
        assert_eq!(buf, vec![3u8; 512]);
        assert!(s.get(PageId(5), &mut buf).unwrap());
        assert_eq!(buf, vec![2u8; 512]);
        let mut pages = s.pages();
        pages.sort();
        assert_eq!(pages, vec![PageId(3), PageId(5)]);
    }
}
