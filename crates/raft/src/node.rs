//! A cluster node: openraft driving a [`LogStore`] and a [`StateMachine`], served on a
//! TCP address; and a [`Client`] that finds the leader.
//!
//! **A write** ([`Node::write`], [`Client::write`]): the leader appends the batch to its
//! log, replicates it, and once a majority has it durable (each follower acknowledges
//! an append only after its `IOFlushed` callback, i.e. after the entry is durable in its
//! WAL) openraft commits it; the leader's state machine applies it in one transaction
//! and the write returns once that transaction is durable. A write sent to a follower
//! is refused with [`ClientError::NotLeader`], naming the leader; the [`Client`] follows
//! that hint. A write whose leader changed while it was in flight is
//! [`ClientError::Unknown`]: it may or may not be committed.
//!
//! **A read** is [`Consistency::Linearizable`] (Raft's read index: the leader confirms it
//! still leads with a majority, then waits until its state machine has applied up to
//! the commit index it saw) or, opted in, [`Consistency::Local`].
//!
//! **Peers** are reached over TCP; a node never connects to itself (its own id or its
//! own listening address), and a peer that cannot be connected to is reported to
//! openraft as `Unreachable`, which backs off.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openraft::errors::{
    ClientWriteError, NetworkError, RPCError, RaftError, ReplicationClosed, StreamingError,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RaftNetworkV2, ReadPolicy, ServerState};
use sluice_storage::Storage;
use sluice_wal::LogOptions;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};

use crate::tls::Tls;
use crate::types::{Batch, BatchResult, NodeId, Proposal, Snapshot, TypeConfig, Vote};
use crate::wire::{serve, Conn, Request, Response};
pub use crate::wire::{ClientError, Consistency, NodeStatus, Written};
use crate::{LogStore, StateMachine};

/// openraft running this crate's storage.
pub type Raft = openraft::Raft<TypeConfig, StateMachine>;

/// How to start a node.
#[derive(Clone)]
pub struct NodeConfig {
    /// The node's id in the cluster (unique, never reused).
    pub id: NodeId,
    /// Its directory: `raft-log/` (the Raft log) and `sm/` (the state machine).
    pub dir: PathBuf,
    /// The address to listen on (`127.0.0.1:0` picks a free port: see [`Node::addr`]).
    pub listen: SocketAddr,
    /// The state machine's database options.
    pub db: sluice::Options,
    /// The Raft log's WAL options.
    pub log: LogOptions,
    /// openraft's timing and snapshot settings.
    pub raft: openraft::Config,
    /// Builds a snapshot once the Raft log has grown, since the last one this node built
    /// or installed, by at least this many bytes and by at least that snapshot's size;
    /// `None` leaves snapshots to `raft.snapshot_policy` alone. A snapshot copies the
    /// whole state, so a rule counting entries (openraft's `LogsSinceLast`) makes each
    /// write pay for more copying as the state grows; this rule copies at most as many
    /// bytes as the log took in, and keeps the log at about twice the state.
    /// [`NodeConfig::new`]: 16 MiB, with openraft's own policy off.
    pub snapshot_log_bytes: Option<u64>,
    /// The disk (the real one, or a simulated one in tests).
    pub storage: Arc<dyn Storage>,
    /// Mutual TLS, or plain TCP for loopback experiments.
    pub security: Security,
}

/// How nodes and clients authenticate each other.
#[derive(Clone)]
pub enum Security {
    /// Mutual TLS: every connection presents a certificate of the cluster's CA (see
    /// `tls.rs`); one that does not is refused before anything it sends is read.
    Tls(Tls),
    /// Plain TCP, no authentication: anyone who can connect is a member. For loopback
    /// experiments only, and only when asked for by name (`--insecure`).
    Insecure,
}

impl NodeConfig {
    /// A node on the real disk with default options and loopback timings (heartbeat
    /// 50 ms, election timeout 300–600 ms).
    pub fn new(
        id: NodeId,
        dir: impl Into<PathBuf>,
        listen: SocketAddr,
        security: Security,
    ) -> NodeConfig {
        NodeConfig {
            id,
            dir: dir.into(),
            listen,
            db: state_machine_options(sluice::Options::default()),
            log: LogOptions::default(),
            raft: openraft::Config {
                cluster_name: "sluice".into(),
                heartbeat_interval: 50,
                election_timeout_min: 300,
                election_timeout_max: 600,
                snapshot_policy: openraft::SnapshotPolicy::Never,
                ..Default::default()
            },
            snapshot_log_bytes: Some(DEFAULT_SNAPSHOT_LOG_BYTES),
            storage: Arc::new(sluice_storage::OsStorage::new()),
            security,
        }
    }
}

