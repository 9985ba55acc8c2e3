//! Schedule 5: one writer sets a register (`reg`) to 1, 2, 3, ... through whichever node
//! leads; readers read it `Linearizable` through whichever node says it leads. The
//! leader loses power (odd seeds) or is killed (even seeds), comes back, and then the
//! next leader goes the same way. A linearizable read that succeeds must see at least
//! the last value acknowledged before the read began, and no value that was never
//! written (past the highest one attempted when it returned).

use crate::common::Rng;
use crate::review4_common::{slow_elections, Cluster};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use sluice_raft::{Batch, Consistency};

fn one_seed(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 7);
    let mut c = Cluster::started(seed, 3, slow_elections);
    let acked_hi = Arc::new(AtomicU64::new(0));
    let attempted_hi = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let violations: Arc<Mutex<Vec<String>>> = Default::default();
    let reads_ok = Arc::new(AtomicU64::new(0));

    let writer = {
        let (live, acked_hi, attempted_hi, stop) = (
            c.live.clone(),
            acked_hi.clone(),
            attempted_hi.clone(),
            stop.clone(),
        );
        c.client.spawn(async move {
            let mut next = 1u64;
            while !stop.load(Ordering::Relaxed) {
                let leader = live
                    .lock()
                    .values()
                    .find(|n| n.status().role == "Leader")
                    .cloned();
                let Some(leader) = leader else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                attempted_hi.fetch_max(next, Ordering::SeqCst);
                let b = Batch::new().put("reg", format!("{next:010}"));
                match tokio::time::timeout(Duration::from_secs(5), leader.write(b)).await {
                    Ok(Ok(_)) => {
                        acked_hi.fetch_max(next, Ordering::SeqCst);
                        next += 1;
                    }
                    // Whatever happened, the next try writes a greater value (a value
                    // once attempted may still show up later).
                    _ => {
                        next += 1;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
        })
    };
    let mut readers = Vec::new();
    for _ in 0..2 {
        let (live, acked_hi, attempted_hi, stop, violations, reads_ok) = (
            c.live.clone(),
            acked_hi.clone(),
            attempted_hi.clone(),
            stop.clone(),
            violations.clone(),
            reads_ok.clone(),
        );
        readers.push(c.client.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let nodes: Vec<_> = live
                    .lock()
                    .values()
                    .filter(|n| n.status().role == "Leader")
                    .cloned()
                    .collect();
                for n in nodes {
                    let lo = acked_hi.load(Ordering::SeqCst);
                    let r = tokio::time::timeout(
                        Duration::from_secs(3),
                        n.read(b"reg", Consistency::Linearizable),
                    )
                    .await;
                    let hi = attempted_hi.load(Ordering::SeqCst);
                    if let Ok(Ok(v)) = r {
                        let v: u64 = v
                            .map(|v| String::from_utf8(v).unwrap().parse().unwrap())
                            .unwrap_or(0);
                        reads_ok.fetch_add(1, Ordering::Relaxed);
                        if v < lo || v > hi {
                            violations.lock().push(format!(
                                "node {} read {v}, but {lo} was acknowledged before the read began (highest attempted {hi})",
                                n.id()
                            ));
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }));
    }
    for round in 0..2 {
        std::thread::sleep(Duration::from_millis(rng.range(300, 1_000)));
        let l = c.leader(20);
        if seed % 2 == 1 {
            c.power_loss(l);
        } else {
            c.kill(l);
        }
        std::thread::sleep(Duration::from_millis(rng.range(0, 1_500)));
        c.start(l).unwrap_or_else(|e| {
            panic!("seed {seed} round {round}: node {l} does not restart: {e}")
        });
    }
    std::thread::sleep(Duration::from_millis(1_000));
    stop.store(true, Ordering::Relaxed);
    c.client.block_on(async {
        writer.await.unwrap();
        for r in readers {
            r.await.unwrap();
        }
    });
    let v = violations.lock().clone();
    eprintln!(
        "seed {seed}: register at {} acknowledged, {} reads, {} violations",
        acked_hi.load(Ordering::SeqCst),
        reads_ok.load(Ordering::Relaxed),
        v.len()
    );
    assert!(
        v.is_empty(),
        "seed {seed}: {} stale or impossible reads: {:?}",
        v.len(),
        &v[..v.len().min(5)]
    );
    assert!(
        acked_hi.load(Ordering::SeqCst) > 0 && reads_ok.load(Ordering::Relaxed) > 0,
        "seed {seed}: nothing was written or read"
    );
    c.shutdown();
}

#[test]
fn linearizable_reads_across_leader_failovers_never_go_back() {
    for seed in 1..=4 {
        one_seed(seed);
    }
}
