//! Shared by the `review5_*` tests (an outside review of commit dc9638a: writers are
//! answered from a task of their own once the Raft log's `Committed` record is durable,
//! entries are readable before that, and reads `settle` before they answer).
//!
//! On top of `review4_common::Cluster`: one serial writer of a counter key (`ctr`, values
//! strictly increasing in log order: value `v + 1` is proposed only once `v` was
//! acknowledged), readers of that key on every node (Local, through `Node::read` and
//! through the `Client`'s `Request::Read` / `Request::Dump`), and, per node, the highest
//! counter value that node answered a client for (a write's acknowledgement or a read's
//! value). After a restart a node must never answer less (docs/replication.md: "when the
//! node starts serving its applied position is at least what it answered clients for — a
//! write's outcome, and any value a read returned (linearizable or local)").
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use sluice_raft::{
    Batch, BatchResult, Client, Consistency, LogRecord, LogStore, NodeConfig, NodeId, Security,
    StateMachine,
};
use sluice_storage::Storage;

use crate::review4_common::{slow_elections, within, Cluster, Live};

pub const CTR: &[u8] = b"ctr";

/// Review timings, and the state machine's own log flushed only every 5 s: a restart
/// then finds the state machine behind nearly everything it applied, and what was applied
/// comes back only through the Raft log's `Committed` record.
pub fn lazy_sm(c: &mut NodeConfig) {
    slow_elections(c);
    // The page size stays `Options::small()`'s (`disk_shape` reopens with it); a pool,
    // log buffer and checkpoint interval large enough that nothing but the 5 s timer
    // (or a read's `settle` falling back to this log) flushes it during a test.
    c.db.pool_pages = 8192;
    c.db.checkpoint_log_bytes = 256 << 20;
    c.db.log.buffer_bytes = 16 << 20;
    c.db.log.segment_bytes = 4 << 20;
    c.db.log.group_commit.max_bytes = 64 << 20;
    c.db.log.group_commit.max_delay = Duration::from_secs(5);
}

/// Review timings, the node's own state-machine options (background flush after 50 ms).
pub fn eager_sm(c: &mut NodeConfig) {
    slow_elections(c);
}

/// `ctr`'s value `v` as stored.
pub fn ctr_value(v: u64) -> Vec<u8> {
    format!("{v:012}").into_bytes()
}

pub fn parse_ctr(v: Option<&[u8]>) -> u64 {
    match v {
        None => 0,
        Some(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("ctr holds {:?}", String::from_utf8_lossy(b))),
    }
}

