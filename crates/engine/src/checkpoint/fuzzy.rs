//! Fuzzy checkpoints, and the torn-page rule they keep.
//!
//! 1. Under the pool's write gate held exclusively: append `BeginCheckpoint` at LSN R and
//!    make R the redo point (from now on the first change to a page whose last full image
//!    is at or below R logs a new image first: `Store::protect_page`). The image floor F
//!    stays at the previous redo point.
//! 2. Sweep the pool: write every page dirty since before R (recovery LSN < R) through
//!    `BufferPool::write_frame`. Their images after the previous redo point were logged at
//!    their first change, so no extra image is needed in the normal case.
//! 3. Under the write gate held exclusively: F := R. This waits for every write that
//!    decided on the old floor; all of them have completed before the sync below. The
//!    data file's length is read here too.
//! 4. Sync the data file: every change below R, and every write made before step 3, is
//!    now on disk.
//! 5. Append `EndCheckpoint` with the active transactions (first and last LSN) and the
//!    dirty pages (recovery LSN, or the page's last full image if older: see
//!    `BufferPool::checkpoint_dirty_pages`), make it durable, replace the control file (temp file,
//!    sync, rename, directory sync) to point at R, at the end record and at the
//!    data-file length, then truncate the log below what recovery may still read: R, the
//!    first record of every active transaction, and the recovery LSN of every dirty page.
//!
//! Why no page can be torn without an image recovery can find. A write can be torn only
//! if no data-file sync covers it before the crash, so it was not covered by step 4 of the
//! checkpoint that the control file names at the crash, R_c. Writes before that
//! checkpoint's step 3 are covered (step 4 precedes the control file naming R_c). So the
//! write came after step 3, when F ≥ R_c, and `write_frame` wrote the page only with an
//! image above F, logged durably before the write. Redo reads from at or below R_c, so it
//! finds that image. F only rises, so a checkpoint that fails after step 3 leaves nothing
//! unprotected; the control file then still names an older checkpoint, at or below F.
//!
//! Transactions keep running throughout; only one page latch is held at a time, and the
//! write gate is never held while waiting for a latch.

use crate::buffer_pool::Wait;
use crate::control::{Checkpoint, Control};
use crate::error::{Error, Result};
use crate::log_record::{CheckpointData, Record};
use crate::propagation::{log_cleaner, Background, Occasion, Propagation};
use crate::recovery::redo_rule::redo_start;
use crate::store::Store;
use crate::txn_table::TxnTable;
use parking_lot::{Mutex, MutexGuard};
use sluice_storage::{failpoint, Storage};
use sluice_wal::Lsn;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Where checkpoints stand: what the triggers read and each checkpoint updates.
pub(crate) struct Checkpoints {
    /// One checkpoint at a time.
    pub(crate) lock: Mutex<()>,
    /// Where the last checkpoint began (for the log-volume trigger).
    pub(crate) last_begin: AtomicU64,
    /// The end of the last checkpoint's end record (for the timer: "log written since").
    pub(crate) last_end: AtomicU64,
    /// When the last checkpoint completed.
    pub(crate) last_at: Mutex<Instant>,
    /// How long the completed checkpoints took (`Database::metrics`).
    pub(crate) durations: crate::metrics::DurationRecorder,
    /// The log that backups being taken still copy: truncation keeps everything from the
    /// lowest pin (each with its own id, so backups can overlap).
    pins: Mutex<Vec<(u64, Lsn)>>,
    next_pin: AtomicU64,
    /// What the last checkpoint found the log archiver doing to truncation
    /// ([`ArchiveHold`]): a warning is logged when it changes, not at every checkpoint.
    pub(crate) archive_hold: Mutex<ArchiveHold>,
    /// Test-only pause point: runs once, inside the next checkpoint, right after its
    /// begin record and redo point (to drive races with that window deterministically).
    #[cfg(test)]
    pub(crate) after_begin: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Checkpoints {
    /// The state of a database whose redo point is `redo_point`.
    pub(crate) fn new(redo_point: Lsn) -> Checkpoints {
        Checkpoints {
            lock: Mutex::new(()),
            last_begin: AtomicU64::new(redo_point.0),
            last_end: AtomicU64::new(0),
            last_at: Mutex::new(Instant::now()),
            durations: Default::default(),
            pins: Mutex::new(Vec::new()),
            next_pin: AtomicU64::new(0),
            archive_hold: Mutex::new(ArchiveHold::Free),
            #[cfg(test)]
            after_begin: Mutex::new(None),
        }
    }

    /// Keeps the log from `lsn` on until the returned pin is dropped: no checkpoint
    /// truncates below it. Take it under `lock`, right after a checkpoint, with `lsn` at
    /// or below what that checkpoint kept, so nothing below it is already gone.
    pub(crate) fn pin_log(&self, lsn: Lsn) -> LogPin<'_> {
        let id = self.next_pin.fetch_add(1, Ordering::Relaxed);
        self.pins.lock().push((id, lsn));
        LogPin { state: self, id }
    }