/// [`NodeConfig::snapshot_log_bytes`] of [`NodeConfig::new`].
pub const DEFAULT_SNAPSHOT_LOG_BYTES: u64 = 16 << 20;

/// How often a node looks at its log's growth for [`NodeConfig::snapshot_log_bytes`].
const SNAPSHOT_CHECK: Duration = Duration::from_millis(200);

/// Triggers a snapshot whenever the Raft log has grown by `min_bytes`, and by the size of
/// the newest snapshot, since the last trigger (or the start), until `stop` turns true.
async fn snapshot_by_log_size(
    raft: Raft,
    log: LogStore,
    sm: StateMachine,
    min_bytes: u64,
    mut stop: watch::Receiver<bool>,
) {
    let mut since = log.appended_bytes();
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(SNAPSHOT_CHECK) => {}
        }
        let now = log.appended_bytes();
        if now.saturating_sub(since) >= min_bytes.max(sm.snapshot_bytes()) {
            since = now;
            if raft.trigger().snapshot().await.is_err() {
                return;
            }
        }
    }
}

/// `options` as a node's state machine wants them: the Raft log makes applied entries
/// durable ([`StateMachine::witness_applies_with`]), so the state machine's own log is
/// flushed in the background (once bytes have waited 50 ms, or 1 MiB of them) rather
/// than after every apply.
pub fn state_machine_options(mut options: sluice::Options) -> sluice::Options {
    options.log.group_commit.max_delay = Duration::from_millis(50);
    options
}

/// `raft` with openraft's leader restore off, or an error if it asks for it on.
///
/// The log store lets openraft send an entry to the followers as soon as it is appended,
/// before it is durable here (Raft allows it: a majority of the others can commit it). A
/// leader that then loses power comes back without that tail. With leader restore (on by
/// default in openraft 0.10) it would go on leading its old term and write new entries at
/// the lost indexes under the same log ids; a follower holding the old entry takes the new
/// one for it, and the nodes diverge with a committed write missing on one of them (found
/// by `sluice crash-test cluster`). Without it, a restarted leader is a follower until an
/// election in a new term, which only a node holding every committed entry wins.
fn no_leader_restore(mut raft: openraft::Config) -> io::Result<openraft::Config> {
    if raft.enable_leader_restore == Some(true) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "enable_leader_restore: a sluice node cannot restore a restarted leader without an election (its followers may hold entries it appended but had not made durable); leave it unset or false",
        ));
    }
    raft.enable_leader_restore = Some(false);
    Ok(raft)
}

/// Timeouts of client calls and of peer calls that openraft gives none for.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A running node.
pub struct Node {
    id: NodeId,
    addr: SocketAddr,
    raft: Raft,
    sm: StateMachine,
    log: LogStore,
    stop: watch::Sender<bool>,
    server: tokio::task::JoinHandle<()>,
    refused: Arc<AtomicU64>,
    handler: Handler,
}

