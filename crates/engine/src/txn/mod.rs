//! Transactions: key-range locks, logged changes with an in-memory undo list, commit
//! and rollback.
//!
//! Life of a transaction: `begin` → operations (each under key-range locks — see
//! `crate::lock` — and each change a log record chained by prevLSN plus an undo entry in
//! memory) → commit record in the log buffer → durable → locks released (strict 2PL;
//! with early lock release — see [`CommitProtocol`](crate::CommitProtocol) — the release
//! comes before durability). The commit steps are crate-internal methods
//! (`commit_record`, `release_locks`) sequenced in one place, the commit sequencer
//! (`commit.rs`), for both [`Transaction::commit`] and the agents; called out of order
//! they would expose uncommitted data, so clients only see [`Transaction::commit`].
//! Rollback walks the undo list backwards, applying each undo logically by key and
//! logging it as a compensation record whose undoNext skips what was undone; an end
//! record closes it. Undo takes no locks: the transaction's own locks cover what it
//! undoes.
//!
//! Files: `transaction.rs` (the type, its state and the checks every operation passes),
//! `locks.rs` (lock acquisition), `write.rs` (reads, puts, deletes), `large_values.rs`
//! (values stored apart in chunks), `scan.rs` (range scans, both ways), `tables.rs`
//! (tables created inside a transaction), `steps.rs` (the commit steps
//! a transaction offers and `commit`), `rollback.rs` (undo, and the drop that rolls
//! back), `retry.rs` (`Database::transaction`'s loop and its [`Retry`] budget), `commit.rs` (the commit sequencer: the protocols' order of those steps,
//! written once, for direct commits, the agents and the partitioned coordinator). The
//! table of active transactions (`crate::txn_table`) is a layer below: the B+tree,
//! recovery and the checkpoint read it, so it cannot live in this folder without an
//! import circle.

mod commit;
mod large_values;
mod locks;
mod retry;
mod rollback;
mod scan;
mod steps;
mod tables;
mod transaction;
mod write;

pub use commit::Durability;
pub(crate) use commit::{harden_parts, Sequencer};
pub(crate) use retry::run as run_retrying;
pub use retry::Retry;
pub use scan::Scan;
pub use transaction::Transaction;
