//! A partitioned database offers no `drop_table`, but a drop is reachable: each
//! partition is a `Database` (`Partitioned::partition`), whose `drop_table` runs its own
//! one-partition transaction. It drops the table from the partition's catalog, yet the
//! partitioned database's own map of names (`Shared::tables`, partitioned/mod.rs:523)
//! keeps it: `tables()` still lists it, `table()` gives NotFound, and `create_table` of
//! the name is refused with AlreadyExists for as long as the database stays open — so
//! `table_or_create` of the name fails both ways. Guarantee broken: after a drop
//! commits, "the name can be reused".

use sluice::{Error, Options, Partitioned};
use sluice_storage::SimStorage;
use std::sync::Arc;

#[test]
fn a_table_dropped_in_a_partitioned_database_frees_its_name() {
    let sim = SimStorage::new(24);
    let db = Partitioned::builder("/db")
        .log_managers(2)
        .options(Options::small())
        .storage(Arc::new(sim.pinned()))
        .assign("a", 1)
        .open()
        .unwrap();
    let a = db.create_table("a").unwrap();
    let mut tx = db.begin();
    tx.put(&a, b"k", b"v").unwrap();
    tx.commit().unwrap();

    db.partition(a.partition()).drop_table("a").unwrap();
    assert!(matches!(db.table("a"), Err(Error::NotFound(_))));
    assert!(
        db.partition(1).table_names().unwrap().is_empty(),
        "the partition's catalog no longer has it"
    );

    let listed = db.tables();
    let again = db.create_table("a");
    assert!(
        again.is_ok(),
        "the dropped name cannot be reused: create_table gives {:?} (tables() still lists {listed:?})",
        again.map(|t| t.name().to_string())
    );
}
