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
//! Through the storage seam: the file is [`Storage::scratch`], an unnamed file outside
//! every directory the engine uses (on a real disk, in the system's temporary directory,
//! `TMPDIR`), created at the first spill only. It holds no durable state: it dies with
//! the process, and a crash loses nothing a reopen would not rebuild from the log. On
//! [`sluice_storage::SimStorage`] it lives in the simulated disk's memory, faults can be
//! injected into it, and a crash or kill makes it unreadable, as for the engine's other
//! files.

use crate::error::{Error, Result};
use crate::ids::PageId;
use parking_lot::Mutex;
use sluice_storage::{FileHandle, Storage};
use std::collections::HashMap;
use std::sync::Arc;

/// The spill file and where each spilled page is in it.
pub(super) struct Spill {
    page_size: usize,
    storage: Arc<dyn Storage>,
    inner: Mutex<SpillFile>,
}

#[derive(Default)]
struct SpillFile {
    /// Created at the first spill.
    file: Option<Box<dyn FileHandle>>,
    /// Page id to slot (the page is at `slot * page_size`). A page spilled again reuses
    /// its slot, so the file never holds more slots than the database has pages.
    slots: HashMap<PageId, u64>,
}

impl Spill {
    pub(super) fn new(page_size: usize, storage: Arc<dyn Storage>) -> Spill {
        Spill {
            page_size,
            storage,
            inner: Mutex::new(SpillFile::default()),
        }
    }

    fn error(what: &str, e: std::io::Error) -> Error {
        Error::Io(Arc::new(std::io::Error::new(
            e.kind(),
            format!(
                "{what} the scratch file that holds the pages restart recovery changed in memory (set TMPDIR to put it in another directory): {e}"
            ),
        )))
    }

    /// Stores `page` (sealed) as the current version of page `id`.
    pub(super) fn put(&self, id: PageId, page: &[u8]) -> Result<()> {
        assert_eq!(page.len(), self.page_size);
        let mut s = self.inner.lock();
        if s.file.is_none() {
            s.file = Some(
                self.storage
                    .scratch()
                    .map_err(|e| Spill::error("creating", e))?,
            );
        }
        let next = s.slots.len() as u64;
        let slot = *s.slots.entry(id).or_insert(next);
        let file = s.file.as_ref().expect("created above");
        let written = file.write_at(page, slot * self.page_size as u64);
        if written.is_err() && slot == next {
            // The slot holds nothing readable: forget it.
            s.slots.remove(&id);
        }
        written.map_err(|e| Spill::error("writing to", e))
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
    use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage};
    use std::path::Path;

    fn spill(sim: &SimStorage) -> Spill {
        Spill::new(512, Arc::new(sim.clone()))
    }

    #[test]
    fn a_spilled_page_reads_back_its_last_version_and_others_read_nothing() {
        let s = spill(&SimStorage::new(1));
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

    /// The spill file is the storage's scratch file: on the simulated disk it is in no
    /// directory, counts no operation, and a crash takes it (its pages cannot be read
    /// back by a handle of the dead incarnation).
    #[test]
    fn the_spill_file_is_the_storages_scratch_file_and_a_crash_takes_it() {
        let sim = SimStorage::new(2);
        let s = spill(&sim);
        s.put(PageId(7), &[4u8; 512]).unwrap();
        assert!(sim.list(Path::new("/")).unwrap().is_empty());
        assert_eq!(
            sim.stats().ops,
            0,
            "a scratch file changes nothing a crash leaves"
        );
        sim.crash();
        let e = s.get(PageId(7), &mut [0u8; 512]).unwrap_err();
        assert!(e.to_string().contains("scratch file"), "{e}");
    }

    /// A failed write of the spill file (injected on the simulated scratch file) is an
    /// I/O error that says which file, and leaves the page unspilled.
    #[test]
    fn a_failed_spill_is_an_error_and_spills_nothing() {
        let sim = SimStorage::new(3);
        let s = spill(&sim);
        sim.inject(FaultPlan::new(FaultOp::Write, 1, FaultKind::Eio).on(SimStorage::SCRATCH));
        let e = s.put(PageId(2), &[5u8; 512]).unwrap_err();
        assert!(e.is_io(), "{e}");
        assert!(e.to_string().contains("writing to the scratch file"), "{e}");
        assert!(!s.get(PageId(2), &mut [0u8; 512]).unwrap());
        assert!(s.pages().is_empty());
        s.put(PageId(2), &[6u8; 512]).unwrap();
        let mut buf = [0u8; 512];
        assert!(s.get(PageId(2), &mut buf).unwrap());
        assert_eq!(buf, [6u8; 512]);
    }
}
