//! Atomicity after an error (PostgreSQL's rule): once an operation of a transaction
//! returns an error, the transaction has failed. Every later operation returns an error
//! that says so and why, `commit` returns an error and rolls back, `rollback` works, and
//! nothing the transaction did lands — on every path (get, get_for_update, put, delete,
//! scan, agent bodies), and for argument errors too (an oversized key).

use sluice::experiment::{Agents, Outcome};
use sluice::{Database, Error, Options, Table, Transaction};
use sluice_storage::SimStorage;
use std::sync::Arc;
use std::time::Duration;

fn open(seed: u64) -> (Database, Table) {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_millis(100);
    let db = Database::open_on(Arc::new(SimStorage::new(seed)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"x", b"committed").unwrap();
    tx.commit().unwrap();
    (db, t)
}

/// A transaction that holds an exclusive lock on `x` until dropped.
fn hold_x(db: &Database, t: &Table) -> Transaction {
    let mut holder = db.begin();
    holder.put(t, b"x", b"held").unwrap();
    holder
}

fn value(db: &Database, t: &Table, k: &[u8]) -> Option<Vec<u8>> {
    let mut tx = db.begin();
    let v = tx.get(t, k).unwrap();
    tx.commit().unwrap();
    v
}

fn assert_failed_earlier(r: Result<impl std::fmt::Debug, Error>, what: &str) {
    let e = r.expect_err(&format!("{what} was accepted after an operation failed"));
    assert!(
        e.to_string().contains("failed earlier") && e.to_string().contains("lock timeout"),
        "{what}: the error must say the transaction failed earlier and why: {e}"
    );
}

#[test]
fn a_put_after_a_lock_timeout_is_refused_and_commit_rolls_back() {
    let (db, t) = open(1);
    let holder = hold_x(&db, &t);
    let mut tx = db.begin();
    tx.put(&t, b"a", b"1").unwrap();
    assert!(matches!(
        tx.put(&t, b"x", b"2"),
        Err(Error::LockTimeout { .. })
    ));
    assert_failed_earlier(tx.put(&t, b"b", b"3"), "a put");
    assert_failed_earlier(tx.commit(), "commit");
    drop(holder);
    assert_eq!(value(&db, &t, b"a"), None, "half the transaction landed");
    assert_eq!(value(&db, &t, b"b"), None, "half the transaction landed");
    assert_eq!(value(&db, &t, b"x").as_deref(), Some(&b"committed"[..]));
}

#[test]
fn every_operation_of_a_failed_transaction_is_refused_and_rollback_works() {
    let (db, t) = open(2);
    let holder = hold_x(&db, &t);
    let mut tx = db.begin();
    tx.put(&t, b"a", b"1").unwrap();
    assert!(matches!(tx.get(&t, b"x"), Err(Error::LockTimeout { .. })));
    assert_failed_earlier(tx.get(&t, b"a"), "a get");
    assert_failed_earlier(tx.get_for_update(&t, b"a"), "a get_for_update");
    assert_failed_earlier(tx.delete(&t, b"a"), "a delete");
    let first = tx
        .scan_all(&t)
        .next()
        .expect("a failed scan yields its error");
    assert_failed_earlier(first, "a scan");
    tx.rollback().unwrap();
    drop(holder);
    assert_eq!(value(&db, &t, b"a"), None);
}

#[test]
fn a_scan_that_fails_fails_the_transaction() {
    let (db, t) = open(3);
    let holder = hold_x(&db, &t);
    let mut tx = db.begin();
    tx.put(&t, b"a", b"1").unwrap();
    let items: Vec<_> = tx.scan_all(&t).collect();
    assert!(
        items
            .iter()
            .any(|i| matches!(i, Err(Error::LockTimeout { .. }))),
        "the scan must meet the held lock: {items:?}"
    );
    assert_failed_earlier(tx.put(&t, b"b", b"2"), "a put after a failed scan");
    assert_failed_earlier(tx.commit(), "commit after a failed scan");
    drop(holder);
    assert_eq!(value(&db, &t, b"a"), None);
}

#[test]
fn an_oversized_key_fails_the_transaction_too() {
    let (db, t) = open(4);
    let mut tx = db.begin();
    tx.put(&t, b"a", b"1").unwrap();
    let big = vec![7u8; db.limits().max_key + 1];
    assert!(matches!(
        tx.put(&t, &big, b"v"),
        Err(Error::InvalidArgument(_))
    ));
    let e = tx.commit().expect_err("commit after a refused put");
    assert!(e.to_string().contains("failed earlier"), "{e}");
    assert_eq!(value(&db, &t, b"a"), None, "half the transaction landed");
}

#[test]
fn an_agent_body_that_swallows_an_error_cannot_commit() {
    let (db, t) = open(5);
    let holder = hold_x(&db, &t);
    let agents = Agents::start(&db, 2);
    let t2 = t.clone();
    let c = agents.execute(move |tx| {
        tx.put(&t2, b"a", b"1")?;
        // The body ignores the timeout and carries on as if nothing happened.
        let _ = tx.put(&t2, b"x", b"2");
        let _ = tx.put(&t2, b"b", b"3");
        Ok(Outcome::Commit(()))
    });
    let r = c.wait();
    assert!(
        matches!(r, Err(Error::LockTimeout { .. })),
        "the agent must deliver the first error: {r:?}"
    );
    assert_eq!(agents.stats().committed, 0);
    agents.shutdown();
    drop(holder);
    assert_eq!(value(&db, &t, b"a"), None, "half the transaction landed");
    assert_eq!(value(&db, &t, b"b"), None, "half the transaction landed");
}
