//! Postmortem: a participant that failed between the coordinator's decision and its own
//! commit record lost the commit: the coordinator's record stopped pinning partition 0's
//! log as soon as the participants were *asked* to finish, whether or not they could, so a
//! checkpoint truncated it and recovery of partition 1 rolled the part back.
//!
//! Here the coordinator's commit record is held at partition 0's log sync (the commit is
//! decided but not yet durable) while partition 1's data file fails; then the sync goes
//! through. The commit must not be acknowledged (partition 1 never wrote its commit
//! record), partition 0 must keep the record through its checkpoints, and after a power
//! loss recovery must commit partition 1's part from it: the transaction is in both.

use sluice::{Options, Partitioned};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, GatedStorage, SimStorage, Storage};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn options() -> Options {
    let mut o = Options::small();
    o.log.segment_bytes = 16 << 10;
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = Duration::ZERO;
    o
}

fn open(sim: &SimStorage, log0: Arc<dyn Storage>) -> Partitioned {
    Partitioned::builder("/db")
        .log_managers(2)
        .options(options())
        .storage(Arc::new(sim.pinned()))
        .log_storage(0, log0)
        .assign("a", 0)
        .assign("b", 1)
        .open()
        .unwrap()
}

#[test]
fn a_participant_that_fails_after_the_coordinators_decision_keeps_its_commit() {
    let sim = SimStorage::new(12);
    let gate = GatedStorage::new(Arc::new(sim.pinned()));
    let db = open(&sim, Arc::new(gate.clone()));
    let a = db.table_or_create("a").unwrap();
    let b = db.table_or_create("b").unwrap();
    let mut tx = db.begin();
    tx.put(&a, b"k", b"both").unwrap();
    tx.put(&b, b"k", b"both").unwrap();
    let end_before = db.partition(0).log().released_lsn();

    // The commit passes its participants' flush and appends the coordinator's record;
    // the record's sync is held.
    gate.close();
    let committing = std::thread::spawn(move || tx.commit());
    // Partition 0's log syncs are held, and the coordinator's record reaches its buffer:
    // the commit has passed its vote then, and its record cannot become durable. (This
    // used to wait for one more held sync per look, which hung once syncs of one file
    // were serialised by the sync fence: a sync held before the record was appended
    // leaves no second sync of the segment to hold.)
    gate.wait_held(1);
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.partition(0).log().released_lsn() <= end_before {
        assert!(
            Instant::now() < deadline,
            "the coordinator's commit record never reached partition 0's log"
        );
        std::thread::sleep(Duration::from_millis(1));
    }

    // Partition 1's data file fails now, after the decision was taken.
    sim.inject(
        FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio)
            .persistent()
            .on("/db/part-1/data"),
    );
    assert!(db.partition(1).checkpoint().is_err());
    assert!(
        db.partition(1).log().poisoned().is_none(),
        "the log is healthy"
    );
    gate.open();
    let r = committing.join().unwrap();
    assert!(
        r.is_err(),
        "acknowledged, though partition 1 could not write its commit record"
    );

    // Partition 0 goes on; its checkpoints must keep the decided record.
    for i in 0..120u32 {
        let mut tx = db.begin();
        tx.put(&a, i.to_le_bytes(), [7u8; 400]).unwrap();
        tx.commit().unwrap();
    }
    db.partition(0).checkpoint().unwrap();
    db.partition(0).checkpoint().unwrap();
    assert!(
        db.partition(0).log().start_lsn() <= end_before,
        "partition 0 truncated the commit record partition 1 still needs"
    );

    sim.crash();
    sim.clear_faults();
    drop((a, b));
    drop(db);
    let db = open(&sim, Arc::new(sim.pinned()));
    assert_eq!(db.recovery_reports()[1].in_doubt_committed, 1);
    let (a, b) = (db.table("a").unwrap(), db.table("b").unwrap());
    let mut tx = db.begin();
    assert_eq!(tx.get(&a, b"k").unwrap().as_deref(), Some(&b"both"[..]));
    assert_eq!(tx.get(&b, b"k").unwrap().as_deref(), Some(&b"both"[..]));
    tx.commit().unwrap();
    db.verify().unwrap();
    db.close().unwrap();
}
