//! A latched frame is pinned, however long its guard outlives the [`super::PageRef`] that
//! made it (`page_ref::LatchPin`). A scan walking leaves one at a time let one leaf's pin
//! go a moment before its latch; a fetch then took that frame as its victim, and the
//! loader, which X-latches the frame it took at once, found the latch held and panicked
//! ("a frame pinned only by its loader has a free latch": CI, once, on a loaded 2-core
//! machine). Here every frame's guard outlives its page reference, deterministically.

use crate::ids::PageId;
use crate::{Database, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;

/// Pages past the end of the data file (they read as zeros): no table uses them.
const FIRST: u64 = 10_000;

fn database() -> Database {
    let mut o = Options::small();
    o.pool_pages = 16;
    Database::open_on(Arc::new(SimStorage::new(7)), "/db", o).unwrap()
}

#[test]
fn a_read_guard_keeps_its_frame_after_its_page_reference_is_gone() {
    let db = database();
    let pool = &db.inner.store.pool;
    let n = pool.frames.len() as u64;
    // Every frame S-latched, each by a guard whose page reference is already dropped.
    let guards: Vec<_> = (0..n)
        .map(|k| pool.fetch(PageId(FIRST + k)).unwrap().read())
        .collect();
    for k in 0..n {
        let id = PageId(FIRST + k);
        assert!(
            pool.frames.iter().any(|f| f.page_id() == id),
            "page {id}, still latched, lost its frame"
        );
    }
    // No frame is free: a fetch that may not wait gets none, instead of a latched frame.
    assert!(pool.try_fetch(PageId(FIRST + n)).unwrap().is_none());
    drop(guards);
    assert!(pool.try_fetch(PageId(FIRST + n)).unwrap().is_some());
}

#[test]
fn a_write_guard_keeps_its_frame_after_its_page_reference_is_gone() {
    let db = database();
    let pool = &db.inner.store.pool;
    let n = pool.frames.len() as u64;
    let guards: Vec<_> = (0..n)
        .map(|k| pool.fetch(PageId(FIRST + k)).unwrap().write())
        .collect();
    assert!(pool.try_fetch(PageId(FIRST + n)).unwrap().is_none());
    drop(guards);
    assert!(pool.try_fetch(PageId(FIRST + n)).unwrap().is_some());
}
