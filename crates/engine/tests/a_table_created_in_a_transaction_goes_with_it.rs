//! `tx.create_table` makes the table a change of the transaction: its rollback, or
//! recovery after a crash before it committed, leaves no table behind (nor what was
//! written into it); its commit keeps it across a crash; another transaction looking the
//! name up waits for the creator to end.

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

fn fill(tx: &mut sluice::Transaction, t: &sluice::Table) {
    for i in 0..300u32 {
        // Some values stored apart, in the hidden table of large values.
        let len = if i % 50 == 0 { 4000 } else { 30 };
        tx.put(t, format!("k{i:04}"), vec![i as u8; len]).unwrap();
    }
}

/// Table `name` holds what `fill` wrote, and the database verifies clean.
fn assert_entries_and_verify(db: &Database, name: &str) {
    let t = db.table(name).unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.scan_all(&t).count(), 300);
    tx.commit().unwrap();
    db.verify().unwrap();
}

#[test]
fn a_rolled_back_fill_leaves_no_table_behind() {
    let db = Database::open_on(Arc::new(SimStorage::new(1)), "/db", options()).unwrap();
    let mut tx = db.begin();
    let t = tx.create_table("filled").unwrap();
    fill(&mut tx, &t);
    assert_eq!(tx.first(&t).unwrap().unwrap().0, b"k0000");
    tx.rollback().unwrap();
    assert!(matches!(db.table("filled"), Err(Error::NotFound(_))));
    assert!(db.table_names().unwrap().is_empty());
    db.verify().unwrap();

    // Created again and committed, it is there, and a second create is refused.
    let mut tx = db.begin();
    let t = tx.create_table("filled").unwrap();
    fill(&mut tx, &t);
    tx.commit().unwrap();
    assert_eq!(db.table_names().unwrap(), ["filled"]);
    let mut tx = db.begin();
    assert!(matches!(
        tx.create_table("filled"),
        Err(Error::AlreadyExists(_))
    ));
    drop(tx);
    assert_entries_and_verify(&db, "filled");
}

#[test]
fn recovery_removes_an_uncommitted_table_and_keeps_a_committed_one() {
    let sim = SimStorage::new(2);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    let mut kept = db.begin();
    let k = kept.create_table("kept").unwrap();
    fill(&mut kept, &k);
    kept.commit().unwrap();
    let mut lost = db.begin();
    let t = lost.create_table("lost").unwrap();
    fill(&mut lost, &t);
    // A durable create after it forces the uncommitted one's records to the log.
    db.create_table("later").unwrap();
    sim.crash();
    drop(lost);
    drop(db);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    assert_eq!(db.table_names().unwrap(), ["kept", "later"]);
    assert!(matches!(db.table("lost"), Err(Error::NotFound(_))));
    assert_entries_and_verify(&db, "kept");
}

#[test]
fn a_lookup_waits_for_the_creating_transaction() {
    let db = Database::open_on(Arc::new(SimStorage::new(3)), "/db", options()).unwrap();
    for (name, commit) in [("rolled back", false), ("committed", true)] {
        let mut tx = db.begin();
        let t = tx.create_table(name).unwrap();
        tx.put(&t, b"a", b"1").unwrap();
        let lookup = {
            let db = db.clone();
            std::thread::spawn(move || db.table(name).map(|t| t.id()))
        };
        let creator = {
            let db = db.clone();
            std::thread::spawn(move || db.table_or_create(name).map(|t| t.id()))
        };
        std::thread::sleep(Duration::from_millis(100));
        let id = t.id();
        if commit {
            tx.commit().unwrap();
            assert_eq!(lookup.join().unwrap().unwrap(), id);
            assert_eq!(creator.join().unwrap().unwrap(), id);
        } else {
            tx.rollback().unwrap();
            // The lookup found nothing, or the other creator's table; never this one.
            let looked = lookup.join().unwrap();
            let created = creator.join().unwrap().unwrap();
            assert_ne!(created, id, "the rolled-back table survived");
            match looked {
                Err(Error::NotFound(_)) => {}
                r => assert_eq!(r.unwrap(), created, "a lookup saw the rolled-back table"),
            }
        }
    }
}
