//! The weak table locks (a get, scan, put or delete's first use of a table) are taken on
//! a fast path that keeps them out of the lock table while no `len` or drop is about
//! (`lock/fast.rs`). A strong request must still meet every one of them, wherever it
//! was recorded: a drop waits for users on every stripe and keeps new ones waiting; a
//! deadlock that runs through a table lock taken on the fast path is found at once (the
//! wait-for graph sees the holder), not left to the lock timeout; and the fast path
//! comes back once the strong request is over, with nothing left held.

use sluice::{Database, Error, Options, Table};
use sluice_storage::SimStorage;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

fn open(seed: u64) -> Database {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(20);
    Database::open_on(Arc::new(SimStorage::new(seed)), "/db", o).unwrap()
}

fn filled(db: &Database, name: &str) -> Table {
    let t = db.create_table(name).unwrap();
    let mut tx = db.begin();
    for i in 0..40u32 {
        tx.put(&t, format!("k{i:02}"), "v").unwrap();
    }
    tx.commit().unwrap();
    t
}

#[test]
fn a_drop_waits_for_users_on_every_stripe_and_holds_new_ones_off() {
    let db = open(1);
    let t = filled(&db, "t");
    // Transactions with consecutive ids cover every stripe; half read, half write.
    let users: Vec<_> = (0..40u32)
        .map(|i| {
            let mut tx = db.begin();
            if i % 2 == 0 {
                assert!(tx.get(&t, format!("k{i:02}")).unwrap().is_some());
            } else {
                tx.put(&t, format!("k{i:02}"), "w").unwrap();
            }
            tx
        })
        .collect();
    let (done, dropped) = mpsc::channel();
    let dropper = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            let mut tx = db.begin();
            tx.drop_table(&t).unwrap();
            done.send(Instant::now()).unwrap();
            // Holds the drop lock until told.
            std::thread::sleep(Duration::from_millis(300));
            tx.commit().unwrap();
        })
    };
    let mut last = Instant::now();
    for (i, tx) in users.into_iter().enumerate() {
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            dropped.try_recv().is_err(),
            "the drop got its lock while user {i} of the table was still open"
        );
        last = Instant::now();
        tx.commit().unwrap();
    }
    let got = dropped
        .recv_timeout(Duration::from_secs(10))
        .expect("the drop gets its lock once every user ended");
    assert!(got >= last);
    // A new use now waits for the drop, and then finds the table gone.
    let mut late = db.begin();
    let asked = Instant::now();
    let r = late.get(&t, "k00");
    assert!(
        matches!(r, Err(Error::NotFound(_))),
        "a use after the drop: {r:?}"
    );
    assert!(
        asked.elapsed() >= Duration::from_millis(100),
        "a use while the drop was held did not wait for it"
    );
    dropper.join().unwrap();
    drop(late);
    db.close().unwrap();
}

#[test]
fn a_deadlock_through_a_table_lock_on_the_fast_path_is_found_at_once() {
    let db = open(2);
    let t = filled(&db, "t");
    let u = filled(&db, "u");
    // tx1 writes t (its table lock on the fast path); tx2 writes a key of u.
    let mut tx1 = db.begin();
    tx1.put(&t, "k00", "1").unwrap();
    let mut tx2 = db.begin();
    tx2.put(&u, "k05", "2").unwrap();
    let started = Instant::now();
    // tx2 counts t: it waits for tx1's write lock on t.
    let counter = std::thread::spawn(move || {
        let r = tx2.len(&t);
        let e = r.as_ref().err().cloned();
        match r {
            Ok(_) => tx2.commit().map(|()| None),
            Err(_) => {
                tx2.rollback().unwrap();
                Ok(e)
            }
        }
    });
    std::thread::sleep(Duration::from_millis(200));
    // tx1 now wants tx2's key: a cycle through the table lock.
    let r1 = tx1.put(&u, "k05", "1");
    let e1 = r1.as_ref().err().cloned();
    if r1.is_ok() {
        tx1.commit().unwrap();
    } else {
        tx1.rollback().unwrap();
    }
    let e2 = counter.join().unwrap().unwrap();
    let elapsed = started.elapsed();
    let victims: Vec<&Error> = [&e1, &e2].into_iter().flatten().collect();
    assert_eq!(victims.len(), 1, "exactly one victim: {e1:?} {e2:?}");
    assert!(
        matches!(victims[0], Error::Deadlock { .. }),
        "the cycle is reported as a deadlock: {}",
        victims[0]
    );
    assert!(
        elapsed < Duration::from_secs(10),
        "found at once, not after the 20 s lock timeout: {elapsed:?}"
    );
    db.close().unwrap();
}

#[test]
fn after_a_count_writers_take_the_table_again_and_nothing_stays_held() {
    let db = open(3);
    let t = filled(&db, "t");
    for round in 0..3u32 {
        // Writers on the fast path, a count that moves them, more writers behind it.
        let mut early = db.begin();
        early.put(&t, format!("e{round}"), "x").unwrap();
        let counter = {
            let (db, t) = (db.clone(), t.clone());
            std::thread::spawn(move || {
                let mut tx = db.begin();
                let n = tx.len(&t).unwrap();
                tx.commit().unwrap();
                n
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        let late = {
            let (db, t) = (db.clone(), t.clone());
            std::thread::spawn(move || {
                let mut tx = db.begin();
                tx.put(&t, format!("l{round}"), "y").unwrap();
                tx.commit().unwrap();
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        early.commit().unwrap();
        let n = counter.join().unwrap();
        late.join().unwrap();
        // The count waited for the early writer and saw it; the late one came after
        // the count began, and is counted or not by where the count was (it takes the
        // stripes one by one), but it committed either way.
        let before = 40 + 2 * u64::from(round);
        assert!((before + 1..=before + 2).contains(&n), "round {round}: {n}");
    }
    // Everything released: a drop gets its lock at once.
    let mut tx = db.begin();
    let asked = Instant::now();
    tx.drop_table(&t).unwrap();
    assert!(asked.elapsed() < Duration::from_secs(5));
    tx.commit().unwrap();
    db.close().unwrap();
}

#[test]
fn a_transaction_dropped_holding_only_a_fast_path_table_lock_lets_it_go() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(2);
    let db = Database::open_on(Arc::new(SimStorage::new(4)), "/db", o).unwrap();
    let t = filled(&db, "t");
    // Its only lock is the table lock: the get is refused (an oversized key) after it.
    let mut tx = db.begin();
    let r = tx.get(&t, vec![b'k'; 100_000]);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    drop(tx);
    let mut counter = db.begin();
    assert_eq!(
        counter.len(&t).unwrap(),
        40,
        "the count is not kept waiting"
    );
    counter.commit().unwrap();
    db.close().unwrap();
}
