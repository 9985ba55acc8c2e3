//! `sluice`: an embeddable, crash-safe transactional storage engine.
//!
//! A [`Database`] lives in a directory: a write-ahead log (`sluice-wal`), a data file of
//! fixed-size pages, and a small control file pointing at the last checkpoint. Tables are
//! B+trees with variable-length keys and values; [`Transaction`]s read and write them
//! serializably (strict two-phase locking with key-range locks: no phantoms), commit once
//! their commit record is durable, and roll back with compensation records. Any failed
//! operation fails its transaction, which can then only roll back. Restart recovery is ARIES (analysis, redo, undo); torn page
//! writes are repaired from full page images logged after each checkpoint. Every disk
//! access goes through [`sluice_storage::Storage`], so the same code runs on real files and
//! on the crash-simulating disk the tests use.
//!
//! ```
//! use std::sync::Arc;
//! use sluice::{Database, Options};
//! use sluice_storage::SimStorage;
//!
//! let disk = Arc::new(SimStorage::new(1));
//! let db = Database::open(disk.clone(), "/db", Options::default())?;
//! let users = db.create_table("users")?;
//!
//! let mut tx = db.begin();
//! tx.put(&users, b"ada", b"lovelace")?;
//! tx.put(&users, b"alan", b"turing")?;
//! tx.commit()?; // durable when this returns
//!
//! let mut tx = db.begin();
//! tx.delete(&users, b"alan")?;
//! tx.rollback()?; // as if it never happened
//!
//! db.close()?;
//! let db = Database::open(disk, "/db", Options::default())?;
//! let users = db.table("users")?;
//! let mut tx = db.begin();
//! let all: Vec<_> = tx.scan_all(&users).collect::<Result<_, _>>()?;
//! assert_eq!(all.len(), 2);
//! assert_eq!(tx.get(&users, b"alan")?.as_deref(), Some(&b"turing"[..]));
//! tx.commit()?;
//! # Ok::<(), sluice::Error>(())
//! ```
//!
//! See `ARCHITECTURE.md` ("Storage manager") for the life of a page and of a transaction,
//! the page format, the recovery passes and the torn-page strategy.

#![warn(missing_docs)]

mod agents;
mod btree;
mod buffer_pool;
mod builder;
mod catalog;
mod checkpoint;
mod checkpointer;
mod control;
mod data_file;
mod db;
mod error;
mod ids;
mod lock;
pub mod log_record;
mod logging;
mod options;
pub mod page;
mod recovery;
pub mod testing;
mod txn;
mod txn_table;

pub use agents::{
    AgentOptions, AgentStats, Agents, CommitHook, Completion, Finished, Outcome, Submitter,
};
pub use btree::TreeReport;
pub use buffer_pool::PoolStats;
pub use builder::Builder;
pub use catalog::{Table, MAX_TABLE_NAME};
pub use db::{Database, Stats, VerifyReport};
pub use error::{Error, Result};
pub use ids::{PageId, TxnId};
pub use options::{CommitProtocol, Limits, Options};
pub use recovery::RecoveryReport;
pub use sluice_wal::{LogOptions, Lsn};
pub use txn::{Scan, Transaction};

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
