//! `StateMachine::install_snapshot` twice in a row: the first fills slot `b` and switches
//! `CURRENT` to it, the second must clear slot `a` (closed by the first), fill it, and
//! switch back. Afterwards the state machine — and a reopened one — holds exactly the
//! second snapshot's data at the second snapshot's log id.

use std::collections::BTreeMap;
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::testing::log_id;
use openraft::Membership;
use serde::Serialize;
use sluice_raft::{StateMachine, TypeConfig};
use sluice_storage::{OsStorage, Storage};

type Meta = openraft::alias::SnapshotMetaOf<TypeConfig>;
type Stored = openraft::alias::StoredMembershipOf<TypeConfig>;

/// The snapshot format of `state_machine.rs` (`Image`), postcard-encoded.
#[derive(Serialize)]
struct Image {
    meta: Meta,
    data: Vec<(Vec<u8>, Vec<u8>)>,
}

fn meta(index: u64) -> Meta {
    let nodes: BTreeMap<u64, openraft::BasicNode> =
        [(1, openraft::BasicNode::new("127.0.0.1:1"))].into();
    let m = Membership::<u64, openraft::BasicNode>::new(vec![[1u64].into()], nodes).unwrap();
    Meta {
        last_log_id: Some(log_id::<TypeConfig>(1, 1, index)),
        last_membership: Stored::new(Some(log_id::<TypeConfig>(1, 1, 1)), m),
    }
}

fn image(index: u64, data: &[(&str, &str)]) -> (Meta, Vec<u8>) {
    let m = meta(index);
    let data = data
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    let body = postcard::to_stdvec(&Image {
        meta: m.clone(),
        data,
    })
    .unwrap();
    (m, body)
}

#[test]
fn a_state_machine_installs_two_snapshots_in_a_row_and_reopens_on_the_second() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(std::time::Duration::from_secs(60), async {
            let dir = tempfile::tempdir().unwrap();
            let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
            let open = || {
                StateMachine::open(
                    storage.clone(),
                    dir.path().join("sm"),
                    sluice::Options::small(),
                )
                .unwrap()
            };
            let mut sm = open();
            let (m1, b1) = image(10, &[("x", "1"), ("y", "2")]);
            sm.install_snapshot(&m1, b1)
                .await
                .expect("the first install");
            assert_eq!(sm.dump().unwrap().len(), 2);
            let (m2, b2) = image(20, &[("x", "3")]);
            sm.install_snapshot(&m2, b2)
                .await
                .expect("the second install (slot a reused)");
            let want = vec![(b"x".to_vec(), b"3".to_vec())];
            assert_eq!(sm.dump().unwrap(), want);
            assert_eq!(sm.last_applied(), m2.last_log_id);
            sm.close().unwrap();
            let mut sm = open();
            assert_eq!(sm.dump().unwrap(), want, "after reopening");
            assert_eq!(sm.last_applied(), m2.last_log_id);
            let (applied, _) = sm.applied_state().await.unwrap();
            assert_eq!(applied, m2.last_log_id);
            let cur = sm
                .get_current_snapshot()
                .await
                .unwrap()
                .expect("a current snapshot");
            assert_eq!(cur.meta.last_log_id, m2.last_log_id);
            sm.close().unwrap();
        })
        .await
        .expect("within 60 s");
    });
}
