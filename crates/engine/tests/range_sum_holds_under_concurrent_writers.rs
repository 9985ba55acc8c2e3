//! Serializability end to end (issue 8): writers insert, delete, move amounts between
//! keys and sometimes roll back, keeping the sum of a key range constant, while scanners
//! sum the range. Under every durable commit protocol, through direct transactions and
//! through agents, every committed scan sees exactly the constant, a scan repeated in
//! its transaction sees the same keys, and the table ends consistent.

use sluice::{CommitProtocol, Database, Options};
use sluice_storage::SimStorage;
use sluice_testkit::range_sum::{self, Via, Workload, TOTAL};
use std::sync::Arc;
use std::time::Duration;

fn check(protocol: CommitProtocol, via: Via, seed: u64) {
    let mut o = Options::small();
    o.commit = protocol;
    o.pool_pages = 64;
    o.lock_timeout = Duration::from_millis(100);
    let db = Database::open_on(Arc::new(SimStorage::new(seed)), "/db", o).unwrap();
    let t = range_sum::setup(&db, "sums").unwrap();
    let w = Workload {
        seed,
        ..Workload::default()
    };
    let r = range_sum::run(&db, &t, &w, via);
    let what = format!("{protocol} via {via:?}");
    println!(
        "{what}: {} committed, {} rolled back, {} lock timeouts, {} scans",
        r.committed,
        r.rolled_back,
        r.contended,
        r.scan_sums.len()
    );
    assert!(r.errors.is_empty(), "{what}: {:?}", r.errors);
    assert_eq!(r.violations(), Vec::<String>::new(), "{what}");
    // Enough happened for the check to mean something.
    assert!(r.committed >= 50, "{what}: only {} commits", r.committed);
    assert!(
        r.rolled_back >= 10,
        "{what}: only {} rollbacks",
        r.rolled_back
    );
    assert!(
        r.scan_sums.len() >= 20,
        "{what}: only {} scans",
        r.scan_sums.len()
    );
    assert_eq!(range_sum::range_sum(&db, &t).unwrap(), TOTAL, "{what}");
    db.verify().unwrap();
}

#[test]
fn every_committed_scan_sees_the_constant_sum_under_every_durable_protocol() {
    let durable = [
        CommitProtocol::Classic,
        CommitProtocol::Elr,
        CommitProtocol::Pipelined,
        CommitProtocol::ElrPipelined,
    ];
    for (i, p) in durable.into_iter().enumerate() {
        check(p, Via::Direct, 10 + i as u64);
        check(p, Via::Agents(3), 20 + i as u64);
    }
}
