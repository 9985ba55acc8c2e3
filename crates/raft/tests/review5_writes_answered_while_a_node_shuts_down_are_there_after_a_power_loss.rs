//! Schedule 5 of the review of dc9638a: a write's answer now leaves from a task of its
//! own, spawned by `apply`, once the Raft log's `Committed` record is durable; that task
//! may outlive `Node::shutdown`'s steps (openraft stopped, state machine and log closed).
//! Writers (through the `Client`, over TCP, so that the node is owned by the test alone)
//! keep writing while a one-node cluster shuts down cleanly; then the disk loses power
//! (a clean shutdown must have left everything it answered for durable), and the node
//! restarts: every write acknowledged — also those answered during the shutdown — must
//! be there (Local and Linearizable reads). `Node::shutdown` itself must succeed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use sluice_raft::{Batch, BatchResult, Client, Consistency, Node, NodeConfig, Security};
use sluice_storage::SimStorage;

use crate::common::{runtime, sim_config, Rng};
use crate::review5_common::{eager_sm, lazy_sm, seeds};

fn config(sim: &SimStorage, seed: u64) -> NodeConfig {
    let mut c = sim_config(1, sim, "/n1", "127.0.0.1:0");
    if seed.is_multiple_of(2) {
        lazy_sm(&mut c)
    } else {
        eager_sm(&mut c)
    }
    c
}

fn one_seed(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x94D0_49BB_1331_11EB) | 1);
    let sim = SimStorage::new(seed * 1000 + 7);
    let rt = runtime();
    let node = rt.block_on(async {
        let node = Node::start(config(&sim, seed)).await.expect("start");
        node.initialize(BTreeMap::from([(1, node.addr().to_string())]))
            .await
            .expect("initialize");
        node.raft()
            .wait(Some(Duration::from_secs(20)))
            .state(openraft::ServerState::Leader, "lead")
            .await
            .expect("leads");
        node
    });
    let addr = node.addr().to_string();
    let client_rt = runtime();
    let acked: Arc<Mutex<BTreeMap<Vec<u8>, Vec<u8>>>> = Default::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for w in 0..16 {
        let (acked, stop, addr) = (acked.clone(), stop.clone(), addr.clone());
        tasks.push(client_rt.spawn(async move {
            let client = Client::new(vec![addr], Security::Insecure);
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("w{w}-{i:06}").into_bytes();
                let value = format!("value {w} {i}").into_bytes();
                i += 1;
                match tokio::time::timeout(
                    Duration::from_secs(5),
                    client.write(Batch::new().put(key.clone(), value.clone())),
                )
                .await
                {
                    Ok(Ok(w)) => {
                        assert_eq!(w.result, BatchResult::Applied);
                        acked.lock().insert(key, value);
                    }
                    _ => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(rng.range(200, 900)));
    let before = acked.lock().len();
    let shut =
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await });
    let during = acked.lock().len() - before;
    shut.unwrap_or_else(|_| panic!("seed {seed}: Node::shutdown did not return within 30 s"))
        .unwrap_or_else(|e| {
            panic!("seed {seed}: Node::shutdown with writes in flight failed: {e}")
        });
    // Whatever is still running of the node's tasks ends with its runtime; then the disk
    // loses power: what the clean shutdown did not make durable is gone.
    rt.shutdown_timeout(Duration::from_secs(2));
    sim.crash();
    stop.store(true, Ordering::Relaxed);
    client_rt.block_on(async {
        for t in tasks {
            t.await.expect("a writer panicked");
        }
    });
    let acked = acked.lock().clone();
    assert!(!acked.is_empty(), "seed {seed}: nothing was acknowledged");
    eprintln!(
        "seed {seed}: {} writes acknowledged, {during} of them while the node shut down",
        acked.len()
    );

    let rt = runtime();
    rt.block_on(async {
        let node = Node::start(config(&sim, seed)).await.unwrap_or_else(|e| {
            panic!("seed {seed}: restart after a clean shutdown and a power loss: {e}")
        });
        for (key, value) in &acked {
            let got = node.read(key, Consistency::Local).await.expect("a Local read");
            assert_eq!(
                got.as_ref(),
                Some(value),
                "seed {seed}: {} was acknowledged before or during the node's clean shutdown, and a Local read after its restart answers {:?}",
                String::from_utf8_lossy(key),
                got.as_ref().map(|v| String::from_utf8_lossy(v).into_owned())
            );
        }
        node.raft()
            .wait(Some(Duration::from_secs(20)))
            .state(openraft::ServerState::Leader, "lead again")
            .await
            .expect("the node leads again");
        for (key, value) in acked.iter().rev().take(50) {
            let got = node
                .read(key, Consistency::Linearizable)
                .await
                .expect("a Linearizable read");
            assert_eq!(
                got.as_ref(),
                Some(value),
                "seed {seed}: a Linearizable read of {}",
                String::from_utf8_lossy(key)
            );
        }
        node.shutdown().await.expect("shutdown");
    });
    rt.shutdown_timeout(Duration::from_secs(2));
}

#[test]
fn writes_answered_while_a_node_shuts_down_are_there_after_a_power_loss() {
    for seed in seeds(1..=6) {
        one_seed(seed);
    }
}
