//! The transaction itself: its state, what it holds (the undo list, the locks, the
//! early-release dependency, the first failure), and the checks every operation passes.

use super::commit::{Durability, Sequencer};
use crate::blob::chunk_size;
use crate::btree::RememberedLeaf;
use crate::error::{Error, Result};
use crate::ids::{PageId, TxnId};
use crate::inner::Inner;
use crate::lock::{LockKey, LockMode};
use crate::log_record::{Participant, Undo};
use crate::table::Table;
use crate::tree_count::TreeLatch;
use crate::txn_table::TxnShared;
use sluice_wal::Lsn;
use smallvec::SmallVec;
use std::sync::Arc;

/// Locks a transaction has room for before its list of them grows.
const INITIAL_LOCKS: usize = 8;

/// Changes a transaction has room for before its undo list grows.
const INITIAL_CHANGES: usize = 4;

/// A table lock a transaction holds (`tables.rs`).
pub(super) struct TableHold {
    /// The table's root page, which names its locks in the lock table.
    pub(super) root: PageId,
    /// Its latch, where the fast path keeps the table's locks.
    pub(super) latch: Arc<TreeLatch>,
    /// The modes it holds, ORed.
    pub(super) modes: LockMode,
    /// Its lock on its own stripe was taken on the fast path (`lock/fast.rs`): it is
    /// released there, or in the lock table if a strong request moved it; otherwise
    /// the lock table's names it holds are in `held`.
    pub(super) fast: bool,
    /// It began a strong request on the table (`FastTable::begin_strong`), to end once
    /// its locks are released.
    pub(super) strong: bool,
    /// It created the table (`create_table`): a rollback marks the table as never
    /// created before it lets the table's drop lock go.
    pub(super) created: bool,
}

/// What rollback needs to undo one change: the key and [`Undo`] moved out of the
/// change's update record once it is encoded (no copy of either).
#[derive(Debug)]
pub(super) struct UndoEntry {
    pub(super) prev: Option<Lsn>,
    pub(super) tree: PageId,
    pub(super) key: Vec<u8>,
    pub(super) undo: Undo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Active,
    /// The commit record is in the log (or there was nothing to commit).
    Committed,
    Aborted,
    /// The rollback could not finish: the tree still holds changes of this transaction,
    /// and its locks stay held (never released) so that nobody reads or overwrites them
    /// before restart recovery undoes them (`rollback_in_place`).
    Stuck,
}

