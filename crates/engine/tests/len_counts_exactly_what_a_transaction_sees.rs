//! `tx.len(&table)`: the exact number of entries the transaction sees — its own
//! uncommitted changes included, nobody else's — after overwrites, deletes, large
//! values, rollbacks, a crash with work in flight and a reopen; and serializable: it
//! waits for a writer of the table, and a writer waits for it.

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use sluice_testkit::fence::FencedStorage;
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn options() -> Options {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(20);
    o
}

fn scanned(db: &Database, t: &sluice::Table) -> u64 {
    let mut tx = db.begin();
    let n = tx.scan_all(t).count() as u64;
    tx.commit().unwrap();
    n
}

fn len(db: &Database, t: &sluice::Table) -> u64 {
    let mut tx = db.begin();
    let n = tx.len(t).unwrap();
    tx.commit().unwrap();
    n
}

#[test]
fn len_follows_inserts_overwrites_deletes_and_rollbacks() {
    let db = Database::open_on(Arc::new(SimStorage::new(1)), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    assert_eq!(len(&db, &t), 0);
    let mut tx = db.begin();
    for i in 0..500u32 {
        let v = if i % 100 == 0 {
            vec![7u8; 5000]
        } else {
            vec![1u8; 30]
        };
        tx.put(&t, format!("k{i:04}"), v).unwrap();
    }
    // Its own uncommitted inserts count; overwrites do not add.
    assert_eq!(tx.len(&t).unwrap(), 500);
    tx.put(&t, "k0001", "again").unwrap();
    tx.put(&t, "k0100", vec![9u8; 6000]).unwrap();
    assert_eq!(tx.len(&t).unwrap(), 500);
    tx.commit().unwrap();
    let mut tx = db.begin();
    for i in (0..500u32).step_by(5) {
        tx.delete(&t, format!("k{i:04}")).unwrap();
    }
    tx.delete(&t, "absent").unwrap();
    assert_eq!(tx.len(&t).unwrap(), 400);
    tx.rollback().unwrap();
    assert_eq!(len(&db, &t), 500);
    let mut tx = db.begin();
    for i in (0..500u32).step_by(5) {
        tx.delete(&t, format!("k{i:04}")).unwrap();
    }
    tx.commit().unwrap();
    assert_eq!(len(&db, &t), 400);
    assert_eq!(scanned(&db, &t), 400);
}

#[test]
fn len_after_a_crash_counts_what_recovery_kept() {
    let sim = SimStorage::new(2);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    let u = db.create_table("u").unwrap();
    let mut tx = db.begin();
    for i in 0..300u32 {
        tx.put(&t, format!("k{i:04}"), vec![1u8; 40]).unwrap();
    }
    tx.commit().unwrap();
    db.checkpoint().unwrap();
    // After the checkpoint: committed deletes and inserts, and an uncommitted writer
    // whose records reach the log (a later durable commit forces them there).
    let mut tx = db.begin();
    for i in 0..50u32 {
        tx.delete(&t, format!("k{i:04}")).unwrap();
    }
    for i in 0..20u32 {
        tx.put(&t, format!("n{i:04}"), "x").unwrap();
    }
    tx.commit().unwrap();
    let mut lost = db.begin();
    for i in 0..70u32 {
        lost.put(&t, format!("z{i:04}"), "lost").unwrap();
    }
    lost.delete(&t, "k0100").unwrap();
    let mut later = db.begin();
    later.put(&u, "k", "v").unwrap();
    later.commit().unwrap();
    sim.crash();
    drop(lost);
    drop(db);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(len(&db, &t), 270);
    assert_eq!(scanned(&db, &t), 270);
    assert_eq!(len(&db, &db.table("u").unwrap()), 1);
    // And again after a clean close and reopen.
    db.close().unwrap();
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    assert_eq!(len(&db, &db.table("t").unwrap()), 270);
}

#[test]
fn len_waits_for_a_writer_of_the_table_and_holds_writers_off() {
    let db = Database::open_on(Arc::new(SimStorage::new(3)), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut writer = db.begin();
    writer.put(&t, "a", "1").unwrap();
    let (tx_done, rx_done) = mpsc::channel();
    let counter = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            let mut tx = db.begin();
            let n = tx.len(&t).unwrap();
            tx_done.send(n).unwrap();
            // Holds the count lock a while: a writer that comes now must wait, so a
            // second count in the same transaction sees the same number.
            std::thread::sleep(Duration::from_millis(300));
            assert_eq!(tx.len(&t).unwrap(), n, "a writer got past an open count");
            tx.commit().unwrap();
            n
        })
    };
    assert!(
        rx_done.recv_timeout(Duration::from_millis(300)).is_err(),
        "len must wait for the uncommitted writer"
    );
    writer.put(&t, "b", "2").unwrap();
    writer.commit().unwrap();
    // It counts the writer's committed entries, not a state before them.
    assert_eq!(rx_done.recv().unwrap(), 2);
    // A writer after the count waits until the counting transaction ends; then its
    // insert counts.
    let mut w2 = db.begin();
    w2.put(&t, "c", "3").unwrap();
    w2.commit().unwrap();
    assert_eq!(counter.join().unwrap(), 2);
    assert_eq!(len(&db, &t), 3);
}