impl Node {
    /// Opens the node's storage (recovering it), starts openraft and serves peers and
    /// clients on `config.listen`. A new node is not part of any cluster until
    /// [`Node::initialize`] (on one node of a new cluster) or a leader's
    /// [`Node::add_learner`] takes it in; a restarted node rejoins on its own.
    pub async fn start(config: NodeConfig) -> io::Result<Node> {
        let raft_config = Arc::new(
            no_leader_restore(config.raft.clone())?
                .validate()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?,
        );
        let (storage, dir) = (config.storage.clone(), config.dir.clone());
        let db = config.db;
        let log_options = config.log;
        let (log, sm) = tokio::task::spawn_blocking(move || -> io::Result<_> {
            storage.create_dir_all(&dir)?;
            let log = LogStore::open(storage.clone(), dir.join("raft-log"), log_options)?;
            let sm = StateMachine::open(storage, dir.join("sm"), db)?;
            sm.witness_applies_with(log.clone());
            Ok((log, sm))
        })
        .await
        .map_err(io::Error::other)??;
        let listener = TcpListener::bind(config.listen).await?;
        let addr = listener.local_addr()?;
        let network = Network {
            me: config.id,
            my_addr: addr.to_string(),
            security: config.security.clone(),
        };
        let raft = Raft::new(config.id, raft_config, network, log.clone(), sm.clone())
            .await
            .map_err(io::Error::other)?;
        let (stop, stopped) = watch::channel(false);
        let max_record = log.wal().max_record_bytes();
        let (proposer, proposals) = mpsc::channel(4096);
        tokio::spawn(propose(raft.clone(), config.id, max_record, proposals));
        let handler = Handler {
            id: config.id,
            raft: raft.clone(),
            sm: sm.clone(),
            max_record,
            proposer,
        };
        if let Some(min_bytes) = config.snapshot_log_bytes {
            tokio::spawn(snapshot_by_log_size(
                raft.clone(),
                log.clone(),
                sm.clone(),
                min_bytes,
                stopped.clone(),
            ));
        }
        let served = handler.clone();
        let refused = Arc::new(AtomicU64::new(0));
        let (security, refusals) = (config.security.clone(), refused.clone());
        let server = tokio::spawn(async move {
            let mut halt = stopped.clone();
            loop {
                tokio::select! {
                    _ = halt.changed() => break,
                    accepted = listener.accept() => {
                        let Ok((stream, peer)) = accepted else { continue };
                        let _ = stream.set_nodelay(true);
                        let h = served.clone();
                        let handle = move |req| {
                            let h = h.clone();
                            async move { h.handle(req).await }
                        };
                        match &security {
                            Security::Insecure => {
                                tokio::spawn(serve(stream, handle, stopped.clone()));
                            }
                            Security::Tls(tls) => {
                                let (tls, refusals) = (tls.clone(), refusals.clone());
                                let stopped = stopped.clone();
                                tokio::spawn(async move {
                                    match tls.accept(stream).await {
                                        Ok(s) => serve(s, handle, stopped).await,
                                        Err(e) => {
                                            refusals.fetch_add(1, Ordering::Relaxed);
                                            tracing::warn!(%peer, "refused a connection without a valid certificate of this cluster: {e}");
                                        }
                                    }
                                });
                            }
                        }
                    }
                }
            }
        });
        Ok(Node {
            id: config.id,
            addr,
            raft,
            sm,
            log,
            stop,
            server,
            refused,
            handler,
        })
    }

    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The address it serves on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// openraft's handle (metrics, waits, and everything this type does not wrap).
    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    /// The state machine (for checks: what this node has applied).
    pub fn state_machine(&self) -> &StateMachine {
        &self.sm
    }

    /// Makes a new cluster of `members` (id → address), this node among them. Call it on
    /// one node of a new cluster only; a node already initialized refuses.
    pub async fn initialize(&self, members: BTreeMap<NodeId, String>) -> Result<(), ClientError> {
        let members: BTreeMap<NodeId, BasicNode> = members
            .into_iter()
            .map(|(id, addr)| (id, BasicNode { addr }))
            .collect();
        self.raft
            .initialize(members)
            .await
            .map_err(|e| ClientError::Refused(e.to_string()))
    }

    /// Writes `batch` through this node, which must be the leader. Returns once the
    /// batch is committed by a majority and applied here.
    pub async fn write(&self, batch: Batch) -> Result<Written, ClientError> {
        self.handler.write(batch).await
    }

    /// Reads `key` with the given consistency.
    pub async fn read(
        &self,
        key: &[u8],
        consistency: Consistency,
    ) -> Result<Option<Vec<u8>>, ClientError> {
        self.handler.read(consistency, |sm| sm.get(key)).await
    }

    /// Adds a learner (a non-voting member that receives the log); returns once it has
    /// caught up. Leader only.
    pub async fn add_learner(&self, id: NodeId, addr: String) -> Result<(), ClientError> {
        self.handler.add_learner(id, addr).await
    }

    /// Makes `voters` the voting members: learners among them are promoted, voters not
    /// among them leave the cluster (not kept as learners); other learners stay learners.
    /// Leader only.
    pub async fn change_voters(&self, voters: BTreeSet<NodeId>) -> Result<(), ClientError> {
        self.handler.change_voters(voters).await
    }

