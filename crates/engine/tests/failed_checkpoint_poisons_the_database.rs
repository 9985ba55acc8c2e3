//! A checkpoint that fails is reported, never dropped: the caller of
//! `Database::checkpoint` gets the error, and every later operation fails with
//! "checkpoint failed: …" — also when the checkpoint failed in the background. That
//! includes a failed log truncation (otherwise the log grows until the disk is full).

use crate::spy;

use sluice::{Database, Error, Options};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage, Storage};
use spy::Spy;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn options(checkpoint_log_bytes: u64) -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = checkpoint_log_bytes;
    o
}

fn put(db: &Database, i: usize) -> Result<(), Error> {
    let t = db.table_or_create("t")?;
    let mut tx = db.begin();
    tx.put(&t, format!("key{i:05}").as_bytes(), [7u8; 200])?;
    tx.commit()
}

fn assert_checkpoint_failure(e: &Error) {
    assert!(
        matches!(e, Error::Poisoned(m) if m.contains("checkpoint failed")),
        "expected a poisoned database naming the failed checkpoint, got: {e}"
    );
}

/// The data file and CONTROL on one disk, the log on another, so a fault can aim at
/// the checkpoint's own I/O.
fn open(data: &SimStorage, log: Arc<dyn Storage>, every: u64) -> Database {
    Database::open_with_log(Arc::new(data.clone()), "/db", log, "/log", options(every)).unwrap()
}

#[test]
fn a_failed_control_file_update_is_returned_then_poisons() {
    let data = SimStorage::new(41);
    let db = open(&data, Arc::new(SimStorage::new(42)), 0);
    put(&db, 0).unwrap();
    // The checkpoint's data-file sync succeeds, the sync of CONTROL.tmp fails.
    data.inject(FaultPlan::new(FaultOp::Sync, 2, FaultKind::Eio));
    let e = db.checkpoint().unwrap_err();
    assert!(e.is_io(), "{e}");
    assert_checkpoint_failure(&put(&db, 1).unwrap_err());
}

#[test]
fn a_failed_log_truncation_is_returned_then_poisons() {
    let data = SimStorage::new(43);
    let spy = Spy::new(Arc::new(SimStorage::new(44)));
    let db = open(&data, spy.clone(), 0);
    // More segments of log than the recycling pool takes, so the checkpoint must delete
    // some (it renames the others for reuse); the segment with the last durable byte and
    // the one made ahead stay, and one more for margin. Counted, not assumed from a number
    // of puts: how much log a put writes depends on how pages split.
    let mut i = 0;
    while db.log().segments().len() <= sluice_wal::MAX_RECYCLED_SEGMENTS + 3 {
        put(&db, i).unwrap();
        i += 1;
        assert!(i < 100_000, "{i} puts wrote only {:?}", db.log().segments());
    }
    spy.fail_segment_removal();
    let e = db.checkpoint().unwrap_err();
    assert!(e.is_io(), "{e}");
    assert_checkpoint_failure(&put(&db, 0).unwrap_err());
}

#[test]
fn a_background_checkpoint_failure_is_reported_by_a_later_operation() {
    let data = SimStorage::new(45);
    let db = open(&data, Arc::new(SimStorage::new(46)), 16 << 10);
    put(&db, 0).unwrap();
    // The next checkpoint's data-file sync succeeds, its sync of CONTROL.tmp fails.
    data.inject(FaultPlan::new(FaultOp::Sync, 2, FaultKind::Eio));
    // Commits write log until a checkpoint is due and has failed; from then on every
    // operation reports it (a liveness bound, not a timing assertion).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut i = 0;
    let e = loop {
        if let Err(e) = put(&db, i) {
            break e;
        }
        i += 1;
        assert!(
            Instant::now() < deadline,
            "{i} commits after the disk failed and no operation reported the failed checkpoint"
        );
        if i > 400 {
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    assert_checkpoint_failure(&e);
    assert_checkpoint_failure(&put(&db, i + 1).unwrap_err());
}
