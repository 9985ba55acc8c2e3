//! `Database::metrics`: each metric moves when its event happens — a commit adds to the
//! latency histogram and to the log's flushes and bytes, a fetch from memory is a pool
//! hit and one from the data file a miss, a lock request that waits is a lock wait, a
//! deadlock victim a deadlock, a timed-out request a timeout, a checkpoint a checkpoint
//! duration — and the snapshot serialises (for a metrics endpoint).

use sluice::{Database, Error, Metrics, Options};
use sluice_storage::{SimStorage, Storage};
use std::sync::Arc;
use std::time::Duration;

fn open(pool_pages: usize, lock_timeout: Duration) -> Database {
    let sim: Arc<dyn Storage> = Arc::new(SimStorage::new(7));
    let mut o = Options::small();
    o.pool_pages = pool_pages;
    o.lock_timeout = lock_timeout;
    o.checkpoint_log_bytes = 0; // only the checkpoints the test takes
    Database::open_on(sim, "/db", o).unwrap()
}

#[test]
fn a_commit_moves_the_latency_histogram_and_the_log_counters() {
    let db = open(64, Duration::from_secs(2));
    let t = db.create_table("t").unwrap();
    let before = db.metrics();
    let mut tx = db.begin();
    tx.put(&t, "k", "v").unwrap();
    tx.commit().unwrap();
    let after = db.metrics();
    assert_eq!(after.commit_latency.count, before.commit_latency.count + 1);
    assert!(after.commit_latency.max_us >= 1);
    assert!(
        after.log_flushes > before.log_flushes,
        "{before:?} -> {after:?}"
    );
    assert!(after.log_syncs > before.log_syncs);
    assert!(after.log_bytes > before.log_bytes);
    let json = serde_json::to_string(&after).unwrap();
    assert!(json.contains("\"commit_latency\"") && json.contains("\"pool_hits\""));
}

#[test]
fn fetches_from_memory_are_hits_and_from_the_data_file_misses() {
    let db = open(16, Duration::from_secs(2));
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, "k", "v").unwrap();
    tx.commit().unwrap();
    let before = db.metrics();
    let mut tx = db.begin();
    tx.get(&t, "k").unwrap();
    tx.commit().unwrap();
    let hit = db.metrics();
    assert!(hit.pool_hits > before.pool_hits, "{before:?} -> {hit:?}");
    assert_eq!(
        hit.pool_misses, before.pool_misses,
        "the page was in memory"
    );
    // Far more pages than the 16 frames: reading them all back reads from the file.
    for chunk in 0..20 {
        let mut tx = db.begin();
        for i in 0..50 {
            tx.put(&t, format!("key{chunk:02}{i:03}"), [7u8; 100])
                .unwrap();
        }
        tx.commit().unwrap();
    }
    db.checkpoint().unwrap();
    let before = db.metrics();
    let mut tx = db.begin();
    assert_eq!(tx.scan_all(&t).count(), 1001);
    tx.commit().unwrap();
    let after = db.metrics();
    assert!(
        after.pool_misses > before.pool_misses,
        "{before:?} -> {after:?}"
    );
}

#[test]
fn a_checkpoint_records_its_duration() {
    let db = open(64, Duration::from_secs(2));
    let before = db.metrics().checkpoints;
    db.checkpoint().unwrap();
    db.checkpoint().unwrap();
    let after = db.metrics().checkpoints;
    assert_eq!(after.count, before.count + 2);
    assert!(after.total_us >= before.total_us + after.last_us);
    assert!(after.max_us >= after.last_us);
}

#[test]
fn lock_waits_deadlocks_and_timeouts_are_counted() {
    let db = open(64, Duration::from_secs(10));
    let t = db.create_table("t").unwrap();
    let m0: Metrics = db.metrics();
    assert_eq!((m0.lock_waits, m0.deadlocks, m0.lock_timeouts), (0, 0, 0));
    // A deadlock: each holds one key and asks for the other's.
    let mut a = db.begin();
    let mut b = db.begin();
    a.put(&t, "x", "a").unwrap();
    b.put(&t, "y", "b").unwrap();
    let t2 = t.clone();
    let waiter = std::thread::spawn(move || {
        let r = a.put(&t2, "y", "a");
        (r.is_ok(), a)
    });
    // b's request closes the cycle once a waits (or waits itself until a does).
    while db.metrics().lock_waits == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let rb = b.put(&t, "x", "b");
    drop(b);
    let (ra, a) = waiter.join().unwrap();
    drop(a);
    assert!(
        matches!(rb, Err(Error::Deadlock { .. })) || !ra,
        "one of the two is the deadlock victim"
    );
    let m1 = db.metrics();
    assert_eq!(m1.deadlocks, 1, "{m1:?}");
    assert!(m1.lock_waits >= 1);
    assert_eq!(m1.lock_timeouts, 0);

    // A timeout: a short lock_timeout, and a holder that never lets go in time.
    let db = open(64, Duration::from_millis(20));
    let t = db.create_table("t").unwrap();
    let mut holder = db.begin();
    holder.put(&t, "x", "h").unwrap();
    let mut late = db.begin();
    assert!(matches!(
        late.put(&t, "x", "l"),
        Err(Error::LockTimeout { .. })
    ));
    let m = db.metrics();
    assert_eq!(
        (m.lock_waits, m.deadlocks, m.lock_timeouts),
        (1, 0, 1),
        "{m:?}"
    );
}
