//! Transactions: key-range locks, logged changes with an in-memory undo list, commit
//! and rollback.
//!
//! Life of a transaction: `begin` → operations (each under key-range locks — see
//! `lock.rs` — and each change a log record chained by prevLSN plus an undo entry in
//! memory) → commit record in the log buffer → durable → locks released (strict 2PL;
//! with early lock release — see [`CommitProtocol`](crate::CommitProtocol) — the release
//! comes before durability). The commit steps are crate-internal methods
//! (`commit_record`, `release_locks`) sequenced in one place, the commit sequencer
//! (`commit.rs`), for both [`Transaction::commit`] and the agents; called out of order
//! they would expose uncommitted data, so clients only see [`Transaction::commit`]. Rollback walks the undo list backwards,
//! applying each undo logically by key and logging it as a compensation record whose
//! undoNext skips what was undone; an end record closes it. Undo takes no locks: the
//! transaction's own locks cover what it undoes.

use crate::blob::{self, chunk_size, Descriptor};
use crate::btree::{scan_batch, BatchEnd, Btree, ChangeLogger, ClrLogger, GapLocker, SetOutcome};
use super::commit::{Sequencer, Steps};
use crate::error::{Error, Result};
use crate::ids::{PageId, TxnId};
use crate::inner::Inner;
use crate::key_range::KeyRange;
use crate::lock::{Granted, LockKey, LockManager, LockMode, LockName, Refused};
use crate::log_record::{Change, Participant, Record};
use crate::page::{CellValue, StoredValue};
use crate::store::Store;
use crate::table::Table;
use crate::txn_table::TxnShared;
use sluice_wal::{Appended, Lsn};
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

/// Entries a scan reads per latch session.
const SCAN_BATCH: usize = 256;
/// Times an insert or delete may find its next key changed after waiting for a gap
/// lock before it gives up as a victim of contention (each retry needs another
/// transaction to have inserted or deleted right there meanwhile).
const MAX_GAP_RETRIES: usize = 1000;

/// Locks a transaction has room for before its list of them grows.
const INITIAL_LOCKS: usize = 8;
/// Changes a transaction has room for before its undo list grows.
const INITIAL_CHANGES: usize = 4;

/// What rollback needs to undo one change.
#[derive(Debug)]
struct UndoEntry {
    prev: Option<Lsn>,
    tree: PageId,
    key: Vec<u8>,
    before: Option<StoredValue>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
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
    db: Arc<Inner>,
    shared: Arc<TxnShared>,
    undo: Vec<UndoEntry>,
    held: Vec<LockKey>,
    state: State,
    commit_end: Option<Lsn>,
    /// The largest commit LSN of an early-released transaction whose data this one
    /// locked (read or overwrote): it must be durable before this one is acknowledged.
    dep: Option<Lsn>,
    /// The first error an operation returned: the transaction can only roll back.
    failure: Option<Error>,
    /// Values are delivered only when the transaction ends (an agent's body): no read
    /// barrier per operation; the agent waits once before it delivers.
    deferred: bool,
    /// The coordinator's part of a transaction of a partitioned database: its commit
    /// record names these parts in the other logs (`partitioned`).
    coordinated: Option<Vec<Participant>>,
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

struct TxnLogger<'a> {
    txn: &'a TxnShared,
    undo: &'a mut Vec<UndoEntry>,
}

impl ChangeLogger for TxnLogger<'_> {
    fn log(
        &mut self,
        store: &Store,
        page: PageId,
        tree: PageId,
        key: &[u8],
        old: Option<CellValue<'_>>,
        new: Option<CellValue<'_>>,
    ) -> Result<Appended> {
        // Only the changed bytes of an update when that is smaller (`log_record::Delta`).
        let change = Change::between(old, new).expect("no change is not logged");
        let txn = self.txn.id;
        let mut prev_seen = None;
        let a = self.txn.append(&store.log, |prev| {
            prev_seen = prev;
            Record::Update {
                txn,
                prev,
                page,
                tree,
                key: key.to_vec(),
                change,
            }
        })?;
        self.undo.push(UndoEntry {
            prev: prev_seen,
            tree,
            key: key.to_vec(),
            before: old.map(CellValue::to_owned),
        });
        Ok(a)
    }
}

