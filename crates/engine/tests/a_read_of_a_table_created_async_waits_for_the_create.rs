//! Outside review (early lock release meets `tx.create_table` and the table lock's fast
//! path): a durable transaction handed the handle of a table that an async transaction
//! created reads it — `len` gives 0 — before the create's commit is durable. Its table
//! lock was taken on the fast path (nothing of the creator's there: the creator never
//! locked the new table) and its count lock conflicts with nothing the creator
//! released early, so the count inherits no dependency; a crash now takes the create,
//! and the count was of a table that never existed.

use crate::gated;

use gated::{open_gated, Opens};
use sluice::{CommitProtocol, Durability};
use std::sync::mpsc;
use std::time::Duration;

/// The reader: what it hands out of the table (a count, or a point read on the fast
/// path of table locks).
type Read = fn(&mut sluice::Transaction, &sluice::Table) -> String;

#[test]
fn a_count_of_a_table_created_async_is_handed_out_only_once_the_create_is_durable() {
    scenario("len", |tx, t| format!("{:?}", tx.len(t).unwrap()));
}

/// The same with a point read, whose weak table lock is taken on the fast path, away
/// from the lock table where the create's drop lock left its commit.
#[test]
fn a_get_in_a_table_created_async_is_handed_out_only_once_the_create_is_durable() {
    scenario("get", |tx, t| format!("{:?}", tx.get(t, "k").unwrap()));
}

fn scenario(what: &str, read: Read) {
    let (db, gate) = open_gated(CommitProtocol::Elr, 7);
    let _ = db.create_table("warm").unwrap();
    gate.close();
    let _opens = Opens(gate.clone());
    let (done, got) = mpsc::channel();
    {
        let db = db.clone();
        std::thread::spawn(move || {
            let mut tx = db.begin();
            tx.set_durability(Durability::Async);
            let t = tx.create_table("made").unwrap();
            let mut end = None;
            tx.commit_observed(|e| end = e).unwrap();
            done.send((t, end.expect("logged"))).unwrap();
        });
    }
    let (t, end) = got
        .recv_timeout(Duration::from_secs(5))
        .expect("the async create does not wait for the held flush");
    assert!(db.log().durable_lsn() < end, "the gate holds the flush");
    let (db2, t2) = (db.clone(), t.clone());
    let reader = std::thread::spawn(move || {
        let mut tx = db2.begin();
        let n = read(&mut tx, &t2);
        (n, db2.log().durable_lsn())
    });
    std::thread::sleep(Duration::from_millis(50));
    gate.open();
    let (n, seen) = reader.join().unwrap();
    db.close().unwrap();
    assert!(
        seen >= end,
        "{what} of table \"made\" handed out ({n}) at durable {seen}, before the async \
         create it depends on ({end}) is durable"
    );
}
