//! Checkpoints run on the database's background checkpointer, never on a thread that
//! commits: neither a client calling `commit` nor an agent. A commit only notices that
//! enough log was written and wakes the checkpointer.

use crate::spy;

use sluice::experiment::{Agents, Outcome};
use sluice::{Database, Options};
use sluice_storage::SimStorage;
use spy::Spy;
use std::sync::Arc;
use std::time::Duration;

fn options() -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 16 << 10;
    o
}

/// Enough log for several checkpoints at 16 KiB each.
const TXNS: usize = 400;

#[test]
fn a_committing_client_never_runs_a_checkpoint() {
    let spy = Spy::new(Arc::new(SimStorage::new(21)));
    let db = Database::open_on(spy.clone(), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    spy.forget_control_writes();
    let me = std::thread::current().id();
    for i in 0..TXNS {
        let mut tx = db.begin();
        tx.put(&t, format!("key{i:05}").as_bytes(), [7u8; 200])
            .unwrap();
        tx.commit().unwrap();
    }
    let on_commit_path: Vec<_> = spy
        .control_writes()
        .into_iter()
        .filter(|w| w.thread == me)
        .collect();
    assert!(
        on_commit_path.is_empty(),
        "{} checkpoints ran inside commit()",
        on_commit_path.len()
    );
    // The work was not simply skipped: a checkpoint does happen, on another thread.
    assert!(
        spy.wait_control_write_not_by(me, Duration::from_secs(60)),
        "no checkpoint ran although {TXNS} commits wrote far more than checkpoint_log_bytes"
    );
    db.close().unwrap();
}

#[test]
fn an_agent_never_runs_a_checkpoint() {
    let spy = Spy::new(Arc::new(SimStorage::new(22)));
    let db = Database::open_on(spy.clone(), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    spy.forget_control_writes();
    let agents = Agents::start(&db, 2);
    let done: Vec<_> = (0..TXNS)
        .map(|i| {
            let t = t.clone();
            agents.execute(move |tx| {
                tx.put(&t, format!("key{i:05}").as_bytes(), [7u8; 200])?;
                Ok(Outcome::Commit(()))
            })
        })
        .collect();
    for c in done {
        assert!(c.wait().unwrap().committed);
    }
    agents.shutdown();
    let by_agents: Vec<_> = spy
        .control_writes()
        .into_iter()
        .filter(|w| w.name.starts_with("sluice-agent"))
        .collect();
    assert!(
        by_agents.is_empty(),
        "agents ran {} checkpoints",
        by_agents.len()
    );
    assert!(
        spy.wait_control_write_not_by(std::thread::current().id(), Duration::from_secs(60)),
        "no checkpoint ran"
    );
    db.close().unwrap();
}
