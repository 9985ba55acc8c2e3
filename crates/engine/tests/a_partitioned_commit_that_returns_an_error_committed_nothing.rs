//! Postmortem: a transaction that wrote in partition 0 and only read in partition 1 got
//! an error from `commit` when partition 1 had failed meanwhile — after partition 0 had
//! committed it: the read-only part was ended after the decision, and its error reported
//! as the commit's. A client told "failed" retried a transaction that had committed.
//!
//! Here: partition 1 is poisoned between the read and the commit; the commit returns an
//! error, and then nothing of the transaction is visible (nor after a reopen).

use sluice::{Options, Partitioned};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage};
use std::sync::Arc;

fn open(sim: &SimStorage) -> Partitioned {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = std::time::Duration::ZERO;
    Partitioned::builder("/db")
        .log_managers(2)
        .options(o)
        .storage(Arc::new(sim.pinned()))
        .assign("a", 0)
        .assign("b", 1)
        .open()
        .unwrap()
}

#[test]
fn a_partitioned_commit_that_returns_an_error_committed_nothing() {
    let sim = SimStorage::new(13);
    let db = open(&sim);
    let a = db.table_or_create("a").unwrap();
    let b = db.table_or_create("b").unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.get(&b, b"k").unwrap(), None);
    tx.put(&a, b"k", b"written").unwrap();

    sim.inject(
        FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio)
            .persistent()
            .on("/db/part-1/data"),
    );
    assert!(db.partition(1).checkpoint().is_err());
    let err = tx.commit().expect_err("partition 1 no longer takes work");

    let mut tx = db.begin();
    assert_eq!(
        tx.get(&a, b"k").unwrap(),
        None,
        "the commit returned an error ({err}) and committed"
    );
    tx.commit().unwrap();
    assert!(err.to_string().contains("partition 1"), "{err}");
    sim.crash();
    sim.clear_faults();
    drop((a, b));
    drop(db);
    let db = open(&sim);
    let a = db.table("a").unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.get(&a, b"k").unwrap(), None, "committed after a reopen");
    tx.commit().unwrap();
    db.close().unwrap();
}
