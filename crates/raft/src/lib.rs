//! `sluice-raft`: replication for sluice on [openraft](https://docs.rs/openraft).
//!
//! * [`LogStore`] — openraft's log store (`RaftLogStorage`, `RaftLogReader`) on a
//!   [`sluice_wal::Log`] of its own: entries, votes, the committed log id, purge points
//!   and truncations in one ordered stream of WAL records.
//! * [`StateMachine`] — openraft's state machine on a sluice [`sluice::Database`]: each
//!   entry (a [`Batch`] of [`Command`]s) applied in one transaction that also records the
//!   last applied log id; snapshots written whole and durable before they are offered,
//!   installed into a fresh database and switched atomically.
//! * [`types`] — the openraft type configuration ([`TypeConfig`]).
//! * [`Node`] — a cluster node: openraft over the two, serving peers and clients on TCP;
//!   [`Client`] — writes (committed by a majority and applied before they return) and
//!   linearizable reads, following the leader.
//!
//! Consensus itself is openraft's (pinned exactly in `Cargo.toml`); this crate only
//! stores and applies. `ARCHITECTURE.md` ("Replication") says how each of openraft's
//! storage requirements is met.

#![warn(missing_docs)]

mod files;
mod log_store;
pub mod node;
mod state_machine;
pub mod tls;
pub mod types;
mod wire;

pub use log_store::{LogStore, Record as LogRecord};
pub use node::{
    state_machine_options, Client, ClientError, Consistency, Node, NodeConfig, NodeStatus,
    Security, Written,
};
pub use state_machine::StateMachine;
pub use tls::{make_certs, Tls};
pub use types::{Batch, BatchResult, Command, NodeId, TypeConfig};
