//! Schedule 1: writers run through the leader L; a follower F loses power and restarts
//! at once (behind, and with whatever of its unsynced tail the disk kept); soon after,
//! before F need have caught up, L is killed (a process kill in even seeds, a power loss
//! in odd ones). F and the third node T must elect a leader holding every acknowledged
//! write; writes go on; then L comes back. Every acknowledged write must be on every
//! node, and all nodes must hold the same data, both with L down and after it is back.

use crate::common::Rng;
use crate::review4_common::{acked_count, slow_elections, Cluster};

use std::time::{Duration, Instant};

use sluice_raft::NodeId;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn one_seed(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut c = Cluster::started(seed, 3, slow_elections);
    let writers = c.writers("a", 4);
    std::thread::sleep(ms(rng.range(300, 900)));
    let l = c.leader(20);
    let others: Vec<NodeId> = c.slots.keys().copied().filter(|i| *i != l).collect();
    let f = others[(seed % 2) as usize];
    let before = acked_count(&c.acked);

    c.power_loss(f);
    std::thread::sleep(ms(rng.range(0, 200)));
    c.start(f)
        .unwrap_or_else(|e| panic!("seed {seed}: F (node {f}) does not restart: {e}"));
    std::thread::sleep(ms(rng.range(0, 300)));
    if seed.is_multiple_of(2) {
        c.kill(l);
    } else {
        c.power_loss(l);
    }
    let at_kill = acked_count(&c.acked);
    // Writes go on through the new leader.
    let deadline = Instant::now() + Duration::from_secs(20);
    while acked_count(&c.acked) < at_kill + 30 {
        assert!(
            Instant::now() < deadline,
            "seed {seed}: writes do not go on after L (node {l}) was killed ({} acknowledged)",
            acked_count(&c.acked)
        );
        std::thread::sleep(ms(50));
    }
    writers.stop(&c.client);
    eprintln!(
        "seed {seed}: L={l} F={f}: {before} acknowledged before F's power loss, {at_kill} before L's end, {} in all",
        acked_count(&c.acked)
    );
    c.check("with L down");
    c.start(l)
        .unwrap_or_else(|e| panic!("seed {seed}: L (node {l}) does not restart: {e}"));
    c.check("with L back");
    c.shutdown();
}

#[test]
fn a_follower_back_from_a_power_loss_and_the_third_node_keep_every_acknowledged_write() {
    for seed in 1..=4 {
        one_seed(seed);
    }
}
