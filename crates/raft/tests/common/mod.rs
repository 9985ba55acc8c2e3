//! What the cluster tests share: a bounded runtime, node configurations and a cluster of
//! nodes in this process on 127.0.0.1.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

use sluice_raft::{Node, NodeConfig, NodeId, Security};

/// Runs `scenario` on a two-thread runtime, failing if it takes longer than `limit`.
pub fn run_bounded(limit: Duration, scenario: impl Future<Output = ()>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(limit, scenario)
            .await
            .unwrap_or_else(|_| panic!("the scenario did not finish in {limit:?}"));
    });
}

/// Node `id` in `dir/n{id}`, listening on `listen`, with small database options.
pub fn config(id: NodeId, dir: &Path, listen: &str, security: Security) -> NodeConfig {
    let mut c = NodeConfig::new(
        id,
        dir.join(format!("n{id}")),
        listen.parse().unwrap(),
        security,
    );
    c.db = sluice_raft::state_machine_options(sluice::Options::small());
    c
}

/// Starts nodes `1..=n` (`security(id)` each) and makes them a cluster; returns them and
/// their addresses.
pub async fn cluster(
    n: NodeId,
    dir: &Path,
    security: impl Fn(NodeId) -> Security,
    tune: impl Fn(&mut NodeConfig),
) -> (BTreeMap<NodeId, Node>, BTreeMap<NodeId, String>) {
    let mut nodes = BTreeMap::new();
    for id in 1..=n {
        let mut c = config(id, dir, "127.0.0.1:0", security(id));
        tune(&mut c);
        nodes.insert(id, Node::start(c).await.unwrap());
    }
    let addrs: BTreeMap<NodeId, String> = nodes
        .iter()
        .map(|(id, n)| (*id, n.addr().to_string()))
        .collect();
    nodes[&1].initialize(addrs.clone()).await.unwrap();
    (nodes, addrs)
}

/// Waits until every node has applied up to `last`, then checks each holds exactly
/// `expected`.
pub async fn assert_all_hold(
    nodes: &BTreeMap<NodeId, Node>,
    last: u64,
    expected: &BTreeMap<Vec<u8>, Vec<u8>>,
    when: &str,
) {
    let want: Vec<_> = expected.clone().into_iter().collect();
    for (id, n) in nodes {
        n.raft()
            .wait(Some(Duration::from_secs(20)))
            .applied_index_at_least(Some(last), "catch up")
            .await
            .unwrap_or_else(|e| panic!("node {id} did not apply up to {last} ({when}): {e}"));
        assert_eq!(n.state_machine().dump().unwrap(), want, "node {id} {when}");
    }
}
