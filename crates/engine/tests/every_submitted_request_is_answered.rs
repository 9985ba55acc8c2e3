//! Every request submitted to an agent pool gets an answer: it runs, or it is refused
//! with an error saying the pool is shut down. Requests queued when `shutdown` is called
//! run; a `Submitter` used after its pool is gone is refused at once; submissions racing
//! with shutdown are answered one way or the other, never dropped.

use sluice::experiment::{Agents, Outcome};
use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

const NEVER: Duration = Duration::from_secs(30);

fn open(seed: u64) -> Database {
    Database::open_on(Arc::new(SimStorage::new(seed)), "/db", Options::small()).unwrap()
}

fn is_shut_down(e: &Error) -> bool {
    e.to_string().contains("shut down")
}

#[test]
fn a_submitter_used_after_its_pool_is_dropped_is_refused() {
    let db = open(1);
    let agents = Agents::start(&db, 2);
    let sub = agents.submitter();
    drop(agents);
    let (tx, rx) = mpsc::channel();
    sub.submit(|_| Ok(Outcome::Commit(())), move |r| tx.send(r).unwrap());
    let r = rx
        .recv_timeout(NEVER)
        .expect("a request to a dropped pool was never answered");
    let e = r.expect_err("a dropped pool cannot run a request");
    assert!(is_shut_down(&e), "{e}");
}

#[test]
fn requests_queued_at_shutdown_all_run() {
    let db = open(2);
    let t = db.create_table("t").unwrap();
    let agents = Agents::start(&db, 2);
    let (tx, rx) = mpsc::channel();
    for i in 0..200u32 {
        let (t, tx) = (t.clone(), tx.clone());
        agents.submit(
            move |txn| {
                txn.put(&t, i.to_be_bytes(), b"v")?;
                Ok(Outcome::Commit(i))
            },
            move |r| tx.send(r).unwrap(),
        );
    }
    agents.shutdown();
    for _ in 0..200 {
        let r = rx
            .recv_timeout(NEVER)
            .expect("a queued request was dropped");
        assert!(r.unwrap().committed);
    }
}

#[test]
fn submissions_racing_with_shutdown_are_all_answered() {
    let db = open(3);
    let t = db.create_table("t").unwrap();
    for round in 0..20u32 {
        let agents = Agents::start(&db, 2);
        let sub = agents.submitter();
        let answered = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel();
        let (t2, a2) = (t.clone(), answered.clone());
        let submitter = std::thread::spawn(move || {
            for i in 0..100u32 {
                let (t, a, tx) = (t2.clone(), a2.clone(), tx.clone());
                sub.submit(
                    move |txn| {
                        txn.put(&t, (round * 1000 + i).to_be_bytes(), b"v")?;
                        Ok(Outcome::Commit(()))
                    },
                    move |r| {
                        a.fetch_add(1, Ordering::SeqCst);
                        if let Err(e) = &r {
                            assert!(is_shut_down(e), "{e}");
                        }
                        tx.send(()).unwrap();
                    },
                );
            }
        });
        agents.shutdown();
        submitter.join().unwrap();
        for _ in 0..100 {
            rx.recv_timeout(NEVER)
                .expect("a request submitted around shutdown was never answered");
        }
        assert_eq!(answered.load(Ordering::SeqCst), 100);
    }
}
