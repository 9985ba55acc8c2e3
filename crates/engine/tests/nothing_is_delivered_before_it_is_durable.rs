//! Nothing a client receives depends on a commit that is not yet durable. A writer
//! commits under early lock release while the test holds the log's sync; a second
//! transaction reads what it wrote. Every kind of delivery of that second transaction —
//! a direct get, get_for_update, scan, the old value a put or delete returns; through
//! agents a commit, a read-only result, a rollback's value and an error — must wait until
//! the writer's commit is durable.

use crate::gated;

use gated::open_gated;
use sluice::experiment::{AgentOptions, Agents, Finished, Outcome};
use sluice::{CommitProtocol, Database, Error, Lsn, Table};
use sluice_storage::GatedStorage;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

struct Setup {
    db: Database,
    t: Table,
    gate: GatedStorage,
    /// The writer's pool: its one agent blocks until the writer's commit is durable.
    writer: Agents,
    /// The end of the writer's commit record: what every delivery must wait for.
    commit_end: Lsn,
}

/// A database whose writer has committed `k = new` under ELR, with the sync held.
fn setup(protocol: CommitProtocol, seed: u64) -> Setup {
    let (db, gate) = open_gated(protocol, seed);
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"k", b"old").unwrap();
    tx.put(&t, b"z", b"other").unwrap();
    tx.commit().unwrap();
    gate.close();
    // The writer commits through an agent so the test learns its commit LSN exactly.
    let (hook_tx, hook_rx) = mpsc::channel();
    let hook_tx = std::sync::Mutex::new(hook_tx);
    let writer = Agents::start_with(
        &db,
        AgentOptions {
            agents: 1,
            protocol: Some(CommitProtocol::Elr),
            on_commit_record: Some(Arc::new(move |_, lsn| {
                hook_tx.lock().unwrap().send(lsn).unwrap();
            })),
            time_breakdown: false,
        },
    );
    let t1 = t.clone();
    writer.submit(
        move |tx| {
            tx.put(&t1, b"k", b"new")?;
            Ok(Outcome::Commit(()))
        },
        |r| assert!(r.unwrap().committed),
    );
    let commit_end = hook_rx.recv().unwrap().expect("the writer logged");
    assert!(db.log().durable_lsn() < commit_end);
    Setup {
        db,
        t,
        gate,
        writer,
        commit_end,
    }
}

/// Runs `receive` (which returns the durable LSN at the moment it was handed a value)
/// while the sync is held, then lets the log go and checks the delivery waited.
fn delivered_after_durable(s: Setup, what: &str, receive: impl FnOnce() -> Lsn + Send + 'static) {
    let h = std::thread::spawn(receive);
    std::thread::sleep(Duration::from_millis(30));
    assert!(!h.is_finished(), "{what} delivered with the log held");
    s.gate.open();
    let durable = h.join().unwrap();
    s.writer.shutdown();
    assert!(
        durable >= s.commit_end,
        "{what} delivered at durable {durable}, before the commit it read at {}",
        s.commit_end
    );
}

#[test]
fn a_direct_get_waits() {
    let s = setup(CommitProtocol::Elr, 1);
    let (db, t) = (s.db.clone(), s.t.clone());
    delivered_after_durable(s, "get", move || {
        let mut tx = db.begin();
        assert_eq!(tx.get(&t, b"k").unwrap().as_deref(), Some(&b"new"[..]));
        db.log().durable_lsn()
    });
}

#[test]
fn a_direct_get_for_update_waits() {
    let s = setup(CommitProtocol::ElrPipelined, 2);
    let (db, t) = (s.db.clone(), s.t.clone());
    delivered_after_durable(s, "get_for_update", move || {
        let mut tx = db.begin();
        assert_eq!(
            tx.get_for_update(&t, b"k").unwrap().as_deref(),
            Some(&b"new"[..])
        );
        db.log().durable_lsn()
    });
}

#[test]
fn the_old_value_of_a_direct_put_and_delete_waits() {
    for delete in [false, true] {
        let s = setup(CommitProtocol::Elr, 3);
        let (db, t) = (s.db.clone(), s.t.clone());
        delivered_after_durable(s, "the old value of a put or delete", move || {
            let mut tx = db.begin();
            let old = if delete {
                tx.delete(&t, b"k").unwrap()
            } else {
                tx.put(&t, b"k", b"newer").unwrap()
            };
            assert_eq!(old.as_deref(), Some(&b"new"[..]));
            db.log().durable_lsn()
        });
    }
}

#[test]
fn a_direct_scan_waits() {
    let s = setup(CommitProtocol::Elr, 4);
    let (db, t) = (s.db.clone(), s.t.clone());
    delivered_after_durable(s, "scan", move || {
        let mut tx = db.begin();
        let mut scan = tx.scan_all(&t);
        let (k, v) = scan.next().unwrap().unwrap();
        assert_eq!((&k[..], &v[..]), (&b"k"[..], &b"new"[..]));
        db.log().durable_lsn()
    });
}

/// Submits `body` to a pool and returns the durable LSN when its result was delivered.
fn through_agents<R: Send + std::fmt::Debug + 'static>(
    s: Setup,
    what: &str,
    body: impl FnOnce(&mut sluice::Transaction) -> Result<Outcome<R>, Error> + Send + 'static,
    check: impl FnOnce(Result<Finished<R>, Error>) + Send + 'static,
) {
    let agents = Agents::start_with(
        &s.db,
        AgentOptions {
            agents: 2,
            ..AgentOptions::default()
        },
    );
    let (tx, rx) = mpsc::channel();
    let db = s.db.clone();
    agents.submit(body, move |r| {
        let durable = db.log().durable_lsn();
        check(r);
        tx.send(durable).unwrap();
    });
    delivered_after_durable(s, what, move || rx.recv().unwrap());
    agents.shutdown();
}

#[test]
fn agents_deliver_a_commit_a_read_only_result_a_rollback_value_and_an_error_after_durable() {
    for p in [CommitProtocol::Elr, CommitProtocol::ElrPipelined] {
        let s = setup(p, 5);
        let t = s.t.clone();
        through_agents(
            s,
            "an agent's commit",
            move |tx| {
                let v = tx.get(&t, b"k")?;
                tx.put(&t, b"k2", b"x")?;
                Ok(Outcome::Commit(v))
            },
            |r| assert!(r.unwrap().committed),
        );
        let s = setup(p, 6);
        let t = s.t.clone();
        through_agents(
            s,
            "an agent's read-only result",
            move |tx| Ok(Outcome::Commit(tx.get(&t, b"k")?)),
            |r| assert_eq!(r.unwrap().value.as_deref(), Some(&b"new"[..])),
        );
        let s = setup(p, 7);
        let t = s.t.clone();
        through_agents(
            s,
            "an agent's rollback value",
            move |tx| Ok(Outcome::Rollback(tx.get(&t, b"k")?)),
            |r| {
                let f = r.unwrap();
                assert!(!f.committed);
                assert_eq!(f.value.as_deref(), Some(&b"new"[..]));
            },
        );
        let s = setup(p, 8);
        let t = s.t.clone();
        through_agents(
            s,
            "an agent's error",
            move |tx| -> Result<Outcome<()>, Error> {
                let v = tx.get(&t, b"k")?;
                Err(Error::NotFound(format!("{v:?} is not what was wanted")))
            },
            |r| assert!(matches!(r, Err(Error::NotFound(_))), "{r:?}"),
        );
    }
}
