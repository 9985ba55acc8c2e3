//! Postmortem: `Partitioned::close` racing with commits on other handles split
//! transactions: a participant could close between the coordinator's decision and its own
//! commit record, the commit was still acknowledged, and the coordinator's closing
//! checkpoint then truncated the only record of the decision.
//!
//! Here: four threads commit two-partition transactions until the database refuses them,
//! while the main thread closes it; after a reopen every acknowledged transaction is in
//! both partitions and none is in one only. Under every protocol.

use sluice::{CommitProtocol, Options, Partitioned};
use sluice_storage::SimStorage;
use std::sync::Arc;

fn open(sim: &SimStorage, protocol: CommitProtocol) -> Partitioned {
    let mut o = Options::small();
    o.commit = protocol;
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
    let acknowledged = std::thread::scope(|s| {
        let writers: Vec<_> = (0..4u32)
            .map(|t| {
                let (db, a, b) = (db.clone(), a.clone(), b.clone());
                s.spawn(move || {
                    let mut acked = Vec::new();
                    for i in 0u32.. {
                        let key = format!("{t}.{i:06}").into_bytes();
                        let mut tx = db.begin();
                        let wrote = tx
                            .put(&a, &key, [1; 200])
                            .and_then(|_| tx.put(&b, &key, [2; 200]));
                        if wrote.is_err() || tx.commit().is_err() {
                            return acked;
                        }
                        acked.push(key);
                    }
                    unreachable!()
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(30));
        // A writer may be between begin and commit: close rolls it back and says so.
        match db.clone().close() {
            Ok(()) | Err(sluice::Error::OpenTransactions(_)) => {}
            Err(e) => panic!("{protocol}: close failed: {e}"),
        }
        writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect::<Vec<_>>()
    });
    drop((a, b));
    drop(db);

    let db = open(&sim, protocol);
    let (a, b) = (db.table("a").unwrap(), db.table("b").unwrap());
    let mut tx = db.begin();
    let in_a: Vec<Vec<u8>> = tx.scan(&a, ..).unwrap().map(|e| e.unwrap().0).collect();
    let in_b: Vec<Vec<u8>> = tx.scan(&b, ..).unwrap().map(|e| e.unwrap().0).collect();
    tx.commit().unwrap();
    assert!(!acknowledged.is_empty(), "{protocol}: nothing committed");
    let split: Vec<String> = in_a
        .iter()
        .filter(|k| in_b.binary_search(k).is_err())
        .chain(in_b.iter().filter(|k| in_a.binary_search(k).is_err()))
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    assert!(
        split.is_empty(),
        "{protocol}, seed {seed}: {} transactions in one partition only, e.g. {:?}",
        split.len(),
        &split[..split.len().min(5)]
    );
    for k in &acknowledged {
        assert!(
            in_a.binary_search(k).is_ok(),
            "{protocol}, seed {seed}: acknowledged {} lost",
            String::from_utf8_lossy(k)
        );
    }
    db.close().unwrap();
}

#[test]
fn closing_a_partitioned_database_under_load_keeps_every_transaction_whole() {
    for seed in 0..3 {
        for protocol in CommitProtocol::ALL {
            round(seed, protocol);
        }
    }
}