/// Takes a transaction's gap locks under latches (see `btree::write`).
struct TxnGaps<'a> {
    locks: &'a LockManager,
    txn: crate::ids::TxnId,
    table: PageId,
    held: &'a mut Vec<LockKey>,
    dep: &'a mut Option<Lsn>,
}

impl GapLocker for TxnGaps<'_> {
    fn try_lock(
        &mut self,
        name: LockName,
        mode: LockMode,
        check: LockMode,
    ) -> Result<LockMode, LockName> {
        try_lock_name(
            self.locks, self.txn, self.table, name, mode, check, self.held, self.dep,
        )
    }
}

/// Try-locks `mode` on `name` of `table` for `txn`, if `check` is free too (instant
/// duration; the end of the table: the stripes the mode needs, nothing to check),
/// remembering new locks in `held`. Returns the parts `txn` now holds on the name (on
/// the end: on the stripes taken), or the name to wait for if one is not free.
#[allow(clippy::too_many_arguments)]
fn try_lock_name(
    locks: &LockManager,
    txn: crate::ids::TxnId,
    table: PageId,
    name: LockName,
    mode: LockMode,
    check: LockMode,
    held: &mut Vec<LockKey>,
    dep: &mut Option<Lsn>,
) -> Result<LockMode, LockName> {
    let mut holds = LockMode::NONE;
    let mut one = |name: LockName, check: LockMode| {
        let k = LockKey { table, name };
        match locks.try_lock_checked(txn, &k, mode, check, dep) {
            Some((g, h)) => {
                if g == Granted::New {
                    held.push(k);
                }
                holds = holds.with(h);
            }
            None => return Err(k.name),
        }
        Ok(())
    };
    match name {
        LockName::Key(_) => one(name, check)?,
        LockName::End(_) => LockName::end_stripes(txn, mode)
            .try_for_each(|s| one(LockName::End(s), LockMode::NONE))?,
    }
    Ok(holds)
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

    /// The first error an operation of this transaction returned, if any: the
    /// transaction has failed and can only roll back.
    pub fn failure(&self) -> Option<&Error> {
        self.failure.as_ref()
    }

    /// An error unless the transaction can take an operation: it must be active and not
    /// failed. (These refusals do not fail it further.)
    fn usable(&self) -> Result<()> {
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
    fn fail(&mut self, e: &Error) {
        if self.state == State::Active && self.failure.is_none() {
            self.failure = Some(e.clone());
        }
    }

    /// The end of every operation: an error fails the transaction; a value passes the
    /// read barrier before it is handed out.
    fn settle<T>(&mut self, r: Result<T>) -> Result<T> {
        let r = r.and_then(|v| self.read_barrier().map(|()| v));
        if let Err(e) = &r {
            self.fail(e);
        }
        r
    }

    /// Waits until the commits this transaction depends on through early lock release
    /// are durable, so a value read under them can be handed out. Free when they are
    /// (one atomic load); skipped for agent bodies and under `async`.
    fn read_barrier(&self) -> Result<()> {
        if self.deferred {
            return Ok(());
        }
        Sequencer::new(&self.db.store.log, self.db.options.commit).barrier(self.dep)
    }

    fn check_table(&self, table: &Table) -> Result<()> {
        if !table.belongs_to(&self.db) {
            return Err(Error::InvalidArgument(format!(
                "table {:?} belongs to another database (or an earlier opening of this one)",
                table.name()
            )));
        }
        Ok(())
    }

    /// Takes `mode` on `name` of `table`, waiting (no latch may be held); returns
    /// whether the transaction did not hold the name before.
    fn lock(&mut self, table: &Table, name: LockName, mode: LockMode) -> Result<bool> {
        let k = LockKey {
            table: table.root,
            name,
        };
        let g = self
            .db
            .locks
            .lock(self.shared.id, &k, mode, &mut self.dep)
            .map_err(|r| match (r, self.db.check()) {
                // Say why the database stopped, not only that the wait ended.
                (Refused::Stopped, Err(stopped)) => stopped,
                (r, _) => r.into_error(table.name()),
            })?;
        if g == Granted::New {
            self.held.push(k);
        }
        // The holder we waited for may have been a transaction whose rollback could not
        // finish: it stopped the database and then let its locks go over changes it
        // could not undo (`rollback_in_place`). What lies under the lock is then not a
        // committed state; only a healthy database may show it.
        self.db.check()?;
        Ok(g == Granted::New)
    }

    /// Gives back a lock the current operation took and has not used: nothing was read
    /// or changed under it (the operation starts over), so 2PL does not need it kept.
    fn unlock_unused(&mut self, table: PageId, name: LockName) {
        let k = LockKey { table, name };
        let i = self
            .held
            .iter()
            .rposition(|h| *h == k)
            .expect("an unused lock is held");
        self.held.swap_remove(i);
        self.db
            .locks
            .release(self.shared.id, [&k], None, self.db.store.log.durable_lsn());
    }

    /// Checks the sizes of a key and value; true if the value is too large for the leaf
    /// and is stored apart (`crate::blob`).
    fn check_key(&self, key: &[u8], value: Option<&[u8]>) -> Result<bool> {
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

    /// The value of `key`, read under a record S lock (which also holds for an absent
    /// key: inserting it needs record X).
    pub fn get(&mut self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.usable()?;
        let r = self.read(table, key, LockMode::RECORD_S);
        self.settle(r)
    }

    /// The value of `key`, read under a record X lock (for read-modify-write).
    pub fn get_for_update(&mut self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.usable()?;
        let r = self.read(table, key, LockMode::RECORD_X);
        self.settle(r)
    }

    fn read(&mut self, table: &Table, key: &[u8], mode: LockMode) -> Result<Option<Vec<u8>>> {
        self.check_table(table)?;
        self.check_key(key, None)?;
        self.db.check()?;
        self.lock(table, LockName::key(key), mode)?;
        let tree = Btree::new(&self.db.store, table.root, &table.latch);
        match tree.get(key)? {
            Some(v) if v.external => self.read_blob(table.root, key, &v.bytes).map(Some),
            v => Ok(v.map(|v| v.bytes)),
        }
    }

    /// The hidden table of large values (`crate::blob`), created if `create` and absent.
    fn blob_table(&self, create: bool) -> Result<Table> {
        self.db.blob_table(create)?.ok_or_else(|| {
            Error::Corruption("a large value's descriptor, but no table of large values".into())
        })
    }

    /// The descriptor a large `value` of `key` will have: its chunks go under the
    /// generation the key's current value does not use (`crate::blob`). The caller holds
    /// record X on the key, so that value cannot change before the descriptor replaces it.
    fn next_descriptor(
        &self,
        table: &Table,
        key: &[u8],
        value: &[u8],
        crc: u32,
    ) -> Result<Descriptor> {
        let tree = Btree::new(&self.db.store, table.root, &table.latch);
        let generation = match tree.get(key)? {
            Some(old) if old.external => 1 - Descriptor::decode(&old.bytes)?.generation,
            _ => 0,
        };
        let chunk = chunk_size(self.db.store.limits.max_entry, key.len())
            .expect("the key was checked to allow a large value");
        Ok(Descriptor {
            generation,
            len: value.len() as u64,
            chunk: chunk as u32,
            crc,
        })
    }

    /// Stores a large value's chunks in the hidden table, logged as this transaction's
    /// changes, without locks of their own (the user's key, locked, covers them).
    fn write_blob(
        &mut self,
        table: PageId,
        key: &[u8],
        d: &Descriptor,
        value: &[u8],
    ) -> Result<()> {
        let blobs = self.blob_table(true)?;
        let mut logger = TxnLogger {
            txn: &self.shared,
            undo: &mut self.undo,
        };
        let tree = Btree::new(&self.db.store, blobs.root, &blobs.latch).for_runs();
        blob::write(&tree, table, key, d, value, &mut logger)
    }

    /// Deletes the chunks of the large value of `key` in this transaction; returns the
    /// value they held.
    fn delete_blob(&mut self, table: PageId, key: &[u8], desc: &[u8]) -> Result<Vec<u8>> {
        let d = Descriptor::decode(desc)?;
        let blobs = self.blob_table(false)?;
        let mut logger = TxnLogger {
            txn: &self.shared,
            undo: &mut self.undo,
        };
        let tree = Btree::new(&self.db.store, blobs.root, &blobs.latch).for_runs();
        blob::delete(
            &tree,
            table,
            key,
            &d,
            self.db.store.limits.max_value,
            &mut logger,
        )
    }

    /// Reads the large value of `key` from its chunks. The caller holds a lock on the
    /// key, so nobody changes them meanwhile; no page latch is held.
    fn read_blob(&self, table: PageId, key: &[u8], desc: &[u8]) -> Result<Vec<u8>> {
        let d = Descriptor::decode(desc)?;
        let blobs = self.blob_table(false)?;
        let tree = Btree::new(&self.db.store, blobs.root, &blobs.latch).for_runs();
        blob::read(&tree, table, key, &d, self.db.store.limits.max_value)
    }

    fn set(&mut self, table: &Table, key: &[u8], new: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        self.usable()?;
        let r = self.write(table, key, new);
        self.settle(r)
    }

    /// Record X on the key; an insert or delete also locks its next key under the leaf
    /// latch (`btree/write.rs`), and if that lock is not free, waits for it with no
    /// latch held and starts over.
    fn write(&mut self, table: &Table, key: &[u8], new: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        if self.db.options.read_only {
            return Err(Error::ReadOnly);
        }
        self.check_table(table)?;
        let large = self.check_key(key, new)?;
        self.db.check()?;
        // A delete's gap I on its own key comes with the record lock (module docs of
        // `btree/write.rs`): one request, and no wait while holding half of it.
        let mode = match new {
            Some(_) => LockMode::RECORD_X,
            None => LockMode::RECORD_X.with(LockMode::GAP_I),
        };
        let name = || LockName::key(key);
        let mut fresh = self.lock(table, name(), mode)?;
        // A large value: the leaf gets its descriptor, then the chunks are written (the
        // one test a small value pays here, besides the old value's flag below).
        let mut large = match (large, new) {
            (true, Some(v)) => {
                let crc = crc32c::crc32c(v);
                let d = self.next_descriptor(table, key, v, crc)?;
                Some((d, d.encode(), v, crc))
            }
            _ => None,
        };
        // Only a wait for a gap starts the clock (no clock read on the common path).
        let mut waiting_since = None;
        for _ in 0..MAX_GAP_RETRIES {
            let cell = match &large {
                Some((_, encoded, ..)) => Some(CellValue {
                    bytes: encoded,
                    external: true,
                }),
                None => new.map(CellValue::inline),
            };
            let Transaction {
                db,
                shared,
                undo,
                held,
                dep,
                ..
            } = self;
            let mut logger = TxnLogger { txn: shared, undo };
            let mut gaps = TxnGaps {
                locks: &db.locks,
                txn: shared.id,
                table: table.root,
                held,
                dep,
            };
            let tree = Btree::new(&db.store, table.root, &table.latch);
            let (gap, gap_mode, check) =
                match tree.set_locking(key, cell, &mut logger, Some(&mut gaps))? {
                    SetOutcome::Done(old) => {
                        if let Some((d, _, v, _)) = &large {
                            self.write_blob(table.root, key, d, v)?;
                        }
                        return match old {
                            Some(o) if o.external => {
                                self.delete_blob(table.root, key, &o.bytes).map(Some)
                            }
                            o => Ok(o.map(|o| o.bytes)),
                        };
                    }
                    SetOutcome::Blocked(gap, gap_mode, check) => (gap, gap_mode, check),
                };
            // Waiting for the gap while holding the key's lock would deadlock against a
            // transaction that deleted a key below ours (its gap D blocks us) and then
            // touches our key: "delete j, then put k" against "insert k".
            // If this operation took the key's lock, nothing was read or changed under
            // it yet, so it can go and be taken again after the wait (as InnoDB's insert
            // waits for its insert-intention gap lock before it has a record to lock).
            if fresh {
                self.unlock_unused(table.root, name());
            }
            waiting_since.get_or_insert_with(std::time::Instant::now);
            if check == LockMode::NONE {
                self.lock(table, gap, gap_mode)?;
            } else if self.lock(table, gap.clone(), gap_mode.with(check))? {
                // Waited out the holder the instant check met; holding the check part
                // to the end would make later updaters of that key wait. The redo takes
                // what it needs.
                self.unlock_unused(table.root, gap);
            }
            if fresh {
                fresh = self.lock(table, name(), mode)?;
                // The key's value may have changed while its lock was let go: a large
                // value's chunks go under the generation the value now does not use.
                if let Some((d, encoded, v, crc)) = &mut large {
                    *d = self.next_descriptor(table, key, v, *crc)?;
                    *encoded = d.encode();
                }
            }
        }
        Err(Error::LockTimeout {
            table: table.name().to_string(),
            waited_ms: waiting_since.map_or(0, |t| t.elapsed().as_millis() as u64),
        })
    }

    /// Inserts or updates `key`; returns the previous value. In a read-only database,
    /// [`Error::ReadOnly`] (as for [`Transaction::delete`] and a
    /// [`Transaction::retain`] that deletes).
    ///
    /// **Sizes** ([`Database::limits`](crate::Database::limits)): a key is at most
    /// `max_key` bytes (1,024 with 8 KiB pages), a value at most `max_value` (1 GiB);
    /// beyond, [`Error::InvalidArgument`]. A key plus a value of at most `max_entry`
    /// bytes (2,024 with 8 KiB pages) is stored in the tree's leaf. A larger value is
    /// stored apart, in chunks of a hidden table written in this transaction (so it
    /// commits, rolls back and survives a crash with everything else), and its key may
    /// then be at most `max_large_key` bytes (1,024 with 8 KiB pages, less with smaller
    /// pages). Every read returns the whole value. The value is held in memory whole:
    /// a put of a large value writes about its size to the log and the data file, and
    /// replacing or deleting one reads the old value back (it is returned) and keeps it
    /// in memory for rollback until the transaction ends.
    pub fn put(&mut self, table: &Table, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.set(table, key, Some(value))
    }

    /// Deletes `key`; returns the value it had (`None` if it was absent).
    pub fn delete(&mut self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.set(table, key, None)
    }

    /// The entries with keys in `range`, in key order. Serializable: every key returned
    /// and every gap of the range is locked to the end of the transaction, so the same
    /// scan repeated returns the same entries, and no uncommitted insert or delete of
    /// another transaction is seen or skipped. An error is yielded as an item (and
    /// fails the transaction).
    pub fn scan(&mut self, table: &Table, range: impl KeyRange) -> Scan<'_> {
        let (from, to) = range.into_bounds();
        Scan {
            from,
            to,
            table: table.clone(),
            txn: self,
            buf: VecDeque::new(),
            done: false,
        }
    }

    /// Every entry of the table, in key order.
    pub fn scan_all(&mut self, table: &Table) -> Scan<'_> {
        self.scan(table, ..)
    }

    /// Deletes the entries in `range` for which `keep(key, value)` is false; returns how
    /// many it deleted. Reads with [`Transaction::scan`]'s locking (so the range is
    /// serializable), a batch at a time, so memory stays bounded however large the
    /// range. An error stops it and fails the transaction, as any operation's does.
    pub fn retain(
        &mut self,
        table: &Table,
        range: impl KeyRange,
        mut keep: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<u64> {
        const BATCH: usize = 256;
        let (mut from, to) = range.into_bounds();
        let mut deleted = 0;
        loop {
            let mut doomed = Vec::new();
            let mut last = None;
            let mut seen = 0;
            for entry in self.scan(table, (from.clone(), to.clone())) {
                let (k, v) = entry?;
                if !keep(&k, &v) {
                    doomed.push(k.clone());
                }
                last = Some(k);
                seen += 1;
                if seen == BATCH {
                    break;
                }
            }
            for k in &doomed {
                self.delete(table, k)?;
            }
            deleted += doomed.len() as u64;
            match last {
                Some(k) if seen == BATCH => from = Bound::Excluded(k),
                _ => return Ok(deleted),
            }
        }
    }

    /// The entries whose keys start with `prefix`, in key order, with the same locking
    /// as [`Transaction::scan`] (an empty prefix scans the whole table).
    pub fn scan_prefix(&mut self, table: &Table, prefix: impl AsRef<[u8]>) -> Scan<'_> {
        let prefix = prefix.as_ref();
        match prefix_end(prefix) {
            Some(end) => self.scan(table, prefix.to_vec()..end),
            None => self.scan(table, prefix.to_vec()..),
        }
    }

    /// Commit step 1: appends the commit record (nothing for a read-only transaction)
    /// and returns the LSN the log must be durable up to for the commit to count. After
    /// this the transaction takes no more operations; its locks are still held. A
    /// failed transaction is refused ([`Error::TransactionFailed`]).
    pub(crate) fn commit_record(&mut self) -> Result<Option<Lsn>> {
        self.usable()?;
        self.db.check()?;
        let txn = self.shared.id;
        let end = if let Some(participants) = self.coordinated.take() {
            // Always a record: it commits the parts in the other logs too.
            let a = self
                .shared
                .append(&self.db.store.log, |prev| Record::Coordinated {
                    txn,
                    prev,
                    participants,
                })?;
            Some(a.end)
        } else if self.shared.chain().last.is_some() {
            let a = self
                .shared
                .append(&self.db.store.log, |prev| Record::Commit { txn, prev })?;
            Some(a.end)
        } else {
            None
        };
        self.db.txns.end(self.shared.id);
        self.state = State::Committed;
        self.undo.clear();
        self.commit_end = end;
        Ok(end)
    }

    /// Releases every lock the transaction holds (commit step 2 or 3, depending on the
    /// protocol; also the last step of rollback). After `commit_record` and before that
    /// record is durable, this is an *early* release: every lock with an exposing part
    /// (record X, gap I, gap D) leaves the commit LSN behind, so whoever takes the name
    /// next depends on this commit and is not acknowledged before it is durable.
    pub(crate) fn release_locks(&mut self) {
        if self.state == State::Stuck {
            // Its locks hide changes it could not undo (`rollback_in_place`).
            return;
        }
        let held = std::mem::take(&mut self.held);
        let early = match self.state {
            State::Committed => self.commit_end,
            _ => None,
        };
        self.db.locks.release(
            self.shared.id,
            &held,
            early,
            self.db.store.log.durable_lsn(),
        );
    }

    /// Releases the locks of a transaction whose commit is already decided and durable
    /// elsewhere — a participant of a partitioned database, once the coordinator's commit
    /// record is durable: nobody who takes them next depends on this log's own commit
    /// record, which may still be in its buffer.
    pub(crate) fn release_locks_decided(&mut self) {
        let held = std::mem::take(&mut self.held);
        self.db
            .locks
            .release(self.shared.id, &held, None, self.db.store.log.durable_lsn());
    }

    /// The start of the transaction's last log record, if it logged any (what recovery
    /// of its log finds as its last record).
    pub(crate) fn last_record(&self) -> Option<Lsn> {
        self.shared.chain().last
    }

    /// Commits the coordinator's part of a transaction of a partitioned database: as
    /// [`Transaction::commit_observed`], and with `participants` (parts in other logs,
    /// durable already) a commit record that names them, written even if this part
    /// logged nothing. `observe` gets the record's start and end.
    pub(crate) fn commit_coordinated(
        mut self,
        participants: Option<Vec<Participant>>,
        observe: impl FnOnce(Option<(Lsn, Lsn)>),
    ) -> Result<()> {
        if self.failure.is_none() {
            self.coordinated = participants;
        }
        let shared = self.shared.clone();
        self.commit_observed(|end| observe(end.and_then(|e| Some((shared.chain().last?, e)))))
    }

    /// The LSN the log must be durable up to before this committed transaction may be
    /// acknowledged: its own commit record's end or the commit of a transaction it
    /// depends on through early lock release, whichever is later. `None`: nothing to wait
    /// for (a read-only transaction that read only durable data).
    pub fn ack_lsn(&self) -> Option<Lsn> {
        self.commit_end.max(self.dep)
    }

    /// The commit of an early-released transaction this one depends on (read or
    /// overwrote its data), if any.
    pub(crate) fn dependency(&self) -> Option<Lsn> {
        self.dep
    }

    /// The end of the transaction's last log record, if it logged any.
    pub fn last_lsn(&self) -> Option<Lsn> {
        self.shared.chain().last_end
    }

    /// True if the transaction has written log records.
    pub fn has_logged(&self) -> bool {
        self.shared.chain().last.is_some()
    }

    /// Commits by the database's [`CommitProtocol`](crate::CommitProtocol): commit record, then durability and
    /// lock release in the protocol's order. Returns once the commit, and every commit it
    /// depends on, is durable (at once under `Async`). Without an agent to detach from,
    /// the pipelined protocols behave as their blocking counterparts; see
    /// [`crate::Agents`] for flush pipelining. A failed transaction (see the type's
    /// docs) is rolled back and its [`Error::TransactionFailed`] returned.
    pub fn commit(self) -> Result<()> {
        self.commit_observed(|_| {})
    }

    /// As [`Transaction::commit`], and calls `observe` with the end LSN of the commit
    /// record (`None`: the transaction wrote nothing) as soon as the record is in the
    /// log's memory buffer, before the wait for the disk — for an observer that tracks
    /// commits in flight (a replication feed, an audit trail, a test that must know which
    /// commits a crash may take). What `observe` sees is not yet durable: it must not be
    /// reported to a client as committed before this method returns `Ok`. Not called
    /// for a failed transaction, which is rolled back as by `commit`.
    pub fn commit_observed(mut self, observe: impl FnOnce(Option<Lsn>)) -> Result<()> {
        if let Some(cause) = self.failure.clone() {
            let rolled = self.rollback_in_place();
            let failed = Error::TransactionFailed {
                txn: self.shared.id,
                cause: Box::new(cause),
            };
            return rolled.and(Err(failed));
        }
        let db = self.db.clone();
        let seq = Sequencer::new(&db.store.log, db.options.commit);
        let recorded = seq.record(&mut self)?;
        observe(recorded.record);
        db.maybe_checkpoint();
        // Direct transactions have no agent to detach from: they wait.
        seq.wait(recorded.ack, Some(self))
    }

    /// Rolls back every change, logging compensation records, and releases the locks.
    /// Works on a failed transaction too.
    pub fn rollback(mut self) -> Result<()> {
        self.rollback_in_place()
    }

    fn rollback_in_place(&mut self) -> Result<()> {
        if self.state != State::Active {
            return Err(Error::InvalidArgument(format!(
                "transaction {} is no longer active",
                self.shared.id
            )));
        }
        let r = self.undo_all();
        if let Err(e) = &r {
            // The tree still holds changes of this transaction that were not undone, and
            // its locks are the only thing keeping them from other transactions: released,
            // anyone could read or overwrite an aborted change (a waiter granted the lock,
            // and a scan or read that try-locks under a latch alike). So they stay held
            // for good, the database stops (every later call fails with this), and
            // restart recovery, which undoes every loser, finishes the rollback at the
            // next open. Every lock wait ends at once (`LockManager::stop`), with the
            // database's failure.
            if self.db.check().is_ok() {
                self.db.poison_with(&format!(
                    "the rollback of transaction {} could not finish ({e}); reopen the database to let restart recovery finish it",
                    self.shared.id
                ));
            }
            self.state = State::Stuck;
            self.db.locks.stop();
            return r;
        }
        self.state = State::Aborted;
        self.release_locks();
        r
    }

    fn undo_all(&mut self) -> Result<()> {
        self.db.check()?;
        while let Some(e) = self.undo.last() {
            let latch = self.db.store.tree_latch(e.tree);
            let mut logger = ClrLogger {
                txn: &self.shared,
                undo_next: e.prev,
            };
            let before = e.before.as_ref().map(StoredValue::as_cell);
            let tree = Btree::new(&self.db.store, e.tree, &latch);
            // A rollback must not give up while it can still make progress: a pool
            // whose frames are all pinned frees them as the other transactions' waits
            // time out, so a full pool is waited out (bounded), not reported.
            let mut waited = std::time::Duration::ZERO;
            loop {
                match tree.set(&e.key, before, &mut logger) {
                    Err(Error::BufferPoolFull(_)) if waited < UNDO_POOL_WAIT => {
                        let pause = std::time::Duration::from_millis(10);
                        std::thread::sleep(pause);
                        waited += pause;
                    }
                    r => {
                        r?;
                        break;
                    }
                }
            }
            self.undo.pop();
        }
        if self.shared.chain().last.is_some() {
            let txn = self.shared.id;
            self.shared
                .append(&self.db.store.log, |prev| Record::End { txn, prev })?;
        }
        self.db.txns.end(self.shared.id);
        Ok(())
    }
}