    /// The lowest LSN a pin keeps, if any pin is held.
    fn lowest_pin(&self) -> Option<Lsn> {
        self.pins.lock().iter().map(|p| p.1).min()
    }
}

/// Log kept from truncation ([`Checkpoints::pin_log`]) while it lives.
pub(crate) struct LogPin<'a> {
    state: &'a Checkpoints,
    id: u64,
}

impl Drop for LogPin<'_> {
    fn drop(&mut self) {
        self.state.pins.lock().retain(|p| p.0 != self.id);
    }
}

/// What a checkpoint reads and writes: the page store, the transaction table, and the
/// control file in `dir`.
pub(crate) struct Scope<'a> {
    pub(crate) store: &'a Store,
    pub(crate) txns: &'a TxnTable,
    pub(crate) storage: &'a dyn Storage,
    pub(crate) dir: &'a Path,
    pub(crate) log_dir: &'a Path,
    pub(crate) database_id: u64,
    pub(crate) state: &'a Checkpoints,
    /// How pages reach the data file: what this checkpoint writes (the strategy
    /// decides), and the log cleaner's sorted runs.
    pub(crate) propagation: &'a Propagation,
    /// Keep sorted runs after they are propagated.
    pub(crate) keep_runs: bool,
    /// The coordinator's log of a partitioned database is truncated no further than
    /// this says (`coordination`).
    pub(crate) truncation_cap: Option<&'a crate::coordination::TruncationCap>,
}

/// Runs a checkpoint taken on `occasion`, writing what the propagation strategy chooses
/// for it; the caller holds `state.lock` (passed as proof).
/// Each one is a `tracing` span (`checkpoint`, with its occasion), and a completed one
/// adds its duration to `state.durations`.
pub(super) fn run(cx: &Scope<'_>, occasion: Occasion, held: &MutexGuard<'_, ()>) -> Result<()> {
    let _span = tracing::info_span!("checkpoint", ?occasion).entered();
    let started = Instant::now();
    take(cx, occasion, held)?;
    cx.state.durations.record(started.elapsed());
    Ok(())
}

