//! Schedule 4 of the review of dc9638a: reads answered (Local on every node, Linearizable
//! through the leader, through `Node::read` and the `Client`), then the whole cluster
//! loses power at once, at a random moment of the load (state machines flushing their
//! own log only every 5 s, so what they applied comes back from the Raft logs alone).
//! After the restart no read — Local on each node right after it starts, before the
//! cluster has a leader; then Linearizable through the `Client` — may answer an older
//! `ctr` than one answered before (per node for Local reads; any answer at all for the
//! Linearizable read, which starts after every earlier answer), and every acknowledged
//! write must be on every node. Three rounds per seed.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::common::Rng;
use crate::review4_common::Cluster;
use crate::review5_common::{
    assert_no_going_back, counter_and_readers, end_round, lazy_sm, linearizable_ctr, seeds, Seen,
};

fn one_seed(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0xBF58_476D_1CE4_E5B9) | 1);
    let mut c = Cluster::started(seed, 3, lazy_sm);
    let seen = Arc::new(Mutex::new(Seen::default()));
    for round in 0..3 {
        let writers = c.writers(&format!("r{round}"), 4);
        let tasks = counter_and_readers(&c, &seen, 6);
        std::thread::sleep(Duration::from_millis(rng.range(300, 1500)));
        let mut ids: Vec<_> = c.slots.keys().copied().collect();
        // A random order of the power losses (microseconds apart).
        let k = rng.range(0, 3) as usize;
        ids.rotate_left(k);
        for id in &ids {
            c.power_loss(*id);
        }
        let before = seen.lock().global;
        for id in &ids {
            c.start(*id).unwrap_or_else(|e| {
                panic!("seed {seed} round {round}: node {id} does not restart after the whole cluster's power loss: {e}")
            });
            assert_no_going_back(
                &c,
                &seen,
                *id,
                &format!("the whole cluster's power loss (round {round})"),
            );
        }
        let lin = linearizable_ctr(&c, 60);
        assert!(
            lin >= before.0,
            "seed {seed} round {round}: ctr = {} was answered ({} on node {}) before the whole cluster lost power, but a Linearizable read after the restart answers {lin}",
            before.0,
            before.1,
            before.2
        );
        eprintln!(
            "seed {seed} round {round}: Linearizable ctr after the restart {lin} (highest answered before: {before:?})"
        );
        end_round(&c, tasks, writers, &format!("seed {seed} round {round}"));
    }
    c.shutdown();
}

#[test]
fn no_read_after_a_whole_cluster_power_loss_answers_older_than_one_before() {
    for seed in seeds(1..=4) {
        one_seed(seed);
    }
}
