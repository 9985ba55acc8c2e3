//! A node's state machine flushes its own log in the background: the Raft log's durable
//! `Committed` record is what makes an applied entry safe to answer for
//! (`StateMachine::witness_applies_with`). So after a power loss or a kill the state
//! machine may reopen behind what the node acknowledged, and the node must re-apply from
//! the log before it serves anyone. This test halts a one-node cluster on the simulated
//! disk at a random operation while writers run, restarts it on what survived, and checks
//! that when `Node::start` returns the applied position is at or past every acknowledged
//! write, that every acknowledged write is there (locally and by a linearizable read),
//! and that the state machine on its own did come back behind in some runs (so the
//! re-apply path was walked, not assumed).

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{run_one_node_until_halted, runtime, sim_config, Acked, Rng};
use sluice_raft::{Consistency, Node, NodeConfig, StateMachine};
use sluice_storage::{SimStorage, Storage};

const DIR: &str = "/node";

fn config(sim: &SimStorage) -> NodeConfig {
    sim_config(1, sim, DIR, "127.0.0.1:0")
}

#[test]
fn after_a_power_loss_or_kill_a_node_restarts_at_or_past_every_write_it_acknowledged() {
    let mut behind = 0;
    let mut halted_mid_run = 0;
    for seed in 1..=10u64 {
        let sim = SimStorage::new(seed);
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let acked: Acked = Default::default();
        let kill = seed % 3 == 0;

        // First incarnation: a one-node cluster, some writes, then a halt at a random
        // operation while more writes run.
        let warmup = (3, rng.range(5, 40));
        let halt_at = rng.range(1, 60);
        let first = || config(&sim);
        if run_one_node_until_halted(&sim, first, warmup, halt_at, kill, 200, &acked) {
            halted_mid_run += 1;
        }

        let acked = acked.lock().clone();
        let last_acked = acked.values().map(|(_, i)| *i).max();

        // The state machine alone, as the halt left it.
        let alone = StateMachine::open(
            Arc::new(sim.pinned()) as Arc<dyn Storage>,
            format!("{DIR}/sm"),
            sluice_raft::state_machine_options(sluice::Options::small()),
        )
        .expect("open the state machine alone");
        let alone_applied = alone.last_applied().map(|l| l.index);
        alone.close().expect("close");
        if alone_applied < last_acked {
            behind += 1;
        }

        // Second incarnation: the node restarts on what survived.
        let rt = runtime();
        rt.block_on(async {
            let node = Node::start(config(&sim)).await.expect("restart");
            let applied = node.state_machine().last_applied().map(|l| l.index);
            assert!(
                applied >= last_acked,
                "seed {seed}: the node started with applied {applied:?}, but had acknowledged \
                 a write at index {last_acked:?} (its state machine alone was at {alone_applied:?})"
            );
            let data: BTreeMap<_, _> = node.state_machine().dump().unwrap().into_iter().collect();
            for (key, (value, index)) in &acked {
                assert_eq!(
                    data.get(key),
                    Some(value),
                    "seed {seed}: {} (acknowledged at index {index}) after the restart",
                    String::from_utf8_lossy(key)
                );
            }
            node.raft()
                .wait(Some(Duration::from_secs(20)))
                .state(openraft::ServerState::Leader, "lead again")
                .await
                .expect("the node leads again");
            for (key, (value, _)) in acked.iter().take(20) {
                let got = node
                    .read(key, Consistency::Linearizable)
                    .await
                    .expect("read");
                assert_eq!(got.as_ref(), Some(value), "seed {seed}: linearizable read");
            }
            node.shutdown().await.expect("shutdown");
        });
        rt.shutdown_timeout(Duration::from_secs(2));
    }
    assert!(
        behind > 0,
        "in no run did the state machine come back behind what the node acknowledged: the \
         re-apply from the Raft log was never exercised"
    );
    assert!(halted_mid_run > 0, "some halts landed among the writes");
}
