//! The single-pass restore (after Sauer, Graefe and Härder's single-pass restore, the
//! lineage of the propagation paper's log archive): instead of replaying the restored
//! log in time order through the buffer pool — where a database larger than the pool
//! reads, and writes back, a page each time the log comes back to it — the log below
//! the cut is sorted into runs by page (the run store of log-based propagation,
//! `propagation::runs`), and the runs are merged and applied to the restored data file
//! in page order, each page read once and written once (`log_cleaner::rebuild`).
//!
//! Which records are applied is restart recovery's rule, from its one home
//! (`recovery::redo_rule`): a record from the backup's checkpoint on, or an earlier one
//! whose page the checkpoint's dirty-page table lists with a recovery LSN at or below
//! it. Each is applied only above its page's PageLSN, and a page torn in the fuzzy copy
//! waits for its full image, as in redo.
//!
//! It runs before the restore writes `CONTROL`: until then the directory is not a
//! database, so a crash midway leaves nothing that opens. The open that follows is told
//! that the data file holds everything below the cut (`Hooks::redone_below`): analysis
//! and undo run as always, redo has nothing left to do. A later open, or one after a
//! crash in that recovery, redoes from the checkpoint as usual and finds every page
//! current.
//!
//! The log is read in place from the restored directory's copy (as the restore read it to
//! find the cut), the records from where redo would start. The runs are written to the
//! restored directory's run directory (where log-based
//! propagation keeps its runs) and removed once applied.

use super::backup::LOG;
use super::open::DATA;
use crate::control::Checkpoint;
use crate::data_file::file_error;
use crate::error::Result;
use crate::ids::PageId;
use crate::propagation::log_cleaner;
use crate::propagation::runs::{self, RunStore};
use crate::recovery::redo_rule::{self, RedoRule};
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::{read_segment_files, Lsn};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Pages read and written per step of the apply pass (1 MiB of 4 KiB pages).
const CHUNK_PAGES: u64 = 256;

/// What the single-pass restore did ([`RestoreReport::single_pass`](crate::RestoreReport::single_pass)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinglePass {
    /// Bytes of sorted runs written.
    pub run_bytes: u64,
    /// Log records applied to pages (below them).
    pub applied: u64,
    /// Pages written.
    pub pages: u64,
    /// Chunks of adjacent pages read.
    pub chunks: u64,
    /// Microseconds sorting the log into runs.
    pub sort_us: u64,
    /// Microseconds merging the runs and applying them to the data file, its sync
    /// included.
    pub apply_us: u64,
}

/// The single pass's steps, for its progress reports (`RestoreStep::Sort` and `Apply`):
/// log bytes sorted, and pages of the data file passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    Sort,
    Apply,
}

/// Applies the log of the restored directory `dest` below `cut` to its data file by
/// sorted runs (see the module docs). `checkpoint` is the backup's.
pub(super) fn apply(
    storage: &Arc<dyn Storage>,
    dest: &Path,
    checkpoint: Checkpoint,
    cut: Lsn,
    page_size: usize,
    segment_bytes: u64,
    progress: &mut dyn FnMut(Step, u64, u64),
) -> Result<SinglePass> {
    let _span = tracing::info_span!("single-pass restore", cut = %cut).entered();
    // The copied log is read in place, as the restore read it to find the cut: no lock,
    // no recovery, no sync (it is synced, and recovery opens it next).
    let log_dir = dest.join(LOG);
    let read =
        |from: Lsn| read_segment_files(storage.clone(), &log_dir, segment_bytes, (from, cut));
    // Redo's rule, from the checkpoint's tables.
    let d = redo_rule::end_record(checkpoint, read(checkpoint.end).next())?;
    let rule = RedoRule::new(checkpoint.begin, &d.dirty);
    // Where redo would start: the log holds it (the backup pinned it, analysis needs it).
    let from = rule.start();
    let wanted = |p: PageId, lsn: Lsn| rule.wants(p, lsn);

    let sorting = Instant::now();
    let dir = dest.join(runs::DIR);
    let store = RunStore::open(storage.clone(), &dir)?;
    let total = cut.0.saturating_sub(from.0);
    let (step, mut next) = ((total / 200).max(1), 0);
    let mut sorted = |done: u64| {
        if done >= next || done == total {
            progress(Step::Sort, done, total);
            next = done.saturating_add(step);
        }
    };
    sorted(0);
    store.sort(read(from), (from, cut), &mut |end| {
        sorted(end.0.saturating_sub(from.0).min(total))
    })?;
    sorted(total);
    let sort_us = sorting.elapsed().as_micros() as u64;

    let applying = Instant::now();
    let path = dest.join(DATA);
    let data = storage
        .open(&path, OpenOptions::EXISTING)
        .map_err(|e| file_error("restored data file", &path, e))?;
    let mut applied = |done, total| progress(Step::Apply, done, total);
    let done = log_cleaner::rebuild(
        &store,
        &*data,
        page_size,
        (from, cut),
        &wanted,
        CHUNK_PAGES,
        &mut applied,
    )?;
    data.sync_data()
        .map_err(|e| file_error("restored data file", &path, e))?;
    drop(data);
    let apply_us = applying.elapsed().as_micros() as u64;
    store.remove_below(cut)?;
    tracing::info!(
        applied = done.applied,
        pages = done.pages,
        sort_us,
        apply_us,
        "applied the sorted runs"
    );
    Ok(SinglePass {
        run_bytes: store.bytes_written(),
        applied: done.applied,
        pages: done.pages,
        chunks: done.chunks,
        sort_us,
        apply_us,
    })
}
