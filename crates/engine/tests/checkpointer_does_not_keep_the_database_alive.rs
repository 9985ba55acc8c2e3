//! The background checkpointer holds only a weak reference: dropping every handle closes
//! the database (its lock is free for the next open at once), also while checkpoints
//! are being triggered, and no checkpoint outlives the handle.

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;

// Postmortem: the first checkpointer held a strong reference while it checkpointed, so a
// handle dropped then closed the database later, on that thread: the next open was Locked.
#[test]
fn dropping_the_last_handle_closes_the_database_and_stops_its_checkpointer() {
    let sim = Arc::new(SimStorage::new(111));
    let o = Options {
        checkpoint_log_bytes: 4 << 10,
        ..Options::small()
    };
    for round in 0..20u32 {
        let db = Database::open_on(sim.clone(), "/db", o.clone())
            .unwrap_or_else(|e| panic!("round {round}: the previous handle still holds it: {e}"));
        let t = db.table_or_create("t").unwrap();
        for i in 0..30u32 {
            let mut tx = db.begin();
            tx.put(&t, (round * 100 + i).to_be_bytes(), [5u8; 200])
                .unwrap();
            tx.commit().unwrap();
        }
        drop(t);
        drop(db); // no close(): Drop must do it
    }
    let db = Database::open_on(sim, "/db", o).unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.scan_all(&t).count(), 600);
    tx.commit().unwrap();
    db.close().unwrap();
}
