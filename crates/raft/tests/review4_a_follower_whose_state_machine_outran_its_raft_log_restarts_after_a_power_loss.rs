//! Attack on the witness change from the other side: a follower applies committed
//! entries as soon as they are *accepted* by its log store (openraft's local committed is
//! `min(accepted, cluster committed)`, not `flushed`), its state machine commits them
//! with `Durability::Async` and its own log flushes them in the background (50 ms). If
//! the Raft log's flush is slower than that, the state machine is durable *ahead* of the
//! Raft log. The docs only consider the state machine coming back behind the log.
//!
//! Schedule: node 1 leads (L), node 2 (O) is killed; L's Raft log writes and syncs are held
//! while ten entries go to node 3 (F), which makes them durable (they are never
//! committed: L does not have them durably and O is down). L loses power (losing those
//! entries); F stays up (with an election timeout too long to stand in this test). L and
//! O come back and elect a new leader in a new term, which commits a write at the same
//! indexes. As soon as F has accepted that leader (its new vote durable), F's Raft log
//! writes and syncs are held: it truncates its stale tail and appends the new entries (a
//! `TruncateAfter` record and entries, none written), applies them (its state machine
//! flushes on its own) and loses power. Its log comes back with the stale tail (the
//! truncation record lost) while its state machine holds an applied log id of the new
//! term at a lower index than that tail's end: openraft's `get_initial_state` then
//! refuses to start ("inverted log order").
//!
//! Expected (docs: "After a restart nothing goes back ... then it rejoins on its own"):
//! F restarts, and every node ends with every acknowledged write and the same data.

use crate::review4_common::{within, Cluster};

use std::time::Duration;

use openraft::entry::RaftEntry;
use sluice_raft::{Batch, LogRecord, LogStore, NodeConfig, NodeId, StateMachine};
use sluice_storage::Storage;
use std::sync::Arc;

fn tune(c: &mut NodeConfig) {
    c.raft.heartbeat_interval = 100;
    // Node 1 initializes and leads; node 3 (F) never stands for election here.
    let (lo, hi) = match c.id {
        3 => (60_000, 61_000),
        _ => (1_000, 1_500),
    };
    c.raft.election_timeout_min = lo;
    c.raft.election_timeout_max = hi;
}

/// What F's disk holds after its power loss: (the log's last entry id, the state
/// machine's applied id), read as a restart would read them.
fn shape(
    c: &Cluster,
    f: NodeId,
) -> (
    Option<sluice_raft::types::LogId>,
    Option<sluice_raft::types::LogId>,
) {
    let storage: Arc<dyn Storage> = Arc::new(c.slots[&f].sim.pinned());
    let records = LogStore::records(
        storage.clone(),
        format!("/n{f}/raft-log"),
        sluice_wal::LogOptions::default(),
    )
    .expect("read F's raft log");
    let mut entries = std::collections::BTreeMap::new();
    let mut purged = None;
    for (_, r) in records {
        match r {
            LogRecord::Entry(e) => {
                let id = e.log_id();
                entries.split_off(&id.index);
                entries.insert(id.index, id);
            }
            LogRecord::TruncateAfter(last) => {
                entries.split_off(&last.map_or(0, |l| l.index + 1));
            }
            LogRecord::Purged(p) => {
                entries = entries.split_off(&(p.index + 1));
                purged = Some(p);
            }
            _ => {}
        }
    }
    let last = entries.values().next_back().copied().or(purged);
    let sm = StateMachine::open(
        storage,
        format!("/n{f}/sm"),
        sluice_raft::state_machine_options(sluice::Options::small()),
    )
    .expect("open F's state machine");
    let applied = sm.last_applied();
    sm.close().expect("close F's state machine");
    (last, applied)
}