    /// How many connections this node refused because they had no valid certificate of
    /// the cluster's CA (each is also logged, with the peer's address).
    pub fn refused_connections(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// What the node says of itself.
    pub fn status(&self) -> NodeStatus {
        status(self.id, &self.raft, &self.sm)
    }

    /// Stops serving, stops openraft, and closes the storage cleanly.
    pub async fn shutdown(self) -> io::Result<()> {
        let _ = self.stop.send(true);
        let _ = self.server.await;
        self.raft.shutdown().await.map_err(io::Error::other)?;
        let (sm, log) = (self.sm, self.log);
        tokio::task::spawn_blocking(move || {
            let a = sm.close();
            let b = log.close();
            a.and(b)
        })
        .await
        .map_err(io::Error::other)?
    }
}

fn status(id: NodeId, raft: &Raft, sm: &StateMachine) -> NodeStatus {
    use openraft::async_runtime::watch::WatchReceiver;
    let m = raft.metrics().borrow_watched().clone();
    let role = match m.state {
        ServerState::Leader => "Leader",
        ServerState::Follower => "Follower",
        ServerState::Candidate => "Candidate",
        ServerState::Learner => "Learner",
        ServerState::Shutdown => "Shutdown",
    };
    let membership = m.membership_config.membership();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let mut v = BTreeMap::new();
    let mut l = BTreeMap::new();
    for (nid, node) in membership.nodes() {
        if voters.contains(nid) {
            v.insert(*nid, node.addr.clone());
        } else {
            l.insert(*nid, node.addr.clone());
        }
    }
    NodeStatus {
        id,
        role: role.to_string(),
        leader: m.current_leader,
        term: m.current_term,
        last_log_index: m.last_log_index,
        applied_index: m.last_applied.map(|l| l.index()),
        snapshot_index: m.snapshot.map(|l| l.index()),
        purged_index: m.purged.map(|l| l.index()),
        snapshots_installed: sm.installs(),
        voters: v,
        learners: l,
    }
}

/// Serves one node's requests.
#[derive(Clone)]
struct Handler {
    id: NodeId,
    raft: Raft,
    sm: StateMachine,
    /// The Raft log's largest record (a batch must fit in one).
    max_record: usize,
    /// Where writes wait to be gathered into log entries (`propose`).
    proposer: mpsc::Sender<Pending>,
}

/// A write waiting to be proposed.
struct Pending {
    batch: Batch,
    size: usize,
    reply: oneshot::Sender<Result<Written, ClientError>>,
}

/// Log entries in flight at once from one leader; writes that arrive meanwhile gather
/// into the next entry. Measured with `sluice bench replicated --clients 64 --insecure`
/// (2 cores, 2026-11-28, two rounds): 1 in flight 14,944 and 15,278 tps, 2: 14,873 and
/// 14,982, 4: 13,651 and 11,661. Two keep a second entry ready without splitting the
/// load into small entries.
const MAX_IN_FLIGHT: usize = 2;
/// Batches in one entry, at most.
const MAX_GROUP: usize = 1024;

/// Gathers writes into log entries: each entry takes every write that waited while the
/// entries before it were in flight (up to the log's largest record), so under load one
/// entry — one log record, one replication round, one state-machine transaction —
/// carries many writes; alone, a write is proposed at once.
async fn propose(raft: Raft, id: NodeId, max_record: usize, mut rx: mpsc::Receiver<Pending>) {
    let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let mut next: Option<Pending> = None;
    loop {
        let first = match next.take() {
            Some(p) => p,
            None => match rx.recv().await {
                Some(p) => p,
                None => return,
            },
        };
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            return;
        };
        let mut size = first.size + crate::state_machine::ENTRY_OVERHEAD;
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(p) if size + p.size <= max_record => {
                    size += p.size;
                    group.push(p);
                }
                Ok(p) => {
                    next = Some(p);
                    break;
                }
                Err(_) => break,
            }
        }
        let raft = raft.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let (batches, replies): (Vec<Batch>, Vec<_>) =
                group.into_iter().map(|p| (p.batch, p.reply)).unzip();
            match raft
                .client_write(Proposal {
                    batches: Arc::new(batches),
                })
                .await
            {
                Ok(r) => {
                    let mut results = r.data.into_iter();
                    for reply in replies {
                        let result = results.next().unwrap_or(BatchResult::Applied);
                        let _ = reply.send(Ok(Written {
                            log_id: r.log_id,
                            result,
                        }));
                    }
                }
                Err(e) => {
                    let e = write_error(id, e);
                    for reply in replies {
                        let _ = reply.send(Err(e.clone()));
                    }
                }
            }
        });
    }
}

