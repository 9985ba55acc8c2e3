//! A failed sync is never treated as success: the commit that hit it fails, the database
//! refuses further work ("poisoned"), and after the disk recovers a reopen finds every
//! acknowledged commit, nothing written after the failure, and the failed commit (in
//! doubt: its record may have reached the disk before the sync failed) all or nothing.

use sluice::{Database, Error, Options};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage};
use std::sync::Arc;

#[test]
fn sync_failure_poisons_and_reopen_keeps_acknowledged_commits() {
    let sim = SimStorage::new(5);
    let db = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"acked", b"1").unwrap();
    tx.commit().unwrap();

    sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio).persistent());
    let mut tx = db.begin();
    tx.put(&t, b"failed", b"2").unwrap();
    let e = tx.commit().unwrap_err();
    assert!(
        e.is_io(),
        "commit over a failed sync must fail with an I/O error: {e}"
    );
    let mut tx = db.begin();
    let e = tx.put(&t, b"later", b"3").unwrap_err();
    assert!(matches!(e, Error::Poisoned(_)), "{e}");
    drop(tx);
    drop(t);
    drop(db);

    sim.clear_faults();
    sim.crash();
    let db = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.get(&t, b"acked").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(tx.get(&t, b"later").unwrap(), None);
    let failed = tx.get(&t, b"failed").unwrap();
    assert!(failed.is_none() || failed.as_deref() == Some(&b"2"[..]));
    tx.commit().unwrap();
    db.verify().unwrap();
}
