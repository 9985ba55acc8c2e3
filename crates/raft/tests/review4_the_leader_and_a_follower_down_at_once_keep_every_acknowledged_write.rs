//! Schedule 3: writers run through the leader L; L and a follower F go down at once (a
//! power loss of both, or in even seeds a power loss of L and a kill of F), leaving the
//! third node T alone (no quorum: no write may be acknowledged meanwhile). They come
//! back one at a time, in an order drawn from the seed: with the first one back, T and
//! it must elect a leader holding every acknowledged write and writes go on; then the
//! other. Every acknowledged write must be on every node, all nodes holding the same
//! data, at both points.

use crate::common::Rng;
use crate::review4_common::{acked_count, slow_elections, Cluster};

use std::time::{Duration, Instant};

use sluice_raft::NodeId;

fn one_seed(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 3);
    let mut c = Cluster::started(seed, 3, slow_elections);
    let writers = c.writers("a", 4);
    std::thread::sleep(Duration::from_millis(rng.range(300, 1_000)));
    let l = c.leader(20);
    let others: Vec<NodeId> = c.slots.keys().copied().filter(|i| *i != l).collect();
    let f = others[rng.range(0, 2) as usize];
    c.power_loss(l);
    if seed.is_multiple_of(2) {
        c.kill(f);
    } else {
        c.power_loss(f);
    }
    // A reply sent just before the halt is recorded by its writer a moment later.
    std::thread::sleep(Duration::from_millis(100));
    let at_down = acked_count(&c.acked);
    std::thread::sleep(Duration::from_millis(rng.range(200, 1_500)));
    assert_eq!(
        acked_count(&c.acked),
        at_down,
        "seed {seed}: a write was acknowledged by one node alone"
    );
    let (first, second) = if rng.range(0, 2) == 0 { (l, f) } else { (f, l) };
    c.start(first)
        .unwrap_or_else(|e| panic!("seed {seed}: node {first} does not restart: {e}"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while acked_count(&c.acked) < at_down + 20 {
        assert!(
            Instant::now() < deadline,
            "seed {seed}: writes do not go on with node {first} back"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    writers.stop(&c.client);
    eprintln!(
        "seed {seed}: L={l} F={f}, {first} back first: {at_down} acknowledged before, {} after",
        acked_count(&c.acked)
    );
    c.check("with one of the two back");
    c.start(second)
        .unwrap_or_else(|e| panic!("seed {seed}: node {second} does not restart: {e}"));
    c.check("with both back");
    c.shutdown();
}

#[test]
fn the_leader_and_a_follower_down_at_once_keep_every_acknowledged_write() {
    for seed in 1..=4 {
        one_seed(seed);
    }
}
