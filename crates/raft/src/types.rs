//! The Raft types of a sluice cluster: what a log entry carries (a [`Batch`] of
//! [`Command`]s) and what applying it returns ([`BatchResult`]).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A node's id in a cluster.
pub type NodeId = u64;

/// One write of a [`Batch`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Sets `key` to `value`.
    Put {
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        /// The value.
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
    },
    /// Removes `key` (nothing if absent).
    Delete {
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    /// Checks that `key` holds `expected` (`None`: absent); the whole batch applies only
    /// if every such check of it holds.
    CompareAndSet {
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        /// The value it must hold (`None`: it must be absent).
        #[serde(with = "serde_bytes")]
        expected: Option<Vec<u8>>,
        /// What it is set to if every check holds (`None`: removed).
        #[serde(with = "serde_bytes")]
        new: Option<Vec<u8>>,
    },
}

impl Command {
    /// The key this command writes.
    pub fn key(&self) -> &[u8] {
        match self {
            Command::Put { key, .. }
            | Command::Delete { key }
            | Command::CompareAndSet { key, .. } => key,
        }
    }
}

/// A deterministic write batch: the unit a client writes and a log entry carries. It is
/// applied atomically, in order, on every node: all of it, or — if one of its
/// compare-and-set checks fails — none of it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Batch {
    /// The writes, applied in order.
    pub commands: Vec<Command>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Adds a put.
    pub fn put(mut self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Batch {
        self.commands.push(Command::Put {
            key: key.into(),
            value: value.into(),
        });
        self
    }

    /// Adds a delete.
    pub fn delete(mut self, key: impl Into<Vec<u8>>) -> Batch {
        self.commands.push(Command::Delete { key: key.into() });
        self
    }

    /// Adds a compare-and-set.
    pub fn compare_and_set(
        mut self,
        key: impl Into<Vec<u8>>,
        expected: Option<Vec<u8>>,
        new: Option<Vec<u8>>,
    ) -> Batch {
        self.commands.push(Command::CompareAndSet {
            key: key.into(),
            expected,
            new,
        });
        self
    }
}

impl fmt::Display for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "batch of {} command(s)", self.commands.len())
    }
}

/// What one Raft log entry carries: the client batches a leader gathered while its
/// earlier entries were in flight (group commit at the Raft level). They are applied in
/// order, in one transaction of the state machine, each atomically on its own: a batch
/// whose check fails leaves no trace, and the others are applied.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Proposal {
    /// The batches, in the order the leader received them. Shared: an entry is copied
    /// for each follower it is sent to and for the state machine, and a deep copy of
    /// every key and value each time was a tenth of a leader's runtime thread. Encoded
    /// as the list itself.
    pub batches: Arc<Vec<Batch>>,
}

impl From<Batch> for Proposal {
    fn from(batch: Batch) -> Proposal {
        Proposal {
            batches: Arc::new(vec![batch]),
        }
    }
}

impl fmt::Display for Proposal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "proposal of {} batch(es)", self.batches.len())
    }
}

/// What applying a batch did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum BatchResult {
    /// Every command was applied (also the result of a blank or membership entry).
    #[default]
    Applied,
    /// The compare-and-set at `command` (its position in the batch) found `current`
    /// instead of what it expected: nothing of the batch was applied.
    Conflict {
        /// The position of the failed check in the batch.
        command: usize,
        /// What the key held.
        #[serde(with = "serde_bytes")]
        current: Option<Vec<u8>>,
    },
    /// The command at `command` cannot be applied by any node (a key or value beyond the
    /// engine's limits, which the leader checks before it proposes a batch; this is the
    /// answer where a node's limits are narrower): nothing of the batch was applied.
    Invalid {
        /// The position of the command in the batch.
        command: usize,
        /// Why.
        reason: String,
    },
}

openraft::declare_raft_types!(
    /// The openraft type configuration of a sluice cluster.
    pub TypeConfig:
        D = Proposal,
        R = Vec<BatchResult>,
        NodeId = NodeId,
        Node = openraft::BasicNode,
);

/// openraft's log id for this configuration.
pub type LogId = openraft::alias::LogIdOf<TypeConfig>;
/// openraft's vote for this configuration.
pub type Vote = openraft::alias::VoteOf<TypeConfig>;
/// openraft's log entry for this configuration.
pub type Entry = openraft::alias::EntryOf<TypeConfig>;
/// The membership as a state machine stores it.
pub type StoredMembership = openraft::alias::StoredMembershipOf<TypeConfig>;
/// A snapshot's label.
pub type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;
/// A snapshot's bytes (see `state_machine.rs` for their format).
pub type SnapshotData = Vec<u8>;
/// A snapshot as openraft hands it around.
pub type Snapshot = openraft::alias::SnapshotOf<TypeConfig, SnapshotData>;

/// Encodes a value the way every file and record of this crate does (postcard).
pub(crate) fn encode<T: Serialize>(value: &T) -> std::io::Result<Vec<u8>> {
    encode_after(&[], value)
}

/// `prefix`, then [`encode`]'s bytes of `value`, in one allocation of the exact size (a
/// sizing pass first: growing the vector as it is written copied a large entry over and
/// over, a tenth of a leader's runtime thread).
pub(crate) fn encode_after<T: Serialize>(prefix: &[u8], value: &T) -> std::io::Result<Vec<u8>> {
    let invalid = |e| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
    let size = postcard::experimental::serialized_size(value).map_err(invalid)?;
    let mut out = Vec::with_capacity(prefix.len() + size);
    out.extend_from_slice(prefix);
    postcard::to_extend(value, out).map_err(invalid)
}

/// Decodes what [`encode`] wrote; damage is [`std::io::ErrorKind::InvalidData`] naming
/// `what`.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    what: &str,
) -> std::io::Result<T> {
    postcard::from_bytes(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{what}: cannot decode: {e}"),
        )
    })
}
