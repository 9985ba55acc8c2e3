//! A node builds a snapshot by the size of its log (`NodeConfig::snapshot_log_bytes`):
//! not before the log has grown by the minimum, then once it has; after that, not before
//! the log has grown by the last snapshot's size as well — a rule on the minimum alone
//! would snapshot there — and then again, with the log purged below each snapshot.
//!
//! The node first takes a state several times the minimum with the rule off, then
//! restarts with it on (the log's growth counts from the start), so that the first
//! snapshot is much larger than the minimum. Writes are paced (about 35 KiB per check of
//! the node, 200 ms) so that a snapshot comes close to where the rule puts it.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{config, run_bounded};
use sluice_raft::{Batch, Node, NodeConfig, Security};

const MIN: u64 = 64 << 10;
const VALUE: usize = 4 << 10;
const PACE: Duration = Duration::from_millis(20);

/// Writes `n` values of `VALUE` bytes, keys from `from`, one every `PACE`; stops early
/// (returning how many it wrote) once `stop` holds.
async fn write(node: &Node, from: usize, n: usize, stop: impl Fn(&Node) -> bool) -> usize {
    for i in 0..n {
        if stop(node) {
            return i;
        }
        let k = from + i;
        node.write(Batch::new().put(format!("k{k:06}"), vec![k as u8; VALUE]))
            .await
            .unwrap();
        tokio::time::sleep(PACE).await;
    }
    n
}

/// The snapshot size once it differs from `old` within `within`; `None` if it stays.
async fn new_snapshot(node: &Node, old: u64, within: Duration) -> Option<u64> {
    let t0 = tokio::time::Instant::now();
    while t0.elapsed() < within {
        let now = node.state_machine().snapshot_bytes();
        if now != old {
            return Some(now);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

async fn start(c: NodeConfig) -> Node {
    let node = Node::start(c).await.unwrap();
    let _ = node
        .initialize(BTreeMap::from([(1, node.addr().to_string())]))
        .await;
    node.raft()
        .wait(Some(Duration::from_secs(20)))
        .state(openraft::ServerState::Leader, "lead")
        .await
        .unwrap();
    node
}

#[test]
fn snapshots_follow_the_size_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    run_bounded(Duration::from_secs(120), async {
        let mut c = config(1, dir.path(), "127.0.0.1:0", Security::Insecure);
        assert_eq!(
            c.raft.snapshot_policy,
            openraft::SnapshotPolicy::Never,
            "NodeConfig::new leaves snapshots to the size rule"
        );
        c.raft.max_in_snapshot_log_to_keep = 0;
        c.raft.purge_batch_size = 1;
        let quiet = Duration::from_millis(1500); // several of the node's checks

        // A state of 80 values (320 KiB), no snapshot.
        let mut off = c.clone();
        off.snapshot_log_bytes = None;
        let node = start(off).await;
        let mut next = write(&node, 0, 80, |_| false).await;
        node.shutdown().await.unwrap();

        let mut on = c.clone();
        on.snapshot_log_bytes = Some(MIN);
        let node = start(on).await;
        // Under the minimum (about 32 KiB of log since the start): no snapshot.
        next += write(&node, next, 8, |_| false).await;
        assert_eq!(
            new_snapshot(&node, 0, quiet).await,
            None,
            "a snapshot below the minimum"
        );

        // Past it: one, of the whole state, with the log purged below it.
        next += write(&node, next, 64, |n| n.state_machine().snapshot_bytes() > 0).await;
        let first = new_snapshot(&node, 0, Duration::from_secs(10))
            .await
            .expect("no snapshot once the log grew past the minimum");
        assert!(
            first > 88 * VALUE as u64,
            "the snapshot holds the state: {first} bytes"
        );
        node.raft()
            .wait(Some(Duration::from_secs(10)))
            .metrics(
                |m| {
                    m.snapshot.is_some() && m.purged.map(|p| p.index) == m.snapshot.map(|s| s.index)
                },
                "the log purged up to the snapshot",
            )
            .await
            .unwrap();

        // Past the minimum again (about 160 KiB), below the snapshot's size: none.
        let some = (first / 2) as usize / VALUE;
        assert!(
            (some * VALUE) as u64 > 2 * MIN,
            "the size rule binds: {first}"
        );
        next += write(&node, next, some, |_| false).await;
        assert_eq!(
            new_snapshot(&node, first, quiet).await,
            None,
            "a snapshot after about {} KiB of log, below the last snapshot's {} KiB",
            (some * VALUE) >> 10,
            first >> 10
        );

        // Past the snapshot's size: the next one, holding more.
        write(&node, next, some + 16, |_| false).await;
        let second = new_snapshot(&node, first, Duration::from_secs(10))
            .await
            .expect("no snapshot once the log grew past the last snapshot's size");
        assert!(second > first, "{second} after {first}");
        node.shutdown().await.unwrap();
    });
}
