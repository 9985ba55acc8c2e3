//! ARIES restart recovery: analysis, redo (repeating history), undo of losers.
//!
//! * **Analysis** reads the last checkpoint's tables (through the control file) and scans
//!   the log from the older of its redo point and the first record of every transaction
//!   active then. It rebuilds the active-transaction table (losers: no commit or end
//!   record), keeping each loser's records for undo, and the dirty-page table (each page
//!   with the earliest record that may need redoing).
//! * **Redo** replays from the smallest recovery LSN every record whose page is in the
//!   dirty-page table with a recovery LSN at or below it, if the page's LSN is below the
//!   record's end. A page that fails its checksum (torn write) skips records until a
//!   full image restores it; one still invalid afterwards is reported as corruption.
//! * **Undo** rolls the losers back together, newest record first, logging a CLR per
//!   step (undoNext = the undone record's prevLSN), skipping past CLRs of an earlier,
//!   interrupted recovery, and ends each loser with an end record.
//!
//! Recovery writes only log records and pages under the normal rules, so a crash during
//! recovery is recovered like any other: redo repeats the CLRs, undo resumes at their
//! undoNext. A checkpoint at the end makes the work durable and shortens the next restart.

pub(crate) mod analysis;
mod redo;
pub(crate) mod redo_rule;
mod undo;

use crate::control::Checkpoint;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::Record;
use crate::page::{compress, Meta, NodeMut};
use crate::store::Store;
use crate::txn_table::TxnTable;
use sluice_wal::segment::{segment_name, segment_start};
use sluice_wal::Lsn;
use std::path::Path;

/// What restart recovery works on: the page store, the transaction table it rebuilds,
/// and where the log is (to name a missing segment).
pub(crate) struct Context<'a> {
    pub(crate) store: &'a Store,
    pub(crate) txns: &'a TxnTable,
    pub(crate) log_dir: &'a Path,
    /// LSN bytes per log segment.
    pub(crate) segment_bytes: u64,
    /// A participant log of a partitioned database: asks the coordinator about each
    /// loser before undo (`coordination`).
    pub(crate) in_doubt: Option<&'a crate::coordination::InDoubt>,
    /// Every change below this LSN is in the data file already (a single-pass restore):
    /// redo skips those records.
    pub(crate) redone_below: Option<Lsn>,
    /// Told how the passes move (a restore's progress bar).
    pub(crate) progress: Option<&'a ProgressFn>,
}

pub(crate) use crate::coordination::{Pass, ProgressFn};

/// Reports a pass's progress now and then: about 200 times over the pass, and once at
/// its end.
pub(crate) struct Ticker<'a> {
    tell: Option<&'a ProgressFn>,
    pass: Pass,
    total: u64,
    step: u64,
    next: u64,
}

impl<'a> Ticker<'a> {
    /// Starts `pass` with `total` units to do (reported as 0 done).
    pub(crate) fn start(cx: &Context<'a>, pass: Pass, total: u64) -> Ticker<'a> {
        if let Some(t) = cx.progress {
            t(pass, 0, total);
        }
        Ticker {
            tell: cx.progress,
            pass,
            total,
            step: (total / 200).max(1),
            next: 0,
        }
    }

    /// `done` units are done (clamped to the total).
    pub(crate) fn at(&mut self, done: u64) {
        if let Some(t) = self.tell {
            if done >= self.next {
                let done = done.min(self.total);
                t(self.pass, done, self.total);
                self.next = done.saturating_add(self.step);
            }
        }
    }

    /// The pass is over.
    pub(crate) fn finish(self) {
        if let Some(t) = self.tell {
            t(self.pass, self.total, self.total);
        }
    }
}

impl Context<'_> {
    /// The error for a log that no longer holds `lsn`, which recovery needs.
    fn missing_log(&self, lsn: Lsn, why: &str) -> Error {
        missing_segment(self.log_dir, self.segment_bytes, lsn, why)
    }
}

/// A `Corruption` naming the segment file that should hold `lsn`.
pub(crate) fn missing_segment(log_dir: &Path, segment_bytes: u64, lsn: Lsn, why: &str) -> Error {
    let name = segment_name(segment_start(lsn, segment_bytes));
    Error::Corruption(format!(
        "log segment {} is missing: {why} needs the log from LSN {lsn}",
        log_dir.join(name).display()
    ))
}