fn take(cx: &Scope<'_>, occasion: Occasion, _held: &MutexGuard<'_, ()>) -> Result<()> {
    let (store, state) = (cx.store, cx.state);
    // 1. The begin record and the redo point, with no page write in flight.
    let r = {
        let _gate = store.pool.exclusive_write_gate();
        let begin = store.append(&Record::BeginCheckpoint)?;
        let r = begin.lsn;
        let before = store.redo_point.load(Ordering::SeqCst);
        if before > r.0 {
            // Only a log that restarted below the last checkpoint gets here (recovery
            // checks for that first); never move the redo point backwards.
            return Err(Error::Corruption(format!(
                "checkpoint at LSN {r} is below the last redo point {before}: the log in {} restarted behind the database",
                cx.log_dir.display()
            )));
        }
        store.redo_point.store(r.0, Ordering::SeqCst);
        r
    };
    state.last_begin.store(r.0, Ordering::Release);
    // Entry counts, after the begin record, where analysis will read them.
    store.log_counts()?;
    // Without a sweep (page cleaner), the dirty-page table is the one at the begin
    // record, as in ARIES: a page written after it is not synced until the next
    // checkpoint, so leaving it out because it looks clean at the end would lose its
    // changes below R to a crash (read after the begin record: see Frame::recovery_lsn).
    let prop = cx.propagation;
    let writes = prop.strategy.checkpoint_writes(occasion);
    let dirty_at_begin = (!writes.sweeps()).then(|| store.pool.checkpoint_dirty_pages());
    #[cfg(test)]
    if let Some(hook) = state.after_begin.lock().take() {
        hook();
    }
    cx.storage.failpoint(failpoint::CHECKPOINT_BEGUN, cx.dir)?;

    // 2. Every page dirty since before R goes to disk: replayed from the sorted runs by
    // the log cleaner first (log strategy), then, of what is left, written from the pool.
    // With a page cleaner, checkpoints are fuzzy and write nothing: the dirty-page table
    // keeps the older recovery LSNs instead.
    if let (true, Some(runs)) = (writes.replays(), prop.runs.get()) {
        let from = Lsn(prop.counters.propagated_lsn.load(Ordering::Acquire));
        log_cleaner::pass(store, runs, &prop.counters, from, r)?;
    }
    let swept_at = Instant::now();
    for i in 0..store.pool.frame_count() {
        if !writes.sweeps() {
            break;
        }
        let Some(p) = store.pool.pin_frame(i) else {
            continue;
        };
        if p.is_valid() && store.pool.rec_lsn(i).is_some_and(|rec| rec < r) {
            let written = store.pool.write_frame(i, Wait::Block)?;
            assert!(written, "a blocking write always completes");
            if writes.counted() {
                prop.counters.wrote(store.page_size);
            }
        }
        drop(p);
    }

    // 3. and 4.
    let data_len = store.pool.raise_image_floor(r)?;
    // A torn write that extended the file before a crash can leave it ending inside a
    // page (the device keeps some of the page's sectors); that page reads with zeros past
    // the end, either torn (redo repairs it from its image) or, when the lost sectors held
    // zeros, whole and valid (and a backup copies it: `data_file::read_pages`). The
    // control file records whole pages: a floor.
    let data_len = data_len - data_len % store.page_size as u64;
    store.pool.sync()?;
    if writes.counted() {
        prop.counters.busy(swept_at.elapsed());
    }
    cx.storage
        .failpoint(failpoint::CHECKPOINT_DATA_SYNCED, cx.dir)?;

    // 5.
    let data = CheckpointData {
        begin: r,
        next_txn: cx.txns.next_id(),
        active: cx.txns.snapshot(),
        dirty: merge_dirty(dirty_at_begin, store.pool.checkpoint_dirty_pages()),
        clock: store.commit_clock.last(),
    };
    // Recovery reads from the oldest of: the redo point, the first record of every active
    // transaction (undo), and the recovery LSN of every page still dirty (redo) — a page
    // the sweep could not pin (mid-eviction) keeps a recovery LSN below R.
    let keep = data
        .active
        .iter()
        .map(|a| a.first)
        .fold(redo_start(r, data.dirty.iter().map(|d| d.1)), Lsn::min);
    let end = store.append(&Record::EndCheckpoint(data))?;
    store.log.wait_durable(end.end)?;
    cx.storage.failpoint(failpoint::CHECKPOINT_ENDED, cx.dir)?;
    Control {
        page_size: store.page_size as u32,
        database_id: cx.database_id,
        checkpoint: Some(Checkpoint {
            begin: r,
            end: end.lsn,
        }),
        data_len,
    }
    .write(cx.storage, cx.dir)?;
    cx.storage
        .failpoint(failpoint::CHECKPOINT_CONTROL_WRITTEN, cx.dir)?;
    state.last_end.store(end.end.0, Ordering::Release);
    *state.last_at.lock() = Instant::now();
    let mut keep = keep;
    // Only the strategy whose background job is the sorter opens a run store.
    if let Some(runs) = prop.runs.get() {
        debug_assert_eq!(prop.strategy.background(), Background::Sorter);
        if writes.sweeps() {
            // Everything below R is on disk now (the pass, then the sweep): the next
            // pass starts here.
            prop.counters.propagated_lsn.store(r.0, Ordering::Release);
            if !cx.keep_runs {
                runs.remove_below(r)?;
            }
        }
        // The log not yet sorted into runs must stay for the sorter.
        keep = keep.min(runs.sorted_lsn());
    }
    if let Some(cap) = cx.truncation_cap {
        if let Some(c) = cap()? {
            keep = keep.min(c);
        }
    }
    // A backup still copying the log from a pin (`Database::backup_to`).
    if let Some(pin) = state.lowest_pin() {
        keep = keep.min(pin);
    }
    store.log.truncate_below(keep)?;
    note_archive_hold(&store.log, &state.archive_hold, keep);
    Ok(())
}

