//! `Database::close` closes the database for every clone of the handle: their later
//! calls return `Error::Closed`, and the directory is let go at once, so a reopen in the
//! same process succeeds while a clone still lives. Transactions open across the close
//! are rolled back (their later calls return `Closed`, nothing of them is committed),
//! and the close says so with `Error::OpenTransactions`. Read-only handles and
//! partitioned databases alike.

use sluice::{Database, Error, Options, Partitioned};
use sluice_storage::SimStorage;
use std::sync::Arc;

fn closed<T: std::fmt::Debug>(r: sluice::Result<T>) -> bool {
    matches!(r, Err(Error::Closed(_)))
        || matches!(r, Err(Error::TransactionFailed { ref cause, .. }) if matches!(**cause, Error::Closed(_)))
}

fn open_on(sim: &SimStorage) -> sluice::Result<Database> {
    Database::open_on(Arc::new(sim.pinned()), "/db", Options::small())
}

/// A new database on `sim` whose table `t` holds `k` = `committed`.
fn with_k_committed(sim: &SimStorage) -> (Database, sluice::Table) {
    let db = open_on(sim).unwrap();
    let t = db.create_table("t").unwrap();
    db.transaction(|tx| tx.put(&t, b"k", b"committed")).unwrap();
    (db, t)
}

#[test]
fn a_clone_is_closed_too_and_the_directory_reopens_while_it_lives() {
    let sim = SimStorage::new(1);
    let open = || open_on(&sim);
    let (db, t) = with_k_committed(&sim);
    let clone = db.clone();
    db.close().unwrap();

    // Every way in through the clone says the database is closed.
    let mut tx = clone.begin();
    assert!(closed(tx.get(&t, b"k")), "get");
    let mut tx2 = clone.begin();
    assert!(closed(tx2.put(&t, b"k", b"after close")), "put");
    assert!(closed(clone.begin().commit()), "commit");
    assert!(closed(clone.table_or_create("u")), "create a table");
    assert!(closed(clone.checkpoint()), "checkpoint");
    assert!(closed(clone.health()), "health");
    drop((tx, tx2));

    // The directory is free: reopened while the clone (and `t`) still live.
    let again = open().expect("reopen right after close, a clone alive");
    let t2 = again.table("t").unwrap();
    assert_eq!(
        again.begin().get(&t2, b"k").unwrap().as_deref(),
        Some(&b"committed"[..])
    );
    // The clone's drop, after the reopen, writes nothing into the reopened directory.
    drop((clone, t));
    again.transaction(|tx| tx.put(&t2, b"k2", b"v")).unwrap();
    again.close().unwrap();
    let last = open().unwrap();
    let t3 = last.table("t").unwrap();
    assert_eq!(
        last.begin().get(&t3, b"k2").unwrap().as_deref(),
        Some(&b"v"[..])
    );
    last.close().unwrap();
}

#[test]
fn a_transaction_open_across_close_is_rolled_back_and_the_close_says_so() {
    let sim = SimStorage::new(2);
    let open = || open_on(&sim);
    let (db, t) = with_k_committed(&sim);
    let mut tx = db.begin();
    tx.put(&t, b"k", b"uncommitted").unwrap();
    tx.put(&t, b"new", b"uncommitted").unwrap();
    let r = db.clone().close();
    assert!(matches!(r, Err(Error::OpenTransactions(1))), "{r:?}");
    assert!(r.unwrap_err().to_string().contains("rolled back"));
    assert!(
        closed(tx.put(&t, b"k", b"later")),
        "its later calls say closed"
    );
    assert!(closed(tx.commit()), "and it cannot commit");

    let db = open().unwrap();
    let t = db.table("t").unwrap();
    let mut r = db.begin();
    assert_eq!(r.get(&t, b"k").unwrap().as_deref(), Some(&b"committed"[..]));
    assert_eq!(
        r.get(&t, b"new").unwrap(),
        None,
        "nothing of it was committed"
    );
    r.commit().unwrap();
    drop(t);
    db.close().unwrap();
}

#[test]
fn a_read_only_handle_lets_go_at_close_too() {
    let sim = SimStorage::new(3);
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", Options::small()).unwrap();
    db.create_table("t").unwrap();
    db.close().unwrap();
    let ro = || {
        Database::builder("/db")
            .options(Options::small())
            .storage(Arc::new(sim.pinned()))
            .read_only(true)
            .open()
    };
    let reader = ro().unwrap();
    let clone = reader.clone();
    reader.close().unwrap();
    assert!(closed(clone.health()));
    // A read-write open needs the lock the read-only one held shared.
    let rw = Database::open_on(Arc::new(sim.pinned()), "/db", Options::small())
        .expect("read-write open after a read-only close, its clone alive");
    drop(clone);
    rw.close().unwrap();
}

#[test]
fn a_partitioned_database_closes_for_every_clone() {
    let sim = SimStorage::new(4);
    let open = || {
        Partitioned::builder("/db")
            .log_managers(2)
            .options(Options::small())
            .storage(Arc::new(sim.pinned()))
            .assign("a", 0)
            .assign("b", 1)
            .open()
    };
    let db = open().unwrap();
    let (a, b) = (
        db.table_or_create("a").unwrap(),
        db.table_or_create("b").unwrap(),
    );
    let mut tx = db.begin();
    tx.put(&a, b"k", b"1").unwrap();
    tx.put(&b, b"k", b"1").unwrap();
    tx.commit().unwrap();
    let clone = db.clone();
    db.close().unwrap();
    assert!(closed(clone.begin().put(&a, b"k", b"2")));
    let again = open().expect("reopen while a clone lives");
    let a2 = again.table_or_create("a").unwrap();
    assert_eq!(
        again.begin().get(&a2, b"k").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    drop((clone, a, b));
    again.close().unwrap();
}
