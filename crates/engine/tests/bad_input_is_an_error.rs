//! Bad input gets a clear error, never a panic: oversized keys and values, bad options,
//! bad table names, a database opened twice, a transaction used after its database
//! closed. (A committed transaction cannot be used again at all: `commit` consumes it,
//! and the separate commit steps are internal — see the compile-fail tests in `lib.rs`.)

use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;

#[test]
fn oversized_keys_and_values_are_invalid_arguments() {
    let db = Database::open_on(Arc::new(SimStorage::new(1)), "/db", Options::default()).unwrap();
    let t = db.create_table("t").unwrap();
    let l = db.limits();
    // A refused argument fails its transaction (see `Transaction`), so each case gets
    // its own.
    let mut tx = db.begin();
    let e = tx.put(&t, vec![1; l.max_key + 1], b"v").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    drop(tx);
    // Values beyond what a leaf holds are stored apart (large values), up to max_value;
    // one byte more is refused. (calloc'd: the refused value's pages are never touched.)
    let mut tx = db.begin();
    let e = tx.put(&t, b"k", vec![0; l.max_value + 1]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    drop(tx);
    let mut tx = db.begin();
    tx.put(&t, b"k", vec![1; l.max_entry]).unwrap();
    assert_eq!(tx.get(&t, b"k").unwrap(), Some(vec![1; l.max_entry]));
    tx.commit().unwrap();
    let mut tx = db.begin();
    tx.put(&t, vec![1; l.max_key], vec![2; l.max_entry - l.max_key])
        .unwrap();
    tx.commit().unwrap();
}

#[test]
fn bad_options_and_names_are_rejected() {
    let sim = Arc::new(SimStorage::new(2));
    let o = Options {
        page_size: 1000,
        ..Options::default()
    };
    assert!(matches!(
        Database::open_on(sim.clone(), "/db", o),
        Err(Error::InvalidArgument(_))
    ));
    let db = Database::open_on(sim, "/db", Options::default()).unwrap();
    assert!(matches!(
        db.create_table(""),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(db.table("missing"), Err(Error::NotFound(_))));
    db.create_table("x").unwrap();
    assert!(matches!(db.create_table("x"), Err(Error::AlreadyExists(_))));
}

#[test]
fn a_database_opened_twice_is_locked() {
    let sim = Arc::new(SimStorage::new(3));
    let _db = Database::open_on(sim.clone(), "/db", Options::default()).unwrap();
    let e = Database::open_on(sim, "/db", Options::default()).unwrap_err();
    assert!(matches!(e, Error::Locked(_)), "{e}");
}

#[test]
fn a_transaction_of_a_closed_database_takes_no_more_work() {
    let db = Database::open_on(Arc::new(SimStorage::new(4)), "/db", Options::default()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"k", b"v").unwrap();
    // The close rolls the open transaction back, and says so.
    let closed = db.clone().close();
    assert!(
        matches!(closed, Err(Error::OpenTransactions(1))),
        "{closed:?}"
    );
    let e = tx.put(&t, b"k2", b"v").unwrap_err();
    assert!(matches!(e, Error::Closed(_)), "{e}");
    assert!(
        tx.commit().is_err(),
        "a transaction committed after its database closed"
    );
}
