//! What a partitioned database (`partitioned`) asks of the engine of each of its
//! partitions, and nothing else does: two hooks and a marker.
//!
//! * **In doubt** (recovery of a participant log): a transaction that log holds without
//!   a commit or end record is a loser, unless the coordinator's log holds a
//!   [`Record::Coordinated`](crate::log_record::Record) naming it — its commit was decided
//!   after this log was durable past its records, and the crash came before the log
//!   received its own commit record. Undo then writes that commit record instead of
//!   rolling the transaction back.
//! * **Truncation cap** (checkpoints of the coordinator's log): the coordinator's commit
//!   records must outlive the participants' own commit records' way to disk, or a crash
//!   would find a transaction in doubt with nobody left to say it committed. Before the
//!   coordinator truncates its log it asks how far it may go (the rule itself is in
//!   `partitioned/coordinator.rs`).
//! * **Partition marker**: a partition's directory holds [`PARTITION_MARKER`]; opened
//!   alone, as a database of its own, it would roll back what the coordinator committed,
//!   so an open without the hooks refuses it.

use crate::error::Result;
use crate::ids::TxnId;
use sluice_wal::Lsn;
use std::sync::Arc;

/// Decides an in-doubt transaction of a participant log: true if the coordinator
/// committed the transaction numbered so, whose last record starts at the LSN.
pub(crate) type InDoubt = Arc<dyn Fn(TxnId, Lsn) -> bool + Send + Sync>;

/// How far the coordinator's log may be truncated: `None`, as far as the checkpoint
/// allows; `Some(lsn)`, not at or above `lsn`. It may flush other logs first (it runs on
/// the checkpointer's thread, never on a commit path).
pub(crate) type TruncationCap = Arc<dyn Fn() -> Result<Option<Lsn>> + Send + Sync>;

/// The name of the file that marks a directory (a partition's, or its log's) as part of
/// a partitioned database.
pub const PARTITION_MARKER: &str = "PARTITION";

/// The hooks an open installs (none for an ordinary database).
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    /// Set for a participant partition.
    pub(crate) in_doubt: Option<InDoubt>,
    /// Set for the coordinator's partition.
    pub(crate) truncation_cap: Option<TruncationCap>,
    /// Opened as a partition of a partitioned database: its marker is expected.
    pub(crate) partition: bool,
    /// The data file already holds every change of the log below this LSN (a
    /// single-pass restore replayed them from sorted runs, `db/restore_runs.rs`):
    /// restart recovery's redo skips those records. Analysis and undo run as always.
    pub(crate) redone_below: Option<sluice_wal::Lsn>,
    /// Told how restart recovery's passes move (a restore's progress).
    pub(crate) recovery_progress: Option<Arc<ProgressFn>>,
}

/// Which pass of restart recovery a progress report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    Analysis,
    Redo,
    Undo,
}

/// Told by restart recovery as a pass moves (`Hooks::recovery_progress`): the pass, the
/// work done and the work in all (log bytes for analysis and redo, log records for undo).
pub(crate) type ProgressFn = dyn Fn(Pass, u64, u64) + Send + Sync;
