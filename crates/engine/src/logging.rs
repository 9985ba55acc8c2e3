//! Logging page changes: the full-page-image rule and redo-only records.
//!
//! Torn-page protection (PostgreSQL's full_page_writes): the first change to a page after
//! a checkpoint's redo point is preceded by a full image of the page in the log. Redo
//! starts at or before that redo point, so for any page that could have been torn by a
//! write after the checkpoint the log holds a complete image to restart from; records
//! before that image are skipped for a page that fails its checksum.

use crate::buffer_pool::PageWrite;
use crate::db::Inner;
use crate::error::Result;
use crate::log_record::Record;
use crate::page;
use sluice_wal::Appended;
use std::sync::atomic::Ordering;

impl Inner {
    /// Appends a record that belongs to no transaction.
    pub(crate) fn append(&self, rec: &Record) -> Result<Appended> {
        debug_assert!(rec.txn().is_none());
        Ok(self.log.append(&rec.encode())?)
    }

    /// Logs a full image of the X-latched page if no change since the current redo
    /// point has been logged for it (PageLSN at or below the redo point), and stamps it.
    /// Call before logging a change to an existing page.
    pub(crate) fn protect_page(&self, w: &mut PageWrite<'_>) -> Result<()> {
        let redo = self.redo_point.load(Ordering::SeqCst);
        if w.page_lsn() <= redo {
            self.log_full_image(w)?;
        }
        Ok(())
    }

    /// Logs the page's current image and stamps the page with it.
    pub(crate) fn log_full_image(&self, w: &mut PageWrite<'_>) -> Result<()> {
        debug_assert!(w.is_valid());
        let rec = Record::Images {
            pages: vec![(w.id(), page::compress(w.bytes()))],
        };
        let a = self.append(&rec)?;
        w.mark_dirty(a.lsn, a.end);
        w.set_fpi_lsn(a.lsn);
        Ok(())
    }
}
