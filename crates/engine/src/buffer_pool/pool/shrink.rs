//! Shortening the data file (compaction): the pool lets go of the pages past the new
//! end, then the file is truncated.

use super::BufferPool;
use crate::error::{Error, Result};
use crate::ids::PageId;
use std::sync::atomic::Ordering;

impl BufferPool {
    /// Drops every cached page at or past `end` and truncates the data file there. The
    /// caller (compaction) guarantees that nothing can reach those pages (they are free,
    /// past the meta page's page count, and no allocation runs) and has checkpointed, so
    /// none is dirty. False (and nothing changed) if one is dirty or pinned all the same.
    pub(crate) fn truncate_at(&self, end: PageId) -> Result<bool> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        let mut t = self.table.write();
        let past: Vec<(PageId, usize)> = t
            .map
            .iter()
            .filter(|(id, _)| id.0 >= end.0)
            .map(|(&id, &i)| (id, i))
            .collect();
        for &(id, i) in &past {
            let f = &self.frames[i];
            if f.pin.load(Ordering::Acquire) != 0 || f.is_dirty() {
                tracing::warn!(page = id.0, "compaction: a page past the new end is in use");
                return Ok(false);
            }
        }
        for (id, i) in past {
            let f = &self.frames[i];
            t.map.remove(&id);
            f.page.store(PageId::NONE.0, Ordering::Release);
            f.valid.store(false, Ordering::Release);
        }
        drop(t);
        self.file.truncate(end.0 * self.file.page_size() as u64)?;
        Ok(true)
    }
}

impl BufferPool {
    /// Caps the data-file length checkpoints record (`u64::MAX`: none; see
    /// `DataFile::recorded_len`).
    pub(crate) fn cap_data_len(&self, cap: u64) {
        self.file.cap_len(cap);
    }

    /// The data file's length in bytes.
    pub(crate) fn data_len(&self) -> Result<u64> {
        self.file.len()
    }
}
