//! Review of issue 24 item 3 (`close`): "close() closes every clone (their calls return
//! Closed) ... and nothing a clone or leftover transaction does reaches a reopened
//! database's files". A `Scan` that was alive across the close keeps handing out entries:
//! the ones it had buffered, and — for large values, stored apart — values it reads only
//! now, through the closed database's pool, from the data file the *reopened* database
//! has since rewritten (`Scan::step` calls `read_blob` with no check of the database's
//! state; `txn/scan.rs`, `txn/large_values.rs`).

use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;

fn value(tag: u8, i: u32) -> Vec<u8> {
    let mut v = vec![tag; 3000];
    v[..4].copy_from_slice(&i.to_be_bytes());
    v
}

#[test]
fn a_scan_alive_across_close_returns_closed_not_the_reopened_databases_values() {
    let sim = SimStorage::new(24);
    let o = Options::small();
    let db = Database::open_on(Arc::new(sim.clone()), "/db", o.clone()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..40u32 {
        tx.put(&t, i.to_be_bytes(), value(b'A', i)).unwrap();
    }
    tx.commit().unwrap();

    let mut reader = db.begin();
    let mut scan = reader.scan_all(&t);
    let (k0, v0) = scan.next().unwrap().unwrap();
    assert_eq!((k0, v0), (0u32.to_be_bytes().to_vec(), value(b'A', 0)));

    // Another clone closes the database; the directory opens again at once.
    db.clone().close().unwrap_err(); // the reader is open: OpenTransactions(1)
    let db2 = Database::open_on(Arc::new(sim.clone()), "/db", o).unwrap();
    let t2 = db2.table("t").unwrap();
    let mut tx = db2.begin();
    for i in 0..40u32 {
        tx.put(&t2, i.to_be_bytes(), value(b'B', i)).unwrap();
    }
    tx.commit().unwrap();
    db2.checkpoint().unwrap();

    // The old scan goes on.
    let mut after = Vec::new();
    for e in scan.by_ref().take(39) {
        after.push(e.map(|(k, v)| (u32::from_be_bytes(k[..4].try_into().unwrap()), v[4])));
    }
    let handed: Vec<_> = after.iter().filter(|e| e.is_ok()).collect();
    let from_reopened = after.iter().filter(|e| matches!(e, Ok((_, b'B')))).count();
    assert!(
        matches!(after.first(), Some(Err(Error::Closed(_)))),
        "the scan of a closed database handed out {} more entries ({from_reopened} of them the reopened database's values) instead of Closed; first: {:?}",
        handed.len(),
        after.first()
    );
    drop(scan);
    drop(reader);
    db2.close().unwrap();
}

/// The same with small values: the entries the scan had buffered before the close are
/// handed out after it, one by one, where every call of a closed database's transaction
/// is to return `Closed` (a `get` of the same transaction does).
#[test]
fn a_scan_alive_across_close_hands_out_its_buffer_instead_of_closed() {
    let sim = SimStorage::new(25);
    let db = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..100u32 {
        tx.put(&t, i.to_be_bytes(), b"v").unwrap();
    }
    tx.commit().unwrap();
    let mut reader = db.begin();
    let mut scan = reader.scan_all(&t);
    scan.next().unwrap().unwrap();
    db.clone().close().unwrap_err(); // OpenTransactions(1)
    let next = scan.next();
    drop(scan);
    // The scan's `Closed` failed the transaction (an operation's error does), so the
    // get names that failure; its cause is the close.
    let get = reader.get(&t, 5u32.to_be_bytes());
    let closed = match &get {
        Err(Error::Closed(_)) => true,
        Err(Error::TransactionFailed { cause, .. }) => matches!(**cause, Error::Closed(_)),
        _ => false,
    };
    assert!(closed, "get: {get:?}");
    assert!(
        matches!(next, Some(Err(Error::Closed(_)))),
        "the scan's next call after the close returned {next:?}, not Closed"
    );
}
