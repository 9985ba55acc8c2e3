//! Shared by the `review4_*` tests: a cluster of nodes on simulated disks, each
//! incarnation of a node on a tokio runtime of its own (dropping it ends every task of
//! the node at once, as a power loss or a process kill does, and frees its address for
//! the next incarnation), driven from a plain thread, with a client runtime that writes
//! through whichever node leads and records every write `Node::write` acknowledged.
//!
//! Every node's Raft log (`/nI/raft-log`) sits behind a [`Hold`] of its own (open unless
//! a test closes it), mounted over the same simulated disk: a test can hold the log's
//! writes and syncs (what the WAL's flush daemon does) while the state machine's own log
//! flushes as usual. What is held never reaches the disk: a power loss meanwhile loses it
//! for certain (a held sync alone would leave the written sectors to chance).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use sluice_raft::{Batch, BatchResult, ClientError, Node, NodeConfig, NodeId};
use sluice_storage::{
    FileHandle, FileLayer, FileOp, RoutedStorage, SimStorage, Storage, StorageLayer,
};

/// A storage whose files' writes and syncs wait while it is closed.
#[derive(Clone)]
pub struct Hold {
    inner: Arc<dyn Storage>,
    closed: Arc<(Mutex<HoldState>, Condvar)>,
}

#[derive(Default)]
struct HoldState {
    closed: bool,
    /// `Some(n)`: close once `n` more syncs have completed.
    close_after: Option<usize>,
}

impl Hold {
    pub fn new(inner: Arc<dyn Storage>) -> Hold {
        Hold {
            inner,
            closed: Arc::new((Mutex::new(HoldState::default()), Condvar::new())),
        }
    }

    /// From now on, writes and syncs wait.
    pub fn close(&self) {
        self.closed.0.lock().closed = true;
    }

    /// Lets `n` more syncs (and the writes before them) through, then closes.
    pub fn close_after_syncs(&self, n: usize) {
        self.closed.0.lock().close_after = Some(n);
    }

    /// Lets them through.
    pub fn open(&self) {
        let mut s = self.closed.0.lock();
        s.closed = false;
        s.close_after = None;
        self.closed.1.notify_all();
    }
}

struct HeldFile {
    inner: Box<dyn FileHandle>,
    closed: Arc<(Mutex<HoldState>, Condvar)>,
}

impl FileLayer for HeldFile {
    fn below(&self) -> &dyn FileHandle {
        &*self.inner
    }
    fn around<T>(
        &self,
        op: FileOp,
        call: impl FnOnce() -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        if !matches!(op, FileOp::Write(_) | FileOp::Sync) {
            return call();
        }
        {
            let mut s = self.closed.0.lock();
            while s.closed {
                self.closed.1.wait(&mut s);
            }
        }
        let r = call();
        if op == FileOp::Sync {
            let mut s = self.closed.0.lock();
            if let Some(n) = s.close_after {
                if n <= 1 {
                    s.close_after = None;
                    s.closed = true;
                } else {
                    s.close_after = Some(n - 1);
                }
            }
        }
        r
    }
}

impl StorageLayer for Hold {
    fn below(&self) -> &dyn Storage {
        &*self.inner
    }
    fn wrap(&self, inner: Box<dyn FileHandle>) -> Box<dyn FileHandle> {
        Box::new(HeldFile {
            inner,
            closed: self.closed.clone(),
        })
    }
}

use crate::common::{runtime, sim_config};

/// The acknowledged writes: key → (value, index of the entry that carried it).
pub type Acked = Arc<Mutex<BTreeMap<Vec<u8>, (Vec<u8>, u64)>>>;

/// The nodes that are up, shared with the writers.
pub type Live = Arc<Mutex<BTreeMap<NodeId, Arc<Node>>>>;

/// Runs `f` on `rt`, panicking with `what` if it takes longer than `secs`.
/// The review's timings: heartbeats every 100 ms, elections after 0.8–1.2 s (room for a
/// loaded 2-core machine between a kill and the next election).
pub fn slow_elections(c: &mut NodeConfig) {
    c.raft.heartbeat_interval = 100;
    c.raft.election_timeout_min = 800;
    c.raft.election_timeout_max = 1_200;
}

/// Up to five keys of `a` that `b` lacks, readable.
fn only_in(a: &BTreeMap<Vec<u8>, Vec<u8>>, b: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<String> {
    a.keys()
        .filter(|k| !b.contains_key(*k))
        .take(5)
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect()
}

pub fn within<F: Future>(rt: &tokio::runtime::Runtime, secs: u64, what: &str, f: F) -> F::Output {
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(secs), f)
            .await
            .unwrap_or_else(|_| panic!("{what}: not done within {secs} s"))
    })
}

