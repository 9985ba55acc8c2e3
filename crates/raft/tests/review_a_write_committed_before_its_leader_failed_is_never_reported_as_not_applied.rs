//! A write that was committed, but whose leader failed before answering, must come back
//! to the client as applied or as `ClientError::Unknown` — never as a definite "not
//! applied". Here the leader's state-machine disk starts failing its syncs (EIO) just
//! before a compare-and-set: the followers commit and apply the entry, the leader's
//! `apply` fails, openraft stops the leader (a fatal storage error) and the pending
//! `client_write` returns `Fatal`, which the node answers as `ClientError::Stopping`.
//! `Client::to_leader` treats `Stopping` as "try elsewhere" even for a non-idempotent
//! write, so the same batch is appended a second time by the next leader, and its
//! compare-and-set now fails against the value the first copy wrote: the client is told
//! `Conflict` (its write did not apply) although it did.

use crate::review_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use review_common::{cluster, config_on, roles, run, wait_leader};
use sluice_raft::{Batch, BatchResult, Client, ClientError, NodeId, Security};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage, Storage};

/// Every file and directory under `dir`.
fn walk(s: &SimStorage, dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    for name in s.list(dir).unwrap() {
        let p = dir.join(name);
        if s.list(&p).is_ok() {
            walk(s, &p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn a_write_committed_before_its_leader_failed_is_never_reported_as_not_applied() {
    run(90, async {
        let disks: BTreeMap<NodeId, SimStorage> =
            (1..=3).map(|id| (id, SimStorage::new(100 + id))).collect();
        let configs = disks
            .iter()
            .map(|(id, s)| config_on(*id, Arc::new(s.clone()) as Arc<dyn Storage>))
            .collect();
        let (nodes, addrs) = cluster(configs).await;
        let leader = wait_leader(&nodes).await;
        let client = Client::new(addrs.values().cloned().collect(), Security::Insecure);
        let w = client.write(Batch::new().put("a", "1")).await.unwrap();
        assert_eq!(w.result, BatchResult::Applied);

        // From now on every sync of the leader's state machine fails (its Raft log is fine).
        let disk = &disks[&leader];
        let mut paths = Vec::new();
        walk(
            disk,
            &Path::new(&format!("/n{leader}")).join("sm"),
            &mut paths,
        );
        assert!(paths.len() <= 60, "{} paths", paths.len());
        for p in &paths {
            disk.inject(
                FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio)
                    .persistent()
                    .on(p),
            );
        }

        let cas = Batch::new().compare_and_set("c", None, Some(b"mine".to_vec()));
        let answer = tokio::time::timeout(Duration::from_secs(30), client.write(cas))
            .await
            .expect("the write was answered within 30 s");
        disk.clear_faults();

        // What was committed, by a linearizable read through the surviving majority.
        let committed = tokio::time::timeout(Duration::from_secs(20), client.read(b"c"))
            .await
            .expect("a read within 20 s");
        eprintln!(
            "answer {answer:?}; c = {committed:?}; roles {:?}",
            roles(&nodes)
        );
        match &answer {
            Ok(w) if w.result == BatchResult::Applied => {}
            Err(ClientError::Unknown(_)) => {}
            other => panic!(
                "the compare-and-set was answered {other:?}, yet c now holds {committed:?}: \
                 the client was told its write did not apply (or failed outright) \
                 although it was committed"
            ),
        }
        for (_, n) in nodes {
            let _ = tokio::time::timeout(Duration::from_secs(10), n.shutdown()).await;
        }
    });
}
