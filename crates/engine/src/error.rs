//! The errors of the storage manager.

use crate::ids::TxnId;
use sluice_wal::WalError;
use std::io;
use std::sync::Arc;

/// Everything that can go wrong in a database.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A named thing (a table) does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// A table with this name already exists.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// A lock was not granted within the lock timeout: the transaction waited too long
    /// (or was in a deadlock the wait-for graph did not show) and should be rolled back;
    /// it may be run again.
    #[error("lock timeout after {waited_ms} ms on a key of table {table:?}: the transaction is a deadlock victim and must roll back")]
    LockTimeout {
        /// The name of the table of the contended key.
        table: String,
        /// How long the request waited.
        waited_ms: u64,
    },
    /// The lock request would have closed a cycle of transactions waiting for each
    /// other (found in the wait-for graph as the request was about to wait): the
    /// transaction is the deadlock victim and must roll back; run it again.
    #[error("deadlock after {waited_ms} ms on a key of table {table:?}: the transaction is the deadlock victim and must roll back")]
    Deadlock {
        /// The name of the table of the contended key.
        table: String,
        /// How long the request waited before the cycle closed.
        waited_ms: u64,
    },
    /// A disk operation failed.
    #[error("I/O error: {0}")]
    Io(Arc<io::Error>),
    /// An earlier I/O error stopped the database; nothing after the last successful sync
    /// is acknowledged, and it refuses work until reopened.
    #[error("database is poisoned by an earlier failure: {0}")]
    Poisoned(String),
    /// Stored data failed verification (a bad checksum outside what redo can repair, a
    /// malformed page or log record).
    #[error("corruption: {0}")]
    Corruption(String),
    /// A caller passed something the database cannot take (an oversized key, a bad option).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The database directory is held by another process or another open database.
    #[error("database {0} is in use by another process or handle")]
    Locked(String),
    /// Every buffer-pool frame is pinned; the pool is too small for the concurrency.
    #[error("buffer pool exhausted: all {0} frames are pinned")]
    BufferPoolFull(usize),
    /// The database (or the transaction, or an agent pool) was closed.
    #[error("closed: {0}")]
    Closed(&'static str),
    /// [`Database::close`](crate::Database::close) closed the database with this many
    /// transactions still open: it rolled them back (their later calls return
    /// [`Error::Closed`]; nothing they wrote is committed). The database is closed all
    /// the same.
    #[error("closed with {0} transaction(s) still open: they were rolled back")]
    OpenTransactions(usize),
    /// An earlier operation of the transaction returned an error (`cause`, the first
    /// one), so the transaction has failed: it takes no more operations, and
    /// [`Transaction::commit`](crate::Transaction::commit) rolls it back and returns this.
    #[error("transaction {txn} failed earlier and must roll back: {cause}")]
    TransactionFailed {
        /// The transaction.
        txn: TxnId,
        /// The error that failed it.
        cause: Box<Error>,
    },
    /// The database was opened read-only ([`crate::Builder::read_only`]) and the
    /// operation would change it: a write, a table creation, a checkpoint. Not
    /// retryable; as any error of an operation, it fails its transaction.
    #[error("the database is open read-only")]
    ReadOnly,
    /// An agent's transaction body panicked; the transaction was rolled back.
    #[error("a transaction body panicked (the transaction was rolled back): {0}")]
    Panicked(String),
}

impl Error {
    /// True if running the same transaction again may succeed: it lost a lock conflict
    /// (a deadlock victim, or a wait longer than the lock timeout) and was — or must
    /// be — rolled back, and nothing is wrong with the database. I/O errors, poisoning,
    /// corruption and refused arguments are not retryable. [`crate::Database::transaction`]
    /// retries exactly these.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::LockTimeout { .. } | Error::Deadlock { .. } => true,
            Error::TransactionFailed { cause, .. } => cause.is_retryable(),
            _ => false,
        }
    }

    /// True for errors that come from the disk, directly or through poisoning.
    pub fn is_io(&self) -> bool {
        match self {
            Error::Io(_) | Error::Poisoned(_) => true,
            Error::TransactionFailed { cause, .. } => cause.is_io(),
            _ => false,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(Arc::new(e))
    }
}

impl From<WalError> for Error {
    fn from(e: WalError) -> Self {
        match e {
            WalError::Io(e) => Error::Io(e),
            WalError::Poisoned(e) => Error::Poisoned(format!("log: {e}")),
            WalError::Corruption { lsn, reason } => {
                Error::Corruption(format!("log at LSN {lsn}: {reason}"))
            }
            WalError::Locked(dir) => Error::Locked(dir),
            WalError::InvalidArgument(s) => Error::InvalidArgument(format!("log: {s}")),
            WalError::Closed => Error::Closed("log"),
            WalError::ReadOnly => Error::ReadOnly,
        }
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