fn not_leader(id: NodeId, f: &openraft::errors::ForwardToLeader<TypeConfig>) -> ClientError {
    ClientError::NotLeader {
        node: id,
        leader: f.leader_id,
        leader_addr: f.leader_node.as_ref().map(|n| n.addr.clone()),
    }
}

fn write_error(id: NodeId, e: RaftError<TypeConfig, ClientWriteError<TypeConfig>>) -> ClientError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => not_leader(id, &f),
        RaftError::APIError(ClientWriteError::LogEntryDiscarded(f)) => ClientError::Unknown(
            format!("the entry was discarded when the leader changed ({f})"),
        ),
        RaftError::APIError(e) => ClientError::Refused(e.to_string()),
        // The entry may have been appended, and may yet be committed by another leader.
        RaftError::Fatal(f) => ClientError::Unknown(format!("the node stopped: {f}")),
    }
}

impl Handler {
    async fn write(&self, batch: Batch) -> Result<Written, ClientError> {
        let limits = self.sm.limits();
        let size = crate::state_machine::check_batch(&batch, limits, self.max_record)
            .map_err(ClientError::Refused)?;
        let (reply, answer) = oneshot::channel();
        self.proposer
            .send(Pending { batch, size, reply })
            .await
            .map_err(|_| ClientError::Stopping("the node is stopping".into()))?;
        answer.await.map_err(|_| {
            ClientError::Unknown("the node stopped while the write was in flight".into())
        })?
    }

    /// Serves a read of the given consistency: waits until it may be served here, then
    /// reads with `f`. An entry is readable once applied, possibly before the Raft log's
    /// witness of it is durable; the read is still never taken back by a restart of this
    /// node, because its transaction's commit waits until what it read is durable in the
    /// state machine's own log (the engine's rule for a transaction that read the writes
    /// of an early-released one).
    async fn read<T>(
        &self,
        consistency: Consistency,
        f: impl FnOnce(&StateMachine) -> io::Result<T>,
    ) -> Result<T, ClientError> {
        self.ready(consistency).await?;
        f(&self.sm).map_err(|e| ClientError::Stopping(e.to_string()))
    }

    /// Waits until a read of the given consistency may be served here.
    async fn ready(&self, consistency: Consistency) -> Result<(), ClientError> {
        if consistency == Consistency::Local {
            return Ok(());
        }
        match self.raft.ensure_linearizable(ReadPolicy::ReadIndex).await {
            Ok(_) => Ok(()),
            Err(RaftError::APIError(openraft::errors::LinearizableReadError::ForwardToLeader(
                f,
            ))) => Err(not_leader(self.id, &f)),
            Err(RaftError::APIError(e)) => Err(ClientError::NoQuorum(e.to_string())),
            Err(RaftError::Fatal(f)) => Err(ClientError::Stopping(f.to_string())),
        }
    }

    async fn add_learner(&self, id: NodeId, addr: String) -> Result<(), ClientError> {
        self.raft
            .add_learner(id, BasicNode { addr }, true)
            .await
            .map(|_| ())
            .map_err(|e| write_error(self.id, e))
    }

    async fn change_voters(&self, voters: BTreeSet<NodeId>) -> Result<(), ClientError> {
        self.raft
            .change_membership(voters, false)
            .await
            .map(|_| ())
            .map_err(|e| write_error(self.id, e))
    }

