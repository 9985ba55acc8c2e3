//! Postmortem (found while reproducing issue 22's defect 1): a rollback whose undo failed
//! (a full pool, a read error) still released the transaction's locks, and the database
//! went on: the next transaction read the aborted change, and the transaction never
//! ended. Now a rollback that cannot finish stops the database before its locks go, and
//! restart recovery finishes it at the next open.

use sluice::{Database, Options};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage};
use std::sync::Arc;

#[test]
fn a_rollback_that_cannot_finish_stops_the_database_and_recovery_finishes_it() {
    let sim = SimStorage::new(7);
    let mut o = Options::small();
    o.pool_pages = 16;
    o.checkpoint_log_bytes = 0;
    let open = || Database::open(Arc::new(sim.pinned()), "/db", o).unwrap();
    let db = open();
    let t = db.create_table("t").unwrap();
    let filler = db.create_table("filler").unwrap();
    db.transaction(|tx| tx.put(&t, b"k", b"committed")).unwrap();

    let mut tx = db.begin();
    tx.put(&t, b"k", b"aborted").unwrap();
    // Push the changed leaf out of the pool (written with the uncommitted change, as
    // no-force, steal allows), so that the undo must read it back.
    db.transaction(|f| {
        for i in 0..400u32 {
            f.put(&filler, &i.to_be_bytes(), &[1u8; 100])?;
        }
        Ok(())
    })
    .unwrap();
    assert!(db.stats().pool.evictions > 16, "the pool evicted pages");
    sim.inject(FaultPlan::new(FaultOp::Read, 1, FaultKind::Eio).on("/db/data"));
    let undo = tx.rollback();
    sim.clear_faults();
    assert!(undo.is_err(), "the undo could not read the page: {undo:?}");

    // Nothing may show the aborted change now: the database refuses every call.
    match db.transaction(|tx| tx.get(&t, b"k")) {
        Err(e) => assert!(
            e.to_string().contains("rollback of transaction"),
            "the refusal names the unfinished rollback: {e}"
        ),
        Ok(v) => panic!("the database went on after a failed rollback and read {v:?}"),
    }
    assert!(db.health().is_err());
    drop((t, filler));
    assert!(db.close().is_err(), "close reports the failure");

    // Restart recovery rolls the transaction back.
    let db = open();
    let t = db.table("t").unwrap();
    let got = db.transaction(|tx| tx.get(&t, b"k")).unwrap();
    assert_eq!(got.as_deref(), Some(&b"committed"[..]));
    db.verify().unwrap();
}