/// How long a rollback waits out a buffer pool whose frames are all pinned before it
/// gives up (and stops the database): far longer than any fetch waits, so that every
/// other transaction's wait times out and lets its frames go first.
const UNDO_POOL_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

impl Drop for Transaction {
    fn drop(&mut self) {
        if self.state == State::Active {
            // Best effort: if the database failed, recovery undoes the rest.
            let _ = self.rollback_in_place();
        }
        if !self.held.is_empty() {
            self.release_locks();
        }
    }
}

impl Steps for Transaction {
    fn commit_record(&mut self) -> Result<Option<Lsn>> {
        Transaction::commit_record(self)
    }
    fn release_locks(&mut self) {
        Transaction::release_locks(self)
    }
    fn ack_lsn(&self) -> Option<Lsn> {
        Transaction::ack_lsn(self)
    }
    fn last_lsn(&self) -> Option<Lsn> {
        Transaction::last_lsn(self)
    }
    fn dependency(&self) -> Option<Lsn> {
        Transaction::dependency(self)
    }
    fn rollback(self) -> Result<()> {
        Transaction::rollback(self)
    }
}

/// The smallest key above every key that starts with `prefix`: the prefix with its
/// trailing 0xFF bytes dropped and its last byte incremented; `None` if there is none
/// (the prefix is all 0xFF, or empty), and the range is unbounded above.
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut end = prefix[..=keep].to_vec();
    end[keep] += 1;
    Some(end)
}