/// What restart recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The checkpoint recovery started from (its redo point), if any.
    pub checkpoint: Option<Lsn>,
    /// Where analysis started reading.
    pub scan_from: Lsn,
    /// Where redo started (`None`: nothing to redo).
    pub redo_from: Option<Lsn>,
    /// The end of the log found by the log's own recovery.
    pub log_end: Lsn,
    /// Records read by analysis.
    pub records: u64,
    /// Page changes redone (records applied to pages whose LSN was below them).
    pub redone: u64,
    /// Pages found torn or never written and restored from a full image.
    pub restored_pages: u64,
    /// Transactions rolled back (losers).
    pub losers: usize,
    /// Transactions of a participant log of a partitioned database found without a
    /// commit record of their own, whose commit the coordinator's log holds: committed
    /// by recovery (not counted in `losers`).
    pub in_doubt_committed: usize,
    /// Changes undone.
    pub undone: u64,
    /// True if the database was created by this open.
    pub created: bool,
}

/// Restart recovery: analysis, redo, undo — each pass a `tracing` span inside the
/// `recovery` span, which records what the passes found when they are done.
pub(crate) fn recover(cx: &Context<'_>, control: Option<Checkpoint>) -> Result<RecoveryReport> {
    let span = tracing::info_span!(
        "recovery",
        records = tracing::field::Empty,
        redone = tracing::field::Empty,
        losers = tracing::field::Empty,
        undone = tracing::field::Empty,
    );
    let _entered = span.enter();
    let report = passes(cx, control)?;
    span.record("records", report.records);
    span.record("redone", report.redone);
    span.record("losers", report.losers);
    span.record("undone", report.undone);
    Ok(report)
}

fn passes(cx: &Context<'_>, control: Option<Checkpoint>) -> Result<RecoveryReport> {
    let mut a = tracing::info_span!("analysis").in_scope(|| analysis::run(cx, control))?;
    // Before undo, which counts its compensations as any rollback does.
    cx.store.install_counts(std::mem::take(&mut a.counts));
    let mut report = RecoveryReport {
        checkpoint: control.map(|c| c.begin),
        scan_from: a.scan_from,
        redo_from: a.redo_from,
        log_end: cx.store.log.recovery().end,
        records: a.records,
        losers: a.losers.len(),
        ..RecoveryReport::default()
    };
    cx.txns.advance(a.next_txn);
    // Before anything is stamped (undo's commits of in-doubt transactions): a restart
    // with the wall clock set back does not stamp below what the log holds.
    cx.store.commit_clock.observe(a.last_commit_time);
    // No full images while redo runs, and no writes of pages without one in reach
    // (`BufferPool::set_redo`).
    cx.store.pool.set_redo(true);
    let redo = tracing::info_span!("redo").in_scope(|| redo::run(cx, &a));
    cx.store.pool.set_redo(false);
    let (redone, restored) = redo?;
    report.redone = redone;
    report.restored_pages = restored;
    report.created = format_if_new(cx, control.is_some())?;
    if report.created && !a.losers.is_empty() {
        return Err(Error::Corruption(
            "the log holds transactions but the database has no meta page".into(),
        ));
    }
    let mut losers = a.losers;
    if let Some(decide) = cx.in_doubt {
        report.in_doubt_committed = undo::commit_in_doubt(cx, &mut losers, &**decide)?;
        report.losers = losers.len();
    }
    report.undone = tracing::info_span!("undo").in_scope(|| undo::run(cx, losers))?;
    Ok(report)
}

/// Formats a new database (meta page and empty catalog) if page 0 holds none.
fn format_if_new(cx: &Context<'_>, has_checkpoint: bool) -> Result<bool> {
    let mp = cx.store.pool.fetch(PageId::META)?;
    let mut mw = mp.write();
    if mw.is_valid() {
        return Ok(false);
    }
    if has_checkpoint {
        return Err(Error::Corruption(
            "meta page is damaged and no log record restores it".into(),
        ));
    }
    let cp = cx.store.pool.fetch(PageId::CATALOG)?;
    let mut cw = cp.write();
    let mut meta = vec![0u8; cx.store.page_size];
    Meta::format(&mut meta, 2);
    let mut cat = vec![0u8; cx.store.page_size];
    NodeMut::format(&mut cat, PageId::CATALOG, 0);
    let a = cx.store.append(&Record::Images {
        pages: vec![
            (PageId::META, compress(&meta)),
            (PageId::CATALOG, compress(&cat)),
        ],
    })?;
    for (w, img) in [(&mut mw, &meta), (&mut cw, &cat)] {
        w.install(img);
        w.mark_dirty(a.lsn, a.end);
        w.set_image_lsn(a.lsn);
    }
    drop((mw, cw));
    cx.store.tree_created(PageId::CATALOG)?;
    Ok(true)
}
