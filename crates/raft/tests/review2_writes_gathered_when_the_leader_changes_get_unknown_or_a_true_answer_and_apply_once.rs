//! Writes gathered into entries (group commit) while the leader changes — first by a
//! leadership transfer, then by the leader being shut down — must each get either
//! `Unknown` or a definite answer that is true:
//!
//! * `Written(Applied)`: the write is on every surviving node;
//! * `NotLeader`, `Refused`, `Unreachable`, `NoQuorum`, `Stopping`: the write is on none;
//! * no write is applied twice. Each write is `compare_and_set(key_i, None, i)` on a key
//!   of its own, sent once: a `Conflict` answer means a copy of it was applied before
//!   the one answered — the client (or the node) sent it again.
//!
//! Each of 16 clients writes its keys one after another; a client's later write must not
//! be applied before its earlier one (checked through a per-client sequence key).

use crate::review_common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use review_common::{cluster, config, run, wait_leader};
use sluice_raft::{Batch, BatchResult, Client, ClientError, Consistency, Security};

const CLIENTS: usize = 16;

#[derive(Debug, Clone)]
enum Outcome {
    Applied,
    Unknown,
    Failed(ClientError),
    Duplicate(Option<Vec<u8>>),
}

fn key(c: usize, n: usize) -> Vec<u8> {
    format!("c{c:02}/{n:05}").into_bytes()
}

async fn load(
    addrs: Vec<String>,
    stop: Arc<tokio::sync::Notify>,
    c: usize,
) -> Vec<(usize, Outcome)> {
    let client = Client::new(addrs, Security::Insecure);
    let mut out = Vec::new();
    let stopped = stop.notified();
    tokio::pin!(stopped);
    for n in 0.. {
        let b = Batch::new()
            .compare_and_set(key(c, n), None, Some(n.to_string().into_bytes()))
            .put(format!("c{c:02}/seq"), format!("{n:05}"));
        let r = tokio::select! {
            _ = &mut stopped => {
                // Abandoned in flight: its outcome is unknown.
                out.push((n, Outcome::Unknown));
                break;
            }
            r = client.write(b) => r,
        };
        let o = match r {
            Ok(w) => match w.result {
                BatchResult::Applied => Outcome::Applied,
                BatchResult::Conflict { current, .. } => Outcome::Duplicate(current),
                other => panic!("client {c} write {n}: {other:?}"),
            },
            Err(ClientError::Unknown(_)) => Outcome::Unknown,
            Err(e) => Outcome::Failed(e),
        };
        out.push((n, o));
    }
    out
}

#[test]
fn writes_gathered_when_the_leader_changes_get_unknown_or_a_true_answer_and_apply_once() {
    run(150, async {
        let dir = tempfile::tempdir().unwrap();
        let (mut nodes, addrs) = cluster(
            (1..=3)
                .map(|id| config(id, dir.path(), "127.0.0.1:0"))
                .collect(),
        )
        .await;
        let first = wait_leader(&nodes).await;
        let addr_list: Vec<String> = addrs.values().cloned().collect();
        let stop = Arc::new(tokio::sync::Notify::new());
        let tasks: Vec<_> = (0..CLIENTS)
            .map(|c| tokio::spawn(load(addr_list.clone(), stop.clone(), c)))
            .collect();

        // Under load: move the leadership, twice, then shut the leader down.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let to = if first == 1 { 2 } else { 1 };
        nodes[&first]
            .raft()
            .trigger()
            .transfer_leader(to)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(800)).await;
        let now = wait_leader(&nodes).await;
        let to = *nodes.keys().find(|id| **id != now).unwrap();
        nodes[&now]
            .raft()
            .trigger()
            .transfer_leader(to)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(800)).await;
        let victim = wait_leader(&nodes).await;
        eprintln!("leaders: {first}, {now}, then {victim} shut down under load");
        let node = nodes.remove(&victim).unwrap();
        node.shutdown().await.unwrap();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        stop.notify_waiters();
        let mut all = BTreeMap::new();
        for (c, t) in tasks.into_iter().enumerate() {
            all.insert(c, t.await.unwrap());
        }

        // Let the survivors settle, then look at what they hold.
        let leader = wait_leader(&nodes).await;
        let client = Client::new(vec![nodes[&leader].addr().to_string()], Security::Insecure);
        client
            .write(Batch::new().put("settle", "1"))
            .await
            .expect("a write after the load");
        let last = nodes[&leader].status().last_log_index.unwrap();
        let mut dumps = Vec::new();
        for (id, n) in &nodes {
            n.raft()
                .wait(Some(Duration::from_secs(20)))
                .applied_index_at_least(Some(last), "catch up")
                .await
                .unwrap();
            let d: BTreeMap<Vec<u8>, Vec<u8>> = client
                .dump_at(&n.addr().to_string(), Consistency::Local)
                .await
                .unwrap()
                .into_iter()
                .collect();
            dumps.push((*id, d));
        }
        assert_eq!(dumps[0].1, dumps[1].1, "the survivors hold different data");
        let held = &dumps[0].1;

        let mut problems = Vec::new();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (c, outcomes) in &all {
            let mut last_applied = None;
            for (n, o) in outcomes {
                let there = held.get(&key(*c, *n)).cloned();
                let name = match o {
                    Outcome::Applied => "applied",
                    Outcome::Unknown => "unknown",
                    Outcome::Failed(_) => "failed",
                    Outcome::Duplicate(_) => "duplicate",
                };
                *counts.entry(name).or_default() += 1;
                match o {
                    Outcome::Applied => {
                        last_applied = Some(*n);
                        if there != Some(n.to_string().into_bytes()) {
                            problems.push(format!("client {c} write {n}: acknowledged, not held"));
                        }
                    }
                    Outcome::Failed(e) => {
                        if there.is_some() {
                            problems.push(format!(
                                "client {c} write {n}: answered {e:?} (a definite failure), yet it is held"
                            ));
                        }
                    }
                    Outcome::Duplicate(cur) => problems.push(format!(
                        "client {c} write {n}: sent once, answered Conflict (current {cur:?}): a copy of it was applied before"
                    )),
                    Outcome::Unknown => {}
                }
            }
            // The sequence key: the last write of this client that is held.
            let seq = held.get(format!("c{c:02}/seq").as_bytes()).map(|v| {
                String::from_utf8(v.clone())
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            });
            let newest_held = outcomes
                .iter()
                .map(|(n, _)| *n)
                .filter(|n| held.contains_key(&key(*c, *n)))
                .max();
            if seq != newest_held {
                problems.push(format!(
                    "client {c}: its sequence key says {seq:?}, its newest write held is {newest_held:?} (last acknowledged {last_applied:?}): writes applied out of order"
                ));
            }
        }
        eprintln!("outcomes: {counts:?}");
        assert!(
            problems.is_empty(),
            "{} problem(s):\n{}",
            problems.len(),
            problems.join("\n")
        );
        for (_, n) in nodes {
            let _ = n.shutdown().await;
        }
    });
}
