//! The dirty-page table a checkpoint records, checked frame by frame: the states a frame
//! passes through in a few instructions of a load, or only with a long-lived log, are
//! set up directly instead of waiting for a sweep to hit them (the crash sweep found the
//! first about once in 2,000 seeds).

use super::frame::{STATE_LOADING, STATE_READY};
use crate::ids::PageId;
use crate::{Database, Options};
use sluice_storage::SimStorage;
use sluice_wal::Lsn;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A database whose log no longer starts at 0 (checkpoints truncated it), with table
/// `t` holding a few committed keys.
fn database() -> (Database, PageId) {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0;
    let db = Database::open_on(Arc::new(SimStorage::new(5)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let log = &db.inner.store.log;
    let mut i = 0;
    while log.start_lsn() == Lsn(0) {
        let mut tx = db.begin();
        for _ in 0..50 {
            tx.put(&t, format!("k{:03}", i % 200).as_bytes(), [i as u8; 200])
                .unwrap();
            i += 1;
        }
        tx.commit().unwrap();
        db.checkpoint().unwrap();
        assert!(i < 200_000, "the log never truncated");
    }
    (db, t.id())
}

/// The frame holding page `p`.
fn frame_of(db: &Database, p: PageId) -> &super::frame::Frame {
    drop(db.inner.store.pool.fetch(p).unwrap());
    let frames = &db.inner.store.pool.frames;
    frames
        .iter()
        .find(|f| f.page_id() == p)
        .expect("in the pool")
}

/// A load that has mapped the frame to its new page but not yet reset the LSNs left by
/// the page it evicted looks dirty from LSN 0; a checkpoint that recorded it would make
/// the next open read the log from 0, which truncation removed.
#[test]
fn a_frame_in_the_middle_of_a_load_is_not_a_dirty_page() {
    let (db, p) = database();
    let f = frame_of(&db, p);
    let pool = &db.inner.store.pool;
    let saved = (
        f.page_lsn.load(Ordering::SeqCst),
        f.clean_lsn.load(Ordering::SeqCst),
        f.rec_lsn.load(Ordering::SeqCst),
    );
    // What the loader leaves for a moment: the new page's clean LSN, the old page's
    // PageLSN, no recovery LSN.
    f.state.store(STATE_LOADING, Ordering::Release);
    f.clean_lsn.store(1, Ordering::SeqCst);
    f.page_lsn.store(saved.0.max(2), Ordering::SeqCst);
    f.rec_lsn.store(0, Ordering::SeqCst);
    assert!(f.is_dirty(), "the set-up must look dirty to be a test");
    let dirty = pool.checkpoint_dirty_pages();
    let also = pool.dirty_pages();
    // Put the frame back before asserting, so a failure does not leave it half loaded.
    f.page_lsn.store(saved.0, Ordering::SeqCst);
    f.clean_lsn.store(saved.1, Ordering::SeqCst);
    f.rec_lsn.store(saved.2, Ordering::SeqCst);
    f.state.store(STATE_READY, Ordering::Release);
    assert!(!dirty.iter().any(|&(q, _)| q == p), "{dirty:?}");
    assert!(!also.iter().any(|&(q, _)| q == p), "{also:?}");
    assert!(!dirty.iter().any(|&(_, l)| l == Lsn(0)), "{dirty:?}");
    db.checkpoint().unwrap();
    db.verify().unwrap();
}

/// A dirty page's redo start is its last image when that is older than its recovery
/// LSN (redo writes the page only once it met an image) — but only while the log still
/// holds that image; below the log's start, the recovery LSN.
#[test]
fn a_dirty_page_is_recorded_from_its_image_only_while_the_log_holds_it() {
    let (db, _) = database();
    let start = db.inner.store.log.start_lsn().0;
    let mut tx = db.begin();
    let t = db.table("t").unwrap();
    tx.put(&t, b"k000", b"dirty").unwrap();
    tx.commit().unwrap();
    let pool = &db.inner.store.pool;
    let (leaf, _) = *pool.dirty_pages().first().expect("the put dirtied a page");
    let f = frame_of(&db, leaf);
    let rec = f.rec_lsn.load(Ordering::SeqCst);
    let image = f.image_lsn.load(Ordering::SeqCst);
    assert!(rec > start, "rec {rec}, start {start}");
    let recorded = |img: u64| {
        f.image_lsn.store(img, Ordering::SeqCst);
        let d = pool.checkpoint_dirty_pages();
        d.into_iter().find(|&(q, _)| q == leaf).expect("dirty").1
    };
    let below_start = recorded(start - 1);
    let in_the_log = recorded(start);
    f.image_lsn.store(image, Ordering::SeqCst);
    assert_eq!(
        below_start,
        Lsn(rec),
        "an image the log dropped cannot be the start"
    );
    assert_eq!(in_the_log, Lsn(start), "an older image still in the log is");
    db.checkpoint().unwrap();
    db.verify().unwrap();
}

/// A clean page held X-latched may have a change logged and not yet stamped: the
/// dirty-page table counts it from the log position at latching, and forgets it once the
/// latch is released with nothing stamped; a dirty page keeps the lower of the two.
#[test]
fn a_latched_page_counts_as_dirty_from_where_it_was_latched() {
    let (db, p) = database();
    db.checkpoint().unwrap(); // every page clean
    let pool = &db.inner.store.pool;
    let recorded = |q: PageId| {
        let d = pool.dirty_pages();
        d.into_iter().find(|&(x, _)| x == q).map(|(_, l)| l)
    };
    assert_eq!(recorded(p), None, "clean after the checkpoint");
    let at = db.inner.store.log.released_lsn();
    let page = pool.fetch(p).unwrap();
    let w = page.write();
    assert_eq!(recorded(p), Some(at), "latched while clean");
    let i = pool.frames.iter().position(|f| f.page_id() == p).unwrap();
    assert_eq!(
        pool.rec_lsn(i),
        Some(at),
        "the checkpoint's sweep sees it too"
    );
    let table = pool.checkpoint_dirty_pages();
    let from = table.iter().find(|&&(x, _)| x == p).expect("recorded").1;
    assert!(from <= at, "recorded from {from}, latched at {at}");
    drop(w);
    assert_eq!(recorded(p), None, "released with nothing stamped");
    assert_eq!(pool.rec_lsn(i), None);

    // Dirty with a recovery LSN below the latch position: that stays the start.
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"k000", b"dirty").unwrap();
    tx.commit().unwrap();
    let (leaf, rec) = *pool.dirty_pages().first().expect("the put dirtied a page");
    let f = frame_of(&db, leaf);
    let page = pool.fetch(leaf).unwrap();
    let w = page.write();
    assert!(f.latched_at.load(Ordering::SeqCst) >= rec.0);
    assert_eq!(
        pool.dirty_pages().into_iter().find(|&(x, _)| x == leaf),
        Some((leaf, rec))
    );
    drop(w);
    drop(page);
    db.checkpoint().unwrap();
    db.verify().unwrap();
}

/// The reference count shared by CLOCK and the page cleaner: 1 on load, one more per
/// hit, halved when the CLOCK hand passes the frame.
#[test]
fn heat_counts_hits_and_decays_as_the_clock_passes() {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0;
    let db = Database::open_on(Arc::new(SimStorage::new(6)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let pool = &db.inner.store.pool;
    let mut tx = db.begin();
    for i in 0..400 {
        tx.put(&t, format!("k{i:04}").as_bytes(), [1; 100]).unwrap();
    }
    tx.commit().unwrap();
    let p = t.id();
    let f = frame_of(&db, p);
    let heat = |f: &super::frame::Frame| f.heat.load(Ordering::Relaxed);
    let h0 = heat(f);
    assert!(h0 >= 1);
    for _ in 0..10 {
        drop(pool.fetch(p).unwrap());
    }
    assert_eq!(heat(f), h0 + 10);
    // Keep it pinned (so it stays) and load three pools' worth of other pages (past
    // the end of the file: they read as zeros), without touching it: every load needs a
    // victim, so the hand goes round at least three times and halves it each time.
    let pinned = pool.fetch(p).unwrap();
    let hot = heat(f);
    let n = pool.frame_count() as u64;
    let far = PageId(10_000);
    for q in 1..=3 * n {
        drop(pool.fetch(PageId(far.0 + q)).unwrap());
    }
    assert!(heat(f) <= hot / 8, "{hot} then {}", heat(f));
    drop(pinned);
    // A page loaded afresh starts at 1, whatever the frame's last page had.
    let q = PageId(far.0 + 5 * n);
    let r = pool.fetch(q).unwrap();
    assert_eq!(heat(&pool.frames[r.idx]), 1);
    drop(r);
    drop(pool.fetch(q).unwrap());
    let i = pool.frames.iter().position(|f| f.page_id() == q).unwrap();
    assert_eq!(heat(&pool.frames[i]), 2);
}
