//! The database: opening (with recovery), tables, transactions, closing.
//!
//! A database directory holds `CONTROL` (what makes it a sluice database, and where the
//! last checkpoint is), `log/` (the write-ahead log, unless it lives elsewhere), `data`
//! (the pages) and `LOCK`. Opening identifies the directory before it creates anything
//! in it, checks what the control file says against the log and the data file, runs
//! restart recovery, checkpoints, and starts the background checkpointer.
//!
//! Files: `backup.rs` ([`Database::backup_to`]), `restore.rs` ([`Database::restore`],
//! [`Database::backup_reach`]), `handle.rs` (the [`Database`] handle: transactions,
//! checkpoint, close, counters), `compact.rs` (freeing a dropped tree's pages, [`Database::compact`]), `open.rs` (every way to open one, read-write and read-only, and the checks
//! of a directory before anything is created in it), `verify.rs` ([`Database::verify`]).

mod backup;
mod compact;
mod handle;
mod incremental;
mod open;
mod restore;
mod restore_runs;
mod verify;

pub use backup::BackupProgress;
pub use compact::CompactReport;
pub use handle::{Database, Stats};
pub(crate) use open::refuse_same_dirs;
pub use restore::{
    BackupReach, Replay, Restore, RestoreProgress, RestoreReport, RestoreStep, RestoreTarget,
    SinglePass,
};
pub use verify::VerifyReport;
