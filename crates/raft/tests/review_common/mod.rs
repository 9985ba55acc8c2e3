//! Shared by the `review_*` tests: a three-node cluster on 127.0.0.1, every wait bounded.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sluice_raft::{Node, NodeConfig, NodeId, Security};
use sluice_storage::Storage;

/// A node config like the crate's own cluster test: small database, small WAL segments,
/// no automatic snapshots.
pub fn config(id: NodeId, dir: &Path, listen: &str) -> NodeConfig {
    let mut c = NodeConfig::new(
        id,
        dir.join(format!("n{id}")),
        listen.parse().unwrap(),
        Security::Insecure,
    );
    c.db = sluice_raft::state_machine_options(sluice::Options::small());
    c.log.segment_bytes = 64 << 10;
    c.raft.snapshot_policy = openraft::SnapshotPolicy::Never;
    c.raft.max_in_snapshot_log_to_keep = 0;
    c.raft.purge_batch_size = 1;
    c
}

/// The same on a storage of the caller's choice (a `SimStorage` per node).
pub fn config_on(id: NodeId, storage: Arc<dyn Storage>) -> NodeConfig {
    let mut c = config(id, Path::new("/"), "127.0.0.1:0");
    c.storage = storage;
    c
}

/// Runs `f` on a two-thread runtime, within `secs` seconds.
pub fn run<F: std::future::Future<Output = ()>>(secs: u64, f: F) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(secs), f)
            .await
            .unwrap_or_else(|_| panic!("the scenario did not finish within {secs} s"));
    });
}

/// Starts nodes from `configs` and makes them one cluster (initialized on the first).
pub async fn cluster(
    configs: Vec<NodeConfig>,
) -> (BTreeMap<NodeId, Node>, BTreeMap<NodeId, String>) {
    let mut nodes = BTreeMap::new();
    for c in configs {
        let id = c.id;
        nodes.insert(id, Node::start(c).await.unwrap());
    }
    let addrs: BTreeMap<NodeId, String> = nodes
        .iter()
        .map(|(id, n)| (*id, n.addr().to_string()))
        .collect();
    nodes
        .values()
        .next()
        .unwrap()
        .initialize(addrs.clone())
        .await
        .unwrap();
    (nodes, addrs)
}

/// The leader among `nodes`, within 20 s.
pub async fn wait_leader(nodes: &BTreeMap<NodeId, Node>) -> NodeId {
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

/// Each node's role, as it says.
pub fn roles(nodes: &BTreeMap<NodeId, Node>) -> BTreeMap<NodeId, String> {
    nodes.iter().map(|(id, n)| (*id, n.status().role)).collect()
}