    async fn handle(&self, req: Request) -> Response {
        let fatal =
            |e: &dyn std::fmt::Display| Response::Error(ClientError::Stopping(e.to_string()));
        match req {
            Request::Append(r) => match self.raft.append_entries(r).await {
                Ok(x) => Response::Append(x),
                Err(e) => fatal(&e),
            },
            Request::Vote(r) => match self.raft.vote(r).await {
                Ok(x) => Response::Vote(x),
                Err(e) => fatal(&e),
            },
            Request::PreVote(r) => match self.raft.pre_vote(r).await {
                Ok(x) => Response::Vote(x),
                Err(e) => fatal(&e),
            },
            Request::Snapshot { vote, meta, data } => {
                match self
                    .raft
                    .install_full_snapshot(
                        vote,
                        Snapshot {
                            meta,
                            snapshot: data,
                        },
                    )
                    .await
                {
                    Ok(x) => Response::Snapshot(x),
                    Err(e) => fatal(&e),
                }
            }
            Request::Write(b) => match self.write(b).await {
                Ok(w) => Response::Written(w),
                Err(e) => Response::Error(e),
            },
            Request::Read { key, consistency } => {
                match self.read(consistency, |sm| sm.get(&key)).await {
                    Ok(v) => Response::Value(v),
                    Err(e) => Response::Error(e),
                }
            }
            Request::Dump { consistency } => {
                match self.read(consistency, StateMachine::dump).await {
                    Ok(v) => Response::Dump(v),
                    Err(e) => Response::Error(e),
                }
            }
            Request::Status => Response::Status(status(self.id, &self.raft, &self.sm)),
            Request::AddLearner { id, addr } => match self.add_learner(id, addr).await {
                Ok(()) => Response::Done,
                Err(e) => Response::Error(e),
            },
            Request::ChangeVoters { voters } => match self.change_voters(voters).await {
                Ok(()) => Response::Done,
                Err(e) => Response::Error(e),
            },
        }
    }
}

/// Connects to `addr`.
async fn connect(addr: &str, security: &Security) -> io::Result<Conn> {
    let timeout = Duration::from_secs(2);
    let timed_out = || {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("connecting to {addr} timed out"),
        )
    };
    let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| timed_out())??;
    stream.set_nodelay(true)?;
    match security {
        Security::Insecure => Ok(Conn::new(stream)),
        Security::Tls(tls) => {
            let s = tokio::time::timeout(timeout, tls.connect(addr, stream))
                .await
                .map_err(|_| timed_out())??;
            Ok(Conn::new(s))
        }
    }
}

/// openraft's view of the network: one [`Peer`] per target.
struct Network {
    me: NodeId,
    my_addr: String,
    security: Security,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer {
            target,
            addr: node.addr.clone(),
            is_me: target == self.me || node.addr == self.my_addr,
            conn: None,
            security: self.security.clone(),
        }
    }
}

/// The connection to one peer, made when first needed and again after it breaks.
struct Peer {
    target: NodeId,
    addr: String,
    /// Never connect to ourselves.
    is_me: bool,
    conn: Option<Conn>,
    security: Security,
}

impl Peer {
    async fn call(
        &mut self,
        req: Request,
        timeout: Duration,
    ) -> Result<Response, RPCError<TypeConfig>> {
        if self.is_me {
            return Err(RPCError::Unreachable(Unreachable::from_string(format!(
                "node {} at {} is this node: it does not connect to itself",
                self.target, self.addr
            ))));
        }
        if self.conn.as_ref().is_none_or(|c| c.is_broken()) {
            self.conn = None;
            let c = connect(&self.addr, &self.security)
                .await
                .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))?;
            self.conn = Some(c);
        }
        let conn = self.conn.as_ref().expect("connected above");
        match conn.call(&req, timeout).await {
            // A peer that is stopping is as good as gone: let openraft back off.
            Ok(Response::Error(e @ ClientError::Stopping(_))) => {
                Err(RPCError::Unreachable(Unreachable::new(&e)))
            }
            Ok(Response::Error(e)) => Err(RPCError::Network(NetworkError::new(&e))),
            Ok(r) => Ok(r),
            Err(e) => {
                self.conn = None;
                Err(RPCError::Network(NetworkError::new(&e)))
            }
        }
    }
}

fn unexpected(what: &str) -> RPCError<TypeConfig> {
    RPCError::Network(NetworkError::from_string(format!(
        "unexpected answer to {what}"
    )))
}

