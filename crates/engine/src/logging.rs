//! Logging page changes: the full-page-image rule and redo-only records.
//!
//! Torn-page protection (PostgreSQL's full_page_writes): the first change to a page whose
//! last full image is at or below a checkpoint's redo point is preceded by a full image
//! of the page in the log. Redo starts at or before that redo point, so for any page that
//! could have been torn by a write after the checkpoint the log holds a complete image to
//! restart from; records before that image are skipped for a page that fails its
//! checksum. The rule every page write must keep is enforced in
//! `BufferPool::write_frame`; the argument is in `checkpoint` and ARCHITECTURE.md.

use crate::buffer_pool::PageWrite;
use crate::db::Inner;
use crate::error::Result;
use crate::log_record::Record;
use sluice_wal::Appended;
use std::sync::atomic::Ordering;

impl Inner {
    /// Appends a record that belongs to no transaction.
    pub(crate) fn append(&self, rec: &Record) -> Result<Appended> {
        debug_assert!(rec.txn().is_none());
        Ok(self.log.append(&rec.encode())?)
    }

    /// Logs a full image of the X-latched page if its last image is at or below the
    /// current redo point, and stamps it. Call before logging a change to an existing
    /// page. This keeps images off the write path in the normal case: a page changed
    /// after the redo point R already has an image after R, so a checkpoint's sweep and
    /// later evictions write it without one (`BufferPool::write_frame` enforces the rule
    /// for the rare page that raced a checkpoint).
    pub(crate) fn protect_page(&self, w: &mut PageWrite<'_>) -> Result<()> {
        let redo = self.redo_point.load(Ordering::SeqCst);
        if w.image_lsn() <= redo {
            self.pool.log_full_image(w)?;
        }
        Ok(())
    }
}
