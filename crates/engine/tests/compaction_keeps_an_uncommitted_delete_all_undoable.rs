//! Reviewer (issue 24, "Space"): `compact` cuts back a tree "whose leaves are all empty"
//! (space/compact.rs, step 1) by looking at the pages only, so a tree emptied by a
//! transaction that has not committed is cut back too. The claim is that nothing is
//! lost: "a rollback re-inserts by key". These tests check that the keys come back,
//! whole, with an exact count and a database that verifies — by rollback and by restart
//! undo after a crash.
//!
//! The crash case fails: reopening says "page P3 is torn or unwritten and the log holds
//! no full image to restore it". Analysis scans from the oldest active transaction's
//! first record (recovery/analysis.rs:83), before the checkpoint compaction ran, and
//! adds every page those records name to the dirty-page table (analysis.rs:97). Redo
//! then replays the delete-all's records on pages compaction cut off the file's end
//! (space/compact.rs cut_file_end): they read as unwritten and their only full images
//! are before the scan (recovery/redo.rs:33, :111). Without compaction the pages exist
//! and their page LSN skips the records; the rollback case (no crash) passes.

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;

const N: u32 = 2000;

fn key(i: u32) -> String {
    format!("key{i:06}")
}

fn fill(db: &Database) {
    let mut tx = db.begin();
    let t = tx.create_table("a").unwrap();
    for i in 0..N {
        tx.put(&t, key(i), [7u8; 100]).unwrap();
    }
    tx.commit().unwrap();
}

fn check_all_there(db: &Database) {
    let t = db.table("a").unwrap();
    let mut tx = db.begin();
    assert_eq!(
        tx.len(&t).unwrap(),
        N as u64,
        "len after the delete-all was undone"
    );
    for i in 0..N {
        assert_eq!(
            tx.get(&t, key(i)).unwrap().as_deref(),
            Some(&[7u8; 100][..]),
            "committed key {} lost after compaction cut back a tree emptied by an uncommitted transaction",
            key(i)
        );
    }
    tx.commit().unwrap();
    db.verify().unwrap();
}

/// Loads the table, deletes every key in a transaction left open, and compacts: the
/// tree is cut back under the uncommitted delete-all.
fn compact_under_a_delete_all(sim: &SimStorage) -> (Database, sluice::Transaction) {
    let db = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    fill(&db);
    let t = db.table("a").unwrap();
    let mut tx = db.begin();
    for i in 0..N {
        tx.delete(&t, key(i)).unwrap();
    }
    let report = db.compact().unwrap();
    eprintln!("{report:?}");
    (db, tx)
}

#[test]
fn compaction_during_an_uncommitted_delete_all_loses_nothing_on_rollback() {
    let sim = SimStorage::new(24);
    let (db, tx) = compact_under_a_delete_all(&sim);
    tx.rollback().unwrap();
    check_all_there(&db);
    // And it is still there after a clean reopen.
    db.close().unwrap();
    let db = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    check_all_there(&db);
}

#[test]
fn compaction_during_an_uncommitted_delete_all_loses_nothing_in_a_crash() {
    let sim = SimStorage::new(24);
    let (db, tx) = compact_under_a_delete_all(&sim);
    // Compaction ran a checkpoint (step 3) and synced: the cut-back tree is durable,
    // the delete-all is not committed.
    sim.crash();
    drop(tx);
    let _ = db.close_as_crashed();
    let db = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    check_all_there(&db);
}
