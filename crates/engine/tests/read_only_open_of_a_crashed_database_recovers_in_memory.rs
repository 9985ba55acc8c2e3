//! A database that crashed with committed work and a loser in the log past its last
//! checkpoint, opened read-only, shows the state restart recovery gives it — committed
//! data present, the loser's changes absent — by redoing and undoing in memory only: no
//! byte of the disk changes (its only counted operations are syncs; a second read-only
//! open recovers the same way again), and a read-write open afterwards recovers on disk
//! to the same contents.

use crate::read_only;

use read_only::*;
use sluice::Database;
use sluice_storage::{SimStorage, Storage};
use std::sync::Arc;

fn open_read_only(storage: Arc<dyn Storage>) -> Database {
    Database::builder(DIR)
        .options(read_only_options())
        .storage(storage)
        .open()
        .unwrap()
}

#[test]
fn read_only_open_of_a_crashed_database_recovers_in_memory() {
    for seed in 0..4 {
        let sim = SimStorage::new(seed);
        let expected = crashed_with_a_loser(&sim);
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let before = sim.stats();

        let db = open_read_only(storage.clone());
        let r = db.recovery_report().clone();
        assert_eq!(r.losers, 1, "seed {seed}: {r:?}");
        assert!(r.redone > 0 && r.undone >= 350, "seed {seed}: {r:?}");
        assert_eq!(contents(&db), expected, "seed {seed}");
        db.verify().unwrap();
        // A second reader at the same time recovers the same way.
        let again = open_read_only(storage.clone());
        assert_eq!(again.recovery_report(), &r, "seed {seed}");
        assert_eq!(contents(&again), expected, "seed {seed}");
        drop(again);
        db.close().unwrap();
        assert_only_syncs(&sim, before, &format!("seed {seed}"));

        let db = Database::open_on(storage, DIR, options()).unwrap();
        let rw = db.recovery_report().clone();
        assert_eq!(
            rw.losers, 1,
            "seed {seed}: read-only recovery left no trace"
        );
        assert_eq!(contents(&db), expected, "seed {seed}");
    }
}
