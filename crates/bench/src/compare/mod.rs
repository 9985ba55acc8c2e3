//! `sluice compare`: TPC-B (and TATP) on sluice and on peer engines (SQLite, RocksDB,
//! PostgreSQL) in one run, at equal durability, with the same inputs and the same consistency check
//! (docs/BENCHMARKS.md, "Comparison with other engines").
//!
//! One folder per peer engine (`sqlite/`, `rocksdb/`, `postgres/`), each with the
//! workloads it runs. SQLite and RocksDB are compiled only with the `peers` feature
//! (RocksDB's C++ takes many minutes to build); PostgreSQL needs no crate, only its
//! binaries on the machine.

pub mod best;
pub mod cleanup;
pub mod engine;
pub mod peer;
pub mod postgres;
#[cfg(feature = "peers")]
pub mod rocksdb;
pub mod run;
#[cfg(feature = "peers")]
pub mod sqlite;

pub use best::PeerBest;
pub use engine::{CompareRow, CompareWorkload, Engine, BUILD_PEERS};
pub use peer::{PeerError, PeerRun, PeerRunConfig, TatpPeer, TpcbPeer};
pub use run::{compare, CompareConfig, CompareProgress, Comparison};
