//! Fuzzy checkpoints.
//!
//! 1. Append `BeginCheckpoint` at LSN R and make R the redo point (from now on the first
//!    change to a page with PageLSN ≤ R logs a full image first).
//! 2. Sweep the pool. Under each page's X latch: a page changed after R without a full
//!    image after R (its change raced with step 1, deciding on the old redo point) gets
//!    one now; a page dirty since before R (recovery LSN < R) is written (WAL rule first).
//! 3. Sync the data file: every change below R is now on disk.
//! 4. Append `EndCheckpoint` with the active transactions (first and last LSN) and the
//!    dirty pages (recovery LSN), and make it durable.
//! 5. Replace the control file (temp + sync + rename + sync dir) to point at R and at
//!    the end record, then truncate the log below what recovery may still read: R, the
//!    first record of every active transaction, and the recovery LSN of every dirty page.
//!
//! Transactions keep running throughout; only one page latch is held at a time.

use crate::control::Control;
use crate::db::Inner;
use crate::error::Result;
use crate::log_record::{CheckpointData, Record};
use sluice_wal::Lsn;
use std::sync::atomic::Ordering;

/// Runs a checkpoint; the caller holds `inner.checkpoint_lock` (passed as proof).
pub(crate) fn run(inner: &Inner, _held: &parking_lot::MutexGuard<'_, ()>) -> Result<()> {
    let begin = inner.append(&Record::BeginCheckpoint)?;
    let r = begin.lsn;
    let before = inner.redo_point.swap(r.0, Ordering::SeqCst);
    assert!(before <= r.0, "redo point moved backwards");

    for i in 0..inner.pool.frame_count() {
        let Some(p) = inner.pool.pin_frame(i) else {
            continue;
        };
        if !p.is_valid() {
            continue;
        }
        {
            let mut w = p.write();
            let fpi = w.fpi_lsn();
            if w.page_lsn() > r.0 && (fpi == crate::buffer_pool::NO_FPI || fpi < r.0) {
                inner.log_full_image(&mut w)?;
            }
        }
        if inner.pool.rec_lsn(i).is_some_and(|rec| rec < r) {
            inner.pool.write_frame(i)?;
        }
        drop(p);
    }
    inner.pool.sync()?;

    let data = CheckpointData {
        begin: r,
        next_txn: inner.txns.next_id(),
        active: inner.txns.snapshot(),
        dirty: inner.pool.dirty_pages(),
    };
    // Recovery reads from the oldest of: the redo point, the first record of every active
    // transaction (undo), and the recovery LSN of every page still dirty (redo) — a page
    // the sweep could not pin (mid-eviction) keeps a recovery LSN below R.
    let keep = data
        .active
        .iter()
        .map(|a| a.first)
        .chain(data.dirty.iter().map(|d| d.1))
        .fold(r, Lsn::min);
    let end = inner.append(&Record::EndCheckpoint(data))?;
    inner.log.wait_durable(end.end)?;
    Control {
        page_size: inner.page_size as u32,
        begin: r,
        end: end.lsn,
    }
    .write(&*inner.storage, &inner.dir)?;
    inner.last_checkpoint.store(r.0, Ordering::Release);
    inner.log.truncate_below(keep)?;
    Ok(())
}