/// Truncation is held back by the archiver (continuous log archiving,
/// `Options::log_archive`) when it wants to free more than this many segments the
/// archiver has not copied yet.
pub(crate) const ARCHIVE_HOLD_SEGMENTS: u64 = 2;

/// Whether the log archiver holds truncation back, as the last checkpoint found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArchiveHold {
    /// No archive, or it is within [`ARCHIVE_HOLD_SEGMENTS`] of what truncation wants.
    Free,
    /// Truncation is held back by more than that; the archive's error, if it stopped on
    /// one (otherwise it is slow, or the log outruns it).
    Held { error: Option<String> },
}

impl ArchiveHold {
    /// The hold a checkpoint that wants to keep the log from `keep` finds, with the
    /// archiver at `archived` (`None`: no archive).
    fn of(
        keep: Lsn,
        archived: Option<Lsn>,
        segment_bytes: u64,
        error: impl FnOnce() -> Option<String>,
    ) -> ArchiveHold {
        match archived {
            Some(a) if keep.0.saturating_sub(a.0) > ARCHIVE_HOLD_SEGMENTS * segment_bytes => {
                ArchiveHold::Held { error: error() }
            }
            _ => ArchiveHold::Free,
        }
    }
}

/// Says when the archiver starts or stops holding truncation back, or its error changes
/// while it does: a `tracing` warning naming the archive directory (and the error), once
/// per change, and a note when truncation can proceed again.
fn note_archive_hold(log: &sluice_wal::Log, last: &Mutex<ArchiveHold>, keep: Lsn) {
    let archived = log.archived_lsn();
    let now = ArchiveHold::of(keep, archived, log.segment_bytes(), || {
        log.archive_error().map(|e| e.to_string())
    });
    let mut last = last.lock();
    if *last == now {
        return;
    }
    let dir = log.archive_dir().map(|d| d.display().to_string());
    let archived = archived.map_or(0, |a| a.0);
    match &now {
        ArchiveHold::Held { error: Some(e) } => tracing::warn!(
            archive = dir.as_deref().unwrap_or(""),
            archived,
            wanted = keep.0,
            error = %e,
            "log archive {} stopped on an error ({e}): the log keeps every segment from LSN {archived} (truncation wanted to free up to {}) until the database is reopened",
            dir.as_deref().unwrap_or(""),
            keep.0
        ),
        ArchiveHold::Held { error: None } => tracing::warn!(
            archive = dir.as_deref().unwrap_or(""),
            archived,
            wanted = keep.0,
            "log archive {} is behind: the log keeps every segment from LSN {archived}, not yet archived (truncation wanted to free up to {})",
            dir.as_deref().unwrap_or(""),
            keep.0
        ),
        ArchiveHold::Free => tracing::info!(
            archive = dir.as_deref().unwrap_or(""),
            archived,
            "log archive {} caught up: truncation proceeds",
            dir.as_deref().unwrap_or("")
        ),
    }
    *last = now;
}

/// The dirty-page table: the one at the end, and if there is one from the begin record,
/// each page from the lower of its two recovery LSNs.
fn merge_dirty(
    at_begin: Option<Vec<(crate::ids::PageId, Lsn)>>,
    at_end: Vec<(crate::ids::PageId, Lsn)>,
) -> Vec<(crate::ids::PageId, Lsn)> {
    let Some(begin) = at_begin else {
        return at_end;
    };
    let mut m: std::collections::BTreeMap<_, Lsn> = begin.into_iter().collect();
    for (p, l) in at_end {
        m.entry(p).and_modify(|x| *x = (*x).min(l)).or_insert(l);
    }
    m.into_iter().collect()
}

#[cfg(test)]
mod archive_hold_tests {
    use super::{ArchiveHold, ARCHIVE_HOLD_SEGMENTS};
    use sluice_wal::Lsn;

