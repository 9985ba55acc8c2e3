//! A `Table` handle belongs to the database instance that gave it out. Used with a
//! transaction of another database — even one whose table has the same root page, or a
//! later opening of the same directory — every operation is refused with a one-line
//! `InvalidArgument`, and nothing is read from or written to the wrong table.

use sluice::experiment::{Agents, Outcome};
use sluice::{Database, Error, Options, Table};
use sluice_storage::SimStorage;
use std::sync::Arc;

fn db_with_table(seed: u64, value: &[u8]) -> (Database, Table) {
    let db = Database::open_on(Arc::new(SimStorage::new(seed)), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"k", value).unwrap();
    tx.commit().unwrap();
    (db, t)
}

fn refused<T: std::fmt::Debug>(r: Result<T, Error>, what: &str) {
    match r {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains("another database"), "{what}: {m}");
            assert!(!m.contains('\n'), "{what}: one line: {m}");
        }
        other => panic!("{what} with a foreign table was not refused: {other:?}"),
    }
}

#[test]
fn every_operation_refuses_a_table_of_another_database() {
    let (a, ta) = db_with_table(1, b"in a");
    let (b, tb) = db_with_table(2, b"in b");
    assert_eq!(
        ta.id(),
        tb.id(),
        "the scenario needs tables at the same page"
    );

    for op in 0..5 {
        let mut tx = b.begin();
        match op {
            0 => refused(tx.put(&ta, b"k", b"written through a's handle"), "put"),
            1 => refused(tx.delete(&ta, b"k"), "delete"),
            2 => refused(tx.get(&ta, b"k"), "get"),
            3 => refused(tx.get_for_update(&ta, b"k"), "get_for_update"),
            _ => refused(tx.scan_all(&ta).next().expect("an item"), "scan"),
        }
        drop(tx);
    }
    let mut tx = b.begin();
    assert_eq!(tx.get(&tb, b"k").unwrap().as_deref(), Some(&b"in b"[..]));
    tx.commit().unwrap();

    // Through an agent of b as well.
    let agents = Agents::start(&b, 1);
    let ta2 = ta.clone();
    let r = agents
        .execute(move |tx| {
            tx.put(&ta2, b"k", b"via an agent")?;
            Ok(Outcome::Commit(()))
        })
        .wait();
    refused(r, "an agent's put");
    agents.shutdown();
    let mut tx = b.begin();
    assert_eq!(tx.get(&tb, b"k").unwrap().as_deref(), Some(&b"in b"[..]));
    tx.commit().unwrap();
    drop(a);
}

#[test]
fn a_table_from_an_earlier_opening_is_refused() {
    let disk = Arc::new(SimStorage::new(3));
    let db = Database::open_on(disk.clone(), "/db", Options::small()).unwrap();
    let old = db.create_table("t").unwrap();
    db.close().unwrap();
    let db = Database::open_on(disk, "/db", Options::small()).unwrap();
    let mut tx = db.begin();
    refused(
        tx.put(&old, b"k", b"v"),
        "put with a handle of a closed opening",
    );
    drop(tx);
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"k", b"v").unwrap();
    tx.commit().unwrap();
}