/// One node: its disk, its address, and its current incarnation (if up).
pub struct Slot {
    pub id: NodeId,
    pub sim: SimStorage,
    pub addr: Option<String>,
    /// The gate in front of this incarnation's Raft log.
    pub gate: Option<Hold>,
    rt: Option<tokio::runtime::Runtime>,
    node: Option<Arc<Node>>,
    tune: fn(&mut NodeConfig),
}

impl Slot {
    fn config(&mut self) -> NodeConfig {
        let dir = format!("/n{}", self.id);
        let listen = self.addr.clone().unwrap_or_else(|| "127.0.0.1:0".into());
        let mut c = sim_config(self.id, &self.sim, &dir, &listen);
        let pinned: Arc<dyn Storage> = Arc::new(self.sim.pinned());
        let gate = Hold::new(pinned.clone());
        c.storage = Arc::new(
            RoutedStorage::new(pinned).mount(format!("{dir}/raft-log"), Arc::new(gate.clone())),
        );
        self.gate = Some(gate);
        (self.tune)(&mut c);
        c
    }

    pub fn node(&self) -> &Arc<Node> {
        self.node
            .as_ref()
            .unwrap_or_else(|| panic!("node {} is down", self.id))
    }

    pub fn is_up(&self) -> bool {
        self.node.is_some()
    }

    pub fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt
            .as_ref()
            .unwrap_or_else(|| panic!("node {} is down", self.id))
    }

    /// Ends the incarnation (after its disk was halted).
    fn drop_incarnation(&mut self) {
        if let Some(g) = &self.gate {
            // Held syncs go on into the dead incarnation (and fail there).
            g.open();
        }
        self.node = None;
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(Duration::from_secs(2));
        }
    }
}

/// A cluster of `Slot`s, a client runtime and what was acknowledged.
pub struct Cluster {
    pub seed: u64,
    pub slots: BTreeMap<NodeId, Slot>,
    pub live: Live,
    pub acked: Acked,
    /// Keys whose only write was answered with a definite refusal.
    pub refused: Arc<Mutex<std::collections::BTreeSet<Vec<u8>>>>,
    pub client: tokio::runtime::Runtime,
}

impl Cluster {
    /// `n` nodes (not started) on disks drawn from `seed`, each config passed to `tune`.
    pub fn new(seed: u64, n: NodeId, tune: fn(&mut NodeConfig)) -> Cluster {
        let slots = (1..=n)
            .map(|id| {
                (
                    id,
                    Slot {
                        id,
                        sim: SimStorage::new(seed * 100 + id),
                        addr: None,
                        gate: None,
                        rt: None,
                        node: None,
                        tune,
                    },
                )
            })
            .collect();
        Cluster {
            seed,
            slots,
            live: Default::default(),
            acked: Default::default(),
            refused: Default::default(),
            client: runtime(),
        }
    }

    /// `n` nodes started and made one cluster (initialized on node 1), with a leader.
    pub fn started(seed: u64, n: NodeId, tune: fn(&mut NodeConfig)) -> Cluster {
        let mut c = Cluster::new(seed, n, tune);
        for id in 1..=n {
            c.start(id)
                .unwrap_or_else(|e| panic!("seed {seed}: start node {id}: {e}"));
        }
        let members: BTreeMap<NodeId, String> = c
            .slots
            .iter()
            .map(|(id, s)| (*id, s.addr.clone().unwrap()))
            .collect();
        let n1 = c.slots[&1].node().clone();
        within(&c.client, 20, "initialize", n1.initialize(members)).expect("initialize");
        c.leader(20);
        c
    }

    /// Adds node `id` (not started, not a member).
    pub fn add_slot(&mut self, id: NodeId) {
        let tune = self.slots.values().next().unwrap().tune;
        self.slots.insert(
            id,
            Slot {
                id,
                sim: SimStorage::new(self.seed * 100 + id),
                addr: None,
                gate: None,
                rt: None,
                node: None,
                tune,
            },
        );
    }

