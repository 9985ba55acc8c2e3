//! Per-transaction durability (`Transaction::set_durability`): on a database whose
//! commit protocol is durable, a transaction that chose `Durability::Async` is
//! acknowledged before the log flush; a crash loses at most a suffix of such commits and
//! never a durable one; and a durable transaction that read what an async commit wrote is
//! handed nothing, and not acknowledged, before that commit is durable.

use crate::gated;

use gated::{open_gated, Opens};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{CommitProtocol, Database, Durability, Lsn, Options, Table};
use sluice_storage::{GatedStorage, SimStorage, Storage};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// The durable protocols: an async transaction is a choice within each of them.
const DURABLE: [CommitProtocol; 4] = [
    CommitProtocol::Classic,
    CommitProtocol::Elr,
    CommitProtocol::Pipelined,
    CommitProtocol::ElrPipelined,
];

/// A gated database with `k = old` committed.
fn gated(protocol: CommitProtocol, seed: u64) -> (Database, Table, GatedStorage) {
    let (db, gate) = open_gated(protocol, seed);
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, "k", "old").unwrap();
    tx.commit().unwrap();
    (db, t, gate)
}

/// Commits `k = new` as an async transaction while the log's syncs are held; returns the
/// end of its commit record once `commit` has returned (within 20 s: it must not wait for
/// the held flush).
fn async_write(db: &Database, t: &Table) -> Lsn {
    let (db, t) = (db.clone(), t.clone());
    let (done, got) = mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = db.begin();
        tx.set_durability(Durability::Async);
        tx.put(&t, "k", "new").unwrap();
        let mut end = None;
        tx.commit_observed(|e| end = e).unwrap();
        done.send(end.expect("the async transaction logged"))
            .unwrap();
    });
    got.recv_timeout(Duration::from_secs(20))
        .expect("an async commit waited for the held log flush")
}

/// Runs `f` on a thread while the log is held, lets the log go after 30 ms, and returns
/// whether `f` had already returned by then, with its result.
fn run_while_held<T: Send + 'static>(
    gate: &GatedStorage,
    f: impl FnOnce() -> T + Send + 'static,
) -> (bool, T) {
    let h = std::thread::spawn(f);
    std::thread::sleep(Duration::from_millis(30));
    let returned = h.is_finished();
    gate.open();
    (returned, h.join().unwrap())
}

#[test]
fn an_async_commit_returns_before_the_flush() {
    for (i, protocol) in DURABLE.into_iter().enumerate() {
        let (db, t, gate) = gated(protocol, i as u64);
        gate.close();
        let _opens = Opens(gate.clone());
        let end = async_write(&db, &t);
        assert!(
            db.log().durable_lsn() < end,
            "{protocol}: the async commit's record was flushed although the log was held"
        );
        // The gate does hold the flush: a durable commit of another key waits.
        let (db2, t2) = (db.clone(), t.clone());
        let (returned, ()) = run_while_held(&gate, move || {
            let mut tx = db2.begin();
            tx.put(&t2, "other", "x").unwrap();
            tx.commit().unwrap();
        });
        assert!(
            !returned,
            "{protocol}: a durable commit returned with the log held"
        );
        assert!(db.log().durable_lsn() >= end);
        db.close().unwrap();
    }
}

#[test]
fn a_durable_transaction_that_read_an_async_write_waits_for_it() {
    for (i, protocol) in DURABLE.into_iter().enumerate() {
        let (db, t, gate) = gated(protocol, 10 + i as u64);
        gate.close();
        let _opens = Opens(gate.clone());
        let end = async_write(&db, &t);
        // A durable read-only transaction reads the async write: it writes no record of
        // its own, so only the dependency makes it wait.
        let (db2, t2) = (db.clone(), t.clone());
        let (returned, (v, seen, acked)) = run_while_held(&gate, move || {
            let mut tx = db2.begin();
            let v = tx.get(&t2, "k").unwrap();
            let seen = db2.log().durable_lsn();
            tx.commit().unwrap();
            (v, seen, db2.log().durable_lsn())
        });
        assert!(
            !returned,
            "{protocol}: a durable transaction read an async write that is not durable"
        );
        assert_eq!(v.as_deref(), Some(&b"new"[..]));
        assert!(
            seen >= end && acked >= end,
            "{protocol}: the read was handed out at durable {seen} and acknowledged at {acked}, before the async commit it read ({end})"
        );
        db.close().unwrap();
    }
}

/// One run: commits numbered from 0, each writing its own key and the counter `c`, each
/// async or durable at random, then a power loss at a random operation. Returns
/// (commits acknowledged, the last durable one acknowledged, commits recovered).
fn crash_run(protocol: CommitProtocol, seed: u64) -> (u64, Option<u64>, u64) {
    let sim = SimStorage::new(seed);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let mut o = Options::small();
    o.commit = protocol;
    let mut rng = StdRng::seed_from_u64(seed);
    {
        let db = Database::open_on(storage.clone(), "/db", o.clone()).unwrap();
        db.create_table("t").unwrap();
    }
    sim.crash_at_op(rng.gen_range(5..400));
    let mut acked = 0;
    let mut last_durable = None;
    if let Ok(db) = Database::open_on(storage.clone(), "/db", o.clone()) {
        let t = db.table("t").unwrap();
        for i in 0..300u64 {
            let mut tx = db.begin();
            let durability = if rng.gen_bool(0.7) {
                Durability::Async
            } else {
                Durability::Durable
            };
            tx.set_durability(durability);
            let r = tx
                .put(&t, format!("k{i:04}"), i.to_le_bytes())
                .and_then(|_| tx.put(&t, "c", i.to_le_bytes()))
                .and_then(|_| tx.commit());
            if r.is_err() {
                break;
            }
            acked += 1;
            if durability == Durability::Durable {
                last_durable = Some(i);
            }
        }
    }
    sim.disarm_crash();
    sim.crash();
    let db = Database::open_on(storage, "/db", o).unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    let keys: Vec<Vec<u8>> = tx
        .scan_all(&t)
        .map(|r| r.unwrap().0)
        .filter(|k| k.starts_with(b"k"))
        .collect();
    let n = keys.len() as u64;
    let want: Vec<Vec<u8>> = (0..n).map(|i| format!("k{i:04}").into_bytes()).collect();
    assert_eq!(
        keys, want,
        "{protocol} seed {seed}: the recovered commits are not a prefix of the commit order"
    );
    let c = tx.get(&t, "c").unwrap();
    assert_eq!(
        c.map(|v| u64::from_le_bytes(v[..].try_into().unwrap())),
        n.checked_sub(1),
        "{protocol} seed {seed}: the counter is not the last recovered commit's (a partial commit)"
    );
    tx.commit().unwrap();
    (acked, last_durable, n)
}

#[test]
fn a_crash_loses_at_most_a_suffix_of_async_commits_and_never_a_durable_one() {
    let (mut lost_async, mut durable_acked) = (0, 0);
    for seed in 0..40u64 {
        let protocol = DURABLE[seed as usize % DURABLE.len()];
        let (acked, last_durable, recovered) = crash_run(protocol, seed);
        if let Some(d) = last_durable {
            durable_acked += 1;
            assert!(
                recovered > d,
                "{protocol} seed {seed}: durable commit {d} was acknowledged but only {recovered} commits survived"
            );
        }
        lost_async += acked.saturating_sub(recovered);
    }
    // The runs exercise what they are about: durable commits acknowledged before a crash,
    // and async ones a crash took away.
    assert!(
        durable_acked > 10,
        "too few runs acknowledged a durable commit"
    );
    assert!(lost_async > 0, "no run lost an async commit");
}
