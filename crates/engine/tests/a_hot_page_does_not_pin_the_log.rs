//! A page changed again during every write of it (here: one key updated without pause
//! while checkpoints run) must not keep the recovery LSN of its first change forever:
//! that LSN bounds what each checkpoint may truncate, and the log grew without end
//! (found with `bench partition`: 48 clients inserting, the meta page changed by every
//! split, the log never truncated).

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn checkpoints_truncate_the_log_below_a_page_that_is_always_changing() {
    let mut o = Options::small();
    o.log.segment_bytes = 64 << 10;
    o.checkpoint_log_bytes = 1 << 30;
    o.checkpoint_interval = std::time::Duration::from_secs(3600);
    let db = Database::open_on(Arc::new(SimStorage::new(1)), "/db", o).unwrap();
    let t = db.create_table("hot").unwrap();
    let stop = AtomicBool::new(false);
    let mut truncated = 0;
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut tx = db.begin();
                tx.put(&t, b"counter", n.to_le_bytes()).unwrap();
                tx.commit().unwrap();
                n += 1;
            }
        });
        let mut last = db.log().start_lsn();
        for _ in 0..40 {
            // Some log between checkpoints, so that each one has segments to free.
            while db.log().durable_lsn().0 < last.0 + (192 << 10) {
                std::thread::yield_now();
            }
            db.checkpoint().unwrap();
            let start = db.log().start_lsn();
            if start > last {
                truncated += 1;
            }
            last = start.max(last);
        }
        stop.store(true, Ordering::Relaxed);
    });
    println!("{truncated} of 40 checkpoints truncated the log");
    // Every checkpoint after the first could truncate; demand most of them did.
    assert!(
        truncated >= 30,
        "only {truncated} of 40 checkpoints truncated the log (start {})",
        db.log().start_lsn()
    );
    db.close().unwrap();
}
