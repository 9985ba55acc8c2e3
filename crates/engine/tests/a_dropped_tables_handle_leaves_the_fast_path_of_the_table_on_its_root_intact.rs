//! Outside review (the table lock's fast path, where it meets a drop and the reuse of the
//! dropped table's root page). A transaction keeps one `TableHold` per root page, with
//! the latch of the first handle it used there. `use_table` begins a strong request on
//! the latch of the handle *now* used (`fast.begin_strong`, `fast = &table.latch...`),
//! but `release_all` ends it on the latch of the hold (`t.latch.table_locks.end_strong`).
//! With two handles on one root page — a dropped table's, and the table that reused its
//! root — they differ: a drop through the dropped handle raises `strong` on the old
//! latch, and the transaction's end lowers it on the live table's latch, where it was
//! never raised. In a debug build that is the `debug_assert` in `end_strong`; in a
//! release build the count wraps to u32::MAX, and the next strong request on the table
//! wraps it back to 0 — so weak requests take the fast path while a drop of the table
//! holds its drop lock: a write is acknowledged into a table being dropped.

use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn a_write_waits_for_a_drop_after_a_dropped_handle_was_used_on_the_tables_root() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(1);
    let db = Database::open_on(Arc::new(SimStorage::new(12)), "/db", o).unwrap();
    let a = db.create_table("a").unwrap();
    let mut tx = db.begin();
    tx.drop_table(&a).unwrap();
    tx.commit().unwrap();
    let b = db.create_table("b").unwrap();
    assert_eq!(a.id(), b.id(), "precondition: b reuses a's root page");

    // One transaction reads b, then tries to drop a through its old handle (refused as
    // dropped), and rolls back.
    let mut tx = db.begin();
    tx.get(&b, "k").unwrap();
    let refused = tx.drop_table(&a);
    assert!(matches!(refused, Err(Error::NotFound(_))), "{refused:?}");
    let ended = catch_unwind(AssertUnwindSafe(|| tx.rollback()));
    if let Err(p) = ended {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        panic!(
            "the rollback ended a strong table lock on table b's latch, where none began \
             (it began on dropped table a's): {msg}"
        );
    }

    // A drop of b holds its drop lock; a write into b must wait for it.
    let mut dropper = db.begin();
    dropper.drop_table(&b).unwrap();
    let db2 = db.clone();
    let b2 = b.clone();
    let writer = std::thread::spawn(move || {
        let mut w = db2.begin();
        let r = w.put(&b2, "k", "v").map(drop);
        r.and_then(|()| w.commit())
    });
    let wrote = writer.join().unwrap();
    dropper.commit().unwrap();
    db.close().unwrap();
    assert!(
        wrote.is_err(),
        "a write into table b was acknowledged while a drop of b held its drop lock"
    );
}
