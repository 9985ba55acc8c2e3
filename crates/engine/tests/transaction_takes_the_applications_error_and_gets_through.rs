//! `Database::transaction` takes the application's own error type: an abort carries it
//! back unchanged and is not retried; a lost lock conflict is retried whatever error the
//! body made of it; the retry budget is the caller's (`Retry`). And a workload that can
//! make progress always does: 8 threads × 200 increments of one key, each read with a
//! plain `get` then written with `put` — two readers that both upgrade deadlock every
//! time — all commit, and the key ends at 1,600.

use sluice::{Database, Error, Options, Retry};
use sluice_storage::SimStorage;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

#[derive(Debug)]
enum AppError {
    Db(Error),
    Refused(&'static str),
}

impl From<Error> for AppError {
    fn from(e: Error) -> Self {
        AppError::Db(e)
    }
}

fn open(seed: u64) -> Database {
    Database::open_on(Arc::new(SimStorage::new(seed)), "/db", Options::small()).unwrap()
}

/// A database whose lock waits end after `lock_timeout`, with a table `t`.
fn open_with_table(seed: u64, lock_timeout: Duration) -> (Database, sluice::Table) {
    let mut o = Options::small();
    o.lock_timeout = lock_timeout;
    let db = Database::open_on(Arc::new(SimStorage::new(seed)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    (db, t)
}

#[test]
fn eight_threads_of_get_then_put_increments_all_commit() {
    let db = open(24);
    let t = db.create_table("counters").unwrap();
    const THREADS: usize = 8;
    const EACH: usize = 200;
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (db, t, barrier) = (db.clone(), t.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut failed = Vec::new();
                for _ in 0..EACH {
                    let r = db.transaction(|tx| {
                        let n = tx
                            .get(&t, b"n")?
                            .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
                        // As a real commit's disk write would: the others read meanwhile.
                        std::thread::sleep(Duration::from_micros(200));
                        tx.put(&t, b"n", (n + 1).to_le_bytes())
                    });
                    if let Err(e) = r {
                        failed.push(e);
                    }
                }
                failed
            })
        })
        .collect();
    let failed: Vec<Error> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert!(
        failed.is_empty(),
        "{} increments failed: {:?}",
        failed.len(),
        failed.first()
    );
    let n = db.begin().get(&t, b"n").unwrap().unwrap();
    assert_eq!(
        u64::from_le_bytes(n.try_into().unwrap()),
        (THREADS * EACH) as u64
    );
}

#[test]
fn an_abort_returns_the_applications_error_unchanged_and_rolls_back() {
    let db = open(1);
    let t = db.create_table("t").unwrap();
    let runs = AtomicU32::new(0);
    let r: Result<(), AppError> = db.transaction(|tx| {
        runs.fetch_add(1, Ordering::SeqCst);
        tx.put(&t, b"k", b"v")?;
        Err(AppError::Refused("no"))
    });
    assert!(matches!(r, Err(AppError::Refused("no"))), "{r:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "an abort is not retried");
    assert_eq!(db.begin().get(&t, b"k").unwrap(), None, "rolled back");
    // An engine error converts into the application's type.
    let r: Result<(), AppError> = db.transaction(|tx| {
        tx.put(&t, vec![0u8; 100_000], b"v")?;
        Ok(())
    });
    assert!(
        matches!(r, Err(AppError::Db(Error::InvalidArgument(_)))),
        "{r:?}"
    );
}

/// A deadlock victim's body maps the engine's error to its own: still retried (the
/// transaction knows it lost a conflict), and both sides commit.
#[test]
fn a_lost_conflict_is_retried_whatever_error_the_body_made_of_it() {
    let (db, t) = open_with_table(3, Duration::from_secs(20));
    let barrier = Arc::new(Barrier::new(2));
    let attempts = Arc::new(AtomicU32::new(0));
    let handles: Vec<_> = [(b"a", b"b"), (b"b", b"a")]
        .into_iter()
        .map(|(first, second)| {
            let (db, t, barrier, attempts) =
                (db.clone(), t.clone(), barrier.clone(), attempts.clone());
            std::thread::spawn(move || {
                db.transaction(|tx| {
                    attempts.fetch_add(1, Ordering::SeqCst);
                    tx.put(&t, first, b"1")?;
                    if attempts.load(Ordering::SeqCst) <= 2 {
                        barrier.wait();
                    }
                    tx.put(&t, second, b"1")
                        .map_err(|_| AppError::Refused("mapped away"))?;
                    Ok::<_, AppError>(())
                })
            })
        })
        .collect();
    for h in handles {
        let r = h.join().unwrap();
        assert!(r.is_ok(), "{r:?}");
    }
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        3,
        "the victim ran again, once"
    );
}

/// The caller's budget: `Retry::attempts(n)` makes at most n attempts at a transaction
/// that keeps losing, then returns the retryable error; `Retry::never()` one.
#[test]
fn the_retry_budget_is_the_callers() {
    let (db, t) = open_with_table(4, Duration::from_millis(20));
    let mut holder = db.begin();
    holder.put(&t, b"k", b"held").unwrap();
    for (retry, expected) in [(Retry::attempts(3), 3), (Retry::never(), 1)] {
        let mut runs = 0;
        let r = db.transaction_with(retry, |tx| {
            runs += 1;
            tx.put(&t, b"k", b"mine")
        });
        assert!(matches!(r, Err(Error::LockTimeout { .. })), "{r:?}");
        assert_eq!(runs, expected, "{retry:?}");
    }
    holder.rollback().unwrap();
}
