//! The lock manager: key-range locks (ARIES/KVL-style next-key locking) with FIFO
//! queues, timeouts as deadlock handling, and parking waits.
//!
//! A lock names a key of a table, or the table's end (`+∞`). A lock on a name has a
//! *record* part (the key itself: S or X) and a *gap* part, which covers the open
//! interval between the name's predecessor in the tree and the name: S (a scanner), I
//! (an insert intention) or D (a delete). A holder's mode is a small bitset
//! ([`LockMode`]); a transaction that adds parts to a name it holds ORs them in. Parts
//! of different transactions conflict as follows (everything else is compatible, in
//! particular any record part with any gap part):
//!
//! | | record S | record X | gap S | gap I | gap D |
//! |---|---|---|---|---|---|
//! | record S | | ✗ | | | |
//! | record X | ✗ | ✗ | | | |
//! | gap S | | | | ✗ | ✗ |
//! | gap I | | | ✗ | | ✗ |
//! | gap D | | | ✗ | ✗ | ✗ |
//!
//! Gap I–I is compatible so that concurrent appends at the end of a table never
//! serialise; gap D conflicts with I and D because a rollback re-inserts a deleted key
//! without taking locks, so nobody else may change a gap in which an uncommitted delete
//! lives. Who takes which part is described where they are taken: `btree/write.rs`
//! (inserts, deletes) and `btree/scan.rs` (scans); point reads take record S, updates
//! record X.
//!
//! **Gap inheritance.** An insert of `k` splits the gap named `next(k)` in two: the
//! lower half is named by `k` from then on. Whatever protected the whole gap must still
//! protect both halves, so the inserter's gap S and gap D on `next(k)` are carried over
//! to `k` ([`LockMode::inherited_by_insert`]; ARIES/KVL and InnoDB inherit gap locks
//! the same way). Other transactions cannot hold gap S or gap D on `next(k)` then (they
//! conflict with the insert's gap I), so only the inserter's own parts are inherited;
//! without this, a scan repeated after inserting into its own range saw a phantom
//! inserted below the new key, and a delete followed by an insert above it left the
//! uncommitted delete in a gap nobody else was kept out of. A delete merges two gaps
//! into the one named `next(k)` and needs no inheritance: its gap D there covers both.
//!
//! Requests are granted in arrival order: a request is granted when it is compatible
//! with every granted lock of other transactions and no earlier request is still waiting
//! (a holder's request for more parts goes to the front of the queue, because it cannot
//! be granted later than the parts it already holds). A waiter parks on its shard's
//! condition variable. A waiter records whom it waits for in a wait-for graph and looks
//! for a cycle through itself whenever it starts or resumes waiting: the request that
//! closes a cycle fails at once with [`Error::Deadlock`](crate::Error::Deadlock). A request that waits longer
//! than the timeout fails with [`Error::LockTimeout`](crate::Error::LockTimeout) (the backstop for a cycle the
//! graph did not show, and the bound on any wait).
//!
//! Files: `name.rs` (what a lock names: a key or a stripe of a table's end), `mode.rs`
//! (the parts and their conflict table), `entry.rs` (one name's holders, waiters and
//! early-release LSN, and a shard's table of them), `waits_for.rs` (the wait-for graph),
//! `manager.rs` (the sharded lock table: try-lock, lock with waiting, release), `fast.rs`
//! (the table lock's fast path: weak table locks kept out of the lock table while no
//! strong one is about).

mod entry;
mod fast;
mod manager;
mod mode;
mod name;
#[cfg(test)]
mod tests;
mod waits_for;

pub(crate) use entry::Granted;
pub(crate) use fast::FastTable;
pub(crate) use manager::{LockManager, Refused};
pub(crate) use mode::LockMode;
pub(crate) use name::{LockKey, LockName, TableLock, TABLE_STRIPES};
