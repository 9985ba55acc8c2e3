//! `Transaction::drop_table` says "The table's pages are freed when it commits" (and
//! `finish_drops`, txn/tables.rs:144, "frees their pages"), but the commit only marks
//! the tree dropped (`Store::tree_dropped`): no page goes anywhere, and `allocate_root`
//! and every split take new pages from the end of the file (catalog.rs:78, "pages are
//! never freed"). So dropping a table and filling another of the same size doubles the
//! data file instead of reusing the dropped table's pages.

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use std::path::Path;
use std::sync::Arc;

fn fill(db: &Database, name: &str) {
    let mut tx = db.begin();
    let t = tx.create_table(name).unwrap();
    for i in 0..2000u32 {
        tx.put(&t, format!("key{i:06}"), [7u8; 100]).unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn a_dropped_tables_pages_are_freed() {
    let sim = SimStorage::new(24);
    let open = || Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    let data = || sim.durable_len(Path::new("/db/data")).unwrap();

    let db = open();
    fill(&db, "a");
    db.close().unwrap();
    let one_table = data();

    let db = open();
    db.drop_table("a").unwrap();
    fill(&db, "b");
    db.close().unwrap();
    let after = data();
    assert!(
        after < one_table + one_table / 4,
        "a table the size of the dropped one grew the data file from {one_table} to {after} bytes: the dropped table's pages were not freed"
    );
}
