//! A database that writes little still checkpoints: once `checkpoint_interval` has
//! passed with log written, the background checkpointer takes one by itself (nobody
//! commits enough to reach `checkpoint_log_bytes`, nobody asks).

use crate::spy;

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use spy::Spy;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn the_timer_checkpoints_after_a_single_commit() {
    let spy = Spy::new(Arc::new(SimStorage::new(101)));
    let o = Options {
        checkpoint_log_bytes: 0,
        checkpoint_interval: Duration::from_millis(20),
        ..Options::small()
    };
    let db = Database::open_on(spy.clone(), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    spy.forget_control_writes();
    let mut tx = db.begin();
    tx.put(&t, b"k", b"v").unwrap();
    tx.commit().unwrap();
    let me = std::thread::current().id();
    assert!(
        spy.wait_control_write_not_by(me, Duration::from_secs(60)),
        "no checkpoint although the interval passed with log written"
    );
    let by = spy.control_writes();
    assert!(by.iter().all(|w| w.name == "sluice-checkpoint"), "{by:?}");
    db.close().unwrap();
}