    #[test]
    fn truncation_is_held_by_the_archive_only_beyond_two_segments() {
        let seg = 1000;
        let at = |keep: u64, archived: Option<u64>, err: Option<&str>| {
            ArchiveHold::of(Lsn(keep), archived.map(Lsn), seg, || err.map(String::from))
        };
        assert_eq!(at(50_000, None, None), ArchiveHold::Free, "no archive");
        assert_eq!(
            at(3000, Some(1000), None),
            ArchiveHold::Free,
            "two segments"
        );
        assert_eq!(at(500, Some(1000), Some("x")), ArchiveHold::Free, "ahead");
        assert_eq!(
            at(1000 + ARCHIVE_HOLD_SEGMENTS * seg + 8, Some(1000), None),
            ArchiveHold::Held { error: None }
        );
        assert_eq!(
            at(9000, Some(0), Some("EIO")),
            ArchiveHold::Held {
                error: Some("EIO".into())
            }
        );
    }
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
        let r = db.inner.store.pool.fetch(p).unwrap();
        let w = r.write();
        w.image_lsn()
    }

    /// Garbles the middle of page `p` on disk, as a torn write would.
    fn tear(sim: &SimStorage, p: PageId, page_size: u64) {
        let f = sim
            .open(Path::new("/db/data"), OpenOptions::EXISTING)
            .unwrap();
        f.write_at(&[0xA5; 300], p.0 * page_size + 400).unwrap();
        f.sync_data().unwrap();
    }

    /// Makes the next checkpoint race a writer: right after its begin record, a writer
    /// that read the redo point `r1` before it logs "k3" after it (so with no image);
    /// then page `evict`, if any, leaves the pool.
    fn race_the_next_begin(db: &Database, t: &Table, r1: u64, evict: Option<PageId>) {
        let (hook_db, hook_t) = (db.clone(), t.clone());
        *db.inner.checkpoints.after_begin.lock() = Some(Box::new(move || {
            let r2 = hook_db.inner.store.redo_point.swap(r1, Ordering::SeqCst);
            put(&hook_db, &hook_t, "k3");
            hook_db.inner.store.redo_point.store(r2, Ordering::SeqCst);
            if let Some(p) = evict {
                assert!(
                    hook_db.inner.store.pool.evict(p).unwrap(),
                    "page in the pool"
                );
            }
        }));
    }

    /// Crashes, tears page `p` (1 KiB pages) and recovers: every key of `keys` is there
    /// and recovery restored exactly that page from its image.
    fn tear_and_recover(
        sim: &SimStorage,
        (db, t): (Database, Table),
        p: PageId,
        keys: &[&str],
    ) -> Database {
        sim.crash();
        drop((t, db));
        tear(sim, p, 1024);
        let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
        let t = db.table("t").unwrap();
        let mut tx = db.begin();
        for k in keys {
            assert!(tx.get(&t, k.as_bytes()).unwrap().is_some(), "{k} lost");
        }
        tx.commit().unwrap();
        assert_eq!(db.recovery_report().restored_pages, 1);
        db
    }

    /// The scenario: a writer decides on the old redo point, the checkpoint
    /// begins, the writer logs its change after the new redo point (no image); the page
    /// is evicted before the sweep sees it, changed again after the checkpoint, evicted
    /// again (unsynced), and torn by the crash. Redo must find an image after the redo
    /// point of the checkpoint CONTROL names.
    #[test]
    fn page_changed_in_the_checkpoint_window_and_evicted_twice_survives_a_tear() {
        let sim = SimStorage::new(11);
        let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
        let t = db.create_table("t").unwrap();
        let p = t.id(); // the root, the table's only leaf
        put(&db, &t, "k1");
        db.checkpoint().unwrap();
        let r1 = db.inner.store.redo_point.load(Ordering::SeqCst);
        put(&db, &t, "k2"); // the first change after r1 logs an image
        race_the_next_begin(&db, &t, r1, Some(p));
        db.checkpoint().unwrap();
        assert!(db.inner.checkpoints.after_begin.lock().is_none());
        put(&db, &t, "k4");
        assert!(db.inner.store.pool.evict(p).unwrap(), "page in the pool");
        let db = tear_and_recover(&sim, (db, t), p, &["k1", "k2", "k3", "k4"]);
        db.verify().unwrap();
    }

    /// A change that raced the checkpoint's begin (logged after R with its last image
    /// below R) on a page that was clean before it, so the sweep (pages dirty since
    /// before R) does not write it. Written after the checkpoint, when the image floor is
    /// R, it must get an image first: `write_frame` logs one.
    #[test]
    fn a_raced_page_written_after_the_checkpoint_gets_an_image_first() {
        let sim = SimStorage::new(13);
        let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
        let t = db.create_table("t").unwrap();
        let p = t.id();
        put(&db, &t, "k1");
        db.checkpoint().unwrap();
        let r1 = db.inner.store.redo_point.load(Ordering::SeqCst);
        put(&db, &t, "k2"); // an image after r1
        assert!(db.inner.store.pool.evict(p).unwrap()); // clean before the race
        race_the_next_begin(&db, &t, r1, None);
        db.checkpoint().unwrap();
        let r2 = db.inner.store.redo_point.load(Ordering::SeqCst);
        assert!(image_lsn(&db, p) < r2, "the raced change logged no image");
        let writes = db.stats().pool.writes;
        assert!(
            db.inner.store.pool.evict(p).unwrap(),
            "the sweep left it dirty"
        );
        assert_eq!(db.stats().pool.writes, writes + 1);
        tear_and_recover(&sim, (db, t), p, &["k1", "k2", "k3"]);
    }

    /// A split logged before a checkpoint's begin record but stamped on its pages only
    /// after the whole checkpoint could have run: the splitting thread was descheduled
    /// between the two while holding the pages' X latches (the crash sweep lost
    /// acknowledged commits about once in tens of thousands of seeds, under CI's load).
    /// A split's record belongs to no transaction, so nothing else makes recovery read
    /// it: the checkpoint must count those pages dirty from before its redo point.
    #[test]
    fn a_split_logged_before_the_checkpoint_and_stamped_after_it_survives() {
        use std::sync::mpsc;
        use std::time::Duration;
        let sim = SimStorage::new(14);
        let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
        let t = db.create_table("t").unwrap();
        let value = [7u8; 100];
        let mut keys = Vec::new();
        let mut raced = None;
        for i in 0..40 {
            // Every page clean, so only the split's stamps could make them dirty.
            db.checkpoint().unwrap();
            let hook_db = db.clone();
            let (ck_tx, ck_rx) = mpsc::channel();
            *db.inner.store.after_split_logged.lock() = Some(Box::new(move || {
                // The splitter holds its pages' X latches; the split is logged, not
                // stamped. A checkpoint runs meanwhile, or waits for those pages.
                let (done_tx, done_rx) = mpsc::channel();
                let h = std::thread::spawn(move || {
                    let r = hook_db.checkpoint();
                    let _ = done_tx.send(()); // the hook may have stopped waiting
                    r
                });
                let finished = done_rx.recv_timeout(Duration::from_millis(500)).is_ok();
                ck_tx.send((h, finished)).unwrap();
            }));
            let k = format!("k{i:03}");
            let mut tx = db.begin();
            tx.put(&t, k.as_bytes(), value).unwrap();
            tx.commit().unwrap();
            keys.push(k);
            if let Ok((h, finished)) = ck_rx.try_recv() {
                h.join().unwrap().unwrap();
                raced = Some(finished);
                break;
            }
            db.inner.store.after_split_logged.lock().take();
        }
        let finished_inside = raced.expect("40 values of 100 bytes split a 1 KiB leaf");
        sim.crash();
        drop((t, db));

        let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
        let t = db.table("t").unwrap();
        let mut tx = db.begin();
        for k in &keys {
            assert!(
                tx.get(&t, k.as_bytes()).unwrap().is_some(),
                "{k} lost (the checkpoint finished while the split was unstamped: {finished_inside})"
            );
        }
        tx.commit().unwrap();
        db.verify().unwrap();
    }

    #[test]
    fn a_reloaded_page_keeps_its_image_lsn() {
        let sim = SimStorage::new(12);
        let db = Database::open_on(Arc::new(sim), "/db", options()).unwrap();
        let t = db.create_table("t").unwrap();
        let p = t.id();
        put(&db, &t, "k1");
        db.checkpoint().unwrap();
        let r = db.inner.store.redo_point.load(Ordering::SeqCst);
        put(&db, &t, "k2"); // logs an image after the redo point
        let before = image_lsn(&db, p);
        assert!(
            before > r && before != u64::MAX,
            "image at {before}, redo point {r}"
        );
        assert!(db.inner.store.pool.evict(p).unwrap());
        assert_eq!(
            image_lsn(&db, p),
            before,
            "the reload forgot the page's image"
        );
    }
}
