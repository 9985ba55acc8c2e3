//! The log-based cleaner (the propagation paper's Algorithm 2): from the LSN where the
//! last pass ended, merge the sorted runs and replay them onto the data file one
//! segment (a fixed run of adjacent pages, `Options::propagation_segment_bytes`) at a
//! time — read the segment, apply to each page the records newer than its PageLSN, write
//! back the pages that changed, sync — and only then tell the buffer pool which
//! CleanLSNs advanced. It never latches a buffer-pool page.
//!
//! A pass runs inside a checkpoint, between its begin record (the redo point R) and its
//! page sweep, and propagates `[from, R)`: every change below `from` is on disk already
//! (at open, `from` is where restart recovery's redo began; after a checkpoint, its R).
//! The checkpoint's sweep then writes whatever the pass could not (pages with no valid
//! base and no image in the runs, or whose last image is at or below the image floor),
//! so after it every change below R is on disk and restart recovery starts REDO at R.
//!
//! The rules it keeps, the same as every page write's (`BufferPool::write_frame`):
//! * **Write-ahead**: it replays only durable records (the checkpoint waits for R first).
//! * **Torn pages**, **never older**, **clean only for what landed**: it reads and
//!   writes each segment through one landing of the buffer pool's page-write protocol
//!   (`buffer_pool::Landing`), the same as every other page writer, which holds the
//!   segment from the read to the writes. Records are applied only above a page's
//!   PageLSN.
//! * Only pages it changed are written: rewriting an unchanged page could tear it, and
//!   the log would hold no image to repair it.

use super::runs::{RunEntry, RunStore, ScanError};
use super::Counters;
use crate::btree::apply_op;
use crate::buffer_pool::Landed;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::Record;
use crate::page;
use crate::recovery::analysis::decode;
use crate::store::Store;
use sluice_wal::Lsn;
use std::sync::atomic::Ordering;

/// What a pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct PassReport {
    /// Records applied to pages.
    pub(crate) applied: u64,
    /// Pages written.
    pub(crate) pages: u64,
    /// Write calls (runs of adjacent changed pages).
    pub(crate) writes: u64,
    /// Segments read.
    pub(crate) segments: u64,
    /// Pages left to the checkpoint's sweep.
    pub(crate) skipped: u64,
}

/// A page of the segment being replayed.
struct Slot {
    /// Verified (a valid page of this id), either as read or after an image.
    valid: bool,
    /// Changed by this pass.
    changed: bool,
    /// The base was invalid and the runs held records for it but no image.
    unbuildable: bool,
}

/// Propagates `[from, to)` from the sorted runs to the data file. `to` is the redo point of
/// the running checkpoint (a record boundary, durable).
pub(crate) fn pass(
    store: &Store,
    runs: &RunStore,
    counters: &Counters,
    from: Lsn,
    to: Lsn,
) -> Result<PassReport> {
    if to <= from {
        return Ok(PassReport::default());
    }
    store.log.wait_durable(to)?;
    runs.catch_up(&store.log, to)?;
    match replay(store, runs, counters, from, to) {
        Err(Failure::Damaged(d)) => {
            // The log still holds [from, to) (truncation keeps everything from the last
            // pass's end): rebuild the damaged runs from it and replay again.
            let note = format!("{d}; rebuilt from the log");
            *counters.run_damage.lock() = Some(note);
            runs.regenerate(&store.log, from.max(d.from), to.min(d.to))?;
            match replay(store, runs, counters, from, to) {
                Ok(r) => Ok(r),
                Err(Failure::Damaged(d)) => Err(Error::Corruption(format!(
                    "{d} (again after rebuilding it from the log)"
                ))),
                Err(Failure::Other(e)) => Err(e),
            }
        }
        Err(Failure::Other(e)) => Err(e),
        Ok(r) => Ok(r),
    }
}

enum Failure {
    Damaged(super::runs::Damage),
    Other(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Other(e)
    }
}

