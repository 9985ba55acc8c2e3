//! Group commit fills log entries up to the Raft log's largest record (about 1 MiB with
//! the default WAL options): under load, every entry is that large. A node that lags —
//! a new learner, a follower back from a restart — is sent the entries it misses in
//! AppendEntries requests of up to `max_payload_entries` (300) entries each, i.e. up to
//! hundreds of MiB in one frame; and `Peer::append_entries` (node.rs) gives each request
//! `option.hard_ttl()` to complete, which openraft sets to `heartbeat_interval` (50 ms).
//! Encoding, sending, decoding and making tens of MiB durable takes longer than that, so
//! the request times out, the connection is dropped, and openraft sends the same request
//! again: the node never catches up.
//!
//! Here the full-size entries are made directly (one batch just under the record limit
//! per write, which is what a gathered entry is under load), on a one-node cluster; then
//! a learner is added and must catch up on 40 of them (~36 MiB) within 60 s. A control
//! with small entries shows the same steps work.

use crate::common;

use std::time::Duration;

use common::run_bounded;
use sluice_raft::{Batch, BatchResult, ClientError, Node, NodeConfig, Security};

fn node_config(id: u64, dir: &std::path::Path) -> NodeConfig {
    let mut c = NodeConfig::new(
        id,
        dir.join(format!("n{id}")),
        "127.0.0.1:0".parse().unwrap(),
        Security::Insecure,
    );
    c.db = sluice_raft::state_machine_options(sluice::Options::small());
    c.raft.snapshot_policy = openraft::SnapshotPolicy::Never;
    c
}

/// The Raft log's largest record on `node`, as its refusal of a too-large batch says.
async fn max_record(node: &Node) -> usize {
    let err = node
        .write(Batch::new().put("probe", vec![0u8; 8 << 20]))
        .await
        .unwrap_err();
    let ClientError::Refused(msg) = err else {
        panic!("{err:?}")
    };
    let tail = msg.split("largest record, ").nth(1).unwrap();
    tail.split(' ').next().unwrap().parse().unwrap()
}

async fn scenario(value_len: impl Fn(usize) -> usize, entries: usize) {
    let dir = tempfile::tempdir().unwrap();
    let n1 = Node::start(node_config(1, dir.path())).await.unwrap();
    n1.initialize([(1, n1.addr().to_string())].into())
        .await
        .unwrap();
    n1.raft()
        .wait(Some(Duration::from_secs(10)))
        .state(openraft::ServerState::Leader, "leader")
        .await
        .unwrap();
    let max = max_record(&n1).await;
    let len = value_len(max);
    eprintln!("largest record {max} bytes; {entries} entries of a {len}-byte value");
    for i in 0..entries {
        let w = n1
            .write(Batch::new().put(format!("k{i:04}"), vec![i as u8; len]))
            .await
            .unwrap();
        assert_eq!(w.result, BatchResult::Applied);
    }
    let last = n1.status().last_log_index.unwrap();
    let n2 = Node::start(node_config(2, dir.path())).await.unwrap();
    let started = std::time::Instant::now();
    n1.add_learner(2, n2.addr().to_string())
        .await
        .expect("add the learner");
    let caught_up = n2
        .raft()
        .wait(Some(Duration::from_secs(60)))
        .applied_index_at_least(Some(last), "the learner caught up")
        .await;
    let s2 = n2.status();
    eprintln!(
        "after {:?}: learner at log index {:?}, applied {:?}; leader's last index {last}",
        started.elapsed(),
        s2.last_log_index,
        s2.applied_index
    );
    assert!(
        caught_up.is_ok(),
        "the learner did not catch up on {entries} entries of ~{len} bytes within 60 s \
         (it reached log index {:?} of {last}): {caught_up:?}",
        s2.last_log_index
    );
    let _ = n2.shutdown().await;
    let _ = n1.shutdown().await;
}

#[test]
fn a_lagging_node_catches_up_on_a_log_of_small_entries() {
    run_bounded(Duration::from_secs(120), scenario(|_| 1000, 40));
}

#[test]
fn a_lagging_node_catches_up_on_a_log_of_full_size_entries() {
    run_bounded(
        Duration::from_secs(120),
        // A batch as large as a gathered entry gets: just under the record limit.
        scenario(|max| max - 1024, 40),
    );
}
