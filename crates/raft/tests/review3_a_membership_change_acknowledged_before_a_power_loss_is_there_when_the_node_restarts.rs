//! Attack on the witness change with membership entries: a membership entry is applied
//! into the state machine lazily (its own log is flushed in the background), and
//! `add_learner`/`change_voters` return once it is applied. Node 1 (one-node cluster on
//! a simulated disk) adds node 2 as a learner and promotes it, then both lose power at
//! once. When `Node::start` returns on node 1, its applied position must be at or past
//! the membership entries it acknowledged, and the membership it reports must name
//! node 2 as a voter.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::{run_bounded, sim_config};
use sluice_raft::{Batch, Node, NodeConfig, NodeId};
use sluice_storage::SimStorage;

fn config(id: NodeId, sim: &SimStorage, listen: &str) -> NodeConfig {
    sim_config(id, sim, &format!("/n{id}"), listen)
}

#[test]
fn membership_acknowledged_before_a_power_loss_is_there_at_restart() {
    for seed in 1..=3u64 {
        run_bounded(Duration::from_secs(60), scenario(seed));
    }
}

async fn scenario(seed: u64) {
    let s1 = SimStorage::new(seed * 10 + 1);
    let s2 = SimStorage::new(seed * 10 + 2);
    let n1 = Node::start(config(1, &s1, "127.0.0.1:0")).await.unwrap();
    let n2 = Node::start(config(2, &s2, "127.0.0.1:0")).await.unwrap();
    let (a1, a2) = (n1.addr().to_string(), n2.addr().to_string());
    n1.initialize(BTreeMap::from([(1, a1.clone())]))
        .await
        .unwrap();
    n1.raft()
        .wait(Some(Duration::from_secs(20)))
        .state(openraft::ServerState::Leader, "lead")
        .await
        .unwrap();
    n1.write(Batch::new().put(b"k".to_vec(), b"v".to_vec()))
        .await
        .unwrap();
    n1.add_learner(2, a2.clone()).await.expect("add learner");
    n1.change_voters(BTreeSet::from([1, 2]))
        .await
        .expect("promote");
    let acked_applied = n1.state_machine().last_applied();
    let voters_before: BTreeSet<NodeId> = n1.status().voters.keys().copied().collect();
    assert_eq!(voters_before, BTreeSet::from([1, 2]));

    // Both lose power at once.
    s1.crash();
    s2.crash();
    let _ = n1.shutdown().await;
    let _ = n2.shutdown().await;

    let n1 = Node::start(config(1, &s1, &a1))
        .await
        .unwrap_or_else(|e| panic!("seed {seed}: node 1 does not restart: {e}"));
    let applied = n1.state_machine().last_applied();
    assert!(
        applied.map(|l| l.index) >= acked_applied.map(|l| l.index),
        "seed {seed}: node 1 restarted with applied {applied:?}, behind the membership changes it acknowledged (applied {acked_applied:?})"
    );
    // openraft publishes its metrics from its core task, after `Raft::new`: wait for
    // them (a bounded wait; the membership it reports is what was recovered).
    n1.raft()
        .wait(Some(Duration::from_secs(20)))
        .voter_ids(
            voters_before.iter().copied(),
            "the voters after the restart",
        )
        .await
        .unwrap_or_else(|e| panic!("seed {seed}: the voters after the restart: {e}"));
    let voters: BTreeSet<NodeId> = n1.status().voters.keys().copied().collect();
    assert_eq!(
        voters, voters_before,
        "seed {seed}: the voters after the restart"
    );
    assert_eq!(
        n1.state_machine().get(b"k").unwrap(),
        Some(b"v".to_vec()),
        "seed {seed}: the acknowledged write after the restart"
    );
    let n2 = Node::start(config(2, &s2, &a2)).await.unwrap();
    n1.raft()
        .wait(Some(Duration::from_secs(20)))
        .applied_index_at_least(acked_applied.map(|l| l.index), "node 1 applies again")
        .await
        .unwrap();
    n1.shutdown().await.unwrap();
    n2.shutdown().await.unwrap();
}
