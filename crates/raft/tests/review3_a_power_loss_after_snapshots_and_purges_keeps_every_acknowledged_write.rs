//! Attack on the witness change (`StateMachine::witness_applies_with`): the state
//! machine's own log is flushed lazily, and the Raft log is purged below each snapshot.
//! A one-node cluster snapshots every few entries and purges everything below each
//! snapshot (`max_in_snapshot_log_to_keep = 0`, `purge_batch_size = 1`), so at a power
//! loss (or a kill) the state machine's lazily flushed applies past the last snapshot are
//! only in the Raft log, and the log below it is gone. The halt lands at a random
//! operation (during applies, snapshot builds, purges, or right after one). After the
//! restart, `Node::start` must succeed (no "Cannot re-apply logs ... purged"), its
//! applied position must be at or past every acknowledged write, and every acknowledged
//! write must be there. A second halt is armed during the restart itself (the re-apply,
//! a snapshot restore) in half of the runs, and the node restarted once more.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{
    run_one_node_until_halted, runtime, sim_config, snapshot_and_purge_often, Acked, Rng,
};
use sluice_raft::{Node, NodeConfig};
use sluice_storage::{SimStorage, Storage};

const DIR: &str = "/node";

fn config(sim: &SimStorage) -> NodeConfig {
    let mut c = sim_config(1, sim, DIR, "127.0.0.1:0");
    snapshot_and_purge_often(&mut c);
    c
}

/// Restarts the node and checks it holds every acknowledged write; returns whether a
/// halt armed during the restart fired.
fn restart_and_check(
    sim: &SimStorage,
    seed: u64,
    acked: &Acked,
    halt_during: Option<(u64, bool)>,
    round: &str,
) -> bool {
    let acked_now = acked.lock().clone();
    let last_acked = acked_now.values().map(|(_, i)| *i).max();
    let rt = runtime();
    let fired = rt.block_on(async {
        if let Some((n, kill)) = halt_during {
            if kill {
                sim.kill_at_op(n);
            } else {
                sim.crash_at_op(n);
            }
        }
        let before = sim.incarnation();
        let started = Node::start(config(sim)).await;
        if halt_during.is_some() && sim.incarnation() != before {
            // The halt fired during the restart: the node is dead, whatever start said.
            if let Ok(node) = started {
                drop(node);
            }
            sim.disarm_crash();
            return true;
        }
        let node = started.unwrap_or_else(|e| {
            panic!("seed {seed} {round}: the node does not restart: {e}")
        });
        let fired_after = halt_during.is_some() && sim.incarnation() != before;
        sim.disarm_crash();
        if fired_after {
            return true;
        }
        let applied = node.state_machine().last_applied().map(|l| l.index);
        eprintln!("seed {seed} {round}: acked {} last acked {last_acked:?} applied {applied:?} purged {:?}", acked_now.len(), { use openraft::async_runtime::watch::WatchReceiver; node.raft().metrics().borrow_watched().purged });
        assert!(
            applied >= last_acked,
            "seed {seed} {round}: the node started with applied {applied:?}, but had acknowledged a write at index {last_acked:?}"
        );
        let data: BTreeMap<_, _> = node.state_machine().dump().unwrap().into_iter().collect();
        for (key, (value, index)) in &acked_now {
            assert_eq!(
                data.get(key),
                Some(value),
                "seed {seed} {round}: {} (acknowledged at index {index}) after the restart",
                String::from_utf8_lossy(key)
            );
        }
        node.raft()
            .wait(Some(Duration::from_secs(20)))
            .state(openraft::ServerState::Leader, "lead again")
            .await
            .unwrap_or_else(|e| panic!("seed {seed} {round}: the node does not lead again: {e}"));
        node.shutdown().await.expect("shutdown");
        false
    });
    rt.shutdown_timeout(Duration::from_secs(2));
    fired
}

#[test]
fn a_node_halted_among_snapshots_and_purges_restarts_with_every_acknowledged_write() {
    let mut purged_runs = 0;
    for seed in 1..=12u64 {
        let sim = SimStorage::new(seed * 7919);
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let acked: Acked = Default::default();
        let kill = seed % 4 == 0;

        let warmup = (2, rng.range(10, 40));
        let halt_at = rng.range(1, 300);
        let first = || config(&sim);
        run_one_node_until_halted(&sim, first, warmup, halt_at, kill, 300, &acked);

        // The log was purged below a snapshot (the attack needs it).
        let snaps = sim
            .pinned()
            .list(std::path::Path::new("/node/sm/snapshots"))
            .unwrap_or_default();
        if snaps.iter().any(|n| n.ends_with(".snap")) {
            purged_runs += 1;
        }

        // Half of the runs: a second halt during the restart (re-apply, snapshot restore).
        let halt_during = (seed % 2 == 1).then(|| (rng.range(1, 60), seed % 3 == 0));
        let fired = restart_and_check(&sim, seed, &acked, halt_during, "first restart");
        if fired {
            restart_and_check(
                &sim,
                seed,
                &acked,
                None,
                "restart after a halt during the restart",
            );
        }
    }
    assert!(
        purged_runs > 0,
        "no run built a snapshot: the attack was not walked"
    );
}
