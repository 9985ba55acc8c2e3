//! The wire: requests and responses between nodes and clients, and the connection that
//! carries them.
//!
//! A connection is a byte stream (TCP on loopback) cut into frames by tokio-util's
//! length-delimited codec. Each frame is a request id (8 bytes, little-endian) and a
//! postcard-encoded [`Request`] or [`Response`]. A connection carries many requests at
//! once: the client side matches each response to its request by id, and the server
//! answers each request from a task of its own, in whatever order they finish.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use crate::types::{
    decode, encode_after, Batch, BatchResult, LogId, NodeId, SnapshotMeta, TypeConfig, Vote,
};

/// The largest frame either side accepts (a snapshot travels in one frame).
pub(crate) const MAX_FRAME: usize = 1 << 30;

/// A byte stream a connection runs on.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for T {}

/// What a peer or client asks of a node.
#[derive(Serialize, Deserialize)]
pub(crate) enum Request {
    Append(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<TypeConfig>),
    PreVote(VoteRequest<TypeConfig>),
    Snapshot {
        vote: Vote,
        meta: SnapshotMeta,
        data: Vec<u8>,
    },
    Write(Batch),
    Read {
        key: Vec<u8>,
        consistency: Consistency,
    },
    Dump {
        consistency: Consistency,
    },
    Status,
    AddLearner {
        id: NodeId,
        addr: String,
    },
    ChangeVoters {
        voters: BTreeSet<NodeId>,
    },
}

/// A node's answer.
#[derive(Serialize, Deserialize)]
pub(crate) enum Response {
    Append(AppendEntriesResponse<TypeConfig>),
    Vote(VoteResponse<TypeConfig>),
    Snapshot(SnapshotResponse<TypeConfig>),
    Written(Written),
    Value(Option<Vec<u8>>),
    Dump(Vec<(Vec<u8>, Vec<u8>)>),
    Status(NodeStatus),
    Done,
    Error(ClientError),
}

/// How fresh a read must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Consistency {
    /// Linearizable (Raft's read index): the read sees every write acknowledged before it
    /// began, wherever it was made. Served by the leader after it confirms, with a
    /// round of heartbeats to a majority, that it still is the leader.
    Linearizable,
    /// This node's state machine as it is: may lag the leader (and miss writes already
    /// acknowledged), never shows a write that is not committed. Opt in explicitly.
    Local,
}

/// A committed and applied write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    /// The log entry that carried it.
    pub log_id: LogId,
    /// What applying it did.
    pub result: BatchResult,
}

/// What a node says of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// The node's id.
    pub id: NodeId,
    /// `Leader`, `Follower`, `Candidate`, `Learner` or `Shutdown`.
    pub role: String,
    /// The leader it knows of.
    pub leader: Option<NodeId>,
    /// Its current term.
    pub term: u64,
    /// Index of its last log entry.
    pub last_log_index: Option<u64>,
    /// Index of the last entry applied to its state machine.
    pub applied_index: Option<u64>,
    /// Index of the last entry its newest snapshot covers (built here or installed from
    /// the leader), if it has one.
    pub snapshot_index: Option<u64>,
    /// Index of the last entry purged from its Raft log, if any.
    pub purged_index: Option<u64>,
    /// Snapshots it installed from a leader since its process started.
    pub snapshots_installed: u64,
    /// The members (voters) and their addresses, as its membership says.
    pub voters: BTreeMap<NodeId, String>,
    /// Learners and their addresses.
    pub learners: BTreeMap<NodeId, String>,
}

/// Why a client request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ClientError {
    /// The node asked is not the leader; the leader it knows of, if any, is given.
    #[error("node {node} is not the leader{}", leader_text(.leader, .leader_addr))]
    NotLeader {
        /// The node asked.
        node: NodeId,
        /// The leader it knows of.
        leader: Option<NodeId>,
        /// That leader's address.
        leader_addr: Option<String>,
    },
    /// The write may or may not have been committed (the leader changed, or the
    /// connection broke, after it was sent): read before retrying it.
    #[error("the outcome of the write is unknown: {0}")]
    Unknown(String),
    /// The node could not reach a majority (for a linearizable read or a membership
    /// change).
    #[error("no quorum: {0}")]
    NoQuorum(String),
    /// The request is refused (a membership change that cannot be made, bad input).
    #[error("refused: {0}")]
    Refused(String),
    /// No node could be reached.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The node is shutting down or has failed.
    #[error("node is stopping: {0}")]
    Stopping(String),
}

fn leader_text(leader: &Option<NodeId>, addr: &Option<String>) -> String {
    match (leader, addr) {
        (Some(l), Some(a)) => format!(" (the leader is node {l} at {a})"),
        (Some(l), None) => format!(" (the leader is node {l})"),
        _ => " (no leader is known)".to_string(),
    }
}

fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(MAX_FRAME)
        .new_codec()
}

/// Writes the frames `out` hands over to `write` until either side closes. Every frame
/// already waiting goes out in the same flush, so a burst of answers (the writes one
/// log entry carried, applied together) costs one system call rather than one each.
async fn write_frames(write: impl AsyncWrite + Unpin, mut out: mpsc::Receiver<bytes::Bytes>) {
    let mut w = FramedWrite::new(write, codec());
    while let Some(f) = out.recv().await {
        if w.feed(f).await.is_err() {
            return;
        }
        // Let the tasks already woken (the other answers of the same entry) queue
        // theirs before the flush.
        tokio::task::yield_now().await;
        while let Ok(f) = out.try_recv() {
            if w.feed(f).await.is_err() {
                return;
            }
        }
        if SinkExt::<bytes::Bytes>::flush(&mut w).await.is_err() {
            return;
        }
    }
}

fn frame<T: Serialize>(id: u64, body: &T) -> io::Result<bytes::Bytes> {
    Ok(encode_after(&id.to_le_bytes(), body)?.into())
}

fn unframe<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> io::Result<(u64, T)> {
    if bytes.len() < 8 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{what}: a frame shorter than its id"),
        ));
    }
    let id = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    Ok((id, decode(&bytes[8..], what)?))
}

type Pending = Arc<Mutex<Option<HashMap<u64, oneshot::Sender<Response>>>>>;

/// The client side of a connection: sends requests, matches responses.
pub(crate) struct Conn {
    out: mpsc::Sender<bytes::Bytes>,
    pending: Pending,
    next: AtomicU64,
}

impl Conn {
    /// Runs a connection on `stream`.
    pub(crate) fn new(stream: impl Stream) -> Conn {
        let (read, write) = tokio::io::split(stream);
        let (out, out_rx) = mpsc::channel::<bytes::Bytes>(64);
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        tokio::spawn(write_frames(write, out_rx));
        let p = pending.clone();
        tokio::spawn(async move {
            let mut r = FramedRead::new(read, codec());
            while let Some(Ok(f)) = r.next().await {
                let Ok((id, resp)) = unframe::<Response>(&f, "a response") else {
                    break;
                };
                let tx = p.lock().as_mut().and_then(|m| m.remove(&id));
                if let Some(tx) = tx {
                    let _ = tx.send(resp);
                }
            }
            // The connection is gone: every caller still waiting gets an error.
            p.lock().take();
        });
        Conn {
            out,
            pending,
            next: AtomicU64::new(1),
        }
    }

    /// True once the connection has broken.
    pub(crate) fn is_broken(&self) -> bool {
        self.pending.lock().is_none() || self.out.is_closed()
    }

    /// Sends `req` and waits up to `timeout` for its response.
    pub(crate) async fn call(&self, req: &Request, timeout: Duration) -> io::Result<Response> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match self.pending.lock().as_mut() {
            Some(m) => m.insert(id, tx),
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "the connection is closed",
                ))
            }
        };
        let f = frame(id, req)?;
        let forget = |p: &Pending| {
            if let Some(m) = p.lock().as_mut() {
                m.remove(&id);
            }
        };
        if self.out.send(f).await.is_err() {
            forget(&self.pending);
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "the connection is closed",
            ));
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "the connection closed before the answer",
            )),
            Err(_) => {
                forget(&self.pending);
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no answer within {timeout:?}"),
                ))
            }
        }
    }
}

/// Serves one connection until it closes or `stop` turns true: each request is answered
/// by `handle`, in a task of its own.
pub(crate) async fn serve<H, F>(
    stream: impl Stream,
    handle: H,
    mut stop: tokio::sync::watch::Receiver<bool>,
) where
    H: Fn(Request) -> F + Clone + Send + 'static,
    F: std::future::Future<Output = Response> + Send + 'static,
{
    let (read, write) = tokio::io::split(stream);
    let (out, out_rx) = mpsc::channel::<bytes::Bytes>(64);
    let writer = tokio::spawn(write_frames(write, out_rx));
    let mut r = FramedRead::new(read, codec());
    loop {
        let f = tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            f = r.next() => match f {
                Some(Ok(f)) => f,
                _ => break,
            },
        };
        let (id, req) = match unframe::<Request>(&f, "a request") {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("closing a connection that sent a bad frame: {e}");
                break;
            }
        };
        let (out, handle) = (out.clone(), handle.clone());
        tokio::spawn(async move {
            let resp = handle(req).await;
            if let Ok(f) = frame(id, &resp) {
                let _ = out.send(f).await;
            }
        });
    }
    drop(out);
    if *stop.borrow() {
        // Stopping: close the connection now, answered or not.
        writer.abort();
    }
    let _ = writer.await;
}
