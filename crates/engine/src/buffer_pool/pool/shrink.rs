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
    /// none is dirty. A page held pinned for a moment all the same — a page cleaner
    /// looking at its frame — is waited for, up to [`UNPIN_WAIT`] (a refusal here left
    /// the file long after the free list had already let the pages go: the space came
    /// back only at the next compaction; `space_comes_back.rs` failed 2 runs in 5 under
    /// page cleaners). False (and nothing changed) if one is dirty, or still pinned.
    pub(crate) fn truncate_at(&self, end: PageId) -> Result<bool> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        let waited = std::time::Instant::now();
        let mut t = loop {
            let t = self.table.write();
            let mut pinned = None;
            for (&id, &i) in t.map.iter().filter(|(id, _)| id.0 >= end.0) {
                let f = &self.frames[i];
                if f.is_dirty() {
                    tracing::warn!(page = id.0, "compaction: a page past the new end is dirty");
                    return Ok(false);
                }
                if f.pin.load(Ordering::Acquire) != 0 {
                    pinned = Some(id);
                }
            }
            let Some(id) = pinned else { break t };
            drop(t);
            if waited.elapsed() > UNPIN_WAIT {
                tracing::warn!(
                    page = id.0,
                    "compaction: a page past the new end stays pinned"
                );
                return Ok(false);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        let past: Vec<(PageId, usize)> = t
            .map
            .iter()
            .filter(|(id, _)| id.0 >= end.0)
            .map(|(&id, &i)| (id, i))
            .collect();
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

/// How long [`BufferPool::truncate_at`] waits for a page past the new end to be unpinned.
const UNPIN_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

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