impl RaftNetworkV2<TypeConfig> for Peer {
    type SnapshotData = Vec<u8>;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        match self.call(Request::Append(rpc), option.hard_ttl()).await? {
            Response::Append(r) => Ok(r),
            _ => Err(unexpected("append-entries")),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        match self.call(Request::Vote(rpc), option.hard_ttl()).await? {
            Response::Vote(r) => Ok(r),
            _ => Err(unexpected("vote")),
        }
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        match self.call(Request::PreVote(rpc), option.hard_ttl()).await? {
            Response::Vote(r) => Ok(r),
            _ => Err(unexpected("pre-vote")),
        }
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl std::future::Future<Output = ReplicationClosed> + openraft::OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        let req = Request::Snapshot {
            vote,
            meta: snapshot.meta,
            data: snapshot.snapshot,
        };
        // A snapshot may take long to install: allow it more than one heartbeat.
        let timeout = option.hard_ttl().max(CALL_TIMEOUT * 6);
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            r = self.call(req, timeout) => match r {
                Ok(Response::Snapshot(s)) => Ok(s),
                Ok(_) => Err(StreamingError::Unreachable(Unreachable::from_string("unexpected answer to a snapshot"))),
                Err(RPCError::Unreachable(u)) => Err(StreamingError::Unreachable(u)),
                Err(e) => Err(StreamingError::Unreachable(Unreachable::new(&e))),
            },
        }
    }
}

/// A client of a cluster: sends each request to the node it believes leads, and
/// follows a node's "not the leader" answer to the leader it names.
pub struct Client {
    addrs: Vec<String>,
    security: Security,
    conns: tokio::sync::Mutex<BTreeMap<String, Arc<Conn>>>,
    leader: parking_lot::Mutex<Option<String>>,
}

impl Client {
    /// A client of the cluster whose nodes listen on `addrs` (any of them will do: it
    /// learns the leader from their answers).
    pub fn new(addrs: Vec<String>, security: Security) -> Client {
        Client {
            addrs,
            security,
            conns: tokio::sync::Mutex::new(BTreeMap::new()),
            leader: parking_lot::Mutex::new(None),
        }
    }

    async fn conn(&self, addr: &str) -> Result<Arc<Conn>, ClientError> {
        let mut conns = self.conns.lock().await;
        if let Some(c) = conns.get(addr) {
            if !c.is_broken() {
                return Ok(c.clone());
            }
        }
        let c = Arc::new(
            connect(addr, &self.security)
                .await
                .map_err(|e| match e.kind() {
                    // The TLS handshake failed: trying again will not help.
                    io::ErrorKind::InvalidData => ClientError::Refused(format!("{addr}: {e}")),
                    _ => ClientError::Unreachable(format!("{addr}: {e}")),
                })?,
        );
        conns.insert(addr.to_string(), c.clone());
        Ok(c)
    }

    /// Sends `req` to `addr` and returns the answer (a broken connection or a timeout is
    /// `Err(None)`).
    async fn call_at(&self, addr: &str, req: &Request) -> Result<Response, Option<ClientError>> {
        let c = self.conn(addr).await.map_err(Some)?;
        c.call(req, CALL_TIMEOUT).await.map_err(|_| None)
    }