/// Per node: the highest `ctr` value it answered a client for, and how (for messages).
#[derive(Default)]
pub struct Seen {
    pub by_node: BTreeMap<NodeId, (u64, &'static str)>,
    /// The highest answered anywhere (any node, writes and reads).
    pub global: (u64, &'static str, NodeId),
    pub reads: u64,
    pub acks: u64,
}

pub type SeenRef = Arc<Mutex<Seen>>;

pub fn note(seen: &SeenRef, node: NodeId, v: u64, how: &'static str, read: bool) {
    let mut s = seen.lock();
    if read {
        s.reads += 1;
    } else {
        s.acks += 1;
    }
    let e = s.by_node.entry(node).or_insert((0, how));
    if v > e.0 {
        *e = (v, how);
    }
    if v > s.global.0 {
        s.global = (v, how, node);
    }
}

/// Background tasks on the client runtime, stopped together.
pub struct Tasks {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Tasks {
    pub fn stop(self, client: &tokio::runtime::Runtime) {
        self.stop.store(true, Ordering::Relaxed);
        within(client, 30, "review5 tasks stop", async {
            for t in self.tasks {
                t.await.expect("a review5 task panicked");
            }
        });
    }
}

/// Ends a round: stops the counter and readers, then the writers, then checks the cluster
/// (every acknowledged write on every node, the same data everywhere), as `label`.
pub fn end_round(c: &Cluster, tasks: Tasks, writers: crate::review4_common::Writers, label: &str) {
    tasks.stop(&c.client);
    writers.stop(&c.client);
    c.check(label);
}

/// The serial writer of `ctr` (through whichever node leads) and `readers_per_node`
/// readers on each node up (Local consistency; by turns `Node::read`, the `Client`'s
/// `read_at` and `dump_at`, plus Linearizable reads through the leader).
pub fn counter_and_readers(c: &Cluster, seen: &SeenRef, readers: usize) -> Tasks {
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    {
        let (live, seen, stop) = (c.live.clone(), seen.clone(), stop.clone());
        let start = seen.lock().global.0;
        tasks.push(c.client.spawn(async move {
            let mut v = start + 1;
            while !stop.load(Ordering::Relaxed) {
                match put_once(&live, CTR, &ctr_value(v)).await {
                    Ok((node, _index)) => {
                        note(&seen, node, v, "its acknowledged write", false);
                        v += 1;
                    }
                    // The same value again (a second entry of `v` is harmless: every
                    // entry of `v` precedes every entry of `v + 1` in the log).
                    Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
        }));
    }
    for r in 0..readers {
        let (live, seen, stop) = (c.live.clone(), seen.clone(), stop.clone());
        tasks.push(c.client.spawn(async move {
            let mut turn = r as u64;
            while !stop.load(Ordering::Relaxed) {
                turn += 1;
                let nodes: Vec<(NodeId, Arc<sluice_raft::Node>)> =
                    live.lock().iter().map(|(i, n)| (*i, n.clone())).collect();
                if nodes.is_empty() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                let (id, node) = nodes[(turn as usize / 4) % nodes.len()].clone();
                let addr = node.addr().to_string();
                let how = turn % 4;
                // On a task of its own: a read reaching a node whose runtime was dropped
                // by a power loss (openraft's handle then panics: "RaftCore should have
                // already quit") is a read that got no answer, not a test failure.
                let got = tokio::spawn(tokio::time::timeout(Duration::from_secs(3), async move {
                    match how {
                        0 => node
                            .read(CTR, Consistency::Local)
                            .await
                            .map(|v| (parse_ctr(v.as_deref()), "a Local Node::read")),
                        1 => {
                            let client = Client::new(vec![addr.clone()], Security::Insecure);
                            client
                                .read_at(&addr, CTR, Consistency::Local)
                                .await
                                .map(|v| (parse_ctr(v.as_deref()), "a Local Client::read_at"))
                        }
                        2 => {
                            let client = Client::new(vec![addr.clone()], Security::Insecure);
                            client.dump_at(&addr, Consistency::Local).await.map(|d| {
                                let v = d.iter().find(|(k, _)| k == CTR).map(|(_, v)| &v[..]);
                                (parse_ctr(v), "a Local Client::dump_at")
                            })
                        }
                        _ => node
                            .read(CTR, Consistency::Linearizable)
                            .await
                            .map(|v| (parse_ctr(v.as_deref()), "a Linearizable Node::read")),
                    }
                }))
                .await;
                match got {
                    Ok(Ok(Ok((v, how)))) => note(&seen, id, v, how, true),
                    _ => tokio::time::sleep(Duration::from_millis(5)).await,
                }
            }
        }));
    }
    Tasks { stop, tasks }
}

/// One put through the node that says it leads: `Ok((node, index))` if acknowledged.
pub async fn put_once(live: &Live, key: &[u8], value: &[u8]) -> Result<(NodeId, u64), ()> {
    let leader = live
        .lock()
        .iter()
        .find(|(_, n)| n.status().role == "Leader")
        .map(|(i, n)| (*i, n.clone()));
    let Some((id, leader)) = leader else {
        return Err(());
    };
    let batch = Batch::new().put(key.to_vec(), value.to_vec());
    match tokio::time::timeout(Duration::from_secs(5), leader.write(batch)).await {
        Ok(Ok(w)) => {
            assert_eq!(w.result, BatchResult::Applied, "a put is applied");
            Ok((id, w.log_id.index))
        }
        _ => Err(()),
    }
}

/// Right after node `id` (re)started: its Local reads of `ctr` (through `Node::read` and
/// through the `Client`) must not answer less than the node answered before. Returns
/// the value read.
pub fn assert_no_going_back(c: &Cluster, seen: &SeenRef, id: NodeId, when: &str) -> u64 {
    let seed = c.seed;
    let node = c.node(id);
    let (before, how) = seen
        .lock()
        .by_node
        .get(&id)
        .copied()
        .unwrap_or((0, "nothing"));
    let applied = node.state_machine().last_applied();
    let addr = node.addr().to_string();
    let (direct, via_client) = within(&c.client, 20, "a Local read after the restart", async {
        let direct = parse_ctr(
            node.read(CTR, Consistency::Local)
                .await
                .expect("a Local read right after the restart")
                .as_deref(),
        );
        let client = Client::new(vec![addr.clone()], Security::Insecure);
        let via = parse_ctr(
            client
                .read_at(&addr, CTR, Consistency::Local)
                .await
                .expect("a Local Client read right after the restart")
                .as_deref(),
        );
        (direct, via)
    });
    assert!(
        direct >= before,
        "seed {seed}: node {id} answered ctr = {before} ({how}) before {when}, but a Local \
         Node::read right after its restart answers {direct} (applied {applied:?} at start)"
    );
    assert!(
        via_client >= before,
        "seed {seed}: node {id} answered ctr = {before} ({how}) before {when}, but a Local \
         Client read right after its restart answers {via_client} (applied {applied:?} at start)"
    );
    eprintln!("seed {seed}: node {id} after {when}: Local ctr {direct} (had answered {before}, {how}; applied at start {applied:?})");
    direct
}

/// What node `id`'s disk holds now (read as a restart reads it): the last `Committed`
/// record of its Raft log, the log's last entry index, and its state machine's applied
/// id. Opening the WAL may repair a torn tail, as the restart would.
pub fn disk_shape(c: &Cluster, id: NodeId) -> (Option<u64>, Option<u64>, Option<u64>) {
    let storage: Arc<dyn Storage> = Arc::new(c.slots[&id].sim.pinned());
    let records = LogStore::records(
        storage.clone(),
        format!("/n{id}/raft-log"),
        sluice_wal::LogOptions::default(),
    )
    .expect("read the raft log");
    let mut committed = None;
    let mut last = None;
    for (_, r) in records {
        match r {
            LogRecord::Committed(cm) => committed = cm.map(|l| l.index),
            LogRecord::Entry(e) => {
                use openraft::entry::RaftEntry;
                last = Some(e.log_id().index);
            }
            LogRecord::TruncateAfter(t) => {
                last = last.min(t.map(|l| l.index));
            }
            _ => {}
        }
    }
    let sm = StateMachine::open(
        storage,
        format!("/n{id}/sm"),
        sluice_raft::state_machine_options(sluice::Options::small()),
    )
    .expect("open the state machine alone");
    let applied = sm.last_applied().map(|l| l.index);
    sm.close().expect("close the state machine");
    (committed, last, applied)
}

/// A linearizable read of `ctr` through the `Client` (whichever node leads), retried
/// until it answers.
pub fn linearizable_ctr(c: &Cluster, secs: u64) -> u64 {
    let addrs: Vec<String> = c.slots.values().filter_map(|s| s.addr.clone()).collect();
    within(&c.client, secs, "a linearizable read of ctr", async move {
        let client = Client::new(addrs, Security::Insecure);
        loop {
            if let Ok(v) = client.read(CTR).await {
                return parse_ctr(v.as_deref());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
}

/// Seeds from `REVIEW5_SEEDS` (comma-separated) or `default`.
pub fn seeds(default: std::ops::RangeInclusive<u64>) -> Vec<u64> {
    match std::env::var("REVIEW5_SEEDS") {
        Ok(v) => v.split(',').map(|s| s.trim().parse().unwrap()).collect(),
        Err(_) => default.collect(),
    }
}
