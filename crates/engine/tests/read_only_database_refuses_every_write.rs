//! A read-only database reads (get, get_for_update, scan, scan_prefix, a retain that
//! keeps everything) and commits transactions that wrote nothing, but refuses every write
//! — put, delete, a retain that deletes, creating a table (also through table_or_create),
//! a checkpoint — with `Error::ReadOnly`: one line, not retryable, and, as every error of
//! an operation, failing its transaction.

use crate::read_only;

use read_only::*;
use sluice::{Database, Error};
use sluice_storage::{SimStorage, Storage};
use std::sync::Arc;

fn is_read_only(e: &Error) -> bool {
    match e {
        Error::ReadOnly => true,
        Error::TransactionFailed { cause, .. } => is_read_only(cause),
        _ => false,
    }
}

#[test]
fn read_only_database_refuses_every_write() {
    let sim = SimStorage::new(2);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let expected = closed_cleanly(storage.clone());
    let db = Database::builder(DIR)
        .options(read_only_options())
        .storage(storage)
        .open()
        .unwrap();
    let t = db.table("t").unwrap();

    // Reads, and commits of transactions that only read.
    let mut tx = db.begin();
    assert_eq!(tx.get(&t, key(7)).unwrap(), Some(b"v7".to_vec()));
    assert_eq!(tx.get(&t, b"absent").unwrap(), None);
    assert_eq!(tx.get_for_update(&t, key(8)).unwrap(), Some(b"v8".to_vec()));
    assert_eq!(tx.scan(&t, key(10)..key(20)).count(), 10);
    assert_eq!(tx.scan_prefix(&t, b"key0001").count(), 10);
    assert_eq!(tx.retain(&t, .., |_, _| true).unwrap(), 0);
    tx.commit().unwrap();
    let n = db
        .transaction(|tx| Ok::<_, sluice::Error>(tx.scan_all(&t).count()))
        .unwrap();
    assert_eq!(n, 200);

    // Every write is refused, and fails its transaction.
    type Write = fn(&mut sluice::Transaction, &sluice::Table) -> sluice::Result<()>;
    let writes: [(&str, Write); 4] = [
        ("put", |tx, t| tx.put(t, b"new", b"x").map(drop)),
        ("put over", |tx, t| tx.put(t, key(1), b"x").map(drop)),
        ("delete", |tx, t| tx.delete(t, key(1)).map(drop)),
        ("retain", |tx, t| {
            tx.retain(t, .., |k, _| k != key(3)).map(drop)
        }),
    ];
    for (what, write) in writes {
        let mut tx = db.begin();
        let err = write(&mut tx, &t).expect_err(what);
        assert!(matches!(err, Error::ReadOnly), "{what}: {err:?}");
        assert_eq!(err.to_string(), "the database is open read-only");
        assert!(!err.is_retryable(), "{what}");
        assert!(!err.is_io(), "{what}");
        assert!(matches!(tx.failure(), Some(Error::ReadOnly)), "{what}");
        let later = tx.get(&t, key(1)).expect_err("the transaction has failed");
        assert!(is_read_only(&later), "{what}: {later:?}");
        let commit = tx.commit().expect_err("a failed transaction rolls back");
        assert!(is_read_only(&commit), "{what}: {commit:?}");
    }
    let err = db.transaction(|tx| tx.put(&t, b"k", b"v")).unwrap_err();
    assert!(matches!(err, Error::ReadOnly), "not retried: {err:?}");

    for (what, err) in [
        ("create_table", db.create_table("new").unwrap_err()),
        ("table_or_create", db.table_or_create("new").unwrap_err()),
        ("create existing", db.create_table("t").unwrap_err()),
        ("checkpoint", db.checkpoint().unwrap_err()),
    ] {
        assert!(matches!(err, Error::ReadOnly), "{what}: {err:?}");
    }
    assert!(matches!(db.table("new"), Err(Error::NotFound(_))));
    assert!(
        db.table_or_create("e").is_ok(),
        "an existing table just opens"
    );

    // Nothing changed, and the database still works.
    assert_eq!(contents(&db), expected);
    db.verify().unwrap();
    db.close().unwrap();
}
