//! Schedule 4: writers run through the leader L of nodes 1–3 while L adds node 4 as a
//! learner and changes the voters (by seed: adds node 4; replaces a follower with node
//! 4; replaces L itself with node 4); L loses power at a moment drawn from the seed
//! (before, during or after the change) and restarts. Afterwards: if the change was
//! acknowledged, the voters are its target; every acknowledged write is on every member
//! and all members hold the same data.

use crate::common::Rng;
use crate::review4_common::{acked_count, slow_elections, within, Cluster};

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sluice_raft::NodeId;

fn one_seed(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 5);
    let mut c = Cluster::started(seed, 3, slow_elections);
    c.add_slot(4);
    c.start(4)
        .unwrap_or_else(|e| panic!("seed {seed}: start node 4: {e}"));
    let addr4 = c.slots[&4].addr.clone().unwrap();
    let writers = c.writers("a", 3);
    std::thread::sleep(Duration::from_millis(rng.range(200, 600)));
    let l = c.leader(20);
    let followers: Vec<NodeId> = (1..=3).filter(|i| *i != l).collect();
    let target: BTreeSet<NodeId> = match seed % 3 {
        0 => BTreeSet::from([1, 2, 3, 4]),
        1 => BTreeSet::from([followers[0], followers[1], 4]),
        _ => BTreeSet::from([l, followers[0], 4]),
    };
    let outcome: Arc<Mutex<Vec<String>>> = Default::default();
    let change = {
        let (ln, target, outcome) = (c.node(l), target.clone(), outcome.clone());
        c.client.spawn(async move {
            let r = ln.add_learner(4, addr4).await;
            outcome.lock().push(format!("add_learner: {r:?}"));
            if r.is_err() {
                return false;
            }
            let r = ln.change_voters(target).await;
            outcome.lock().push(format!("change_voters: {r:?}"));
            r.is_ok()
        })
    };
    // Mostly while the change is in flight (adding the learner takes its catch-up).
    std::thread::sleep(Duration::from_millis(rng.range(0, 150)));
    c.power_loss(l);
    let acknowledged = within(&c.client, 30, "the change's answer", change).unwrap();
    std::thread::sleep(Duration::from_millis(rng.range(0, 500)));
    c.start(l)
        .unwrap_or_else(|e| panic!("seed {seed}: L (node {l}) does not restart: {e}"));
    let at = acked_count(&c.acked);
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked_count(&c.acked) < at + 20 {
        assert!(
            Instant::now() < deadline,
            "seed {seed}: writes do not go on after L's restart ({:?})",
            outcome.lock()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    writers.stop(&c.client);
    let leader = c.leader(20);
    let status = c.node(leader).status();
    let voters: BTreeSet<NodeId> = status.voters.keys().copied().collect();
    eprintln!(
        "seed {seed}: L={l}, target {target:?}: {:?}; now leader {leader}, voters {voters:?}, learners {:?}",
        outcome.lock(),
        status.learners.keys().collect::<Vec<_>>()
    );
    if acknowledged {
        assert_eq!(
            voters,
            target,
            "seed {seed}: the voters after an acknowledged change ({:?})",
            outcome.lock()
        );
    }
    let members: Vec<NodeId> = status
        .voters
        .keys()
        .chain(status.learners.keys())
        .copied()
        .collect();
    c.check_among("after L's restart", Some(&members));
    c.shutdown();
}

#[test]
fn a_leader_that_loses_power_during_a_membership_change_keeps_the_cluster_whole() {
    for seed in 1..=6 {
        one_seed(seed);
    }
}
