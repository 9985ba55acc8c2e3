//! Schedule 3 of the review of dc9638a: the state machine's database may now be durable
//! AHEAD of the Raft log's `Committed` record (its 50 ms background flush beats the
//! record's flush; openraft then takes the applied position as committed on restart).
//!
//! Under load, a node's Raft log lets a random number (0..12) of syncs through and then
//! holds every write and sync: the entries already durable go on being applied (their
//! `Committed` records are held), and the state machine's own log flushes them (after
//! 50 ms). 400 ms later the node loses power. Its disk then holds a state machine
//! applied past the log's last durable `Committed` record (the test counts the seeds
//! where it does and requires at least one). The node must restart, answer at once a
//! Local read at least as high as it answered before, rejoin, and end with every
//! acknowledged write and the same data as the others. Follower on odd seeds, leader on
//! even ones; then once more with the whole cluster down at once.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::common::Rng;
use crate::review4_common::Cluster;
use crate::review5_common::{
    assert_no_going_back, counter_and_readers, disk_shape, eager_sm, end_round, seeds, Seen,
};

/// Returns whether the node's disk had its state machine ahead of its log's `Committed`.
fn one_seed(seed: u64) -> usize {
    let mut rng = Rng(seed.wrapping_mul(0xA24B_AED4_963E_E407) | 1);
    let mut c = Cluster::started(seed, 3, eager_sm);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut ahead = 0;

    // One node.
    let writers = c.writers("one", 6);
    let tasks = counter_and_readers(&c, &seen, 3);
    std::thread::sleep(Duration::from_millis(rng.range(300, 800)));
    let leader = c.leader(30);
    let target = if seed.is_multiple_of(2) {
        leader
    } else {
        *c.slots.keys().find(|i| **i != leader).unwrap()
    };
    let syncs = rng.range(0, 12) as usize;
    let gate = c.slots[&target].gate.clone().unwrap();
    if syncs == 0 {
        gate.close();
    } else {
        gate.close_after_syncs(syncs);
    }
    std::thread::sleep(Duration::from_millis(400));
    c.power_loss(target);
    let (committed, last, applied) = disk_shape(&c, target);
    if applied > committed {
        ahead += 1;
    }
    eprintln!(
        "seed {seed}: node {target} ({}) held its Raft log after {syncs} syncs, then lost power; its disk: Committed {committed:?}, last entry {last:?}, state machine applied {applied:?}",
        if target == leader { "leader" } else { "follower" }
    );
    assert!(
        applied.is_none_or(|a| last >= Some(a)),
        "seed {seed}: node {target}'s state machine (applied {applied:?}) is past its Raft log (last entry {last:?})"
    );
    c.start(target).unwrap_or_else(|e| {
        panic!("seed {seed}: node {target} (state machine applied {applied:?}, log Committed {committed:?}, last entry {last:?}) does not restart: {e}")
    });
    assert_no_going_back(&c, &seen, target, "its Raft log was held and it lost power");
    end_round(&c, tasks, writers, "one node held and down");

    // The whole cluster: every Raft log held after a few syncs, power loss of all.
    let writers = c.writers("all", 6);
    let tasks = counter_and_readers(&c, &seen, 3);
    std::thread::sleep(Duration::from_millis(rng.range(300, 800)));
    let ids: Vec<_> = c.slots.keys().copied().collect();
    for id in &ids {
        let gate = c.slots[id].gate.clone().unwrap();
        gate.close_after_syncs(rng.range(1, 8) as usize);
    }
    std::thread::sleep(Duration::from_millis(400));
    for id in &ids {
        c.power_loss(*id);
    }
    let mut shapes = Vec::new();
    for id in &ids {
        let (committed, last, applied) = disk_shape(&c, *id);
        if applied > committed {
            ahead += 1;
        }
        shapes.push((*id, committed, last, applied));
    }
    eprintln!(
        "seed {seed}: whole cluster down; (node, Committed, last entry, applied): {shapes:?}"
    );
    for id in &ids {
        c.start(*id).unwrap_or_else(|e| {
            panic!("seed {seed}: node {id} does not restart after the whole cluster's power loss ({shapes:?}): {e}")
        });
        assert_no_going_back(&c, &seen, *id, "the whole cluster's power loss");
    }
    end_round(&c, tasks, writers, "whole cluster held and down");
    c.shutdown();
    ahead
}

#[test]
fn a_node_whose_state_machine_is_durable_past_its_committed_record_restarts_and_converges() {
    let seeds = seeds(1..=4);
    let mut ahead = 0;
    for &seed in &seeds {
        ahead += one_seed(seed);
    }
    eprintln!("a state machine was durable past its log's Committed record on {ahead} disks");
    assert!(
        ahead > 0,
        "in no run was a state machine durable past its Raft log's Committed record: the schedule missed its target"
    );
}
