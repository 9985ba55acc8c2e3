//! The page-write protocol's assertions can fire: each test breaks one precondition
//! through a test-only path (a landing holding the wrong locks, a write around the
//! protocol, a frame marked written past its PageLSN) and expects the assertion that
//! names the rule. An assertion that can never fail would guard nothing.

use super::frame::Frame;
use super::Wait;
use crate::ids::PageId;
use crate::page::{self, NodeMut};
use crate::{Database, Options};
use parking_lot::RwLock;
use sluice_storage::SimStorage;
use sluice_wal::Lsn;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A page no table uses (the data file ends well before it): writing it disturbs none.
const FAR: PageId = PageId(500);

/// A database with one committed change, so the log is durable past 0; and a page of it.
fn database() -> (Database, PageId) {
    let db = Database::open_on(Arc::new(SimStorage::new(7)), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"k", b"v").unwrap();
    tx.commit().unwrap();
    (db, t.id())
}

/// A sealed, valid empty leaf `id` at PageLSN `lsn`.
fn leaf_at(id: PageId, lsn: u64) -> Vec<u8> {
    let mut b = vec![0u8; Options::small().page_size];
    NodeMut::format(&mut b, id, 0);
    page::set_page_lsn(&mut b, lsn);
    page::seal(&mut b);
    b
}

/// Writes `page` at [`FAR`] through a landing (the protocol's own way in).
fn land(db: &Database, page: &[u8]) {
    let mut scratch = vec![0u8; page.len()];
    let pool = &db.inner.store.pool;
    let _ = pool
        .landing(FAR, &mut scratch)
        .unwrap()
        .write(&[(FAR, page)]);
}

fn durable(db: &Database) -> u64 {
    db.inner.store.log.durable_lsn().0
}

/// The frame holding page `p` (loaded, then unpinned) and its index.
fn frame_of(db: &Database, p: PageId) -> (usize, &Frame) {
    drop(db.inner.store.pool.fetch(p).unwrap());
    let frames = &db.inner.store.pool.frames;
    let i = frames
        .iter()
        .position(|f| f.page_id() == p)
        .expect("in the pool");
    (i, &frames[i])
}

#[test]
#[should_panic(expected = "write-ahead rule")]
fn a_page_above_the_durable_log_is_not_written() {
    let (db, _) = database();
    land(&db, &leaf_at(FAR, durable(&db) + 8));
}

#[test]
#[should_panic(expected = "without the pool's write gate")]
fn a_landing_without_the_write_gate_does_not_write() {
    let other = RwLock::new(());
    let (db, _) = database();
    let pool = &db.inner.store.pool;
    let page = leaf_at(FAR, durable(&db));
    let stripe = pool.file.lock_pages(FAR, 1);
    let mut landing = pool.landing_holding(FAR, other.read(), stripe);
    let _ = landing.write(&[(FAR, &page)]);
}

#[test]
#[should_panic(expected = "without its segment's stripe lock")]
fn a_landing_without_the_stripe_lock_does_not_write() {
    let (db, _) = database();
    let pool = &db.inner.store.pool;
    let page = leaf_at(FAR, durable(&db));
    let mut landing = pool.landing_holding(FAR, pool.write_gate.read(), Vec::new());
    let _ = landing.write(&[(FAR, &page)]);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "written unsealed")]
fn an_unsealed_page_is_not_written() {
    let (db, _) = database();
    let mut page = leaf_at(FAR, durable(&db));
    *page.last_mut().unwrap() ^= 1; // in the empty leaf's free gap: still well formed
    land(&db, &page);
}

/// A writer that went around the landing put a newer version in the file after the
/// landing read it: the older copy must not land over it.
#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "an older version over a newer one")]
fn an_older_version_does_not_land_over_a_newer_one() {
    let (db, _) = database();
    let pool = &db.inner.store.pool;
    let d = durable(&db);
    pool.write_around_the_protocol(FAR, &leaf_at(FAR, d))
        .unwrap();
    let older = leaf_at(FAR, d - 1);
    let stripe = pool.file.lock_pages(FAR, 1);
    let mut landing = pool.landing_holding(FAR, pool.write_gate.read(), stripe);
    let _ = landing.write(&[(FAR, &older)]);
}

#[test]
#[should_panic(expected = "CleanLSN ≤ PageLSN")]
fn a_frame_is_not_marked_written_past_its_page_lsn() {
    let (db, p) = database();
    let (_, f) = frame_of(&db, p);
    let _pin = db.inner.store.pool.fetch(p).unwrap();
    let _io = f.io.lock();
    f.written(f.page_lsn.load(Ordering::SeqCst) + 8);
}

#[test]
#[should_panic(expected = "without its I/O lock")]
fn a_frame_is_not_marked_written_without_its_io_lock() {
    let (db, p) = database();
    let (_, f) = frame_of(&db, p);
    f.written(f.page_lsn.load(Ordering::SeqCst));
}

#[test]
#[should_panic(expected = "written unpinned")]
fn an_unpinned_frame_is_not_written() {
    let (db, p) = database();
    let (i, f) = frame_of(&db, p);
    assert_eq!(
        f.pin.load(Ordering::SeqCst),
        0,
        "the set-up must be unpinned"
    );
    let _ = db.inner.store.pool.write_frame(i, Wait::Block);
}

/// Log-based propagation may move CleanLSN past PageLSN only while a writer holds the
/// page's X latch between logging a change and stamping it; with no latch held it is a
/// page that would read clean through changes not on disk.
#[test]
#[should_panic(expected = "CleanLSN ≤ PageLSN")]
fn propagation_does_not_mark_an_unlatched_page_clean_past_its_page_lsn() {
    let (db, p) = database();
    let (_, f) = frame_of(&db, p);
    let past = f.page_lsn.load(Ordering::SeqCst) + 8;
    db.inner.store.pool.mark_propagated(p, past, Lsn(past));
}

/// The same call inside the window is allowed: the writer's stamp is on its way.
#[test]
fn propagation_past_the_page_lsn_is_allowed_while_a_writer_stamps() {
    let (db, p) = database();
    let pool = &db.inner.store.pool;
    let (_, f) = frame_of(&db, p);
    let pin = pool.fetch(p).unwrap();
    let w = pin.write();
    let (at, clean) = (
        f.page_lsn.load(Ordering::SeqCst),
        f.clean_lsn.load(Ordering::SeqCst),
    );
    assert!(pool.mark_propagated(p, at + 8, Lsn(at + 8)));
    // Put CleanLSN back: no writer is about to stamp `at + 8` here.
    f.clean_lsn.store(clean, Ordering::SeqCst);
    drop(w);
}
