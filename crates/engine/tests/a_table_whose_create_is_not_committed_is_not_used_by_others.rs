//! Outside review (fast path of table locks, where it meets `tx.create_table`): a table
//! created inside a transaction is "removed, with everything written into it" by that
//! transaction's rollback (`Transaction::create_table`). Nothing protects the new tree
//! from other transactions meanwhile: the creator takes no table lock on the new root,
//! and a rolled-back create does not mark the tree dropped, so `use_table` lets every
//! use of the handle through (on the fast path: no strong request is about).
//!
//! Two consequences, one test each:
//! * another transaction commits a write into the table while its create is still
//!   uncommitted; the create then rolls back, and the acknowledged write is in a tree
//!   no name reaches (and compaction after the next open frees it) — a dirty write on a
//!   table that never existed, acknowledged as committed;
//! * after the create rolled back, its handle still reads and writes the orphaned root
//!   (a dropped table's handle gets `NotFound`; an un-created one should too).

use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;
use std::time::Duration;

fn open(seed: u64) -> Database {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(1);
    Database::open_on(Arc::new(SimStorage::new(seed)), "/db", o).unwrap()
}

#[test]
fn a_write_into_a_table_whose_create_is_uncommitted_is_not_acknowledged() {
    let db = open(1);
    let mut creator = db.begin();
    let t = creator.create_table("n").unwrap();
    creator.put(&t, "mine", "c").unwrap();
    // Another transaction, handed the handle, writes and commits (on the fast path:
    // nothing stops it). A correct engine makes it wait for the creator (here: its lock
    // wait times out after 1 s) or refuses it.
    let mut other = db.begin();
    let wrote = other.put(&t, "theirs", "o").map(drop);
    let committed = match &wrote {
        Ok(()) => other.commit().is_ok(),
        Err(e) => {
            assert!(
                matches!(e, Error::LockTimeout { .. }),
                "the write waits for the creator: {e}"
            );
            other.rollback().unwrap();
            false
        }
    };
    creator.rollback().unwrap();
    // The table does not exist: whatever `other` committed into it is unreachable.
    assert!(matches!(db.table("n"), Err(Error::NotFound(_))));
    assert!(
        !committed,
        "a write into table \"n\" was acknowledged as committed while the table's create \
         was uncommitted; the create rolled back and the committed write is gone with it"
    );
    db.close().unwrap();
}

#[test]
fn the_handle_of_a_table_whose_create_rolled_back_is_refused() {
    let db = open(2);
    let mut creator = db.begin();
    let t = creator.create_table("n").unwrap();
    creator.put(&t, "k", "v").unwrap();
    creator.rollback().unwrap();
    assert!(matches!(db.table("n"), Err(Error::NotFound(_))));
    let mut tx = db.begin();
    let r = tx.put(&t, "k2", "v2").map(drop);
    let n = tx.len(&t);
    tx.commit().ok();
    assert!(
        matches!(r, Err(Error::NotFound(_))),
        "a put through the handle of a table whose create rolled back: {r:?} (len {n:?}); \
         expected NotFound as for a dropped table"
    );
    db.close().unwrap();
}
