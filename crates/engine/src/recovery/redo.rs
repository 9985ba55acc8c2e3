//! The redo pass: repeating history, page by page.

use crate::btree::apply_op;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::{PageOp, Record};
use crate::page;
use crate::recovery::analysis::{decode, Analysis};
use crate::recovery::{Context, Pass, Ticker};
use sluice_wal::Lsn;
use std::collections::BTreeSet;

struct Redo<'a> {
    cx: &'a Context<'a>,
    a: &'a Analysis,
    /// Pages that failed verification and have not been restored by an image yet.
    torn: BTreeSet<PageId>,
    redone: u64,
    restored: u64,
}

impl Redo<'_> {
    /// True if the record at `lsn` may need redoing on `page`.
    fn wanted(&self, page: PageId, lsn: Lsn) -> bool {
        self.cx.redone_below.is_none_or(|below| lsn >= below) && self.a.rule.wants(page, lsn)
    }

    fn op(&mut self, page: PageId, op: &PageOp, lsn: Lsn, end: Lsn) -> Result<()> {
        if !self.wanted(page, lsn) {
            return Ok(());
        }
        let p = self.cx.store.pool.fetch(page)?;
        let mut w = p.write();
        if !w.is_valid() {
            // Torn or never written: a later full image must restore it.
            self.torn.insert(page);
            return Ok(());
        }
        if w.page_lsn() >= end.0 {
            return Ok(());
        }
        apply_op(w.bytes_mut(), op)
            .map_err(|e| Error::Corruption(format!("redo of LSN {lsn} on page {page}: {e}")))?;
        w.mark_dirty(lsn, end);
        self.redone += 1;
        Ok(())
    }

    fn image(&mut self, page: PageId, image: &[u8], lsn: Lsn, end: Lsn) -> Result<()> {
        if !self.wanted(page, lsn) {
            return Ok(());
        }
        let p = self.cx.store.pool.fetch(page)?;
        let mut w = p.write();
        // This image is in the part of the log any recovery from this checkpoint
        // replays for the page: the page may be written during redo from now on.
        self.cx.store.pool.redo_met_image(page);
        let valid = w.is_valid();
        if valid && w.page_lsn() >= end.0 {
            return Ok(());
        }
        let bytes = page::expand(image, self.cx.store.page_size)
            .map_err(|e| Error::Corruption(format!("image of page {page} at LSN {lsn}: {e}")))?;
        page::validate(&bytes, page)
            .map_err(|e| Error::Corruption(format!("image of page {page} at LSN {lsn}: {e}")))?;
        w.install(&bytes);
        w.mark_dirty(lsn, end);
        w.set_image_lsn(lsn);
        if !valid {
            self.restored += 1;
        }
        self.torn.remove(&page);
        self.redone += 1;
        Ok(())
    }
}

/// Replays the log from the analysis' redo point. Returns (changes redone, pages
/// restored from images).
pub(crate) fn run(cx: &Context<'_>, a: &Analysis) -> Result<(u64, u64)> {
    let Some(from) = a.redo_from else {
        return Ok((0, 0));
    };
    let mut r = Redo {
        cx,
        a,
        torn: BTreeSet::new(),
        redone: 0,
        restored: 0,
    };
    // A record boundary (the end of a restored log): nothing below it needs reading.
    let from = cx.redone_below.map_or(from, |below| from.max(below));
    let durable = cx.store.log.durable_lsn();
    if from >= durable {
        return Ok((0, 0));
    }
    let mut ticker = Ticker::start(cx, Pass::Redo, durable.0 - from.0);
    for item in cx.store.log.read_from(from)? {
        let sluice_wal::ReadRecord { lsn, end, payload } = item?;
        ticker.at(lsn.0 - from.0);
        match decode(lsn, &payload)? {
            Record::Update {
                page, key, change, ..
            } => r.op(page, &change.redo(&key), lsn, end)?,
            Record::Clr { page, op, .. } => r.op(page, &op, lsn, end)?,
            Record::Images { pages } => {
                for (p, img) in &pages {
                    r.image(*p, img, lsn, end)?;
                }
            }
            Record::Commit { .. }
            | Record::Coordinated { .. }
            | Record::End { .. }
            | Record::BeginCheckpoint
            | Record::EndCheckpoint(_)
            | Record::TreeCount { .. } => {}
        }
    }
    ticker.finish();
    if let Some(p) = r.torn.first() {
        return Err(Error::Corruption(format!(
            "page {p} is torn or unwritten and the log holds no full image to restore it"
        )));
    }
    Ok((r.redone, r.restored))
}
