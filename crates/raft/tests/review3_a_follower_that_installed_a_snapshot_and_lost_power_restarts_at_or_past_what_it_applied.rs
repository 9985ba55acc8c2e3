//! Attack on the witness change on a follower: the follower's state machine flushes its
//! own log lazily and relies on its own Raft log's durable `Committed` record. The follower of a
//! three-node cluster (each node on its own simulated disk; snapshots every few entries,
//! the log purged below each) is stopped while the others go on, so the leader purges
//! past it and it must install a snapshot when it comes back; it then applies more
//! entries on top of the installed generation (lazily flushed) and loses power. After
//! the restart, `Node::start` must return with the follower's applied position at or past
//! what it had applied (and answered local reads for) before the power loss, and its
//! local dump must hold every write it held then. Also checked: the cluster's
//! acknowledged writes are all on the restarted follower once it catches up.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{run_bounded, sim_config, snapshot_and_purge_often};
use sluice_raft::{Batch, Client, Consistency, Node, NodeConfig, NodeId, Security};
use sluice_storage::{SimStorage, Storage};

fn config(id: NodeId, sim: &SimStorage, listen: &str) -> NodeConfig {
    let mut c = sim_config(id, sim, &format!("/n{id}"), listen);
    snapshot_and_purge_often(&mut c);
    c
}

async fn write_n(
    leader: &Client,
    tag: &str,
    n: usize,
    acked: &mut BTreeMap<Vec<u8>, Vec<u8>>,
) -> u64 {
    let mut last = 0;
    for i in 0..n {
        let key = format!("{tag}-{i:05}").into_bytes();
        let value = format!("value {tag} {i}").into_bytes();
        let w = leader
            .write(Batch::new().put(key.clone(), value.clone()))
            .await
            .expect("write");
        acked.insert(key, value);
        last = w.log_id.index;
    }
    last
}

#[test]
fn a_follower_restarted_after_a_power_loss_is_at_or_past_what_it_applied() {
    for seed in 1..=3u64 {
        run_bounded(Duration::from_secs(120), scenario(seed));
    }
}

async fn scenario(seed: u64) {
    let sims: BTreeMap<NodeId, SimStorage> = (1..=3)
        .map(|id| (id, SimStorage::new(seed * 100 + id)))
        .collect();
    let mut nodes = BTreeMap::new();
    for id in 1..=3 {
        nodes.insert(
            id,
            Node::start(config(id, &sims[&id], "127.0.0.1:0"))
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
    let mut acked = BTreeMap::new();
    write_n(&client, "a", 10, &mut acked).await;
    // The victim: a node that does not lead.
    let leader = nodes[&1].status().leader.expect("a leader is known");
    let victim: NodeId = if leader == 3 { 2 } else { 3 };

    // The follower stops (cleanly); the leader goes on and purges past it.
    let n3 = nodes.remove(&victim).unwrap();
    n3.shutdown().await.expect("the follower shuts down");
    let last = write_n(&client, "b", 40, &mut acked).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The follower comes back on its address, installs a snapshot, then applies more entries.
    let sim3 = &sims[&victim];
    let n3 = Node::start(config(victim, sim3, &addrs[&victim]))
        .await
        .expect("the follower restarts");
    n3.raft()
        .wait(Some(Duration::from_secs(30)))
        .applied_index_at_least(Some(last), "the follower catches up")
        .await
        .expect("the follower catches up");
    let last = write_n(&client, "c", 5, &mut acked).await;
    n3.raft()
        .wait(Some(Duration::from_secs(30)))
        .applied_index_at_least(Some(last), "the follower applies the later entries")
        .await
        .expect("the follower applies the later entries");
    let installed = sim3
        .pinned()
        .exists(std::path::Path::new(&format!("/n{victim}/sm/CURRENT")))
        .unwrap_or(false);
    let seen_applied = n3.state_machine().last_applied();
    let seen_value = n3
        .read(b"c-00004", Consistency::Local)
        .await
        .expect("local read");
    assert!(
        seen_value.is_some(),
        "seed {seed}: the follower applied c-00004"
    );
    let seen_dump = n3.state_machine().dump().unwrap();

    // Power loss on the follower only.
    sim3.crash();
    let _ = n3.shutdown().await;

    let n3 = Node::start(config(victim, sim3, &addrs[&victim]))
        .await
        .unwrap_or_else(|e| {
            panic!("seed {seed}: the follower does not restart after the power loss: {e}")
        });
    let applied = n3.state_machine().last_applied();
    eprintln!("seed {seed}: installed a snapshot {installed}, applied {seen_applied:?} before, {applied:?} at start");
    assert!(
        applied.map(|l| l.index) >= seen_applied.map(|l| l.index),
        "seed {seed}: the follower restarted with applied {applied:?}, behind the {seen_applied:?} it had applied and served before the power loss (installed a snapshot: {installed})"
    );
    let dump: BTreeMap<_, _> = n3.state_machine().dump().unwrap().into_iter().collect();
    for (k, v) in &seen_dump {
        assert_eq!(
            dump.get(k),
            Some(v),
            "seed {seed}: the follower held {} before the power loss, not after the restart",
            String::from_utf8_lossy(k)
        );
    }
    let last = write_n(&client, "d", 3, &mut acked).await;
    n3.raft()
        .wait(Some(Duration::from_secs(30)))
        .applied_index_at_least(Some(last), "the follower catches up again")
        .await
        .expect("the follower catches up again");
    let dump: BTreeMap<_, _> = n3.state_machine().dump().unwrap().into_iter().collect();
    assert_eq!(
        dump, acked,
        "seed {seed}: the follower holds every acknowledged write"
    );
    n3.shutdown().await.unwrap();
    for (_, n) in nodes {
        n.shutdown().await.unwrap();
    }
}
