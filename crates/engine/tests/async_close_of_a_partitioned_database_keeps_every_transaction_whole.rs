//! Postmortem: under `async`, a clean `Partitioned::close()` split committed transactions
//! (no crash at all): close closed the participants while the callbacks that write their
//! commit records were still pending on the coordinator's log, so those records were never
//! written, and the closing checkpoint then truncated the coordinator's records they needed.
//!
//! Rounds of two-partition transactions under every protocol, each closed cleanly right
//! after its last commit and reopened: every acknowledged transaction is in both
//! partitions, and recovery had nothing in doubt to decide.

use sluice::{CommitProtocol, Options, Partitioned};
use sluice_storage::SimStorage;
use std::sync::Arc;

const ROUNDS: u64 = 10;
const TXNS: u32 = 120;

fn open(sim: &SimStorage, protocol: CommitProtocol) -> Partitioned {
    let mut o = Options::small();
    o.commit = protocol;
    // Small segments: the closing checkpoint truncates whole segments of records.
    o.log.segment_bytes = 16 << 10;
    Partitioned::builder("/db")
        .log_managers(2)
        .options(o)
        .storage(Arc::new(sim.pinned()))
        .assign("a", 0)
        .assign("b", 1)
        .open()
        .unwrap()
}

fn round(seed: u64, protocol: CommitProtocol) {
    let sim = SimStorage::new(seed);
    let db = open(&sim, protocol);
    let a = db.table_or_create("a").unwrap();
    let b = db.table_or_create("b").unwrap();
    for i in 0..TXNS {
        let mut tx = db.begin();
        tx.put(&a, i.to_be_bytes(), [1; 200]).unwrap();
        tx.put(&b, i.to_be_bytes(), [2; 200]).unwrap();
        tx.commit().unwrap();
    }
    drop((a, b));
    db.close().unwrap();

    let db = open(&sim, protocol);
    let (a, b) = (db.table("a").unwrap(), db.table("b").unwrap());
    let mut tx = db.begin();
    let keys = |tx: &mut sluice::PartitionedTransaction, t| {
        tx.scan(t, ..)
            .unwrap()
            .map(|e| e.unwrap().0)
            .collect::<Vec<_>>()
    };
    let (in_a, in_b) = (keys(&mut tx, &a), keys(&mut tx, &b));
    tx.commit().unwrap();
    let all: Vec<Vec<u8>> = (0..TXNS).map(|i| i.to_be_bytes().to_vec()).collect();
    let split = all
        .iter()
        .filter(|k| in_a.contains(k) != in_b.contains(k))
        .count();
    assert_eq!(
        split, 0,
        "{protocol}, seed {seed}: {split} of {TXNS} transactions are in one partition only"
    );
    assert_eq!(
        in_a, all,
        "{protocol}, seed {seed}: acknowledged commits lost"
    );
    assert_eq!(
        in_b, all,
        "{protocol}, seed {seed}: acknowledged commits lost"
    );
    let in_doubt: usize = db
        .recovery_reports()
        .iter()
        .map(|r| r.in_doubt_committed)
        .sum();
    assert_eq!(
        in_doubt, 0,
        "{protocol}, seed {seed}: a clean close left parts in doubt"
    );
    db.close().unwrap();
}

#[test]
fn async_close_of_a_partitioned_database_keeps_every_transaction_whole() {
    for seed in 0..ROUNDS {
        round(seed, CommitProtocol::Async);
    }
}

#[test]
fn close_under_every_protocol_keeps_every_transaction_whole() {
    for protocol in CommitProtocol::ALL {
        round(100, protocol);
    }
}
