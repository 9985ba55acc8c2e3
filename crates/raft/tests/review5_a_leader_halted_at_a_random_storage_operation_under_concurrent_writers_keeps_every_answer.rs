//! Schedule 2 of the review of dc9638a: many concurrent writers (their applies answered
//! from tasks of their own) while the leader loses power at a random operation of its
//! disk (a write or sync of its Raft log or of its state machine's log, a file creation,
//! ...). The leader must restart (no "inverted log order" or any other startup failure:
//! "a restarted node rejoins on its own"), and right after its restart answer a Local
//! read of `ctr` at least as high as any value it had answered a client for (a write it
//! acknowledged or a read it served); every acknowledged write must then be on every
//! node. Two halts per seed, both state-machine flush policies (lazy on even seeds).

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::common::Rng;
use crate::review4_common::{acked_count, Cluster};
use crate::review5_common::{
    assert_no_going_back, counter_and_readers, disk_shape, eager_sm, end_round, lazy_sm, seeds,
    Seen,
};

fn one_seed(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1);
    let tune = if seed.is_multiple_of(2) {
        lazy_sm
    } else {
        eager_sm
    };
    let mut c = Cluster::started(seed, 3, tune);
    let seen = Arc::new(Mutex::new(Seen::default()));
    for round in 0..2 {
        let writers = c.writers(&format!("r{round}"), 8);
        let tasks = counter_and_readers(&c, &seen, 4);
        std::thread::sleep(Duration::from_millis(rng.range(300, 900)));
        let leader = c.leader(30);
        let sim = c.slots[&leader].sim.clone();
        let crashes = sim.crashed_count();
        let at = rng.range(1, 300);
        sim.crash_at_op(at);
        let t0 = Instant::now();
        while sim.crashed_count() == crashes && t0.elapsed() < Duration::from_secs(15) {
            std::thread::sleep(Duration::from_millis(2));
        }
        let halted = sim.crashed_count() > crashes;
        if !halted {
            sim.disarm_crash();
        }
        // Ends the incarnation (a second power loss changes nothing on a halted disk).
        c.power_loss(leader);
        let (committed, last, applied) = disk_shape(&c, leader);
        eprintln!(
            "seed {seed} round {round}: leader {leader} halted at its disk's operation {at} ({}); its disk: Committed {committed:?}, last entry {last:?}, state machine applied {applied:?}",
            if halted { "armed halt fired" } else { "did not fire: plain power loss" }
        );
        c.start(leader).unwrap_or_else(|e| {
            panic!("seed {seed} round {round}: leader {leader} does not restart after a power loss at its disk's operation {at}: {e}")
        });
        assert_no_going_back(
            &c,
            &seen,
            leader,
            &format!("its power loss at operation {at} (round {round})"),
        );
        end_round(&c, tasks, writers, &format!("seed {seed} round {round}"));
    }
    eprintln!(
        "seed {seed}: {} acknowledged writes, {} counter acks",
        acked_count(&c.acked),
        seen.lock().acks
    );
    c.shutdown();
}

#[test]
fn a_leader_halted_at_a_random_storage_operation_keeps_every_answer() {
    for seed in seeds(1..=4) {
        one_seed(seed);
    }
}
