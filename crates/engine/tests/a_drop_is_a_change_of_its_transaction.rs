//! `tx.drop_table` and `db.drop_table`: undone by a rollback and by recovery of an
//! uncommitted dropper, kept across a crash once committed; the chunks of the table's
//! large values go with it; every handle on the dropped table — taken before or after,
//! in this transaction or another — is refused with `NotFound`; a drop waits for every
//! transaction that uses the table, and a use that waited for a drop finds it dropped.

use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use sluice_testkit::fence::FencedStorage;
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn options() -> Options {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(20);
    o
}

fn count(db: &Database, name: &str) -> usize {
    let t = db.table(name).unwrap();
    let mut tx = db.begin();
    let n = tx.scan_all(&t).count();
    tx.commit().unwrap();
    n
}

/// A table of 100 keys, three of them with values large enough to be stored apart.
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

fn is_not_found<T: std::fmt::Debug>(r: sluice::Result<T>) -> bool {
    matches!(
        r,
        Err(Error::NotFound(_)) | Err(Error::TransactionFailed { .. })
    ) && format!("{r:?}").contains("NotFound")
}

#[test]
fn a_rolled_back_drop_keeps_the_table_and_its_large_values() {
    let db = Database::open_on(Arc::new(SimStorage::new(1)), "/db", options()).unwrap();
    let a = filled(&db, "a");
    let chunks = db.large_value_chunks().unwrap();
    assert!(chunks > 0);
    let mut tx = db.begin();
    tx.drop_table(&a).unwrap();
    // In the dropping transaction the table is gone at once.
    assert!(is_not_found(tx.get(&a, "k001")));
    tx.rollback().unwrap();
    assert_eq!(db.table_names().unwrap(), ["a"]);
    assert_eq!(count(&db, "a"), 100);
    assert_eq!(db.large_value_chunks().unwrap(), chunks);
    // The handle taken before the rolled-back drop still works.
    let mut tx = db.begin();
    assert_eq!(tx.get(&a, "k040").unwrap().unwrap().len(), 4000);
    tx.commit().unwrap();
    db.verify().unwrap();
}

#[test]
fn a_committed_drop_refuses_every_handle_and_frees_the_name() {
    let db = Database::open_on(Arc::new(SimStorage::new(2)), "/db", options()).unwrap();
    let a = filled(&db, "a");
    filled(&db, "b");
    let both = db.large_value_chunks().unwrap();
    let a2 = db.table("a").unwrap(); // cached: the drop must evict it
    db.drop_table("a").unwrap();
    assert_eq!(db.table_names().unwrap(), ["b"]);
    assert!(matches!(db.table("a"), Err(Error::NotFound(_))));
    assert_eq!(
        db.large_value_chunks().unwrap(),
        both / 2,
        "b's large values remain"
    );
    for h in [&a, &a2] {
        // Each in a transaction of its own, ended before the next (a refused use fails
        // its transaction, which keeps its locks until it ends).
        assert!(
            is_not_found(db.begin().get(h, "k001")),
            "a read through an old handle"
        );
        assert!(
            is_not_found(db.begin().put(h, "x", "y")),
            "a write through an old handle"
        );
        assert!(
            is_not_found(db.begin().scan_all(h).next().unwrap()),
            "a scan"
        );
        assert!(is_not_found(db.begin().drop_table(h)), "a second drop");
    }
    assert!(matches!(db.drop_table("a"), Err(Error::NotFound(_))));
    // The name is free again, for an empty table; the old handles stay refused.
    let new = db.create_table("a").unwrap();
    assert_eq!(count(&db, "a"), 0);
    let mut tx = db.begin();
    tx.put(&new, "k", "v").unwrap();
    tx.commit().unwrap();
    let mut tx = db.begin();
    assert!(is_not_found(tx.get(&a, "k")));
    drop(tx);
    assert_eq!(count(&db, "b"), 100);
    db.verify().unwrap();
}

#[test]
fn a_drop_survives_a_crash_once_committed_and_not_before() {
    let sim = Arc::new(SimStorage::new(3));
    let db = Database::open_on(sim.clone(), "/db", options()).unwrap();
    filled(&db, "kept");
    let chunks = db.large_value_chunks().unwrap();
    filled(&db, "gone");
    let z = db.create_table("z").unwrap();
    db.drop_table("gone").unwrap();
    // An uncommitted drop of "kept", in the log when the machine fails.
    let kept = db.table("kept").unwrap();
    let mut tx = db.begin();
    tx.drop_table(&kept).unwrap();
    // A durable commit after it forces the uncommitted drop's records to the log.
    let mut later = db.begin();
    later.put(&z, "k", "v").unwrap();
    later.commit().unwrap();
    sim.crash();
    drop(tx);
    drop(db);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    assert_eq!(db.table_names().unwrap(), ["kept", "z"]);
    assert_eq!(count(&db, "kept"), 100);
    assert_eq!(db.large_value_chunks().unwrap(), chunks);
    db.verify().unwrap();
}

#[test]
fn a_drop_waits_for_the_tables_users_and_then_refuses_them() {
    let db = Database::open_on(Arc::new(SimStorage::new(4)), "/db", options()).unwrap();
    let a = filled(&db, "a");
    // A reader holds the table: the drop waits for it.
    let mut reader = db.begin();
    assert!(reader.get(&a, "k001").unwrap().is_some());
    let (done_tx, done_rx) = mpsc::channel();
    let dropper = {
        let db = db.clone();
        std::thread::spawn(move || {
            let r = db.drop_table("a");
            done_tx.send(()).unwrap();
            r
        })
    };
    assert!(
        done_rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "the drop must wait for the reader"
    );
    // The reader still sees every key while it lives.
    assert_eq!(reader.scan_all(&a).count(), 100);
    reader.commit().unwrap();
    dropper.join().unwrap().unwrap();
    let mut tx = db.begin();
    assert!(is_not_found(tx.get(&a, "k001")));
}

#[test]
fn a_use_that_waited_for_a_drop_finds_the_table_dropped() {
    let db = Database::open_on(Arc::new(SimStorage::new(5)), "/db", options()).unwrap();
    let a = filled(&db, "a");
    let mut dropper = db.begin();
    dropper.drop_table(&a).unwrap();
    let (started_tx, started_rx) = mpsc::channel();
    let user = {
        let (db, a) = (db.clone(), a.clone());
        std::thread::spawn(move || {
            let mut tx = db.begin();
            started_tx.send(()).unwrap();
            tx.put(&a, "k001", "new").map(drop)
        })
    };
    started_rx.recv().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !user.is_finished(),
        "a writer must wait for the uncommitted drop"
    );
    dropper.commit().unwrap();
    assert!(is_not_found(user.join().unwrap()));
    assert!(matches!(db.table("a"), Err(Error::NotFound(_))));
    db.verify().unwrap();
}
