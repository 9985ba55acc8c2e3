//! Postmortem: a partitioned database dropped without `close` under `async` never closed:
//! the callback that writes the participants' commit records held the database's last
//! handle, so partition 0 was dropped — and closed — on its own log's flush daemon,
//! whose checkpoint then waited for that daemon forever; the directory stayed locked.
//!
//! Here: rounds of two-partition transactions under `async`, the handle dropped right
//! after the last commit; the directory opens again at once, and every transaction is in
//! both partitions.

use sluice::{CommitProtocol, Options, Partitioned};
use sluice_storage::SimStorage;
use std::sync::Arc;

fn open(sim: &SimStorage) -> sluice::Result<Partitioned> {
    let mut o = Options::small();
    o.commit = CommitProtocol::Async;
    o.log.segment_bytes = 16 << 10;
    Partitioned::builder("/db")
        .log_managers(2)
        .options(o)
        .storage(Arc::new(sim.pinned()))
        .assign("a", 0)
        .assign("b", 1)
        .open()
}

#[test]
fn dropping_a_partitioned_database_under_async_closes_it_whole() {
    for seed in 0..5 {
        let sim = SimStorage::new(seed);
        let db = open(&sim).unwrap();
        let a = db.table_or_create("a").unwrap();
        let b = db.table_or_create("b").unwrap();
        for i in 0..120u32 {
            let mut tx = db.begin();
            tx.put(&a, i.to_be_bytes(), [1; 200]).unwrap();
            tx.put(&b, i.to_be_bytes(), [2; 200]).unwrap();
            tx.commit().unwrap();
        }
        drop((a, b));
        drop(db);

        let db = open(&sim).unwrap_or_else(|e| panic!("seed {seed}: reopen after drop: {e}"));
        let (a, b) = (db.table("a").unwrap(), db.table("b").unwrap());
        let mut tx = db.begin();
        let in_a = tx.scan(&a, ..).unwrap().count();
        let in_b = tx.scan(&b, ..).unwrap().count();
        tx.commit().unwrap();
        assert_eq!((in_a, in_b), (120, 120), "seed {seed}");
        db.close().unwrap();
    }
}