fn replay(
    store: &Store,
    runs: &RunStore,
    counters: &Counters,
    from: Lsn,
    to: Lsn,
) -> std::result::Result<PassReport, Failure> {
    let pool = &store.pool;
    let page_size = store.page_size;
    let seg_pages = pool.segment_pages();
    let mut report = PassReport::default();
    let busy = std::time::Instant::now();
    let mut merge = runs.scan(PageId(0), PageId(u64::MAX), from, to)?;
    let mut next: Option<RunEntry> = next_entry(&mut merge)?;
    let mut buf = vec![0u8; seg_pages as usize * page_size];
    while let Some(first) = next.take() {
        let seg = pool.segment_of(first.page);
        let base = PageId(seg * seg_pages);
        // The page-write protocol's landing: the segment is held from this read to the
        // writes, so no version of its pages lands in between.
        let mut landing = pool.landing(base, &mut buf)?;
        report.segments += 1;
        let mut slots: Vec<Slot> = buf
            .chunks(page_size)
            .enumerate()
            .map(|(k, p)| Slot {
                valid: page::checksum_ok(p) && page::validate(p, PageId(base.0 + k as u64)).is_ok(),
                changed: false,
                unbuildable: false,
            })
            .collect();
        let mut entry = Some(first);
        while let Some(e) = entry.take() {
            if pool.segment_of(e.page) != seg {
                next = Some(e);
                break;
            }
            let k = (e.page.0 - base.0) as usize;
            let bytes = &mut buf[k * page_size..(k + 1) * page_size];
            if apply(bytes, &mut slots[k], &e, page_size)? {
                report.applied += 1;
            }
            entry = next_entry(&mut merge)?;
        }
        // Write the pages it changed (a page it could not rebuild, or whose last image
        // is at or below the image floor, is left to the checkpoint's sweep).
        let mut pages: Vec<(PageId, &[u8])> = Vec::new();
        for (k, (slot, p)) in slots.iter().zip(buf.chunks_mut(page_size)).enumerate() {
            if slot.changed && slot.valid {
                page::seal(p);
                pages.push((PageId(base.0 + k as u64), &*p));
            } else if slot.changed || slot.unbuildable {
                report.skipped += 1;
            }
        }
        let t = std::time::Instant::now();
        let verdicts = landing.write(&pages)?;
        let (calls, bytes) = landing.written();
        drop(landing);
        counters.writing(t.elapsed());
        counters.wrote_in(bytes, calls);
        report.writes += calls as u64;
        let mut written: Vec<(PageId, u64)> = Vec::new();
        for (&(id, p), v) in pages.iter().zip(verdicts) {
            match v {
                Landed::Written => written.push((id, page::page_lsn(p))),
                // Read under this landing and only raised since: nothing newer is there.
                Landed::Superseded(d) => unreachable!(
                    "page {id}: the file holds {d}, above what the cleaner read under its landing"
                ),
                Landed::NeedsImage => report.skipped += 1,
            }
        }
        report.pages += written.len() as u64;
        if !written.is_empty() {
            // Durable before any CleanLSN moves.
            let t = std::time::Instant::now();
            pool.sync()?;
            counters.writing(t.elapsed());
            for (id, lsn) in written {
                pool.mark_propagated(id, lsn, to);
            }
        }
    }
    counters.busy(busy.elapsed());
    counters
        .fallback_pages
        .fetch_add(report.skipped, Ordering::Relaxed);
    Ok(report)
}

fn next_entry(merge: &mut super::runs::Merge) -> std::result::Result<Option<RunEntry>, Failure> {
    match merge.next() {
        None => Ok(None),
        Some(Ok(e)) => Ok(Some(e)),
        Some(Err(ScanError::Damaged(d))) => Err(Failure::Damaged(d)),
        Some(Err(ScanError::Other(e))) => Err(Failure::Other(e)),
    }
}

impl From<ScanError> for Failure {
    fn from(e: ScanError) -> Self {
        match e {
            ScanError::Damaged(d) => Failure::Damaged(d),
            ScanError::Other(e) => Failure::Other(e),
        }
    }
}

/// Applies one run entry to its page in the segment buffer if the page is below it.
/// Returns whether it changed the page.
fn apply(bytes: &mut [u8], slot: &mut Slot, e: &RunEntry, page_size: usize) -> Result<bool> {
    let rec = decode(e.lsn, &e.record)?;
    let corrupt = |what: String| {
        Error::Corruption(format!(
            "log cleaner: record at LSN {} for page {}: {what}",
            e.lsn, e.page
        ))
    };
    match rec {
        Record::Images { pages } => {
            let Some((_, image)) = pages.iter().find(|(p, _)| *p == e.page) else {
                return Err(corrupt("an image record without this page".into()));
            };
            if slot.valid && page::page_lsn(bytes) >= e.end.0 {
                return Ok(false);
            }
            let full = page::expand(image, page_size).map_err(corrupt)?;
            page::validate(&full, e.page).map_err(|w| corrupt(w.to_string()))?;
            bytes.copy_from_slice(&full);
            page::set_page_lsn(bytes, e.end.0);
            page::set_image_lsn(bytes, e.lsn.0);
            slot.valid = true;
            slot.changed = true;
            slot.unbuildable = false;
            Ok(true)
        }
        Record::Update {
            page, key, change, ..
        } => apply_op_entry(bytes, slot, e, page, &change.redo(&key)),
        Record::Clr { page, op, .. } => apply_op_entry(bytes, slot, e, page, &op),
        _ => Err(corrupt("not a page record".into())),
    }
}

fn apply_op_entry(
    bytes: &mut [u8],
    slot: &mut Slot,
    e: &RunEntry,
    page: PageId,
    op: &crate::log_record::PageOp,
) -> Result<bool> {
    if page != e.page {
        return Err(Error::Corruption(format!(
            "log cleaner: run entry for page {} holds a record of page {page}",
            e.page
        )));
    }
    if !slot.valid {
        // Torn or never written, and no image yet: the sweep writes it from the pool.
        slot.unbuildable = true;
        return Ok(false);
    }
    if page::page_lsn(bytes) >= e.end.0 {
        return Ok(false);
    }
    apply_op(bytes, op).map_err(|w| {
        Error::Corruption(format!(
            "log cleaner: replay of LSN {} on page {page}: {w}",
            e.lsn
        ))
    })?;
    page::set_page_lsn(bytes, e.end.0);
    slot.changed = true;
    Ok(true)
}

