//! A database closed cleanly, opened read-only, shows exactly what was committed, with
//! nothing for recovery to do; the handle reports itself read-only, and a read-write open
//! afterwards finds the database as it was.

use crate::read_only;

use read_only::*;
use sluice::Database;
use sluice_storage::{SimStorage, Storage};
use std::sync::Arc;

#[test]
fn read_only_open_sees_the_state_of_a_clean_close() {
    let sim = SimStorage::new(1);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let expected = closed_cleanly(storage.clone());

    let db = Database::builder(DIR)
        .options(options())
        .storage(storage.clone())
        .read_only(true)
        .open()
        .unwrap();
    assert!(db.options().read_only);
    assert!(db.is_read_only());
    let r = db.recovery_report();
    assert_eq!((r.redone, r.losers, r.undone), (0, 0, 0), "{r:?}");
    assert!(!r.created);
    assert_eq!(contents(&db), expected);
    let report = db.verify().unwrap();
    assert_eq!((report.tables, report.entries), (2, 200));
    db.close().unwrap();

    let db = Database::open_on(storage, DIR, options()).unwrap();
    assert!(!db.options().read_only);
    assert_eq!(contents(&db), expected);
}
