//! Snapshots are built (every 20 entries) and local dumps read while concurrent writers
//! keep every node applying: a scan and an apply must never deadlock each other (a
//! snapshot build that failed that way stopped its node). At the end every node is up and
//! holds every acknowledged write. Bounded in time; loopback only.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{assert_all_hold, run_bounded};
use sluice_raft::{Batch, Client, Consistency, Security};

#[test]
fn snapshots_and_dumps_taken_under_load_stop_no_node() {
    run_bounded(Duration::from_secs(120), scenario());
}

async fn scenario() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, addrs) = common::cluster(
        3,
        dir.path(),
        |_| Security::Insecure,
        |c| {
            c.raft.snapshot_policy = openraft::SnapshotPolicy::LogsSinceLast(20);
        },
    )
    .await;
    let all: Vec<String> = addrs.values().cloned().collect();
    let client = Arc::new(Client::new(all.clone(), Security::Insecure));
    let mut writers = Vec::new();
    for w in 0..8 {
        let client = client.clone();
        writers.push(tokio::spawn(async move {
            let mut acked = BTreeMap::new();
            let mut last = 0;
            for i in 0..300 {
                let (k, v) = (format!("w{w}-{i:04}").into_bytes(), vec![w as u8; 64]);
                let r = client
                    .write(Batch::new().put(k.clone(), v.clone()))
                    .await
                    .unwrap();
                acked.insert(k, v);
                last = r.log_id.index();
            }
            (acked, last)
        }));
    }
    let reader = {
        let (client, all) = (client.clone(), all.clone());
        tokio::spawn(async move {
            let mut dumps = 0;
            for round in 0..400 {
                let addr = &all[round % all.len()];
                client.dump_at(addr, Consistency::Local).await.unwrap();
                dumps += 1;
            }
            dumps
        })
    };
    let mut expected = BTreeMap::new();
    let mut last = 0;
    for w in writers {
        let (acked, l) = w.await.unwrap();
        expected.extend(acked);
        last = last.max(l);
    }
    assert_eq!(reader.await.unwrap(), 400);
    for n in nodes.values() {
        assert_ne!(n.status().role, "Shutdown", "node {} stopped", n.id());
        let snap = {
            use openraft::async_runtime::watch::WatchReceiver;
            n.raft().metrics().borrow_watched().snapshot
        };
        assert!(snap.is_some(), "node {} built a snapshot", n.id());
    }
    assert_all_hold(&nodes, last, &expected, "after the load").await;
    for (_, n) in nodes {
        n.shutdown().await.unwrap();
    }
}
