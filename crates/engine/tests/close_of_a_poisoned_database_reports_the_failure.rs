//! `Database::close` of a poisoned database returns the poisoning, never `Ok`: the
//! failure may have been met by a background thread after the client's last call (the
//! checkpointer here; the page cleaner and the sorter in the I/O-error sweep, which
//! found runs with persistent EIO on the disk ending in a "successful" close), and then
//! the close is the only word the client gets about it. Nothing acknowledged is lost.

use sluice::{Database, Error, Options};
use sluice_storage::failpoint::CHECKPOINT_BEGUN;
use sluice_storage::{FailAction, FaultKind, FaultOp, FaultPlan, SimStorage};
use std::sync::Arc;
use std::time::Duration;

fn reopen_finds(sim: &SimStorage, keys: &[&[u8]]) {
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", Options::small()).unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    for k in keys {
        assert_eq!(tx.get(&t, k).unwrap().as_deref(), Some(&b"v"[..]));
    }
    tx.commit().unwrap();
    db.verify().unwrap();
    db.close().unwrap();
}

#[test]
fn a_failure_of_the_background_checkpointer_is_reported_by_close() {
    let sim = SimStorage::new(7);
    let o = Options {
        checkpoint_log_bytes: 0,
        checkpoint_interval: Duration::from_millis(10),
        ..Options::small()
    };
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    // The next checkpoint, the timer's, fails just after its begin record.
    sim.set_failpoint(CHECKPOINT_BEGUN, 1, FailAction::Error(FaultKind::Eio));
    let mut tx = db.begin();
    tx.put(&t, b"acked", b"v").unwrap();
    tx.commit().unwrap();
    assert!(
        sim.wait_failpoint(CHECKPOINT_BEGUN, 1, Duration::from_secs(60)),
        "the checkpointer never ran"
    );
    drop(t);
    // Close joins the checkpointer first, so its failure is recorded by then.
    match db.close() {
        Err(Error::Poisoned(cause)) => assert!(cause.contains("checkpoint"), "{cause}"),
        other => panic!("close of a database whose checkpoint failed returned {other:?}"),
    }
    sim.clear_failpoints();
    sim.crash();
    reopen_finds(&sim, &[b"acked"]);
}

#[test]
fn a_failure_a_client_met_is_reported_again_by_close() {
    let sim = SimStorage::new(8);
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"acked", b"v").unwrap();
    tx.commit().unwrap();
    sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Enospc));
    let mut tx = db.begin();
    tx.put(&t, b"failed", b"v").unwrap();
    assert!(tx.commit().unwrap_err().is_io());
    drop(t);
    let e = db.close().unwrap_err();
    assert!(matches!(e, Error::Poisoned(_)), "{e}");
    sim.clear_faults();
    sim.kill_process();
    reopen_finds(&sim, &[b"acked"]);
}
