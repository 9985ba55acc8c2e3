//! `tx.rename_table` and `db.rename_table`: undone by a rollback and by recovery of an
//! uncommitted renamer, kept across a crash once committed; a lookup of the old name
//! after the commit finds nothing (even if it was looked up, and cached, before); a
//! handle keeps reaching the table's data under its new name.

use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use sluice_testkit::fence::FencedStorage;
use std::sync::Arc;
use std::time::Duration;

fn options() -> Options {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(10);
    o
}

fn count(db: &Database, name: &str) -> usize {
    let t = db.table(name).unwrap();
    let mut tx = db.begin();
    let n = tx.scan_all(&t).count();
    tx.commit().unwrap();
    n
}

fn filled(db: &Database, name: &str) -> sluice::Table {
    let mut tx = db.begin();
    let t = tx.create_table(name).unwrap();
    for i in 0..100u32 {
        let len = if i % 40 == 0 { 4000 } else { 20 };
        tx.put(&t, format!("k{i:03}"), vec![1u8; len]).unwrap();
    }
    tx.commit().unwrap();
    t
}

#[test]
fn a_rolled_back_rename_keeps_the_old_name() {
    let db = Database::open_on(Arc::new(SimStorage::new(1)), "/db", options()).unwrap();
    let a = filled(&db, "a");
    db.table("a").unwrap(); // cached
    let mut tx = db.begin();
    tx.rename_table(&a, "b").unwrap();
    tx.rollback().unwrap();
    assert_eq!(db.table_names().unwrap(), ["a"]);
    assert_eq!(count(&db, "a"), 100);
    assert!(matches!(db.table("b"), Err(Error::NotFound(_))));
    db.verify().unwrap();
}

#[test]
fn a_committed_rename_moves_the_name() {
    let db = Database::open_on(Arc::new(SimStorage::new(2)), "/db", options()).unwrap();
    let a = filled(&db, "a");
    filled(&db, "c");
    db.table("a").unwrap(); // cached: the rename must evict it
    let mut tx = db.begin();
    tx.rename_table(&a, "b").unwrap();
    // Inside the transaction the new name is there.
    let mut n = 0;
    for e in tx.scan_all(&a) {
        e.unwrap();
        n += 1;
    }
    assert_eq!(n, 100);
    tx.commit().unwrap();
    assert!(matches!(db.table("a"), Err(Error::NotFound(_))));
    assert_eq!(db.table_names().unwrap(), ["b", "c"]);
    assert_eq!(count(&db, "b"), 100);
    // The old handle still reaches the table; renaming through it again is refused.
    let mut tx = db.begin();
    assert_eq!(tx.first(&a).unwrap().unwrap().0, b"k000");
    assert!(matches!(tx.rename_table(&a, "d"), Err(Error::NotFound(_))));
    drop(tx);
    // Onto an existing name: refused; a missing source: refused.
    assert!(matches!(
        db.rename_table("b", "c"),
        Err(Error::AlreadyExists(_))
    ));
    assert!(matches!(db.rename_table("a", "d"), Err(Error::NotFound(_))));
    assert!(matches!(
        db.rename_table("b", ""),
        Err(Error::InvalidArgument(_))
    ));
    db.rename_table("b", "a").unwrap();
    assert_eq!(db.table_names().unwrap(), ["a", "c"]);
    assert_eq!(count(&db, "a"), 100);
    db.verify().unwrap();
}

#[test]
fn recovery_keeps_a_committed_rename_and_undoes_an_uncommitted_one() {
    let sim = SimStorage::new(3);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    filled(&db, "a");
    let b = filled(&db, "b");
    db.rename_table("a", "renamed").unwrap();
    let mut lost = db.begin();
    lost.rename_table(&b, "lost").unwrap();
    // A durable create after it forces the uncommitted rename's records to the log
    // (named above the gaps the rename holds in the catalog).
    db.create_table("z, later").unwrap();
    sim.crash();
    drop(lost);
    drop(db);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    assert_eq!(db.table_names().unwrap(), ["b", "renamed", "z, later"]);
    assert_eq!(count(&db, "renamed"), 100);
    assert_eq!(count(&db, "b"), 100);
    db.verify().unwrap();
}

#[test]
fn a_lookup_of_the_old_name_waits_for_the_renamer() {
    let db = Database::open_on(Arc::new(SimStorage::new(4)), "/db", options()).unwrap();
    let a = filled(&db, "a");
    db.table("a").unwrap();
    let mut tx = db.begin();
    tx.rename_table(&a, "b").unwrap();
    let lookup = {
        let db = db.clone();
        std::thread::spawn(move || db.table("a").map(|t| t.id()))
    };
    std::thread::sleep(Duration::from_millis(100));
    tx.commit().unwrap();
    assert!(
        matches!(lookup.join().unwrap(), Err(Error::NotFound(_))),
        "a lookup saw the old name of a renamed table"
    );
}
