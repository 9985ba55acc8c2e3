//! `Database::transaction` retries a deadlock victim: two transfers that lock two keys in
//! opposite orders are forced into a deadlock on their first attempt; both helpers
//! return `Ok`, each transfer is applied exactly once, and the victim's body ran again.
//! Errors that are not retryable come back at once, after a rollback.

use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

fn balance(v: Option<Vec<u8>>) -> i64 {
    i64::from_le_bytes(v.expect("account exists").try_into().unwrap())
}

#[test]
fn both_sides_of_a_forced_deadlock_commit_exactly_once() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_millis(100);
    let db = Database::open_on(Arc::new(SimStorage::new(7)), "/db", o).unwrap();
    let t = db.create_table("acct").unwrap();
    db.transaction(|tx| {
        tx.put(&t, b"a", 100i64.to_le_bytes())?;
        tx.put(&t, b"b", 100i64.to_le_bytes())?;
        Ok::<_, sluice::Error>(())
    })
    .unwrap();

    let barrier = Arc::new(Barrier::new(2));
    let attempts = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
    let transfer = |side: usize, from: &'static [u8], to: &'static [u8], amount: i64| {
        let (db, t, barrier, attempts) = (db.clone(), t.clone(), barrier.clone(), attempts.clone());
        std::thread::spawn(move || {
            db.transaction(|tx| {
                let attempt = attempts[side].fetch_add(1, Ordering::SeqCst) + 1;
                let f = balance(tx.get_for_update(&t, from)?);
                if attempt == 1 {
                    // Both hold their first key before either asks for its second.
                    barrier.wait();
                }
                let g = balance(tx.get_for_update(&t, to)?);
                tx.put(&t, from, (f - amount).to_le_bytes())?;
                tx.put(&t, to, (g + amount).to_le_bytes())?;
                Ok::<_, sluice::Error>(attempt)
            })
        })
    };
    let x = transfer(0, b"a", b"b", 30);
    let y = transfer(1, b"b", b"a", 5);
    let (rx, ry) = (x.join().unwrap(), y.join().unwrap());
    let (ax, ay) = (rx.expect("transfer a->b"), ry.expect("transfer b->a"));
    assert!(
        ax > 1 || ay > 1,
        "one side was a deadlock victim and ran again (attempts {ax}, {ay})"
    );

    let mut tx = db.begin();
    let (a, b) = (
        balance(tx.get(&t, b"a").unwrap()),
        balance(tx.get(&t, b"b").unwrap()),
    );
    tx.commit().unwrap();
    assert_eq!(
        (a, b),
        (100 - 30 + 5, 100 + 30 - 5),
        "each transfer applied once"
    );
}

#[test]
fn an_error_that_is_not_retryable_is_returned_at_once_and_rolled_back() {
    let db = Database::open_on(Arc::new(SimStorage::new(8)), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut runs = 0;
    let r: Result<(), Error> = db.transaction(|tx| {
        runs += 1;
        tx.put(&t, b"k", b"v")?;
        Err(Error::InvalidArgument("the caller changed its mind".into()))
    });
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    assert!(!r.as_ref().unwrap_err().is_retryable());
    assert_eq!(runs, 1, "not retried");
    let mut tx = db.begin();
    assert_eq!(
        tx.get(&t, b"k").unwrap(),
        None,
        "the attempt was rolled back"
    );
    tx.commit().unwrap();
}

#[test]
fn retryable_is_lock_conflict_only() {
    let timeout = Error::LockTimeout {
        table: "accounts".into(),
        waited_ms: 100,
    };
    assert!(timeout.is_retryable());
    let failed = Error::TransactionFailed {
        txn: sluice::TxnId(1),
        cause: Box::new(timeout),
    };
    assert!(
        failed.is_retryable(),
        "a transaction failed by a lock conflict"
    );
    for e in [
        Error::Poisoned("log".into()),
        Error::Corruption("page 9".into()),
        Error::InvalidArgument("key too long".into()),
        Error::Closed("database"),
        Error::BufferPoolFull(16),
    ] {
        assert!(!e.is_retryable(), "{e}");
    }
}
