//! The swarm sweep (swarm testing: Groce et al., ISSTA 2012; RocksDB's `db_crashtest.py`;
//! FoundationDB's `BUGGIFY`): every seed draws its own configuration over every option
//! that changes a code path — commit protocol, direct transactions or agents,
//! propagation strategy (a different one for each session of the same database), pool
//! and page size, large values, checkpoint triggers, log segment and buffer, the log
//! buffer's insertion algorithm, group commit, client threads, an ordinary or a
//! partitioned database with its table assignments and log directories, the halts, and
//! read-only opens between sessions, and tables created, dropped and renamed inside
//! writing transactions (ordinary databases) — so that over many seeds each pair of options
//! meets often. A new option of the engine is a new dimension in `config.rs`.
//!
//! * `config`: what a seed draws, and its one-line form for a failure.
//! * `engine`: an ordinary or a partitioned database behind one face.
//! * `workload`: what a session's transactions do, and the checks of every read as they
//!   run; `client`: the threads that run them, directly or through agents.
//! * `scratch`: the tables a writing transaction creates, drops and renames, and how
//!   the oracle sees them (rows of one virtual table).
//! * `oracle`: what a recovered state must be.
//! * `session`: a seed's sessions, halts and recoveries (the halts are the crash
//!   sweep's, `crate::crash::Halt`).
//! * `report`: many seeds on several threads, and what they found.
//!
//! * `archive`: with continuous log archiving drawn, what each log's archive must be
//!   after a recovery and at the end.
//!
//! The horizontal log partitioning (several directories for one log) is not a dimension
//! yet: `sluice_wal::Log` offers it (`Log::open_dirs`), but neither `sluice::Builder` nor
//! `PartitionedBuilder` does; once they do, it is one more draw in `config.rs`.

mod archive;
mod backup;
mod client;
mod config;
mod engine;
mod oracle;
mod report;
mod scratch;
mod session;
mod workload;

pub use config::{
    kind, Config, Driver, LargeValues, Layout, Partitioning, SessionPlan, STRATEGY_KINDS,
};
pub use report::{replay_command, swarm, SwarmReport};
