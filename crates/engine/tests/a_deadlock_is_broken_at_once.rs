//! Transactions that wait for each other in a cycle — two or three of them — are found
//! in the wait-for graph: the request that closes the cycle fails at once with
//! `Error::Deadlock` (retryable), far inside a lock timeout that is set to 20 s here, and
//! every other transaction of the cycle then commits. A plain long wait, with no cycle,
//! still ends with `Error::LockTimeout`. Both errors name the table.

use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

fn cycle_of(n: usize) {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(20);
    let db = Database::open_on(Arc::new(SimStorage::new(n as u64)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("k{i}").into_bytes()).collect();
    let barrier = Arc::new(Barrier::new(n));
    let started = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (db, t, barrier) = (db.clone(), t.clone(), barrier.clone());
            let (mine, next) = (keys[i].clone(), keys[(i + 1) % n].clone());
            std::thread::spawn(move || {
                let mut tx = db.begin();
                tx.put(&t, &mine, b"held").unwrap();
                barrier.wait();
                // Staggered, so that the cycle closes at a known moment: each waits for
                // the next one's key; the last request closes the cycle.
                std::thread::sleep(Duration::from_millis(50 * i as u64));
                match tx.put(&t, &next, b"wanted") {
                    Ok(_) => tx.commit().map(|()| None),
                    Err(e) => {
                        tx.rollback().unwrap();
                        Ok(Some(e))
                    }
                }
            })
        })
        .collect();
    let results: Vec<Option<Error>> = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    let elapsed = started.elapsed();
    let victims: Vec<&Error> = results.iter().flatten().collect();
    assert_eq!(victims.len(), 1, "exactly one victim: {results:?}");
    let e = victims[0];
    assert!(
        matches!(e, Error::Deadlock { .. }) && e.is_retryable(),
        "the victim is told it was a deadlock: {e}"
    );
    assert!(e.to_string().contains("deadlock victim"), "{e}");
    assert!(
        matches!(e, Error::Deadlock { table, .. } if table == "t"),
        "the error names the table: {e}"
    );
    assert!(
        results[n - 1].is_some(),
        "the request that closed the cycle is the victim: {results:?}"
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "broken in {elapsed:?}, far inside the 20 s lock timeout"
    );
    let mut tx = db.begin();
    let committed = tx
        .scan_all(&t)
        .filter(|e| e.as_ref().unwrap().1 == b"wanted")
        .count();
    tx.commit().unwrap();
    assert_eq!(committed, n - 1, "every other transaction committed");
}

#[test]
fn a_two_transaction_cycle_is_broken_at_once() {
    cycle_of(2);
}

#[test]
fn a_three_transaction_cycle_is_broken_at_once() {
    cycle_of(3);
}

#[test]
fn a_wait_without_a_cycle_ends_in_a_lock_timeout_that_names_the_table() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_millis(100);
    let db = Database::open_on(Arc::new(SimStorage::new(9)), "/db", o).unwrap();
    let t = db.create_table("accounts").unwrap();
    let mut holder = db.begin();
    holder.put(&t, b"k", b"held").unwrap();
    let mut waiter = db.begin();
    let e = waiter.get(&t, b"k").unwrap_err();
    assert!(
        matches!(&e, Error::LockTimeout { table, .. } if table == "accounts"),
        "{e}"
    );
    assert!(e.to_string().contains("table \"accounts\""), "{e}");
    assert!(e.is_retryable());
    waiter.rollback().unwrap();
    holder.commit().unwrap();
}