/// What [`rebuild`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rebuilt {
    /// Run entries applied to pages (below them).
    pub(crate) applied: u64,
    /// Pages written.
    pub(crate) pages: u64,
    /// Write calls (runs of adjacent changed pages).
    pub(crate) writes: u64,
    /// Chunks of adjacent pages read.
    pub(crate) chunks: u64,
}

/// Media recovery from the sorted runs (the single-pass restore): brings the data file
/// `data` — a copy that holds every change the runs leave out, whole pages, read and
/// written through the storage seam — up to `to` by replaying onto it, page by page in
/// page order, the entries of `[from, to)` that `wanted(page, lsn)` accepts (restart
/// recovery's rule: the page is in the dirty-page table with a recovery LSN at or
/// below the entry). Each page is read once and written once, a chunk of
/// `chunk_pages` adjacent pages at a time; pages past the file's end (created since the
/// copy) extend it. An entry is applied only above the page's PageLSN, as redo does; a
/// page that is torn or unwritten in the copy waits for a full image, and one the
/// entries leave without a valid version is an error naming it, as after redo. The
/// caller syncs `data`. Writes in place: a crash midway leaves a copy to start over from.
/// `progress(passed, pages)` is told, after each chunk, how many of the file's pages (when
/// the pass began) lie behind it.
pub(crate) fn rebuild(
    runs: &RunStore,
    data: &dyn sluice_storage::FileHandle,
    page_size: usize,
    (from, to): (Lsn, Lsn),
    wanted: &dyn Fn(PageId, Lsn) -> bool,
    chunk_pages: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Rebuilt> {
    let io = |what: &str, e: std::io::Error| {
        Error::Corruption(format!("single-pass restore: {what} the data file: {e}"))
    };
    let chunk_pages = chunk_pages.max(1);
    let mut len = data.len().map_err(|e| io("cannot size", e))?;
    // Progress: pages of the file passed, of its pages when the pass began.
    let file_pages = len / page_size as u64;
    progress(0, file_pages);
    let mut report = Rebuilt::default();
    let mut merge = runs.scan(PageId(0), PageId(u64::MAX), from, to)?;
    let mut next = merge.next().transpose()?;
    let mut buf = vec![0u8; chunk_pages as usize * page_size];
    while let Some(first) = next.take() {
        let chunk = first.page.0 / chunk_pages;
        let base = chunk * chunk_pages;
        let at = base * page_size as u64;
        // What the file holds of the chunk; the rest reads as zeros (never written).
        buf.fill(0);
        let have = len.saturating_sub(at).min(buf.len() as u64) as usize;
        if have > 0 {
            data.read_exact_at(&mut buf[..have], at)
                .map_err(|e| io("cannot read", e))?;
        }
        report.chunks += 1;
        let mut slots: Vec<Option<Slot>> = (0..chunk_pages).map(|_| None).collect();
        let mut entry = Some(first);
        while let Some(e) = entry.take() {
            if e.page.0 / chunk_pages != chunk {
                next = Some(e);
                break;
            }
            if wanted(e.page, e.lsn) {
                let k = (e.page.0 - base) as usize;
                let bytes = &mut buf[k * page_size..(k + 1) * page_size];
                let slot = slots[k].get_or_insert_with(|| Slot {
                    valid: page::checksum_ok(bytes) && page::validate(bytes, e.page).is_ok(),
                    changed: false,
                    unbuildable: false,
                });
                if apply(bytes, slot, &e, page_size)? {
                    report.applied += 1;
                }
            }
            entry = merge.next().transpose()?;
        }
        // Seal and write the pages changed, adjacent ones in one call.
        let mut k = 0;
        while k < slots.len() {
            let Some(slot) = &slots[k] else {
                k += 1;
                continue;
            };
            let id = base + k as u64;
            if slot.unbuildable && !slot.valid {
                return Err(Error::Corruption(format!(
                    "page {id} is torn or unwritten in the copy and the log from LSN {from} holds no full image to restore it"
                )));
            }
            if !slot.changed {
                k += 1;
                continue;
            }
            let start = k;
            while k < slots.len() && slots[k].as_ref().is_some_and(|s| s.changed && s.valid) {
                page::seal(&mut buf[k * page_size..(k + 1) * page_size]);
                k += 1;
            }
            let off = (base + start as u64) * page_size as u64;
            data.write_at(&buf[start * page_size..k * page_size], off)
                .map_err(|e| io("cannot write", e))?;
            len = len.max(off + ((k - start) * page_size) as u64);
            report.pages += (k - start) as u64;
            report.writes += 1;
        }
        progress((base + chunk_pages).min(file_pages), file_pages);
    }
    progress(file_pages, file_pages);
    Ok(report)
}
