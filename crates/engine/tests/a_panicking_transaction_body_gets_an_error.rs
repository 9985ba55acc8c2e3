//! A panic in an agent's transaction body (or in its completion callback) must not kill
//! the agent or leave the request unanswered: the agent catches it, rolls the transaction
//! back, delivers an error and goes on. Before, two panics stalled a 2-agent pool.

use sluice::experiment::{Agents, Outcome};
use sluice::{Database, Error, Options, Table};
use sluice_storage::SimStorage;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// A generous bound so a pool that never answers fails the test instead of hanging it.
const NEVER: Duration = Duration::from_secs(30);

fn open() -> (Database, Table) {
    let db = Database::open_on(Arc::new(SimStorage::new(1)), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    (db, t)
}

#[test]
fn panicking_bodies_are_rolled_back_and_answered_and_the_agents_survive() {
    let (db, t) = open();
    let agents = Agents::start(&db, 2);
    let (tx, rx) = mpsc::channel();
    for i in 0..2u8 {
        let (t, tx) = (t.clone(), tx.clone());
        agents.submit(
            move |txn| -> Result<Outcome<()>, Error> {
                txn.put(&t, [i], b"written before the panic")?;
                panic!("body {i} panics");
            },
            move |r| tx.send(r).unwrap(),
        );
    }
    for _ in 0..2 {
        let r = rx
            .recv_timeout(NEVER)
            .expect("a panicking body was never answered");
        let e = r.expect_err("a panicking body must deliver an error");
        assert!(e.to_string().contains("panicked"), "{e}");
    }
    // Both agents are still there.
    let t2 = t.clone();
    let (tx, rx) = mpsc::channel();
    agents.submit(
        move |txn| {
            txn.put(&t2, b"after", b"ok")?;
            Ok(Outcome::Commit(()))
        },
        move |r| tx.send(r).unwrap(),
    );
    let f = rx
        .recv_timeout(NEVER)
        .expect("the pool stalled after two panics")
        .unwrap();
    assert!(f.committed);
    agents.shutdown();
    let mut txn = db.begin();
    assert_eq!(
        txn.get(&t, [0]).unwrap(),
        None,
        "a panicked body's write landed"
    );
    assert_eq!(
        txn.get(&t, [1]).unwrap(),
        None,
        "a panicked body's write landed"
    );
    assert!(txn.get(&t, b"after").unwrap().is_some());
    txn.commit().unwrap();
}

#[test]
fn a_panicking_completion_does_not_kill_the_agent() {
    let (db, t) = open();
    let agents = Agents::start(&db, 1);
    let t1 = t.clone();
    agents.submit(
        move |txn| {
            txn.put(&t1, b"a", b"1")?;
            Ok(Outcome::Commit(()))
        },
        |_| panic!("the completion panics"),
    );
    let (tx, rx) = mpsc::channel();
    agents.submit(
        move |txn| Ok(Outcome::Commit(txn.get(&t, b"a")?)),
        move |r| tx.send(r).unwrap(),
    );
    let f = rx
        .recv_timeout(NEVER)
        .expect("the only agent died with a panicking completion")
        .unwrap();
    assert_eq!(f.value.as_deref(), Some(&b"1"[..]));
    agents.shutdown();
}