/// A transaction. Dropping an active transaction rolls it back.
///
/// **Isolation: serializable.** Strict two-phase locking with key-range (next-key)
/// locks: a point read locks its key (present or not), a scan locks every key it returns
/// and every gap between them up to the first key beyond the range, and an insert or
/// delete locks the gaps it changes. A scan repeated in one transaction returns the same
/// rows; no transaction sees another's uncommitted insert, update or delete. Early lock
/// release (the `elr` protocols) changes nothing a client can see: whatever depends on a
/// commit that is not yet durable is not handed out until it is (below).
///
/// **Failure.** Once an operation returns an error — any error: a lock timeout, an I/O
/// error, and also an argument the database refuses (an oversized key or value, a
/// [`Table`] of another database) — the transaction has *failed* (PostgreSQL's rule):
/// every later operation returns [`Error::TransactionFailed`] naming the first error,
/// [`Transaction::commit`] rolls back and returns that error, and
/// [`Transaction::rollback`] works. Argument errors are not exempt: a client that
/// ignored a refused `put` and committed would otherwise commit half of what it meant.
///
/// **Delivery.** Under the durable commit protocols nothing a method returns depends on
/// a commit that is not durable: when a lock this transaction took was released early
/// by a commit whose record is not yet durable, `get`, `get_for_update`, the old value
/// `put` and `delete` return, and each scan item wait until it is (a read barrier that
/// waits only then). `commit` returns once the commit and everything it read from are
/// durable.
///
/// **Tables.** A [`Table`] belongs to the [`Database`](crate::Database) instance that
/// returned it; using it with a transaction of another database, or of a later opening
/// of the same directory, is refused with [`Error::InvalidArgument`].
pub struct Transaction {
    pub(super) db: Arc<Inner>,
    pub(super) shared: Arc<TxnShared>,
    pub(super) undo: Vec<UndoEntry>,
    pub(super) held: Vec<LockKey>,
    pub(super) state: State,
    pub(super) commit_end: Option<Lsn>,
    /// The largest commit LSN of an early-released transaction whose data this one
    /// locked (read or overwrote): it must be durable before this one is acknowledged.
    pub(super) dep: Option<Lsn>,
    /// The first error an operation returned: the transaction can only roll back.
    pub(super) failure: Option<Error>,
    /// Values are delivered only when the transaction ends (an agent's body): no read
    /// barrier per operation; the agent waits once before it delivers.
    pub(super) deferred: bool,
    /// The coordinator's part of a transaction of a partitioned database: its commit
    /// record names these parts in the other logs (`partitioned`).
    pub(super) coordinated: Option<Vec<Participant>>,
    /// Attempts at the same work this transaction's body lost before (`retry`): in a
    /// deadlock, the waiter of least seniority is the victim (`crate::lock`).
    pub(super) seniority: u32,
    /// The transaction's own choice of durability (`set_durability`).
    pub(super) durability: Durability,
    /// The table locks it holds, one per table (`use_table`).
    pub(super) tables: SmallVec<[TableHold; 4]>,
    /// Tables it dropped: marked dropped and freed when it commits (`tables.rs`).
    pub(super) dropping: Vec<Table>,
    /// Where its last `get_for_update` found its key, for a change of that key next
    /// (`write.rs`, `btree/remembered.rs`).
    pub(super) remembered: Option<Remembered>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.shared.id)
            .field("state", &self.state)
            .field("changes", &self.undo.len())
            .field("locks", &self.held.len())
            .field("failure", &self.failure)
            .finish()
    }
}

impl Transaction {
    pub(crate) fn new(db: Arc<Inner>) -> Transaction {
        let shared = db.txns.begin();
        Transaction {
            db,
            shared,
            // Room for a small read-write transaction's locks and changes (TPC-B: 5 and
            // 4) up front: growing from empty reallocated each of them two or three times.
            undo: Vec::with_capacity(INITIAL_CHANGES),
            held: Vec::with_capacity(INITIAL_LOCKS),
            state: State::Active,
            commit_end: None,
            dep: None,
            failure: None,
            deferred: false,
            coordinated: None,
            seniority: 0,
            durability: Durability::Durable,
            tables: SmallVec::new(),
            dropping: Vec::new(),
            remembered: None,
        }
    }

    /// A transaction for an agent's body: its values are delivered when it ends, after
    /// the agent has waited for its dependencies, so operations skip the read barrier.
    pub(crate) fn for_agent(db: Arc<Inner>) -> Transaction {
        let mut t = Transaction::new(db);
        t.deferred = true;
        t
    }

    /// The transaction's number.
    pub fn id(&self) -> TxnId {
        self.shared.id
    }

    /// Chooses how this transaction's commit is acknowledged (any time before it ends):
    /// [`Durability::Async`] commits without waiting for the log flush, even on a
    /// database whose commit protocol is durable, and may be lost by a crash that comes
    /// before the flush — atomically and in commit order; see [`Durability`] for exactly
    /// what survives. Every other transaction keeps its guarantees: one that reads what
    /// this one wrote is not handed it, nor acknowledged, before this commit is durable.
    /// [`Durability::Durable`] (the default) follows the database's protocol.
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    /// This transaction's choice of durability ([`Transaction::set_durability`]).
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The first error an operation of this transaction returned, if any: the
    /// transaction has failed and can only roll back.
    pub fn failure(&self) -> Option<&Error> {
        self.failure.as_ref()
    }

