//! A batch whose command the state machine's engine refuses (here: a key longer than the
//! engine's key limit) must not stop the cluster. Either it is refused before it enters
//! the log, or it is applied as a deterministic "refused" result; what must not happen is
//! that it is committed and then fails inside `apply` on every node — openraft treats an
//! `apply` error as fatal, so every node that applies it stops, and a restarted node
//! replays it and stops again.

use crate::review_common;

use std::time::Duration;

use review_common::{cluster, config, roles, run, wait_leader};
use sluice_raft::{Batch, BatchResult, Client, Security};

#[test]
fn a_command_the_engine_refuses_does_not_stop_the_cluster() {
    run(90, async {
        let dir = tempfile::tempdir().unwrap();
        let (nodes, addrs) = cluster(
            (1..=3)
                .map(|id| config(id, dir.path(), "127.0.0.1:0"))
                .collect(),
        )
        .await;
        wait_leader(&nodes).await;
        let client = Client::new(addrs.values().cloned().collect(), Security::Insecure);
        let w = client.write(Batch::new().put("a", "1")).await.unwrap();
        assert_eq!(w.result, BatchResult::Applied);

        // A key of 2,000 bytes: over the engine's limit (1,024 at most, whatever the page).
        let bad = tokio::time::timeout(
            Duration::from_secs(30),
            client.write(Batch::new().put(vec![b'k'; 2000], "v")),
        )
        .await
        .expect("the bad write was answered within 30 s");
        eprintln!("the write of a too-long key was answered {bad:?}");

        // The cluster must go on serving.
        let good = tokio::time::timeout(
            Duration::from_secs(30),
            client.write(Batch::new().put("b", "2")),
        )
        .await;
        let r = roles(&nodes);
        assert!(
            matches!(good, Ok(Ok(_))),
            "after one batch with a too-long key, a good write got {good:?}; \
             the bad one got {bad:?}; node roles: {r:?}"
        );
        assert!(
            r.values().all(|role| role != "Shutdown"),
            "a node stopped on the bad batch: {r:?}"
        );
        assert_eq!(client.read(b"b").await.unwrap(), Some(b"2".to_vec()));
        for (_, n) in nodes {
            let _ = n.shutdown().await;
        }
    });
}
