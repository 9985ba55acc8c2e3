//! Two transactions that wait for each other: one gets a clear lock-timeout error (the
//! deadlock victim), rolls back, and the other then commits.

use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::sync::{Arc, Barrier};
use std::time::Duration;

#[test]
fn deadlock_victim_gets_lock_timeout_and_the_other_commits() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_millis(150);
    let db = Database::open(Arc::new(SimStorage::new(1)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let run = |first: &'static [u8], second: &'static [u8], delay_ms: u64| {
        let (db, t, barrier) = (db.clone(), t.clone(), barrier.clone());
        std::thread::spawn(move || {
            let mut tx = db.begin();
            tx.put(&t, first, b"x").unwrap();
            barrier.wait();
            // Staggered requests: the first waiter times out first and releases its lock
            // before the second one's timeout.
            std::thread::sleep(Duration::from_millis(delay_ms));
            match tx.put(&t, second, b"y") {
                Ok(_) => tx.commit().map(|_| true),
                Err(e @ Error::LockTimeout { .. }) => {
                    assert!(e.to_string().contains("deadlock victim"));
                    tx.rollback().map(|_| false)
                }
                Err(e) => Err(e),
            }
        })
    };
    let a = run(b"a", b"b", 0);
    let b = run(b"b", b"a", 60);
    let (ra, rb) = (a.join().unwrap().unwrap(), b.join().unwrap().unwrap());
    assert!(
        !ra && rb,
        "the first waiter must be the victim, the second must commit"
    );
    let mut tx = db.begin();
    let n = tx.scan_all(&t).count();
    tx.commit().unwrap();
    assert_eq!(n, 2, "the winner wrote both keys");
}
