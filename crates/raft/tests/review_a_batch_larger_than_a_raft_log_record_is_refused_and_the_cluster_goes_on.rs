//! A batch larger than the Raft log's record limit (`Log::max_record_bytes`, set by the
//! WAL's buffer size) but well within the wire's frame limit and the engine's value
//! limit must be refused with an answer, and the cluster must go on. The log store's
//! `append` returns an error for it; openraft treats a log-store error as fatal, so the
//! leader stops — and the `Client` retries a write answered `Stopping`, handing the same
//! batch to the next leader, which stops too.

use crate::review_common;

use std::time::Duration;

use review_common::{cluster, config, roles, run, wait_leader};
use sluice_raft::{Batch, BatchResult, Client, ClientError, LogStore, Security};

#[test]
fn a_batch_larger_than_a_raft_log_record_is_refused_and_the_cluster_goes_on() {
    run(90, async {
        let dir = tempfile::tempdir().unwrap();
        let configs: Vec<_> = (1..=3)
            .map(|id| {
                let mut c = config(id, dir.path(), "127.0.0.1:0");
                c.log.buffer_bytes = 256 << 10;
                c
            })
            .collect();
        // The record limit of a log with these options.
        let limit = {
            let probe = LogStore::open(
                std::sync::Arc::new(sluice_storage::OsStorage::new()),
                dir.path().join("probe"),
                configs[0].log,
            )
            .unwrap();
            let l = probe.wal().max_record_bytes();
            probe.close().unwrap();
            l
        };
        let (nodes, addrs) = cluster(configs).await;
        wait_leader(&nodes).await;
        let client = Client::new(addrs.values().cloned().collect(), Security::Insecure);
        let w = client.write(Batch::new().put("a", "1")).await.unwrap();
        assert_eq!(w.result, BatchResult::Applied);

        let big = tokio::time::timeout(
            Duration::from_secs(30),
            client.write(Batch::new().put("big", vec![7u8; limit + 4096])),
        )
        .await
        .expect("the big write was answered within 30 s");
        eprintln!("a batch over the {limit}-byte record limit was answered {big:?}");
        let r = roles(&nodes);
        assert!(
            r.values().all(|role| role != "Shutdown"),
            "a batch over the log's record limit stopped nodes: {r:?} (it was answered {big:?})"
        );
        assert!(
            matches!(big, Err(ClientError::Refused(_))),
            "a batch the log cannot hold is refused, got {big:?}"
        );
        let good = tokio::time::timeout(
            Duration::from_secs(30),
            client.write(Batch::new().put("b", "2")),
        )
        .await;
        assert!(
            matches!(good, Ok(Ok(_))),
            "the cluster goes on: {good:?}, roles {:?}",
            roles(&nodes)
        );
        for (_, n) in nodes {
            let _ = n.shutdown().await;
        }
    });
}
