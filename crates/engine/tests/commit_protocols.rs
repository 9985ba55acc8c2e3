//! Commit protocols (Aether §3–4): what each one promises, shown with a log whose syncs
//! the test holds, plus the crash sweep under each protocol.

use sluice::experiment::{AgentOptions, Agents, Outcome};
use sluice::{CommitProtocol, Database, Error, Options};
use sluice_storage::{GatedStorage, SimStorage, Storage};
use sluice_testkit::crash::{crash_test_mode, CrashMode};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn open(protocol: CommitProtocol, seed: u64) -> (Database, GatedStorage) {
    let sim: Arc<dyn Storage> = Arc::new(SimStorage::new(seed));
    let gate = GatedStorage::new(sim.clone());
    let mut o = Options::small();
    o.commit = protocol;
    o.lock_timeout = Duration::from_millis(100);
    o.checkpoint_log_bytes = 0; // no checkpoint may need the held log
    let db = Database::open_with_log(sim, "/db", Arc::new(gate.clone()), "/db/log", o).unwrap();
    (db, gate)
}

#[test]
fn every_protocol_survives_the_crash_sweep() {
    let seeds: u64 = std::env::var("SLUICE_PROTOCOL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    for p in CommitProtocol::ALL {
        let r = crash_test_mode(CrashMode::Agents(p), seeds, 10_000, |_| {});
        println!(
            "crash sweep {p:>13}: {} seeds, {} acknowledged, {} lost, {} lost as async allows, {} violations, {} crashes mid-run, {} in recovery, {} kills, {} failed fsyncs, {} shown states rechecked",
            r.seeds, r.acknowledged, r.lost, r.lost_async, r.violations, r.crashes_mid_run, r.crashes_in_recovery, r.process_kills, r.failed_syncs, r.states_rechecked
        );
        assert_eq!(r.violations, 0, "{p}: {:?}", r.failures);
        assert_eq!(r.lost, 0, "{p}: acknowledged commits lost");
        assert!(
            r.acknowledged > seeds * 10,
            "{p}: too little work to mean anything"
        );
        // async finishes its work fastest, so fewer armed crashes land mid-run (~1/3).
        assert!(
            r.crashes_mid_run > seeds / 4,
            "{p}: crashes must hit running work"
        );
        if p != CommitProtocol::Async {
            assert_eq!(r.lost_async, 0);
        }
    }
}

#[test]
fn a_reader_of_early_released_data_is_not_acknowledged_before_its_predecessor() {
    let (db, gate) = open(CommitProtocol::Elr, 1);
    let t = db.create_table("t").unwrap();
    gate.close();
    // T1 writes and commits: its commit record is in the buffer, its locks are released
    // early, and it waits for a sync the gate holds.
    let (db1, t1) = (db.clone(), t.clone());
    let (recorded, in_buffer) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        let mut tx = db1.begin();
        tx.put(&t1, b"k", b"v1").unwrap();
        tx.commit_observed(|_| recorded.send(()).unwrap()).unwrap();
        db1.log().durable_lsn()
    });
    // T1's commit record is in the buffer and its locks are gone (a held sync alone
    // could be the segment preparer's, before T1 even wrote).
    in_buffer.recv().unwrap();
    gate.wait_held(1);
    // T2 reads what T1 wrote (the lock was released early) and commits read-only. The
    // value is not even handed to it before T1 is durable (the read barrier).
    let db2 = db.clone();
    let reader = std::thread::spawn(move || {
        let mut tx = db2.begin();
        let v = tx.get(&t, b"k").unwrap();
        let handed = db2.log().durable_lsn();
        let dep = tx.ack_lsn().expect("T2 depends on T1's commit");
        assert!(
            handed >= dep,
            "T2 was handed T1's data at durable {handed} before T1's commit at {dep}"
        );
        tx.commit().unwrap();
        // Acknowledged: T1 must be durable now.
        let d = db2.log().durable_lsn();
        assert!(
            d >= dep,
            "T2 acknowledged at durable {d} before T1's commit at {dep}"
        );
        (v, dep)
    });
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        !reader.is_finished(),
        "the reader was handed early-released data with the log held"
    );
    gate.open();
    let (v, dep) = reader.join().unwrap();
    assert_eq!(v.as_deref(), Some(&b"v1"[..]));
    assert!(writer.join().unwrap() >= dep);

    // The same through agents with flush pipelining.
    let (db, gate) = open(CommitProtocol::ElrPipelined, 2);
    let t = db.create_table("t").unwrap();
    let (recorded, in_buffer) = std::sync::mpsc::channel::<()>();
    let recorded = Mutex::new(recorded);
    let agents = Agents::start_with(
        &db,
        AgentOptions {
            agents: 2,
            on_commit_record: Some(Arc::new(move |_, _| {
                let _ = recorded.lock().unwrap().send(());
            })),
            ..AgentOptions::default()
        },
    );
    gate.close();
    let t1 = t.clone();
    let w = agents.execute(move |tx| {
        tx.put(&t1, b"k", b"v2")?;
        Ok(Outcome::Commit(()))
    });
    in_buffer.recv().unwrap();
    gate.wait_held(1);
    let seen = Arc::new(AtomicU64::new(0));
    let (t2, s2, db2) = (t.clone(), seen.clone(), db.clone());
    let r = agents.execute(move |tx| {
        let v = tx.get(&t2, b"k")?;
        s2.store(tx.ack_lsn().map_or(0, |l| l.0), Ordering::SeqCst);
        Ok(Outcome::Commit((v, db2)))
    });
    std::thread::sleep(Duration::from_millis(20));
    assert!(seen.load(Ordering::SeqCst) > db.log().durable_lsn().0);
    gate.open();
    let f = r.wait().unwrap();
    assert_eq!(f.value.0.as_deref(), Some(&b"v2"[..]));
    assert!(f.value.1.log().durable_lsn().0 >= seen.load(Ordering::SeqCst));
    w.wait().unwrap();
    agents.shutdown();
}

