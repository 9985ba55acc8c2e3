//! Group commit: a leader gathers the writes that arrive while entries are in flight into
//! one Raft entry (`node.rs::propose`), and the state machine applies each batch of that
//! entry atomically on its own (`state_machine.rs::apply_batch`). This test sends many
//! writes at once to the leader, so that most share an entry, and checks, whatever the
//! grouping turns out to be:
//!
//! * a batch whose compare-and-set fails leaves no trace (its puts before the check are
//!   not applied), while the batches around it are applied;
//! * a batch with a put then a compare-and-set on the same key sees its own put; a
//!   delete then a compare-and-set expecting `None` holds;
//! * each writer gets its own batch's result (the failing check's position differs per
//!   writer, so a neighbour's result would be noticed);
//! * a compare-and-set in a later batch of the same entry sees the writes of the earlier
//!   ones: a chain of counter increments `j -> j+1`, sent all at once, applies as an
//!   unbroken chain `0..m` and leaves the counter at `m`;
//! * every node holds the same data.

use crate::review_common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use review_common::{cluster, config, run, wait_leader};
use sluice_raft::{Batch, BatchResult, Written};

fn own(i: usize) -> Vec<u8> {
    format!("own{i:04}").into_bytes()
}

#[test]
fn each_batch_of_a_shared_entry_is_atomic_and_answered_with_its_own_result() {
    run(120, async {
        let dir = tempfile::tempdir().unwrap();
        let (nodes, _addrs) = cluster(
            (1..=3)
                .map(|id| config(id, dir.path(), "127.0.0.1:0"))
                .collect(),
        )
        .await;
        // The first write goes to a leader that holds its term: on 2 cores a starved
        // leader can lose it between its election and this write (CI: NotLeader with no
        // leader known), so a refusal naming no leader waits for the next election.
        let mut tries = 0;
        let (leader, w) = loop {
            let leader = wait_leader(&nodes).await;
            match nodes[&leader]
                .write(Batch::new().put("ctr", 0u32.to_string()))
                .await
            {
                Ok(w) => break (leader, w),
                Err(sluice_raft::ClientError::NotLeader { .. }) if tries < 10 => tries += 1,
                Err(e) => panic!("the first write: {e:?}"),
            }
        };
        let nodes = Arc::new(nodes);
        assert_eq!(w.result, BatchResult::Applied);

        // Phase 1: batches of four kinds, all at once.
        const N: usize = 400;
        let mut tasks = Vec::new();
        for i in 0..N {
            let nodes = nodes.clone();
            tasks.push(tokio::spawn(async move {
                let pad = i % 7;
                let batch = match i % 4 {
                    // `pad` puts of its own keys, then a check that fails.
                    0 | 3 => {
                        let mut b = Batch::new();
                        for p in 0..pad {
                            b = b.put([own(i), format!("/{p}").into_bytes()].concat(), "x");
                        }
                        b.put(own(i), "doomed").compare_and_set(
                            "nokey",
                            Some(format!("never{i}").into_bytes()),
                            Some(b"y".to_vec()),
                        )
                    }
                    // A put then a check of that put.
                    1 => Batch::new().put(own(i), "v1").compare_and_set(
                        own(i),
                        Some(b"v1".to_vec()),
                        Some(b"v2".to_vec()),
                    ),
                    // A delete then a check that the key is absent.
                    _ => Batch::new()
                        .put(own(i), "gone")
                        .delete(own(i))
                        .compare_and_set(own(i), None, Some(b"back".to_vec())),
                };
                (i, nodes[&leader].write(batch).await)
            }));
        }
        let mut log_ids = BTreeSet::new();
        let mut results: BTreeMap<usize, Written> = BTreeMap::new();
        for t in tasks {
            let (i, r) = t.await.unwrap();
            let w = r.unwrap_or_else(|e| panic!("write {i} failed: {e}"));
            log_ids.insert(w.log_id.index);
            results.insert(i, w);
        }
        eprintln!("{N} writes went in {} entries", log_ids.len());
        assert!(
            log_ids.len() < N,
            "no two writes shared an entry: the test did not exercise group commit"
        );
        for (i, w) in &results {
            let want = match i % 4 {
                0 | 3 => BatchResult::Conflict {
                    command: i % 7 + 1,
                    current: None,
                },
                _ => BatchResult::Applied,
            };
            assert_eq!(
                w.result, want,
                "write {i} (in entry {}) got another result",
                w.log_id
            );
        }

        // Phase 2: a chain of increments sent all at once.
        const M: u32 = 200;
        let mut tasks = Vec::new();
        for j in 0..M {
            let nodes = nodes.clone();
            tasks.push(tokio::spawn(async move {
                let b = Batch::new().compare_and_set(
                    "ctr",
                    Some(j.to_string().into_bytes()),
                    Some((j + 1).to_string().into_bytes()),
                );
                (j, nodes[&leader].write(b).await)
            }));
        }
        let mut applied = BTreeSet::new();
        let mut chain_ids = BTreeSet::new();
        for t in tasks {
            let (j, r) = t.await.unwrap();
            let w = r.unwrap_or_else(|e| panic!("increment {j} failed: {e}"));
            chain_ids.insert(w.log_id.index);
            match w.result {
                BatchResult::Applied => {
                    applied.insert(j);
                }
                BatchResult::Conflict {
                    command: 0,
                    current,
                } => {
                    assert_ne!(current, Some(j.to_string().into_bytes()), "increment {j}");
                }
                other => panic!("increment {j}: {other:?}"),
            }
        }
        eprintln!(
            "{M} increments went in {} entries; {} applied",
            chain_ids.len(),
            applied.len()
        );
        let m = applied.len() as u32;
        assert_eq!(
            applied,
            (0..m).collect::<BTreeSet<_>>(),
            "the applied increments are not an unbroken chain from 0"
        );

        // Every node holds the same, and what each result said.
        let last = nodes[&leader].status().last_log_index.unwrap();
        let mut want: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        want.insert(b"ctr".to_vec(), m.to_string().into_bytes());
        for i in 0..N {
            match i % 4 {
                1 => {
                    want.insert(own(i), b"v2".to_vec());
                }
                2 => {
                    want.insert(own(i), b"back".to_vec());
                }
                _ => {}
            }
        }
        let want: Vec<_> = want.into_iter().collect();
        for (id, n) in nodes.iter() {
            n.raft()
                .wait(Some(std::time::Duration::from_secs(20)))
                .applied_index_at_least(Some(last), "catch up")
                .await
                .unwrap();
            let got = n.state_machine().dump().unwrap();
            if got != want {
                let extra: Vec<_> = got
                    .iter()
                    .filter(|kv| !want.contains(kv))
                    .map(|(k, v)| {
                        (
                            String::from_utf8_lossy(k).into_owned(),
                            String::from_utf8_lossy(v).into_owned(),
                        )
                    })
                    .take(10)
                    .collect();
                let missing: Vec<_> = want
                    .iter()
                    .filter(|kv| !got.contains(kv))
                    .map(|(k, v)| {
                        (
                            String::from_utf8_lossy(k).into_owned(),
                            String::from_utf8_lossy(v).into_owned(),
                        )
                    })
                    .take(10)
                    .collect();
                panic!("node {id}: extra {extra:?}, missing {missing:?}");
            }
        }
        let nodes = Arc::try_unwrap(nodes).ok().unwrap();
        for (_, n) in nodes {
            let _ = n.shutdown().await;
        }
    });
}
