//! The records of the storage manager's log: what each says. Their bytes are the codec's
//! (`codec.rs`); their size bounds are in `limits.rs`.

use super::{Change, CommitTime, PageOp};
use crate::ids::{PageId, TxnId};
use sluice_wal::Lsn;

/// A transaction active at a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveTxn {
    /// Its number.
    pub txn: TxnId,
    /// Its first record (analysis must scan from the oldest of these to see every
    /// record a loser wrote).
    pub first: Lsn,
    /// Its last record so far.
    pub last: Lsn,
}

/// The tables a checkpoint saves for analysis.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckpointData {
    /// The LSN of the matching begin-checkpoint record.
    pub begin: Lsn,
    /// Transaction numbers below this were handed out before the checkpoint.
    pub next_txn: u64,
    /// Transactions with records and no outcome yet.
    pub active: Vec<ActiveTxn>,
    /// Dirty pages and their recovery LSN (the first record that dirtied them).
    pub dirty: Vec<(PageId, Lsn)>,
    /// The log's commit clock when the checkpoint was taken (the highest commit time
    /// stamped so far; `time.rs`): a restart whose analysis meets no commit record
    /// (after a clean close, say) still starts the clock there.
    /// [`CommitTime::UNKNOWN`] in a record written before commit times.
    pub clock: CommitTime,
}

/// One log record of the storage manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A transaction changed `key` of tree `tree` on leaf `page`.
    Update {
        /// The transaction.
        txn: TxnId,
        /// Its previous record (`None` for its first).
        prev: Option<Lsn>,
        /// The leaf changed (redo target).
        page: PageId,
        /// The tree's root page (undo target).
        tree: PageId,
        /// The key.
        key: Vec<u8>,
        /// What happened to it.
        change: Change,
    },
    /// A compensation record: the redo of one undo step. Never undone itself; undo
    /// continues at `undo_next`.
    Clr {
        /// The transaction rolled back.
        txn: TxnId,
        /// Its previous record.
        prev: Option<Lsn>,
        /// The leaf changed.
        page: PageId,
        /// The tree's root page, for its entry count (`tree_count`); `None` in a record
        /// written before counts.
        tree: Option<PageId>,
        /// The change.
        op: PageOp,
        /// The next record of the transaction to undo (`None`: rollback is complete).
        undo_next: Option<Lsn>,
    },
    /// The transaction committed (durable once this record is).
    Commit {
        /// The transaction.
        txn: TxnId,
        /// Its previous record.
        prev: Option<Lsn>,
        /// When, by the log's commit clock ([`CommitTime::UNKNOWN`] in a record
        /// written before commit times).
        at: CommitTime,
    },
    /// A transaction of a partitioned database committed (`crate::partitioned`): the
    /// commit record in the coordinator's log, written only once every other log that
    /// holds records of the transaction is durable past them. It commits the
    /// coordinator's own part, and it is the outcome recovery of each participant log
    /// looks up for a transaction that log holds without a commit record of its own.
    Coordinated {
        /// The transaction's part in the coordinator's partition.
        txn: TxnId,
        /// Its previous record there.
        prev: Option<Lsn>,
        /// When, by the coordinator log's commit clock ([`CommitTime::UNKNOWN`] in a
        /// record written before commit times).
        at: CommitTime,
        /// The transaction's part in each other log.
        participants: Vec<Participant>,
    },
    /// The transaction's rollback is complete.
    End {
        /// The transaction.
        txn: TxnId,
        /// Its previous record.
        prev: Option<Lsn>,
    },
    /// Full page images (compact form, see [`crate::page::compress`]): the first change
    /// to a page after a checkpoint (torn-page protection), new pages, and every page a
    /// split touches, all in one record so a split is atomic. Redo-only.
    Images {
        /// Pages and their images.
        pages: Vec<(PageId, Vec<u8>)>,
    },
    /// A checkpoint started here: its redo point.
    BeginCheckpoint,
    /// A checkpoint's tables.
    EndCheckpoint(CheckpointData),
    /// A snapshot of a tree's entry count at this record (`tree_count`): every change of
    /// the tree logged before it is in `entries`, none after it. Redo-only, and only
    /// analysis reads it.
    TreeCount {
        /// The tree's root page.
        tree: PageId,
        /// Its entries; `None`: the tree was dropped, its count forgotten.
        entries: Option<u64>,
    },
}

/// A transaction's part in one log of a partitioned database, as the coordinator's
/// commit record names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Participant {
    /// The partition (its log manager), 1 and up (0 is the coordinator).
    pub partition: u16,
    /// The transaction's number in that partition.
    pub txn: TxnId,
    /// The start of its last record there: what recovery of that log finds as the
    /// in-doubt transaction's last record.
    pub last: Lsn,
}

impl Record {
    /// The transaction the record belongs to, if any.
    pub fn txn(&self) -> Option<TxnId> {
        match self {
            Record::Update { txn, .. }
            | Record::Clr { txn, .. }
            | Record::Commit { txn, .. }
            | Record::Coordinated { txn, .. }
            | Record::End { txn, .. } => Some(*txn),
            _ => None,
        }
    }
}