#[test]
fn classic_holds_locks_until_durable_and_elr_does_not() {
    for (p, blocked) in [
        (CommitProtocol::Classic, true),
        (CommitProtocol::Elr, false),
    ] {
        let (db, gate) = open(p, 3);
        let t = db.create_table("t").unwrap();
        gate.close();
        let (db1, t1) = (db.clone(), t.clone());
        let (recorded, in_buffer) = std::sync::mpsc::channel();
        let writer = std::thread::spawn(move || {
            let mut tx = db1.begin();
            tx.put(&t1, b"k", b"v").unwrap();
            tx.commit_observed(|_| recorded.send(()).unwrap()).unwrap();
        });
        in_buffer.recv().unwrap();
        gate.wait_held(1);
        let (db2, t2) = (db.clone(), t.clone());
        let overwriter = std::thread::spawn(move || {
            let mut tx = db2.begin();
            tx.put(&t2, b"k", b"w")
        });
        if blocked {
            // The lock is held until durable, and the log is held: a lock timeout.
            let r = overwriter.join().unwrap();
            assert!(matches!(r, Err(Error::LockTimeout { .. })), "{p}: {r:?}");
            gate.open();
        } else {
            // The lock was released early: no lock timeout, however long the log is held
            // (here three timeouts). The old value it overwrites is handed out only once
            // the writer's commit is durable, so the put returns after the gate opens.
            std::thread::sleep(3 * Duration::from_millis(100));
            assert!(
                !overwriter.is_finished(),
                "{p}: a lock timeout, or the old value handed out before it was durable"
            );
            gate.open();
            let r = overwriter.join().unwrap();
            assert_eq!(r.unwrap().as_deref(), Some(&b"v"[..]), "{p}");
        }
        writer.join().unwrap();
    }
}

#[test]
fn pipelined_agents_keep_working_while_the_log_is_held() {
    for p in [CommitProtocol::Pipelined, CommitProtocol::ElrPipelined] {
        let (db, gate) = open(p, 4);
        let t = db.create_table("t").unwrap();
        let agents = Agents::start_with(
            &db,
            AgentOptions {
                agents: 1,
                ..AgentOptions::default()
            },
        );
        gate.close();
        let acked = Arc::new(AtomicU64::new(0));
        for i in 0..10u32 {
            let (t, a) = (t.clone(), acked.clone());
            agents.submit(
                move |tx| {
                    tx.put(&t, i.to_be_bytes(), b"v")?;
                    Ok(Outcome::Commit(()))
                },
                move |r| {
                    r.unwrap();
                    a.fetch_add(1, Ordering::SeqCst);
                },
            );
        }
        // One agent ran all ten to their commit records while the log was held: it never
        // blocked on the flush.
        while agents.stats().committed < 10 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            acked.load(Ordering::SeqCst),
            0,
            "{p}: acknowledged before durable"
        );
        gate.open();
        while acked.load(Ordering::SeqCst) < 10 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(agents.stats().pipelined, 10);
        agents.shutdown();
    }
}

#[test]
fn async_acknowledges_before_durable() {
    let (db, gate) = open(CommitProtocol::Async, 5);
    let t = db.create_table("t").unwrap();
    gate.close();
    let mut tx = db.begin();
    tx.put(&t, b"k", b"v").unwrap();
    tx.commit().unwrap(); // returns with the log held
    assert!(db.log().durable_lsn() < db.log().released_lsn());
    gate.open();
}

#[test]
fn a_pipelined_abort_after_logging_is_hardened_before_rollback() {
    let (db, gate) = open(CommitProtocol::ElrPipelined, 6);
    let t = db.create_table("t").unwrap();
    let agents = Agents::start(&db, 1);
    gate.close();
    let last = Arc::new(Mutex::new(None));
    let l2 = last.clone();
    let c = agents.execute(move |tx| {
        tx.put(&t, b"k", b"v")?;
        *l2.lock().unwrap() = tx.last_lsn();
        Ok(Outcome::Rollback(()))
    });
    gate.wait_held(1);
    gate.open();
    let f = c.wait().unwrap();
    assert!(!f.committed);
    let end = last.lock().unwrap().expect("the body logged a change");
    assert!(db.log().durable_lsn() >= end);
    let mut tx = db.begin();
    assert_eq!(tx.get(&db.table("t").unwrap(), b"k").unwrap(), None);
    tx.commit().unwrap();
    agents.shutdown();
}
