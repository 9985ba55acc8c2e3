//! Rollback undoes inserts, updates and deletes, including ones that split pages, and
//! the undone state survives a crash (the compensation records are redone, not undone).

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use sluice_testkit::fence::FencedStorage;
use std::collections::BTreeMap;

#[test]
fn rollback_of_many_changes_restores_the_committed_state() {
    let sim = SimStorage::new(9);
    let db = Database::open_on(
        FencedStorage::for_incarnation(&sim),
        "/db",
        Options::small(),
    )
    .unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    let mut want = BTreeMap::new();
    for i in 0..100u32 {
        let (k, v) = (format!("k{i:03}").into_bytes(), vec![b'a'; 50]);
        tx.put(&t, &k, &v).unwrap();
        want.insert(k, v);
    }
    tx.commit().unwrap();

    let mut tx = db.begin();
    for i in 0..100u32 {
        let k = format!("k{i:03}").into_bytes();
        match i % 3 {
            0 => drop(tx.delete(&t, &k).unwrap()),
            1 => drop(tx.put(&t, &k, [b'z'; 150]).unwrap()),
            _ => drop(
                tx.put(&t, format!("new{i:03}").as_bytes(), [1; 120])
                    .unwrap(),
            ),
        }
    }
    tx.rollback().unwrap();
    let scan = |db: &Database| -> BTreeMap<Vec<u8>, Vec<u8>> {
        let t = db.table("t").unwrap();
        let mut tx = db.begin();
        let m = tx.scan_all(&t).map(|e| e.unwrap()).collect();
        tx.commit().unwrap();
        m
    };
    assert_eq!(scan(&db), want);
    sim.crash();
    drop(t);
    drop(db);
    let db = Database::open_on(
        FencedStorage::for_incarnation(&sim),
        "/db",
        Options::small(),
    )
    .unwrap();
    // The rollback's end record was not forced, so recovery may find the transaction
    // without an outcome and finish its rollback from the compensation records.
    assert!(db.recovery_report().losers <= 1);
    assert_eq!(scan(&db), want);
    db.verify().unwrap();
}

#[test]
fn uncommitted_changes_are_undone_by_recovery() {
    let sim = SimStorage::new(10);
    let db = Database::open_on(
        FencedStorage::for_incarnation(&sim),
        "/db",
        Options::small(),
    )
    .unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"keep", b"1").unwrap();
    tx.commit().unwrap();
    let mut loser = db.begin();
    for i in 0..60u32 {
        loser
            .put(&t, format!("gone{i:02}").as_bytes(), [7; 100])
            .unwrap();
    }
    loser.delete(&t, b"keep").unwrap();
    db.log().sync().unwrap(); // the loser's records are durable; its commit never is
    sim.crash();
    std::mem::forget(loser); // the process died: no rollback runs
    drop(t);
    drop(db);
    let db = Database::open_on(
        FencedStorage::for_incarnation(&sim),
        "/db",
        Options::small(),
    )
    .unwrap();
    let r = db.recovery_report();
    assert_eq!(r.losers, 1);
    assert_eq!(r.undone, 61);
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    let all: Vec<_> = tx.scan_all(&t).map(|e| e.unwrap()).collect();
    assert_eq!(all, vec![(b"keep".to_vec(), b"1".to_vec())]);
    tx.commit().unwrap();
}
