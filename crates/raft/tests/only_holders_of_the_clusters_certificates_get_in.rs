//! Mutual TLS: a node or client with a certificate from another CA, or with none, is
//! refused before anything it sends is read — it can neither write, read, vote nor join
//! — and each refusal is counted (and logged) by the node that refused it.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::run_bounded;
use sluice_raft::{make_certs, Batch, Client, Node, Security, Tls};

fn tls(dir: &Path, name: &str) -> Security {
    Security::Tls(
        Tls::from_files(
            &dir.join("ca.pem"),
            &dir.join(format!("{name}.pem")),
            &dir.join(format!("{name}.key")),
        )
        .unwrap(),
    )
}

#[test]
fn only_holders_of_the_clusters_certificates_get_in() {
    run_bounded(Duration::from_secs(90), scenario());
}

async fn scenario() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    let other = dir.path().join("other-ca");
    make_certs(&certs, &["node1", "node2", "node3", "client"]).unwrap();
    make_certs(&other, &["node4", "client"]).unwrap();

    let (nodes, addrs) = common::cluster(
        3,
        dir.path(),
        |id| tls(&certs, &format!("node{id}")),
        |_| {},
    )
    .await;
    let all: Vec<String> = addrs.values().cloned().collect();

    let member = Client::new(all.clone(), tls(&certs, "client"));
    let w = member.write(Batch::new().put("a", "1")).await.unwrap();
    assert_eq!(member.read(b"a").await.unwrap(), Some(b"1".to_vec()));
    let before: u64 = nodes.values().map(|n| n.refused_connections()).sum();
    assert_eq!(before, 0, "members were never refused");

    // A client with another CA's certificate, and one without TLS, get nothing in.
    let stranger = Client::new(all.clone(), tls(&other, "client"));
    assert!(stranger
        .write(Batch::new().put("b", "stranger"))
        .await
        .is_err());
    assert!(
        stranger.read(b"a").await.is_err(),
        "a stranger cannot read either"
    );
    let plain = Client::new(all.clone(), Security::Insecure);
    assert!(plain.write(Batch::new().put("c", "plain")).await.is_err());
    let after_clients: u64 = nodes.values().map(|n| n.refused_connections()).sum();
    assert!(
        after_clients >= 2,
        "the refusals were counted: {after_clients}"
    );

    // A node with another CA's certificate that tries to lead the members.
    let term_before = nodes.values().map(|n| n.status().term).max().unwrap();
    let leader_before = nodes[&1].status().leader;
    let intruder = Node::start(common::config(
        4,
        dir.path(),
        "127.0.0.1:0",
        tls(&other, "node4"),
    ))
    .await
    .unwrap();
    let mut members = addrs.clone();
    members.insert(4, intruder.addr().to_string());
    intruder.initialize(members).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_ne!(
        intruder.status().role,
        "Leader",
        "the intruder got no votes"
    );
    assert_eq!(
        intruder.status().applied_index,
        None,
        "nothing reached the intruder"
    );
    for n in nodes.values() {
        let s = n.status();
        assert_eq!(
            s.term, term_before,
            "node {}: no vote request of the intruder was read",
            s.id
        );
        assert_eq!(s.leader, leader_before);
        assert!(!s.voters.contains_key(&4) && !s.learners.contains_key(&4));
    }
    let after_node: u64 = nodes.values().map(|n| n.refused_connections()).sum();
    assert!(
        after_node > after_clients,
        "the intruder's connections were refused and counted"
    );

    // Nothing the strangers sent was applied anywhere.
    let last = member.write(Batch::new().put("z", "end")).await.unwrap();
    assert!(last.log_id.index() > w.log_id.index());
    for n in nodes.values() {
        n.raft()
            .wait(Some(Duration::from_secs(20)))
            .applied_index_at_least(Some(last.log_id.index()), "catch up")
            .await
            .unwrap();
        let keys: Vec<Vec<u8>> = n
            .state_machine()
            .dump()
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, vec![b"a".to_vec(), b"z".to_vec()], "node {}", n.id());
    }
    intruder.shutdown().await.unwrap();
    for (_, n) in nodes {
        n.shutdown().await.unwrap();
    }
}
