//! Counters bumped from several threads with `Database::transaction`, which runs a
//! transaction again when it loses a lock conflict (a deadlock victim): every increment
//! lands exactly once, however the threads collide. Each transaction bumps two counters in
//! a random order, so deadlocks do happen.
//!
//! Run with `cargo run -p sluice --example counters [DIR]`.

use sluice::{Database, Error};
use std::time::Duration;

const THREADS: u64 = 4;
const BUMPS: u64 = 200;
const COUNTERS: u64 = 3;

fn main() -> Result<(), Error> {
    let dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join(format!("sluice-counters-{}", std::process::id())),
    };
    let db = Database::builder(&dir)
        .lock_timeout(Duration::from_millis(50))
        .open()?;
    let t = db.table_or_create("counters")?;
    let start: u64 = read_total(&db, &t)?;
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let (db, t) = (&db, &t);
            s.spawn(move || {
                for i in 0..BUMPS {
                    let a = (th + i) % COUNTERS;
                    let b = (a + 1 + i % (COUNTERS - 1)) % COUNTERS;
                    db.transaction(|tx| {
                        for c in [a, b] {
                            let k = format!("counter-{c}");
                            let n = match tx.get_for_update(t, k.as_bytes())? {
                                Some(v) => u64::from_le_bytes(v.try_into().expect("8 bytes")),
                                None => 0,
                            };
                            tx.put(t, k.as_bytes(), (n + 1).to_le_bytes())?;
                        }
                        Ok::<_, sluice::Error>(())
                    })
                    .unwrap_or_else(|e| panic!("a bump failed after retries: {e}"));
                }
            });
        }
    });
    let total = read_total(&db, &t)?;
    println!(
        "{} bumps from {THREADS} threads; counters went from {start} to {total}",
        THREADS * BUMPS * 2
    );
    assert_eq!(total - start, THREADS * BUMPS * 2);
    drop(t);
    db.close()
}

fn read_total(db: &Database, t: &sluice::Table) -> Result<u64, Error> {
    db.transaction(|tx| {
        let mut sum = 0;
        for entry in tx.scan_all(t) {
            let (_, v) = entry?;
            sum += u64::from_le_bytes(v.try_into().expect("8 bytes"));
        }
        Ok::<_, sluice::Error>(sum)
    })
}
