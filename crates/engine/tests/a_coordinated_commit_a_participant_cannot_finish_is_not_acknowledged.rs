//! Postmortem: with partition 1's data file failed (the database poisoned, its log
//! healthy), a transaction over partitions 0 and 1 still committed with `Ok`: partition 1
//! could not write its own commit record, yet the coordinator's record stopped pinning
//! partition 0's log, a checkpoint truncated it, and after a crash partition 1 rolled the
//! transaction back while partition 0 kept it. Nothing asked whether the part could finish.
//!
//! Here: partition 1 is poisoned before the commit; the commit must be refused (an
//! error), partition 0 goes on committing and truncating its log, and after a power loss
//! the transaction is whole — in both partitions or in neither.

use sluice::{Options, Partitioned};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage};
use std::sync::Arc;

fn options() -> Options {
    let mut o = Options::small();
    o.log.segment_bytes = 16 << 10;
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = std::time::Duration::ZERO;
    o
}

fn open(sim: &SimStorage) -> Partitioned {
    Partitioned::builder("/db")
        .log_managers(2)
        .options(options())
        .storage(Arc::new(sim.pinned()))
        .assign("a", 0)
        .assign("b", 1)
        .open()
        .unwrap()
}

#[test]
fn a_coordinated_commit_a_participant_cannot_finish_is_not_acknowledged() {
    let sim = SimStorage::new(11);
    let db = open(&sim);
    let a = db.table_or_create("a").unwrap();
    let b = db.table_or_create("b").unwrap();
    let mut tx = db.begin();
    tx.put(&a, b"k", b"both").unwrap();
    tx.put(&b, b"k", b"both").unwrap();

    // Partition 1's data file fails: its checkpoint cannot sync it, which poisons the
    // partition; its log is untouched.
    sim.inject(
        FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio)
            .persistent()
            .on("/db/part-1/data"),
    );
    assert!(db.partition(1).checkpoint().is_err());
    assert!(db.partition(1).health().is_err());
    assert!(
        db.partition(1).log().poisoned().is_none(),
        "the log is healthy"
    );

    let end_before = db.partition(0).log().released_lsn();
    let r = tx.commit();
    assert!(
        r.is_err(),
        "a commit partition 1 cannot finish was acknowledged"
    );

    // Partition 0 goes on alone and truncates its log past where the commit would be.
    for i in 0..120u32 {
        let mut tx = db.begin();
        tx.put(&a, i.to_le_bytes(), [7u8; 400]).unwrap();
        tx.commit().unwrap();
    }
    db.partition(0).checkpoint().unwrap();
    db.partition(0).checkpoint().unwrap();
    assert!(
        db.partition(0).log().start_lsn() > end_before,
        "partition 0's log was not truncated past the commit: the case is not tested"
    );

    sim.crash();
    sim.clear_faults();
    drop((a, b));
    drop(db);
    let db = open(&sim);
    let (a, b) = (db.table("a").unwrap(), db.table("b").unwrap());
    let mut tx = db.begin();
    let in_a = tx.get(&a, b"k").unwrap();
    let in_b = tx.get(&b, b"k").unwrap();
    tx.commit().unwrap();
    assert_eq!(
        in_a, in_b,
        "the transaction is split: partition 0 has {in_a:?}, partition 1 {in_b:?}"
    );
    db.verify().unwrap();
    db.close().unwrap();
}