/// Returns whether F's disk came back in the shape that matters (a stale log tail at or
/// past an applied id of a newer term), and why F did not restart if it did not.
fn one_seed(seed: u64) -> (bool, Option<String>) {
    let mut c = Cluster::started(seed, 3, tune);
    for i in 0..5 {
        c.write(&format!("warm-{i}"), "w", 20);
    }
    let l = c.leader(20);
    let f: NodeId = 3;
    assert_ne!(l, f, "seed {seed}: node 3 leads, though it never stands");
    let o: NodeId = if l == 1 { 2 } else { 1 };

    // O down; L's Raft log stops syncing; ten entries reach F, durably, uncommitted.
    c.kill(o);
    let ln = c.node(l);
    let n0 = ln.status().last_log_index.expect("entries");
    c.slots[&l].gate.as_ref().unwrap().close();
    for i in 0..10 {
        let ln = ln.clone();
        c.client.spawn(async move {
            let _ = ln
                .raft()
                .client_write(
                    Batch::new()
                        .put(format!("stale-{i}"), "never committed")
                        .into(),
                )
                .await;
        });
    }
    drop(ln);
    let fnode = c.node(f);
    within(&c.client, 20, "F accepts the stale entries", async {
        fnode
            .raft()
            .wait(Some(Duration::from_secs(15)))
            .log_index_at_least(Some(n0 + 10), "F holds the stale entries")
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: F does not receive the stale entries: {e}"));
    });
    // F's log is not gated: let its flush finish.
    std::thread::sleep(Duration::from_millis(300));
    let t1 = fnode.status().term;
    c.power_loss(l);
    // F is idle now (no leader, and it does not stand). The next sync of its Raft log is
    // its vote for the next leader (saved before it takes that leader's entries); after
    // it, F's Raft log writes and syncs wait.
    c.slots[&f].gate.as_ref().unwrap().close_after_syncs(1);
    let watcher = {
        let fnode = fnode.clone();
        c.client.spawn(async move {
            fnode
                .raft()
                .wait(Some(Duration::from_secs(60)))
                .metrics(
                    |m| m.current_term > t1 && m.current_leader.is_some_and(|x| x != 3),
                    "F follows a new leader",
                )
                .await
                .is_ok()
        })
    };

    // L and O elect a new leader, which commits a write at the stale indexes.
    c.start(o)
        .unwrap_or_else(|e| panic!("seed {seed}: restart O: {e}"));
    c.start(l)
        .unwrap_or_else(|e| panic!("seed {seed}: restart L: {e}"));
    let after = c.write("written-in-the-new-term", "x", 60);
    eprintln!(
        "seed {seed}: stale entries {}..={}, new-term write at {after}",
        n0 + 1,
        n0 + 10
    );
    let followed = within(&c.client, 60, "the watcher", watcher).unwrap();
    let applied = within(&c.client, 30, "F applies", async {
        fnode
            .raft()
            .wait(Some(Duration::from_secs(10)))
            .applied_index_at_least(Some(after), "F applies the new term's write")
            .await
            .is_ok()
    });
    drop(fnode);
    eprintln!("seed {seed}: F followed the new leader: {followed}; F applied the new write with its log held: {applied}");
    // The state machine's own log flushes after 50 ms.
    std::thread::sleep(Duration::from_millis(300));
    c.power_loss(f);

    let (last, sm_applied) = shape(&c, f);
    let walked = match (last, sm_applied) {
        (Some(last), Some(a)) => last < a && last.index >= a.index,
        _ => false,
    };
    eprintln!(
        "seed {seed}: F's disk after the power loss: log ends at {last:?}, state machine applied {sm_applied:?} (the shape that matters: {walked})"
    );
    if let Err(e) = c.start(f) {
        let why = format!("seed {seed}: F (node {f}) does not restart after its power loss (log ends at {last:?}, state machine applied {sm_applied:?}): {e}");
        eprintln!("{why}");
        c.shutdown();
        return (walked, Some(why));
    }
    c.check("after F's restart");
    c.shutdown();
    (walked, None)
}

#[test]
fn a_follower_whose_state_machine_outran_its_raft_log_restarts_and_agrees() {
    let mut walked = 0;
    let seeds: Vec<u64> = match std::env::var("REVIEW4_SEEDS") {
        Ok(v) => v.split(',').map(|s| s.parse().unwrap()).collect(),
        Err(_) => (1..=4).collect(),
    };
    let mut failures = Vec::new();
    for &seed in &seeds {
        let (w, failed) = one_seed(seed);
        if w {
            walked += 1;
        }
        failures.extend(failed);
    }
    eprintln!(
        "the state machine outran a stale log tail in {walked} of {} seeds",
        seeds.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} seeds: {failures:#?}",
        failures.len(),
        seeds.len()
    );
}