    /// Sends a leader-only request, following "not the leader" answers; tries every
    /// node for up to `patience`.
    async fn to_leader(
        &self,
        req: Request,
        idempotent: bool,
        patience: Duration,
    ) -> Result<Response, ClientError> {
        let deadline = tokio::time::Instant::now() + patience;
        let mut i = 0usize;
        let mut last = ClientError::Unreachable("no node answered".into());
        while tokio::time::Instant::now() < deadline {
            let addr = self
                .leader
                .lock()
                .clone()
                .unwrap_or_else(|| self.addrs[i % self.addrs.len()].clone());
            i += 1;
            match self.call_at(&addr, &req).await {
                Ok(Response::Error(ClientError::NotLeader { leader_addr, .. })) => {
                    // No leader known, or a stale hint naming the node just asked: wait
                    // for the election rather than spin.
                    if leader_addr.is_none() || leader_addr.as_deref() == Some(addr.as_str()) {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    *self.leader.lock() = leader_addr;
                    last = ClientError::Unreachable("no leader is known yet".into());
                }
                // A write must not be sent again once a node took it: it may be in a log.
                Ok(Response::Error(ClientError::Stopping(why))) if !idempotent => {
                    *self.leader.lock() = None;
                    return Err(ClientError::Unknown(format!("{addr} is stopping: {why}")));
                }
                Ok(Response::Error(e @ (ClientError::NoQuorum(_) | ClientError::Stopping(_)))) => {
                    *self.leader.lock() = None;
                    last = e;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok(r) => return Ok(r),
                Err(Some(e @ ClientError::Refused(_))) => return Err(e),
                Err(Some(e)) => {
                    *self.leader.lock() = None;
                    last = e;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(None) => {
                    *self.leader.lock() = None;
                    if !idempotent {
                        return Err(ClientError::Unknown(format!("{addr} did not answer")));
                    }
                    last = ClientError::Unreachable(format!("{addr} did not answer"));
                }
            }
        }
        Err(last)
    }

    /// Writes `batch`: returns once it is committed by a majority and applied on the
    /// leader. [`ClientError::Unknown`] if the outcome cannot be known (read, then decide).
    pub async fn write(&self, batch: Batch) -> Result<Written, ClientError> {
        match self
            .to_leader(Request::Write(batch), false, CALL_TIMEOUT)
            .await?
        {
            Response::Written(w) => Ok(w),
            Response::Error(e) => Err(e),
            _ => Err(ClientError::Refused("unexpected answer to a write".into())),
        }
    }

    /// A linearizable read of `key` (through the leader).
    pub async fn read(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        let req = Request::Read {
            key: key.to_vec(),
            consistency: Consistency::Linearizable,
        };
        match self.to_leader(req, true, CALL_TIMEOUT).await? {
            Response::Value(v) => Ok(v),
            Response::Error(e) => Err(e),
            _ => Err(ClientError::Refused("unexpected answer to a read".into())),
        }
    }

    /// Reads `key` from the node at `addr` with the given consistency.
    pub async fn read_at(
        &self,
        addr: &str,
        key: &[u8],
        consistency: Consistency,
    ) -> Result<Option<Vec<u8>>, ClientError> {
        let req = Request::Read {
            key: key.to_vec(),
            consistency,
        };
        match self.call_at(addr, &req).await {
            Ok(Response::Value(v)) => Ok(v),
            Ok(Response::Error(e)) => Err(e),
            Ok(_) => Err(ClientError::Refused("unexpected answer to a read".into())),
            Err(e) => {
                Err(e.unwrap_or_else(|| ClientError::Unreachable(format!("{addr} did not answer"))))
            }
        }
    }

    /// Every key and value the node at `addr` has applied (`Local`) or, through the
    /// leader, every key committed (`Linearizable`).
    pub async fn dump_at(
        &self,
        addr: &str,
        consistency: Consistency,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, ClientError> {
        match self.call_at(addr, &Request::Dump { consistency }).await {
            Ok(Response::Dump(v)) => Ok(v),
            Ok(Response::Error(e)) => Err(e),
            Ok(_) => Err(ClientError::Refused("unexpected answer to a dump".into())),
            Err(e) => {
                Err(e.unwrap_or_else(|| ClientError::Unreachable(format!("{addr} did not answer"))))
            }
        }
    }

    /// What the node at `addr` says of itself.
    pub async fn status_at(&self, addr: &str) -> Result<NodeStatus, ClientError> {
        match self.call_at(addr, &Request::Status).await {
            Ok(Response::Status(s)) => Ok(s),
            Ok(Response::Error(e)) => Err(e),
            Ok(_) => Err(ClientError::Refused(
                "unexpected answer to a status request".into(),
            )),
            Err(e) => {
                Err(e.unwrap_or_else(|| ClientError::Unreachable(format!("{addr} did not answer"))))
            }
        }
    }

    /// Adds a learner through the leader.
    pub async fn add_learner(&self, id: NodeId, addr: String) -> Result<(), ClientError> {
        match self
            .to_leader(Request::AddLearner { id, addr }, true, CALL_TIMEOUT * 3)
            .await?
        {
            Response::Done => Ok(()),
            Response::Error(e) => Err(e),
            _ => Err(ClientError::Refused("unexpected answer".into())),
        }
    }

    /// Sets the voters through the leader.
    pub async fn change_voters(&self, voters: BTreeSet<NodeId>) -> Result<(), ClientError> {
        match self
            .to_leader(Request::ChangeVoters { voters }, true, CALL_TIMEOUT * 3)
            .await?
        {
            Response::Done => Ok(()),
            Response::Error(e) => Err(e),
            _ => Err(ClientError::Refused("unexpected answer".into())),
        }
    }
}
