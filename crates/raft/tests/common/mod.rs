//! What the cluster tests share: a bounded runtime, node configurations (on the real or
//! the simulated disk), a cluster of nodes in this process on 127.0.0.1, and writers that
//! record what was acknowledged.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use sluice_raft::{Batch, BatchResult, Node, NodeConfig, NodeId, Security};
use sluice_storage::SimStorage;

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

/// Node `id` in `dir` on the simulated disk `sim` (its current incarnation), listening on
/// `listen`, plain TCP, with small database options as a node takes them.
pub fn sim_config(id: NodeId, sim: &SimStorage, dir: &str, listen: &str) -> NodeConfig {
    let mut c = NodeConfig::new(id, dir, listen.parse().unwrap(), Security::Insecure);
    c.db = sluice_raft::state_machine_options(sluice::Options::small());
    c.storage = Arc::new(sim.pinned());
    c
}

/// A snapshot every 6 entries, and the whole log below each purged.
pub fn snapshot_and_purge_often(c: &mut NodeConfig) {
    c.raft.snapshot_policy = openraft::SnapshotPolicy::LogsSinceLast(6);
    c.raft.max_in_snapshot_log_to_keep = 0;
    c.raft.purge_batch_size = 1;
}

/// A two-thread runtime (for tests that drop it between incarnations of a node).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A small seeded generator (xorshift).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

/// The acknowledged writes: key → (value, index of the entry that carried it).
pub type Acked = Arc<Mutex<BTreeMap<Vec<u8>, (Vec<u8>, u64)>>>;

/// Runs `writers` writers of `per_writer` fresh keys (named by `tag`) against `node`, each
/// until its first error; records every acknowledged write in `acked`.
pub async fn write_until_halted(
    node: &Arc<Node>,
    tag: &str,
    writers: u64,
    per_writer: u64,
    acked: &Acked,
) {
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (node, acked) = (node.clone(), acked.clone());
        let tag = tag.to_string();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_writer {
                let key = format!("{tag}-w{w}-{i:05}").into_bytes();
                let value = format!("value of {tag} w{w} {i}").into_bytes();
                match node
                    .write(Batch::new().put(key.clone(), value.clone()))
                    .await
                {
                    Ok(written) => {
                        assert_eq!(written.result, BatchResult::Applied);
                        acked.lock().insert(key, (value, written.log_id.index));
                    }
                    Err(_) => return,
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// One incarnation of a one-node cluster on `sim`, started from `config`, ended by a halt:
/// `warmup` = (writers, writes each) acknowledged first, then a power loss (or, with
/// `kill`, a process kill) armed at the `halt_at`-th storage operation while three
/// writers of `per_writer` writes run; if the armed halt never fired, the node is halted
/// by hand once they end. Returns whether the armed halt fired among the writes.
pub fn run_one_node_until_halted(
    sim: &SimStorage,
    config: impl FnOnce() -> NodeConfig,
    warmup: (u64, u64),
    halt_at: u64,
    kill: bool,
    per_writer: u64,
    acked: &Acked,
) -> bool {
    let rt = runtime();
    let fired = rt.block_on(async {
        let node = Arc::new(Node::start(config()).await.expect("start"));
        let members = BTreeMap::from([(1, node.addr().to_string())]);
        node.initialize(members).await.expect("initialize");
        node.raft()
            .wait(Some(Duration::from_secs(20)))
            .state(openraft::ServerState::Leader, "lead")
            .await
            .expect("the node leads");
        write_until_halted(&node, "a", warmup.0, warmup.1, acked).await;
        if kill {
            sim.kill_at_op(halt_at);
        } else {
            sim.crash_at_op(halt_at);
        }
        let writers = tokio::time::timeout(
            Duration::from_secs(30),
            write_until_halted(&node, "b", 3, per_writer, acked),
        );
        writers.await.expect("writers end");
        let fired = sim.incarnation() != 0;
        if !fired {
            if kill {
                sim.kill_process();
            } else {
                sim.crash();
            }
        }
        sim.disarm_crash();
        fired
    });
    rt.shutdown_timeout(Duration::from_secs(2));
    fired
}
