//! `sluice`: an embeddable, crash-safe transactional storage engine.
//!
//! A [`Database`] lives in a directory: a write-ahead log (the `log/` directory, records
//! of every change, made durable before a commit is acknowledged), a data file of
//! fixed-size pages, and a small control file. Tables are ordered maps from byte keys to
//! byte values (B+trees). [`Transaction`]s read and write them; a commit returns once it
//! is on disk, and a crash at any moment — a killed process or a power loss — loses no
//! acknowledged commit and keeps no part of an unfinished one (restart recovery replays
//! the log, then rolls back what had not committed).
//!
//! ```
//! use sluice::Database;
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("app-db");
//! let db = Database::open(&path)?; // creates it, or recovers it after a crash
//! let users = db.table_or_create("users")?;
//!
//! let mut tx = db.begin();
//! tx.put(&users, b"ada", b"lovelace")?;
//! tx.put(&users, b"alan", b"turing")?;
//! tx.commit()?; // on disk when this returns
//!
//! let mut tx = db.begin();
//! tx.delete(&users, b"alan")?;
//! tx.rollback()?; // as if it never happened
//!
//! // A closure run in a transaction, run again if it loses a deadlock.
//! let n = db.transaction(|tx| Ok::<_, sluice::Error>(tx.scan_prefix(&users, "a").count()))?;
//! assert_eq!(n, 2);
//!
//! // Values of any size up to 1 GiB: a large one is stored apart from the tree's leaves.
//! let photo = vec![7u8; 3 << 20];
//! db.transaction(|tx| tx.put(&users, b"ada/photo", &photo))?;
//! assert_eq!(db.transaction(|tx| tx.get(&users, b"ada/photo"))?, Some(photo));
//! let l = db.limits();
//! assert_eq!((l.max_key, l.max_value, l.max_entry), (1024, 1 << 30, 2024));
//! drop(users);
//! db.close()?;
//! # Ok::<(), sluice::Error>(())
//! ```
//!
//! **Defaults** ([`Options::default`], or set them one by one with
//! [`Database::builder`]): 8 KiB pages, a 4,096-page cache (32 MiB), 16 MiB log segments,
//! a 2 s lock timeout, a background checkpoint every 64 MiB of log or 30 s, and the
//! `elr-pipelined` commit protocol (below). Keys are at most 1,024 bytes, values at most
//! 1 GiB ([`Database::limits`]). A key plus a value of up to a quarter page (2,024 bytes
//! with 8 KiB pages) lives in the tree's leaf; a larger value is stored apart, in chunks,
//! and returned whole by every read, as transactional and crash-safe as a small one. A
//! value is always held whole in memory (no streaming).
//!
//! **Isolation: serializable.** Transactions lock what they read and write until they
//! end (strict two-phase locking), including the gaps between keys a scan covers
//! (key-range locks), so no transaction sees another's uncommitted change, a repeated
//! scan sees the same rows, and no row appears in a range once scanned (no phantoms). The
//! price of locking: **readers wait for writers of the same keys and writers for
//! readers.** Keep transactions short; a long scan holds its range until it ends. Two
//! transactions that wait for each other are found at once: one gets
//! [`Error::Deadlock`], rolls back, and can be run again ([`Error::is_retryable`],
//! [`Database::transaction`]). No wait outlasts the lock timeout
//! ([`Error::LockTimeout`]).
//!
//! **Failures.** Any error of an operation fails its transaction: later operations are
//! refused and [`Transaction::commit`] rolls back and returns the first error. A failed
//! write or sync of the disk stops the database (every later call returns the error);
//! reopening it recovers.
//!
//! **Commit protocols** ([`CommitProtocol`]) decide when locks are released and who waits
//! for the disk; every one but `async` acknowledges a commit only once it is durable.
//! *Early lock release* (`elr`): locks are released as soon as the commit record is in the
//! log's memory buffer, before it is on disk, so the next transaction on the same keys need
//! not wait for the disk; whatever it returns is held back until the commit it read from is
//! durable, so no client ever sees data a crash could take away. *Flush pipelining*
//! (`pipelined`): through an [`experiment::Agents`] pool, a committing transaction is set
//! aside while the log writes it, and its agent thread runs other requests meanwhile.
//! `elr-pipelined` (the default) is both. `classic` holds locks until the commit is
//! durable; `async` acknowledges before the disk (a crash can lose the last acknowledged
//! commits).
//!
//! **Agents.** [`experiment::Agents::submit`] runs a closure as a transaction on a small
//! pool of threads and returns a [`experiment::Completion`]:
//! [`experiment::Completion::wait`] blocks for the result, or `.await` it. Dropping a
//! `Completion` does not cancel anything: the transaction runs, commits or rolls back as
//! its closure decides, and the result is discarded.
//!
//! **What is where.** The crate root is the application API: [`Database`] and its
//! [`Builder`] and [`Options`], [`Transaction`], [`Table`], [`Scan`], [`KeyRange`],
//! [`Retry`], [`Error`], and the partitioned database ([`Partitioned`] and its types).
//! [`experiment`] holds the agent pool and the propagation knobs, [`testing`] the hooks
//! for tests and crash experiments, [`inspect`] what the tools read.
//!
//! Every disk access goes through [`sluice_storage::Storage`], so the same code runs on
//! real files ([`Database::open`], [`Database::builder`]) and on the crash-simulating
//! disk the tests use ([`Builder::storage`]). `ARCHITECTURE.md` in the repository
//! describes the life of a page and of a transaction, the page format, the recovery
//! passes and the torn-page strategy.

