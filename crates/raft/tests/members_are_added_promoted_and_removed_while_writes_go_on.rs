//! Membership changes through the client API: a fourth node joins as a learner (and
//! catches up with what was written before), is promoted to a voter, and a voter is
//! removed and stopped; writes go on throughout and every acknowledged one is on every
//! member. Bounded in time; loopback only.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::{assert_all_hold, config, run_bounded};
use sluice_raft::{Batch, Client, Node, NodeId, Security};

#[test]
fn members_are_added_promoted_and_removed_while_writes_go_on() {
    run_bounded(Duration::from_secs(120), scenario());
}

async fn write_some(
    client: &Client,
    from: usize,
    to: usize,
    expected: &mut BTreeMap<Vec<u8>, Vec<u8>>,
) -> u64 {
    let mut last = 0;
    for i in from..to {
        let (k, v) = (
            format!("k{i:05}").into_bytes(),
            format!("v{i}").into_bytes(),
        );
        let w = client
            .write(Batch::new().put(k.clone(), v.clone()))
            .await
            .unwrap();
        expected.insert(k, v);
        last = w.log_id.index();
    }
    last
}

async fn scenario() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, addrs) = common::cluster(3, dir.path(), |_| Security::Insecure, |_| {}).await;
    let client = Client::new(addrs.values().cloned().collect(), Security::Insecure);
    let mut expected = BTreeMap::new();
    write_some(&client, 0, 50, &mut expected).await;

    // A fourth node joins as a learner and catches up with what was written before.
    let four = Node::start(config(4, dir.path(), "127.0.0.1:0", Security::Insecure))
        .await
        .unwrap();
    client
        .add_learner(4, four.addr().to_string())
        .await
        .unwrap();
    nodes.insert(4, four);
    let s = nodes[&1].status();
    assert!(s.learners.contains_key(&4), "node 4 is a learner: {s:?}");
    assert!(!s.voters.contains_key(&4));
    let last = write_some(&client, 50, 80, &mut expected).await;
    assert_all_hold(&nodes, last, &expected, "").await;

    // Promoted to a voter.
    client
        .change_voters(BTreeSet::from([1, 2, 3, 4]))
        .await
        .unwrap();
    let last = write_some(&client, 80, 100, &mut expected).await;
    assert_all_hold(&nodes, last, &expected, "").await;
    for n in nodes.values() {
        n.raft()
            .wait(Some(Duration::from_secs(20)))
            .metrics(
                |m| m.membership_config.membership().voter_ids().count() == 4,
                "4 voters",
            )
            .await
            .unwrap();
    }

    // A voter (not the leader) is removed, then stopped: the other three go on.
    let leader = nodes
        .values()
        .find(|n| n.status().role == "Leader")
        .map(|n| n.id())
        .unwrap();
    let gone = *nodes.keys().find(|id| **id != leader && **id != 4).unwrap();
    let voters: BTreeSet<NodeId> = [1, 2, 3, 4].into_iter().filter(|id| *id != gone).collect();
    client.change_voters(voters.clone()).await.unwrap();
    nodes.remove(&gone).unwrap().shutdown().await.unwrap();
    let last = write_some(&client, 100, 130, &mut expected).await;
    assert_all_hold(&nodes, last, &expected, "").await;
    for n in nodes.values() {
        let s = n.status();
        let have: BTreeSet<NodeId> = s.voters.keys().copied().collect();
        assert_eq!(have, voters, "node {} sees the voters without {gone}", s.id);
        assert!(
            !s.learners.contains_key(&gone),
            "node {}: {gone} is not kept as a learner",
            s.id
        );
    }
    for (_, n) in nodes {
        n.shutdown().await.unwrap();
    }
}
