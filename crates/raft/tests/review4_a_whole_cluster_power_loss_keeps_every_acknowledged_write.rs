//! Schedule 2: writers run through the leader; all three nodes lose power at once (one
//! after the other, with nothing in between), at a moment drawn from the seed; they
//! restart in an order drawn from the seed. Every acknowledged write must be on every
//! node and all nodes must hold the same data. Then it happens once more, the second
//! power loss armed at a random storage operation of the leader (mid-flush, mid-apply),
//! the others lose power right after.

use crate::common::Rng;
use crate::review4_common::{acked_count, slow_elections, Cluster};

use std::time::{Duration, Instant};

use sluice_raft::NodeId;

fn restart_all(c: &mut Cluster, rng: &mut Rng) {
    let mut order: Vec<NodeId> = vec![1, 2, 3];
    let k = rng.range(0, 3) as usize;
    order.rotate_left(k);
    for id in order {
        let seed = c.seed;
        c.start(id).unwrap_or_else(|e| {
            panic!("seed {seed}: node {id} does not restart after the power loss: {e}")
        });
        std::thread::sleep(Duration::from_millis(rng.range(0, 300)));
    }
}

fn one_seed(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
    let mut c = Cluster::started(seed, 3, slow_elections);

    // First round: all lose power at a moment drawn from the seed.
    let writers = c.writers("a", 4);
    std::thread::sleep(Duration::from_millis(rng.range(300, 1_200)));
    for id in 1..=3 {
        c.power_loss(id);
    }
    writers.stop(&c.client);
    let first = acked_count(&c.acked);
    restart_all(&mut c, &mut rng);
    c.check("after the first whole-cluster power loss");

    // Second round: armed at a storage operation of the leader.
    let l = c.leader(20);
    let writers = c.writers("b", 4);
    std::thread::sleep(Duration::from_millis(200));
    let before_arm = c.slots[&l].sim.incarnation();
    c.slots[&l].sim.crash_at_op(rng.range(1, 200));
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.slots[&l].sim.incarnation() == before_arm && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    c.slots[&l].sim.disarm_crash();
    for id in 1..=3 {
        c.power_loss(id);
    }
    writers.stop(&c.client);
    eprintln!(
        "seed {seed}: {first} acknowledged before the first power loss, {} before the second",
        acked_count(&c.acked)
    );
    restart_all(&mut c, &mut rng);
    c.check("after the second whole-cluster power loss");
    c.shutdown();
}

#[test]
fn a_whole_cluster_power_loss_keeps_every_acknowledged_write_on_every_node() {
    for seed in 1..=4 {
        one_seed(seed);
    }
}