    /// An error unless the transaction can take an operation: it must be active and not
    /// failed. (These refusals do not fail it further.)
    pub(super) fn usable(&self) -> Result<()> {
        if self.state != State::Active {
            return Err(Error::InvalidArgument(format!(
                "transaction {} is no longer active",
                self.shared.id
            )));
        }
        if let Some(cause) = &self.failure {
            return Err(Error::TransactionFailed {
                txn: self.shared.id,
                cause: Box::new(cause.clone()),
            });
        }
        Ok(())
    }

    /// Records `e` as the transaction's failure if it is the first.
    pub(super) fn fail(&mut self, e: &Error) {
        if self.state == State::Active && self.failure.is_none() {
            self.failure = Some(e.clone());
        }
    }

    /// The end of every operation: an error fails the transaction; a value passes the
    /// read barrier before it is handed out.
    pub(super) fn settle<T>(&mut self, r: Result<T>) -> Result<T> {
        let r = r.and_then(|v| self.read_barrier().map(|()| v));
        if let Err(e) = &r {
            self.fail(e);
        }
        r
    }

    /// Waits until the commits this transaction depends on through early lock release
    /// are durable, so a value read under them can be handed out. Free when they are
    /// (one atomic load); skipped for agent bodies and under `async`.
    pub(super) fn read_barrier(&self) -> Result<()> {
        if self.deferred {
            return Ok(());
        }
        Sequencer::new(&self.db.store.log, self.db.options.commit)
            .barrier(self.dep, self.durability)
    }

    pub(super) fn check_table(&self, table: &Table) -> Result<()> {
        if !table.belongs_to(&self.db) {
            return Err(Error::InvalidArgument(format!(
                "table {:?} belongs to another database (or an earlier opening of this one)",
                table.name()
            )));
        }
        Ok(())
    }

    /// Checks the sizes of a key and value; true if the value is too large for the leaf
    /// and is stored apart (`crate::blob`).
    pub(super) fn check_key(&self, key: &[u8], value: Option<&[u8]>) -> Result<bool> {
        let l = self.db.store.limits;
        if key.len() > l.max_key {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds the limit of {} for {}-byte pages",
                key.len(),
                l.max_key,
                self.db.store.page_size
            )));
        }
        let entry = key.len() + value.map_or(0, <[u8]>::len);
        if entry <= l.max_entry {
            return Ok(false);
        }
        let len = value.map_or(0, <[u8]>::len);
        if len > l.max_value {
            return Err(Error::InvalidArgument(format!(
                "value of {len} bytes exceeds the limit of {} bytes",
                l.max_value
            )));
        }
        if chunk_size(l.max_entry, key.len()).is_none() {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes is too long for a large value ({len} bytes) with {}-byte pages: at most {} bytes",
                key.len(),
                self.db.store.page_size,
                l.max_large_key
            )));
        }
        Ok(true)
    }
}

/// Where a `get_for_update` found its key, for a `put` or `delete` of the same key in
/// the same table next: that change uses the leaf if the tree's structure has not
/// changed since (`btree/remembered.rs`), instead of descending again.
pub(super) struct Remembered {
    /// The table's latch, by address, only compared (the transaction holds the latch
    /// through its table lock, `TableHold`, so the address is not reused while this
    /// lives).
    pub(super) latch: usize,
    /// The key (inline up to TPC-B's and most keys' sizes: no allocation per read).
    pub(super) key: SmallVec<[u8; 24]>,
    pub(super) leaf: RememberedLeaf,
}

impl Remembered {
    /// The leaf, if it was found for `key` in `table`.
    pub(super) fn leaf_for(self, table: &Table, key: &[u8]) -> Option<RememberedLeaf> {
        (self.latch == latch_address(table) && self.key[..] == *key).then_some(self.leaf)
    }
}

/// The address of `table`'s latch: which tree it is (two handles on one tree share it).
pub(super) fn latch_address(table: &Table) -> usize {
    Arc::as_ptr(&table.latch) as usize
}