    /// Starts (or restarts, at its old address) node `id` on what its disk holds.
    pub fn start(&mut self, id: NodeId) -> std::io::Result<()> {
        let slot = self.slots.get_mut(&id).unwrap();
        assert!(!slot.is_up(), "node {id} is already up");
        let c = slot.config();
        let rt = runtime();
        let started = rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(30), Node::start(c))
                .await
                .unwrap_or_else(|_| panic!("node {id} did not start within 30 s"))
        });
        match started {
            Ok(node) => {
                let node = Arc::new(node);
                slot.addr = Some(node.addr().to_string());
                slot.node = Some(node.clone());
                slot.rt = Some(rt);
                self.live.lock().insert(id, node);
                Ok(())
            }
            Err(e) => {
                rt.shutdown_timeout(Duration::from_secs(2));
                Err(e)
            }
        }
    }

    /// Power loss on node `id`: its disk keeps what was synced (and, at random, some of
    /// what was not), and every task of the node ends.
    pub fn power_loss(&mut self, id: NodeId) {
        self.live.lock().remove(&id);
        let slot = self.slots.get_mut(&id).unwrap();
        slot.sim.crash();
        slot.drop_incarnation();
    }

    /// Process kill of node `id`: the page cache survives.
    pub fn kill(&mut self, id: NodeId) {
        self.live.lock().remove(&id);
        let slot = self.slots.get_mut(&id).unwrap();
        slot.sim.kill_process();
        slot.drop_incarnation();
    }

    pub fn node(&self, id: NodeId) -> Arc<Node> {
        self.slots[&id].node().clone()
    }

    /// The node up that says it leads (and whose leadership is settled: every other node
    /// up that names a leader names it), within `secs`.
    pub fn leader(&self, secs: u64) -> NodeId {
        let seed = self.seed;
        within(
            &self.client,
            secs,
            &format!("seed {seed}: a leader"),
            async {
                loop {
                    let nodes: Vec<(NodeId, Arc<Node>)> = self
                        .live
                        .lock()
                        .iter()
                        .map(|(i, n)| (*i, n.clone()))
                        .collect();
                    if let Some((id, _)) = nodes.iter().find(|(_, n)| n.status().role == "Leader") {
                        return *id;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
        )
    }

    /// Writes `key` = `value` through whichever node leads, retrying (the same put) until
    /// one acknowledges it or `secs` pass; records it as acknowledged. Returns its index.
    pub fn write(&self, key: &str, value: &str, secs: u64) -> u64 {
        let seed = self.seed;
        let (live, acked) = (self.live.clone(), self.acked.clone());
        let (key, value) = (key.as_bytes().to_vec(), value.as_bytes().to_vec());
        within(
            &self.client,
            secs,
            &format!("seed {seed}: write {}", String::from_utf8_lossy(&key)),
            async move {
                loop {
                    if let Ok(i) = write_once(&live, &acked, &key, &value).await {
                        return i;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        )
    }

    /// Starts `n` writers of fresh keys named by `tag`, each writing through whichever
    /// node leads until stopped; every acknowledged write is recorded.
    pub fn writers(&self, tag: &str, n: usize) -> Writers {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut tasks = Vec::new();
        for w in 0..n {
            let (live, acked, stop) = (self.live.clone(), self.acked.clone(), stop.clone());
            let refused = self.refused.clone();
            let tag = tag.to_string();
            tasks.push(self.client.spawn(async move {
                let mut i = 0u64;
                let mut first_try = true;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let key = format!("{tag}-w{w}-{i:06}").into_bytes();
                    let value = format!("value of {tag} w{w} {i}").into_bytes();
                    match write_once(&live, &acked, &key, &value).await {
                        Ok(_) => {
                            i += 1;
                            first_try = true;
                        }
                        // Refused on its only try: it must never show up. Next key.
                        Err(true) if first_try => {
                            refused.lock().insert(key);
                            i += 1;
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        // Unknown, no leader, ...: the same put again, later (a put of
                        // the same value is harmless if the first one took).
                        Err(_) => {
                            first_try = false;
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
            }));
        }
        Writers { stop, tasks }
    }

    /// Waits until the nodes up agree on a leader, writes a barrier through it, waits
    /// until every node up has applied the barrier, then checks that every node holds
    /// every acknowledged write and that all hold the same data.
    pub fn check(&self, when: &str) {
        self.check_among(when, None)
    }

    /// `check` over the nodes `among` (all nodes up if `None`).
    pub fn check_among(&self, when: &str, among: Option<&[NodeId]>) {
        let seed = self.seed;
        let barrier = self.write(&format!("barrier-{when}"), "b", 60);
        let mut dumps = BTreeMap::new();
        for (id, slot) in &self.slots {
            if !slot.is_up() || among.is_some_and(|a| !a.contains(id)) {
                continue;
            }
            let n = slot.node().clone();
            within(
                &self.client,
                60,
                &format!("seed {seed}: node {id} catches up ({when})"),
                async {
                    n.raft()
                    .wait(Some(Duration::from_secs(50)))
                    .applied_index_at_least(Some(barrier), "catch up")
                    .await
                    .unwrap_or_else(|e| {
                        panic!("seed {seed}: node {id} did not apply up to {barrier} ({when}): {e}")
                    });
                },
            );
            let d: BTreeMap<Vec<u8>, Vec<u8>> = n
                .state_machine()
                .dump()
                .expect("dump")
                .into_iter()
                .collect();
            dumps.insert(*id, d);
        }
        let acked = self.acked.lock().clone();
        assert!(
            !acked.is_empty(),
            "seed {seed}: nothing was acknowledged ({when})"
        );
        for (id, d) in &dumps {
            for (key, (value, index)) in &acked {
                assert_eq!(
                    d.get(key),
                    Some(value),
                    "seed {seed}: node {id} lacks {} acknowledged at index {index} ({when}; {} acknowledged)",
                    String::from_utf8_lossy(key),
                    acked.len()
                );
            }
        }
        let refused = self.refused.lock().clone();
        for (id, d) in &dumps {
            for key in &refused {
                assert!(
                    !d.contains_key(key),
                    "seed {seed}: node {id} holds {}, whose only write was refused ({when})",
                    String::from_utf8_lossy(key)
                );
            }
        }
        let (first, d0) = dumps.iter().next().unwrap();
        for (id, d) in &dumps {
            if d != d0 {
                let (only_here, only_there) = (only_in(d, d0), only_in(d0, d));
                panic!("seed {seed}: node {id} and node {first} hold different data ({when}): only on {id}: {only_here:?}, only on {first}: {only_there:?}");
            }
        }
        eprintln!(
            "seed {seed} {when}: {} acknowledged writes ({} refused ones absent) on all of {:?}",
            acked.len(),
            refused.len(),
            dumps.keys().collect::<Vec<_>>()
        );
    }

    /// Shuts every node up down (cleanly).
    pub fn shutdown(mut self) {
        let ids: Vec<NodeId> = self.slots.keys().copied().collect();
        for id in ids {
            self.live.lock().remove(&id);
            let slot = self.slots.get_mut(&id).unwrap();
            if let (Some(node), Some(rt)) = (slot.node.take(), slot.rt.take()) {
                if let Ok(node) = Arc::try_unwrap(node) {
                    let _ = rt.block_on(async {
                        tokio::time::timeout(Duration::from_secs(10), node.shutdown()).await
                    });
                }
                rt.shutdown_timeout(Duration::from_secs(2));
            }
        }
    }
}

/// One try of a put through the node that says it leads: `Ok(index)` if acknowledged,
/// `Err(true)` if the node answered that it did not take it (`NotLeader`, `Refused`,
/// `Stopping`: the docs make these definite), `Err(false)` otherwise (no leader,
/// `Unknown`, no answer in time).
async fn write_once(live: &Live, acked: &Acked, key: &[u8], value: &[u8]) -> Result<u64, bool> {
    let leader = live
        .lock()
        .values()
        .find(|n| n.status().role == "Leader")
        .cloned()
        .ok_or(false)?;
    let batch = Batch::new().put(key.to_vec(), value.to_vec());
    match tokio::time::timeout(Duration::from_secs(5), leader.write(batch)).await {
        Ok(Ok(w)) => {
            assert_eq!(w.result, BatchResult::Applied, "a put is applied");
            acked
                .lock()
                .insert(key.to_vec(), (value.to_vec(), w.log_id.index));
            Ok(w.log_id.index)
        }
        Ok(Err(
            ClientError::NotLeader { .. } | ClientError::Refused(_) | ClientError::Stopping(_),
        )) => Err(true),
        _ => Err(false),
    }
}

/// Running writers.
pub struct Writers {
    stop: Arc<std::sync::atomic::AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    /// Stops them and waits until each has ended.
    pub fn stop(self, client: &tokio::runtime::Runtime) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        within(client, 30, "the writers stop", async {
            for t in self.tasks {
                t.await.expect("a writer panicked");
            }
        });
    }
}

/// How many writes were acknowledged so far.
pub fn acked_count(acked: &Acked) -> usize {
    acked.lock().len()
}
