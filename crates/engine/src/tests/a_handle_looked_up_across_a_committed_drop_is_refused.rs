//! (A unit test: it replays `Database::table`'s two steps around a drop, which needs
//! the crate-private catalog cache and `Table::new`.)
//!
//! `Database::table` on a cache hit reads the root from `Inner::catalog` with no lock
//! (catalog.rs:122) and only then builds the handle, whose `Table::new` fetches the
//! tree's latch from `Store::trees` (table.rs:55, store.rs:100). A drop that commits in
//! between has already marked that latch dropped and *forgotten* it
//! (`Store::tree_dropped`, store.rs:107), so `tree_latch` creates a fresh latch whose
//! `dropped` flag is false. The handle the lookup returns — taken before the drop's
//! commit, since it read the cache before the drop evicted it — is then never refused:
//! it reads (and writes) the dropped tree. The drop's guarantee: "once it commits,
//! every use of a handle on the table — taken before or after — returns NotFound".
//! Two threads hit this whenever one is preempted between the two lines of the
//! lookup; here the interleaving is replayed step by step, in one thread.

use crate::table::Table;
use crate::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;

#[test]
fn a_handle_looked_up_across_a_committed_drop_is_refused() {
    let db = Database::open_on(Arc::new(SimStorage::new(24)), "/db", Options::small()).unwrap();
    let t = db.create_table("a").unwrap();
    let mut tx = db.begin();
    tx.put(&t, "k", "v").unwrap();
    tx.commit().unwrap();
    drop(db.table("a").unwrap()); // the name is now cached

    // Thread L, `db.table("a")`, first step (catalog.rs:122): a cache hit.
    let root = db.inner.catalog.lock().get("a").copied().unwrap();
    // Thread D: the drop commits meanwhile.
    db.drop_table("a").unwrap();
    // Thread L, second step (catalog.rs:140): the handle it returns.
    let looked_up = Table::new(&db.inner, "a", root);

    // The handle taken before the drop (`t`) is refused, as documented...
    let mut tx = db.begin();
    assert!(matches!(tx.get(&t, "k"), Err(Error::NotFound(_))));
    drop(tx);
    // ...but the one the racing lookup returned reads the dropped table.
    let mut tx = db.begin();
    let r = tx.get(&looked_up, "k");
    assert!(
        matches!(r, Err(Error::NotFound(_))),
        "a handle from a lookup that raced the drop reads the dropped table: {r:?}"
    );
}
