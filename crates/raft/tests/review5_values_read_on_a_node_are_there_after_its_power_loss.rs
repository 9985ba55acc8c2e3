//! Schedule 1 of the review of dc9638a: entries are readable once applied, before the Raft
//! log's `Committed` record that witnesses them is durable, and every read `settle`s
//! (waits for that witness) before it answers.
//!
//! A three-node cluster whose state machines flush their own log only every 5 s (so after
//! a power loss a state machine is far behind, and what it applied comes back only from
//! the Raft log's `Committed` record). A serial writer increments `ctr`; readers read it
//! (Local: `Node::read`, `Client::read_at`, `Client::dump_at`; and Linearizable) on every
//! node. The target node (a follower or the leader, by seed) loses power; on half the
//! seeds its Raft log's writes and syncs are held first for a few milliseconds (no new
//! `Committed` record can become durable, while entries already durable go on being
//! applied and read). It restarts, and at once a Local read on it must answer at least
//! every value it answered a client for before (a read's value or, on the leader, an
//! acknowledged write) — docs/replication.md, "After a restart nothing goes back". Then
//! every acknowledged write must be on every node.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::common::Rng;
use crate::review4_common::{acked_count, Cluster};
use crate::review5_common::{
    assert_no_going_back, counter_and_readers, disk_shape, end_round, lazy_sm, seeds, Seen,
};

fn one_seed(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut c = Cluster::started(seed, 3, lazy_sm);
    let seen = Arc::new(Mutex::new(Seen::default()));
    for round in 0..2 {
        let writers = c.writers(&format!("r{round}"), 4);
        let tasks = counter_and_readers(&c, &seen, 6);
        std::thread::sleep(Duration::from_millis(rng.range(400, 1200)));
        let leader = c.leader(30);
        let target = if (seed + round).is_multiple_of(2) {
            leader
        } else {
            *c.slots.keys().find(|i| **i != leader).unwrap()
        };
        let hold = (seed / 2 + round) % 2 == 1;
        if hold {
            c.slots[&target].gate.as_ref().unwrap().close();
            std::thread::sleep(Duration::from_millis(rng.range(1, 40)));
        }
        c.power_loss(target);
        let (committed, last, applied) = disk_shape(&c, target);
        eprintln!(
            "seed {seed} round {round}: node {target} ({}) lost power{}; its disk: Committed {committed:?}, last entry {last:?}, state machine applied {applied:?}; answered before: {:?}",
            if target == leader { "leader" } else { "follower" },
            if hold { " with its Raft log held" } else { "" },
            seen.lock().by_node.get(&target)
        );
        c.start(target).unwrap_or_else(|e| {
            panic!("seed {seed} round {round}: node {target} does not restart after its power loss: {e}")
        });
        assert_no_going_back(
            &c,
            &seen,
            target,
            &format!("its power loss (round {round})"),
        );
        end_round(&c, tasks, writers, &format!("seed {seed} round {round}"));
    }
    let s = seen.lock();
    eprintln!(
        "seed {seed}: {} reads, {} counter acks, {} acknowledged writes",
        s.reads,
        s.acks,
        acked_count(&c.acked)
    );
    assert!(
        s.reads > 0 && s.acks > 0,
        "seed {seed}: nothing was read or acknowledged"
    );
    drop(s);
    c.shutdown();
}

#[test]
fn values_read_on_a_node_are_there_after_its_power_loss() {
    for seed in seeds(1..=4) {
        one_seed(seed);
    }
}
