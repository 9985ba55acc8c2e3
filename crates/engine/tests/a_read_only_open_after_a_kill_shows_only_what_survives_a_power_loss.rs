//! Postmortem: a read-only open after a process kill read the log bytes the killed writer had
//! written but not synced (the page cache outlives the process) and showed their commit; a
//! power loss then took it away, and read-write recovery showed the old value instead.
//! Fix: the read-only open makes what it reads durable first (fsync through a read-only
//! handle changes no byte), so a client is shown nothing that a crash can take back.
//!
//! Each seed: `k = old` committed; the commit of `k = new` is killed right after its log
//! bytes were written (`LOG_WRITTEN`), before their sync. A read-only open, then a power
//! loss, then a read-write open: both opens must show the same value.

use crate::read_only;

use read_only::*;
use sluice::Database;
use sluice_storage::failpoint::{self, FailAction};
use sluice_storage::{SimStorage, Storage};
use sluice_testkit::fence::FencedStorage;
use std::sync::Arc;

const SEEDS: u64 = 16;

/// The value of `k` in table `t` as `db` shows it.
fn value(db: &Database) -> Option<Vec<u8>> {
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    let v = tx.get(&t, b"k").unwrap();
    tx.commit().unwrap();
    v
}

#[test]
fn a_read_only_open_after_a_kill_shows_only_what_survives_a_power_loss() {
    let mut new_shown = 0;
    let mut disagreements = Vec::new();
    for seed in 0..SEEDS {
        let sim = SimStorage::new(seed);
        let db = Database::open_on(FencedStorage::for_incarnation(&sim), DIR, options()).unwrap();
        let t = db.table_or_create("t").unwrap();
        let mut tx = db.begin();
        tx.put(&t, b"k", b"old").unwrap();
        tx.commit().unwrap(); // durable: acknowledged
        let mut tx = db.begin();
        tx.put(&t, b"k", b"new").unwrap();
        // The next round the flush daemon writes is killed before its sync.
        sim.set_failpoint(failpoint::LOG_WRITTEN, 1, FailAction::Kill);
        assert!(
            tx.commit().is_err(),
            "seed {seed}: the kill reached the commit"
        );
        drop(db);
        sim.clear_failpoints();

        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let ro = Database::builder(DIR)
            .options(read_only_options())
            .storage(storage.clone())
            .open()
            .unwrap();
        let shown = value(&ro);
        drop(ro);
        new_shown += usize::from(shown.as_deref() == Some(b"new"));

        sim.crash(); // the power goes: whatever was not durable may go with it
        let rw = Database::open_on(storage, DIR, options()).unwrap();
        let recovered = value(&rw);
        rw.close().unwrap();
        if recovered != shown {
            disagreements.push(format!(
                "seed {seed}: read-only showed {:?}, after the power loss {:?}",
                shown.map(String::from_utf8),
                recovered.map(String::from_utf8)
            ));
        }
    }
    assert!(
        disagreements.is_empty(),
        "a read-only open showed what a power loss took away ({} of {SEEDS} seeds):\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    // The scenario was reached: the killed commit's bytes were in the page cache and the
    // read-only open saw them (else it would prove nothing).
    assert!(
        new_shown > SEEDS as usize / 2,
        "only {new_shown} of {SEEDS} read-only opens saw the killed commit"
    );
}
