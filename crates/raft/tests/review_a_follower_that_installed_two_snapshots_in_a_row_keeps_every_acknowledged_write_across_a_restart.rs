//! A follower catches up by snapshot twice in a row (slot `a` → `b`, then `b` → `a`, the
//! old slot cleared and reused), with deletes between the two so that a stale key in a
//! reused slot would show; it then restarts from its directory. Every acknowledged write
//! must be there, no deleted key may come back, its applied position must not go back,
//! and it must keep up with writes after the restart.

use crate::review_common;

use std::collections::BTreeMap;
use std::time::Duration;

use review_common::{config, run, wait_leader};
use sluice_raft::{Batch, Client, Node, NodeId, Security};

fn key(i: usize) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

async fn snapshot_and_purge(n: &Node, last: u64) {
    n.raft().trigger().snapshot().await.unwrap();
    n.raft()
        .wait(Some(Duration::from_secs(20)))
        .metrics(
            |m| m.snapshot.is_some_and(|s| s.index() >= last),
            "snapshot",
        )
        .await
        .unwrap();
    n.raft().trigger().purge_log(last).await.unwrap();
    n.raft()
        .wait(Some(Duration::from_secs(20)))
        .metrics(|m| m.purged.is_some_and(|p| p.index() >= last), "purge")
        .await
        .unwrap();
}

async fn applied_at_least(n: &Node, index: u64) {
    n.raft()
        .wait(Some(Duration::from_secs(20)))
        .applied_index_at_least(Some(index), "catch up")
        .await
        .unwrap_or_else(|e| panic!("node {} did not apply up to {index}: {e}", n.id()));
}

#[test]
fn a_follower_that_installed_two_snapshots_in_a_row_keeps_every_acknowledged_write_across_a_restart(
) {
    run(150, async {
        let dir = tempfile::tempdir().unwrap();
        let mut nodes = BTreeMap::new();
        for id in 1..=3 {
            nodes.insert(
                id,
                Node::start(config(id, dir.path(), "127.0.0.1:0"))
                    .await
                    .unwrap(),
            );
        }
        let addrs: BTreeMap<NodeId, String> = nodes
            .iter()
            .map(|(id, n)| (*id, n.addr().to_string()))
            .collect();
        nodes[&1].initialize(addrs.clone()).await.unwrap();
        let client = Client::new(addrs.values().cloned().collect(), Security::Insecure);
        let mut expected: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut last = 0;
        for i in 0..50 {
            last = client
                .write(Batch::new().put(key(i), "v0"))
                .await
                .unwrap()
                .log_id
                .index();
            expected.insert(key(i), b"v0".to_vec());
        }
        let leader = wait_leader(&nodes).await;
        let f = *nodes.keys().find(|id| **id != leader).unwrap();

        for round in 1..=2usize {
            nodes.remove(&f).unwrap().shutdown().await.unwrap();
            // Overwrite some keys, delete others, add new ones.
            for i in 0..120 {
                let b = match i % 3 {
                    0 => {
                        expected.remove(&key(i));
                        Batch::new().delete(key(i))
                    }
                    1 => {
                        expected.insert(key(i), format!("v{round}").into_bytes());
                        Batch::new().put(key(i), format!("v{round}"))
                    }
                    _ => {
                        let k = key(1000 * round + i);
                        expected.insert(k.clone(), vec![b'z'; 300]);
                        Batch::new().put(k, vec![b'z'; 300])
                    }
                };
                last = client.write(b).await.unwrap().log_id.index();
            }
            let leader = wait_leader(&nodes).await;
            snapshot_and_purge(&nodes[&leader], last).await;
            nodes.insert(
                f,
                Node::start(config(f, dir.path(), &addrs[&f]))
                    .await
                    .unwrap(),
            );
            applied_at_least(&nodes[&f], last).await;
            {
                use openraft::async_runtime::watch::WatchReceiver;
                let m = nodes[&f].raft().metrics().borrow_watched().clone();
                assert!(
                    m.snapshot.is_some_and(|s| s.index() >= last),
                    "round {round}: node {f} caught up by snapshot: {:?}",
                    m.snapshot
                );
            }
            let want: Vec<_> = expected.clone().into_iter().collect();
            assert_eq!(
                nodes[&f].state_machine().dump().unwrap(),
                want,
                "round {round}: node {f} after installing the snapshot"
            );
        }

        // Restart the follower from its directory.
        let applied_before = nodes[&f].state_machine().last_applied();
        nodes.remove(&f).unwrap().shutdown().await.unwrap();
        nodes.insert(
            f,
            Node::start(config(f, dir.path(), &addrs[&f]))
                .await
                .unwrap(),
        );
        let applied_after = nodes[&f].state_machine().last_applied();
        assert!(
            applied_after >= applied_before,
            "node {f}'s applied position went back across the restart: {applied_before:?} -> {applied_after:?}"
        );
        let want: Vec<_> = expected.clone().into_iter().collect();
        assert_eq!(
            nodes[&f].state_machine().dump().unwrap(),
            want,
            "node {f} after restarting on its twice-installed state machine"
        );
        last = client
            .write(Batch::new().put("after", "restart"))
            .await
            .unwrap()
            .log_id
            .index();
        applied_at_least(&nodes[&f], last).await;
        assert_eq!(
            nodes[&f].state_machine().get(b"after").unwrap(),
            Some(b"restart".to_vec())
        );
        for (_, n) in nodes {
            n.shutdown().await.unwrap();
        }
    });
}
