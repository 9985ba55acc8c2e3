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
    #[cfg(test)]
    if let Some(hook) = inner.after_checkpoint_begin.lock().take() {
        hook();
    }

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

#[cfg(test)]
mod tests {
    use crate::ids::PageId;
    use crate::{Database, Options, Table};
    use sluice_storage::{OpenOptions, SimStorage, Storage};
    use std::path::Path;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    fn options() -> Options {
        let mut o = Options::small();
        o.checkpoint_log_bytes = 0; // only the checkpoints the tests ask for
        o
    }

    fn put(db: &Database, t: &Table, key: &str) {
        let mut tx = db.begin();
        tx.put(t, key.as_bytes(), b"value").unwrap();
        tx.commit().unwrap();
    }

    /// The LSN of the last full image of page `p` as the buffer pool knows it.
    fn image_lsn(db: &Database, p: PageId) -> u64 {
        let r = db.inner.pool.fetch(p).unwrap();
        let w = r.write();
        w.fpi_lsn()
    }

    /// Garbles the middle of page `p` on disk, as a torn write would.
    fn tear(sim: &SimStorage, p: PageId, page_size: u64) {
        let f = sim
            .open(Path::new("/db/data"), OpenOptions::EXISTING)
            .unwrap();
        f.write_at(&[0xA5; 300], p.0 * page_size + 400).unwrap();
        f.sync_data().unwrap();
    }

    /// The scenario: a writer decides on the old redo point, the checkpoint
    /// begins, the writer logs its change after the new redo point (no image); the page
    /// is evicted before the sweep sees it, changed again after the checkpoint, evicted
    /// again (unsynced), and torn by the crash. Redo must find an image after the redo
    /// point of the checkpoint CONTROL names.
    #[test]
    fn page_changed_in_the_checkpoint_window_and_evicted_twice_survives_a_tear() {
        let sim = SimStorage::new(11);
        let db = Database::open(Arc::new(sim.pinned()), "/db", options()).unwrap();
        let t = db.create_table("t").unwrap();
        let p = t.id(); // the root, the table's only leaf
        put(&db, &t, "k1");
        db.checkpoint().unwrap();
        let r1 = db.inner.redo_point.load(Ordering::SeqCst);
        put(&db, &t, "k2"); // the first change after r1 logs an image
        let (hook_db, hook_t) = (db.clone(), t.clone());
        *db.inner.after_checkpoint_begin.lock() = Some(Box::new(move || {
            // A writer that read the redo point before this checkpoint's begin record
            // and appends its change after it.
            let r2 = hook_db.inner.redo_point.swap(r1, Ordering::SeqCst);
            put(&hook_db, &hook_t, "k3");
            hook_db.inner.redo_point.store(r2, Ordering::SeqCst);
            assert!(hook_db.inner.pool.evict(p).unwrap(), "page in the pool");
        }));
        db.checkpoint().unwrap();
        assert!(db.inner.after_checkpoint_begin.lock().is_none());
        put(&db, &t, "k4");
        assert!(db.inner.pool.evict(p).unwrap(), "page in the pool");
        sim.crash();
        drop((t, db));
        tear(&sim, p, 1024);

        let db = Database::open(Arc::new(sim.pinned()), "/db", options()).unwrap();
        let t = db.table("t").unwrap();
        let mut tx = db.begin();
        for k in ["k1", "k2", "k3", "k4"] {
            assert!(tx.get(&t, k.as_bytes()).unwrap().is_some(), "{k} lost");
        }
        tx.commit().unwrap();
        assert_eq!(db.recovery_report().restored_pages, 1);
        db.verify().unwrap();
    }

    #[test]
    fn a_reloaded_page_keeps_its_image_lsn() {
        let sim = SimStorage::new(12);
        let db = Database::open(Arc::new(sim), "/db", options()).unwrap();
        let t = db.create_table("t").unwrap();
        let p = t.id();
        put(&db, &t, "k1");
        db.checkpoint().unwrap();
        let r = db.inner.redo_point.load(Ordering::SeqCst);
        put(&db, &t, "k2"); // logs an image after the redo point
        let before = image_lsn(&db, p);
        assert!(
            before > r && before != u64::MAX,
            "image at {before}, redo point {r}"
        );
        assert!(db.inner.pool.evict(p).unwrap());
        assert_eq!(
            image_lsn(&db, p),
            before,
            "the reload forgot the page's image"
        );
    }
}