#![warn(missing_docs)]

mod agents;
#[cfg(test)]
mod alloc_probe;
mod backup_label;
mod blob;
mod breakdown;
mod btree;
mod buffer_pool;
mod builder;
mod catalog;
mod checkpoint;
mod control;
mod coordination;
mod data_file;
mod db;
mod error;
/// Entry points for the fuzz targets in `fuzz/` (one per decoder of on-disk bytes); not
/// part of the API.
#[doc(hidden)]
pub mod fuzzing;
mod health;
mod ids;
mod inner;
pub mod inspect;
mod key_range;
mod lock;
mod log_record;
mod log_sink;
mod metrics;
#[cfg(test)]
mod mutations;
mod options;
mod page;
mod partitioned;
mod propagation;
mod recovery;
mod space;
mod store;
mod strategy;
mod table;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
mod tree_count;
mod txn;
mod txn_table;
mod worker;

// The application API.
pub use backup_label::{BackupLabel, BackupParent};
pub use btree::TreeReport;
pub use buffer_pool::PoolStats;
pub use builder::Builder;
pub use catalog::MAX_TABLE_NAME;
pub use db::{
    BackupProgress, BackupReach, CompactReport, Replay, Restore, RestoreProgress, RestoreReport,
    RestoreStep, RestoreTarget, SinglePass,
};
pub use db::{Database, Stats, VerifyReport};
pub use error::{Error, Result};
pub use ids::{PageId, TxnId};
pub use key_range::KeyRange;
pub use log_record::CommitTime;
pub use metrics::{ArchiveMetrics, Durations, Latency, Metrics};
pub use options::{CommitProtocol, Options};
pub use page::Limits;
pub use partitioned::{
    Partitioned, PartitionedBuilder, PartitionedStats, PartitionedTable, PartitionedTransaction,
    Unassigned, MAX_LOG_MANAGERS,
};
pub use propagation::Strategy;
pub use recovery::RecoveryReport;
pub use sluice_wal::{LogOptions, Lsn};
pub use table::Table;
pub use txn::{Durability, Retry, Scan, Transaction};

/// Experiments and tuning beyond [`Options`]: the agent pool that runs transactions
/// with flush pipelining, and the update-propagation knobs and gauges (what `sluice
/// bench` measures). Stable enough to use, but shaped by the experiments, not by
/// applications; the crate root is the application API.
pub mod experiment {
    pub use crate::agents::{
        AgentOptions, AgentStats, Agents, CommitHook, Completion, Finished, Outcome, Submitter,
    };
    pub use crate::breakdown::{Activity, TimeBreakdown};
    pub use crate::propagation::{Backlog, PageCleaner, Policy};
}

/// Hooks for tests, crash experiments and tools, not for applications: closing as a
/// crash would, and the names of a partitioned database's files.
pub mod testing {
    pub use crate::coordination::PARTITION_MARKER;
    pub use crate::partitioned::{partition_dir, MANIFEST};

    /// Closes `db` without the final checkpoint and without writing a page, as a crash
    /// at this moment would leave it ([`crate::Database::close_as_crashed`]).
    pub fn close_as_crashed(db: crate::Database) -> crate::Result<()> {
        db.close_as_crashed()
    }
}

/// The commit steps and the lock manager are internal: called out of order they allow
/// dirty reads or drop early-release dependencies (issue 8, defect 9). These must not
/// compile.
///
/// ```compile_fail
/// fn release(tx: &mut sluice::Transaction) {
///     tx.release_locks();
/// }
/// ```
///
/// ```compile_fail
/// fn commit_record(tx: &mut sluice::Transaction) {
///     let _ = tx.commit_record();
/// }
/// ```
///
/// ```compile_fail
/// let _ = sluice::LockManager::new(std::time::Duration::from_secs(1));
/// ```
#[cfg(doctest)]
pub struct CommitStepsAreInternal;