/// An ordered range scan (see [`Transaction::scan`]).
pub struct Scan<'t> {
    txn: &'t mut Transaction,
    table: Table,
    /// Where the next batch starts: the original start, then just after the last entry
    /// read.
    from: Bound<Vec<u8>>,
    to: Bound<Vec<u8>>,
    /// Entries read, large values still as descriptors: each is read when handed out,
    /// with no latch held and without holding a batch of them in memory.
    buf: VecDeque<(Vec<u8>, StoredValue)>,
    done: bool,
}

impl Scan<'_> {
    fn refill(&mut self) -> Result<()> {
        self.txn.usable()?;
        self.txn.check_table(&self.table)?;
        self.txn.db.check()?;
        let root = self.table.root;
        while self.buf.is_empty() && !self.done {
            let Transaction {
                db,
                shared,
                held,
                dep,
                ..
            } = &mut *self.txn;
            let mut try_lock = |key: Option<&[u8]>, mode: LockMode| {
                let name = key.map_or(LockName::End(0), LockName::key);
                try_lock_name(
                    &db.locks,
                    shared.id,
                    root,
                    name,
                    mode,
                    LockMode::NONE,
                    held,
                    dep,
                )
                .map(|_| ())
            };
            let batch = scan_batch(
                &Btree::new(&db.store, root, &self.table.latch),
                as_ref(&self.from),
                as_ref(&self.to),
                SCAN_BATCH,
                &mut try_lock,
            )?;
            if let Some((last, _)) = batch.entries.last() {
                self.from = Bound::Excluded(last.clone());
            }
            self.buf.extend(batch.entries);
            match batch.end {
                BatchEnd::Done => self.done = true,
                BatchEnd::More => {}
                // Entries read before the blocked name go out first; the next refill
                // meets the lock again.
                BatchEnd::Blocked(..) if !self.buf.is_empty() => {}
                BatchEnd::Blocked(name, mode) => {
                    // Wait with no latch held; the next batch re-reads from just after
                    // the last entry read, so a key inserted below the blocked one
                    // meanwhile is seen (and locked).
                    self.txn.lock(&self.table, name, mode)?;
                }
            }
        }
        // What the scan returns — its entries, and the absence of others — may depend
        // on commits released early: hand nothing out before they are durable.
        self.txn.read_barrier()
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Iterator for Scan<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() && !self.done {
            if let Err(e) = self.refill() {
                self.done = true;
                self.txn.fail(&e);
                return Some(Err(e));
            }
        }
        let (k, v) = self.buf.pop_front()?;
        if !v.external {
            return Some(Ok((k, v.bytes)));
        }
        match self.txn.read_blob(self.table.root, &k, &v.bytes) {
            Ok(v) => Some(Ok((k, v))),
            Err(e) => {
                self.done = true;
                self.buf.clear();
                self.txn.fail(&e);
                Some(Err(e))
            }
        }
    }
}
