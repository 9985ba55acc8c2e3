//! Three nodes in this process, on 127.0.0.1: writes through a client are committed and
//! applied on every node; the leader is stopped, another takes over, the stopped node
//! restarts on its own data and catches up; a follower kept down while the leader
//! snapshots and purges its log catches up by snapshot. Every wait is bounded.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use common::{assert_all_hold, run_bounded};
use sluice_raft::{Batch, BatchResult, Client, Consistency, Node, NodeConfig, NodeId, Security};

fn config(id: NodeId, dir: &Path, listen: &str) -> NodeConfig {
    let mut c = common::config(id, dir, listen, Security::Insecure);
    tune(&mut c);
    c
}

/// Small log segments, and snapshots and purges only when the test asks.
fn tune(c: &mut NodeConfig) {
    c.log.segment_bytes = 64 << 10;
    c.raft.snapshot_policy = openraft::SnapshotPolicy::Never;
    c.raft.max_in_snapshot_log_to_keep = 0;
    c.raft.purge_batch_size = 1;
}

async fn wait_leader(nodes: &BTreeMap<NodeId, Node>) -> NodeId {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        for n in nodes.values() {
            let s = n.status();
            if s.role == "Leader" {
                return s.id;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no leader within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

#[test]
fn a_three_node_cluster_replicates_and_survives_its_leader() {
    run_bounded(Duration::from_secs(120), scenario());
}

async fn scenario() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, addrs) = common::cluster(3, dir.path(), |_| Security::Insecure, tune).await;
    let client = Client::new(addrs.values().cloned().collect(), Security::Insecure);

    // Writes, a compare-and-set that holds and one that does not.
    let mut expected = BTreeMap::new();
    let mut last = 0;
    for i in 0..100 {
        let w = client
            .write(Batch::new().put(key(i), format!("v{i}")))
            .await
            .unwrap();
        assert_eq!(w.result, BatchResult::Applied);
        expected.insert(key(i), format!("v{i}").into_bytes());
        last = w.log_id.index();
    }
    let w = client
        .write(
            Batch::new()
                .compare_and_set(key(1), Some(b"v1".to_vec()), Some(b"w1".to_vec()))
                .put(key(1000), "x"),
        )
        .await
        .unwrap();
    assert_eq!(w.result, BatchResult::Applied);
    expected.insert(key(1), b"w1".to_vec());
    expected.insert(key(1000), b"x".to_vec());
    let w = client
        .write(Batch::new().put(key(2000), "never").compare_and_set(
            key(2),
            Some(b"nope".to_vec()),
            None,
        ))
        .await
        .unwrap();
    assert_eq!(
        w.result,
        BatchResult::Conflict {
            command: 1,
            current: Some(b"v2".to_vec())
        }
    );
    last = last.max(w.log_id.index());
    assert_eq!(client.read(&key(1)).await.unwrap(), Some(b"w1".to_vec()));
    assert_eq!(
        client.read(&key(2000)).await.unwrap(),
        None,
        "a batch with a failed check applies nothing"
    );

    assert_all_hold(&nodes, last, &expected, "applied what was acknowledged").await;

    // A write sent to a follower is refused, naming the leader.
    let leader = wait_leader(&nodes).await;
    let follower = *nodes.keys().find(|id| **id != leader).unwrap();
    match nodes[&follower].write(Batch::new().put("f", "f")).await {
        Err(sluice_raft::ClientError::NotLeader {
            leader: Some(l), ..
        }) => assert_eq!(l, leader),
        other => panic!("a follower's write: {other:?}"),
    }
    // A local read on a follower is allowed; a linearizable one is refused there.
    assert!(matches!(
        client
            .read_at(&addrs[&follower], &key(1), Consistency::Linearizable)
            .await,
        Err(sluice_raft::ClientError::NotLeader { .. })
    ));

    // Stop the leader: another takes over and serves writes.
    let old = nodes.remove(&leader).unwrap();
    old.shutdown().await.unwrap();
    let new_leader = wait_leader(&nodes).await;
    assert_ne!(new_leader, leader);
    for i in 100..150 {
        let w = client
            .write(Batch::new().put(key(i), format!("v{i}")))
            .await
            .unwrap();
        expected.insert(key(i), format!("v{i}").into_bytes());
        last = w.log_id.index();
    }
    // Every acknowledged write is visible to a linearizable read after the failover.
    for (k, v) in &expected {
        assert_eq!(client.read(k).await.unwrap().as_ref(), Some(v));
    }

    // The old leader restarts on its own data and catches up.
    nodes.insert(
        leader,
        Node::start(config(leader, dir.path(), &addrs[&leader]))
            .await
            .unwrap(),
    );
    assert_all_hold(&nodes, last, &expected, "after the restart").await;

    // A follower kept down while the leader snapshots and purges catches up by snapshot.
    let leader = wait_leader(&nodes).await;
    let down = *nodes.keys().find(|id| **id != leader).unwrap();
    nodes.remove(&down).unwrap().shutdown().await.unwrap();
    for i in 150..400 {
        let w = client
            .write(Batch::new().put(key(i), vec![b'z'; 500]))
            .await
            .unwrap();
        expected.insert(key(i), vec![b'z'; 500]);
        last = w.log_id.index();
    }
    let l = &nodes[&leader];
    l.raft().trigger().snapshot().await.unwrap();
    l.raft()
        .wait(Some(Duration::from_secs(20)))
        .metrics(
            |m| m.snapshot.is_some_and(|s| s.index() >= last),
            "snapshot",
        )
        .await
        .unwrap();
    l.raft().trigger().purge_log(last).await.unwrap();
    l.raft()
        .wait(Some(Duration::from_secs(20)))
        .metrics(|m| m.purged.is_some_and(|p| p.index() >= last), "purge")
        .await
        .unwrap();
    nodes.insert(
        down,
        Node::start(config(down, dir.path(), &addrs[&down]))
            .await
            .unwrap(),
    );
    assert_all_hold(&nodes, last, &expected, "after catching up by snapshot").await;
    {
        use openraft::async_runtime::watch::WatchReceiver;
        let m = nodes[&down].raft().metrics().borrow_watched().clone();
        assert!(
            m.snapshot.is_some_and(|s| s.index() >= last),
            "node {down} caught up by installing the leader's snapshot: {:?}",
            m.snapshot
        );
    }
    let voters: BTreeSet<NodeId> = nodes[&leader].status().voters.keys().copied().collect();
    assert_eq!(voters.len(), 3);
    for (_, n) in nodes {
        n.shutdown().await.unwrap();
    }
}
