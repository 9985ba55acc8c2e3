//! Transactions: key locks, logged changes with an in-memory undo list, commit and
//! rollback.
//!
//! Life of a transaction: `begin` → changes (each an X-locked key, a log record chained
//! by prevLSN, an undo entry in memory) → commit record in the log buffer → durable →
//! locks released (strict 2PL; with early lock release — see [`CommitProtocol`] — the release comes before
//! durability). The three commit steps are separate methods
//! ([`Transaction::commit_record`], [`Database::wait_durable`](crate::Database::wait_durable),
//! [`Transaction::release_locks`]) so other commit protocols can reorder or pipeline them.
//! Rollback walks the undo list backwards, applying each undo logically by key and
//! logging it as a compensation record whose undoNext skips what was undone; an end
//! record closes it.

use crate::btree::{scan_batch, BatchEnd, ChangeLogger, ClrLogger};
use crate::catalog::Table;
use crate::db::Inner;
use crate::error::{Error, Result};
use crate::ids::{PageId, TxnId};
use crate::lock::{Granted, LockKey, LockMode};
use crate::log_record::{Change, Record};
use crate::options::CommitProtocol;
use crate::txn_table::TxnShared;
use sluice_wal::{Appended, Lsn};
use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// Entries a scan reads per latch session.
const SCAN_BATCH: usize = 256;

/// What rollback needs to undo one change.
#[derive(Debug)]
struct UndoEntry {
    prev: Option<Lsn>,
    tree: PageId,
    key: Vec<u8>,
    before: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Active,
    /// The commit record is in the log (or there was nothing to commit).
    Committed,
    Aborted,
}

/// A transaction. Dropping an active transaction rolls it back.
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
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.shared.id)
            .field("state", &self.state)
            .field("changes", &self.undo.len())
            .field("locks", &self.held.len())
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
        inner: &Inner,
        page: PageId,
        tree: PageId,
        key: &[u8],
        old: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<Appended> {
        let change = match (old, new) {
            (None, Some(v)) => Change::Insert { value: v.to_vec() },
            (Some(o), Some(v)) => Change::Update {
                old: o.to_vec(),
                new: v.to_vec(),
            },
            (Some(o), None) => Change::Delete { old: o.to_vec() },
            (None, None) => unreachable!("no change is not logged"),
        };
        let txn = self.txn.id;
        let mut prev_seen = None;
        let a = self.txn.append(&inner.log, |prev| {
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
            before: old.map(<[u8]>::to_vec),
        });
        Ok(a)
    }
}

impl Transaction {
    pub(crate) fn new(db: Arc<Inner>) -> Transaction {
        let shared = db.txns.begin();
        Transaction {
            db,
            shared,
            undo: Vec::new(),
            held: Vec::new(),
            state: State::Active,
            commit_end: None,
            dep: None,
        }
    }

    /// The transaction's number.
    pub fn id(&self) -> TxnId {
        self.shared.id
    }

    fn check_active(&self) -> Result<()> {
        if self.state != State::Active {
            return Err(Error::InvalidArgument(format!(
                "transaction {} is no longer active",
                self.shared.id
            )));
        }
        self.db.check()
    }

    fn lock(&mut self, table: &Table, key: &[u8], mode: LockMode) -> Result<()> {
        let k = LockKey {
            table: table.root,
            key: key.to_vec(),
        };
        if self
            .db
            .locks
            .lock(self.shared.id, &k, mode, &mut self.dep)?
            == Granted::New
        {
            self.held.push(k);
        }
        Ok(())
    }

    fn check_key(&self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let l = self.db.limits;
        if key.len() > l.max_key {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds the limit of {} for {}-byte pages",
                key.len(),
                l.max_key,
                self.db.page_size
            )));
        }
        let entry = key.len() + value.map_or(0, <[u8]>::len);
        if entry > l.max_entry {
            return Err(Error::InvalidArgument(format!(
                "key plus value of {entry} bytes exceeds the limit of {} for {}-byte pages",
                l.max_entry, self.db.page_size
            )));
        }
        Ok(())
    }

    /// The value of `key`, read under a shared lock.
    pub fn get(&mut self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_active()?;
        self.check_key(key, None)?;
        self.lock(table, key, LockMode::Shared)?;
        self.db.tree_get(&table.latch, table.root, key)
    }

    /// The value of `key`, read under an exclusive lock (for read-modify-write).
    pub fn get_for_update(&mut self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_active()?;
        self.check_key(key, None)?;
        self.lock(table, key, LockMode::Exclusive)?;
        self.db.tree_get(&table.latch, table.root, key)
    }

    fn set(&mut self, table: &Table, key: &[u8], new: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        self.check_active()?;
        self.check_key(key, new)?;
        self.lock(table, key, LockMode::Exclusive)?;
        let mut logger = TxnLogger {
            txn: &self.shared,
            undo: &mut self.undo,
        };
        self.db
            .tree_set(&table.latch, table.root, key, new, &mut logger)
    }

    /// Inserts or updates `key`; returns the previous value.
    pub fn put(&mut self, table: &Table, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.set(table, key, Some(value))
    }

    /// Deletes `key`; returns the value it had (`None` if it was absent).
    pub fn delete(&mut self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.set(table, key, None)
    }

    /// The entries with keys in `range`, in key order, each read under a shared lock.
    /// (Keys are locked, gaps are not: no protection against phantoms.)
    pub fn scan<K: AsRef<[u8]>>(&mut self, table: &Table, range: impl RangeBounds<K>) -> Scan<'_> {
        let own = |b: Bound<&K>| match b {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Scan {
            from: own(range.start_bound()),
            to: own(range.end_bound()),
            table: table.clone(),
            txn: self,
            buf: VecDeque::new(),
            done: false,
        }
    }

    /// Every entry of the table, in key order.
    pub fn scan_all(&mut self, table: &Table) -> Scan<'_> {
        self.scan::<&[u8]>(table, ..)
    }

    /// Commit step 1: appends the commit record (nothing for a read-only transaction)
    /// and returns the LSN the log must be durable up to for the commit to count. After
    /// this the transaction takes no more operations; its locks are still held.
    pub fn commit_record(&mut self) -> Result<Option<Lsn>> {
        self.check_active()?;
        let end = if self.shared.chain().last.is_some() {
            let txn = self.shared.id;
            let a = self
                .shared
                .append(&self.db.log, |prev| Record::Commit { txn, prev })?;
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
    /// protocol; also the last step of rollback). After [`Transaction::commit_record`]
    /// and before that record is durable, this is an *early* release: every exclusive
    /// lock leaves the commit LSN behind, so whoever takes the key next depends on this
    /// commit and is not acknowledged before it is durable.
    pub fn release_locks(&mut self) {
        let held = std::mem::take(&mut self.held);
        let early = match self.state {
            State::Committed => self.commit_end,
            _ => None,
        };
        self.db
            .locks
            .release(self.shared.id, &held, early, self.db.log.durable_lsn());
    }

    /// The LSN the log must be durable up to before this committed transaction may be
    /// acknowledged: its own commit record's end or the commit of a transaction it
    /// depends on through early lock release, whichever is later. `None`: nothing to wait
    /// for (a read-only transaction that read only durable data).
    pub fn ack_lsn(&self) -> Option<Lsn> {
        self.commit_end.max(self.dep)
    }

    /// The end of the transaction's last log record, if it logged any.
    pub fn last_lsn(&self) -> Option<Lsn> {
        self.shared.chain().last_end
    }

    /// True if the transaction has written log records.
    pub fn has_logged(&self) -> bool {
        self.shared.chain().last.is_some()
    }

    /// Commits by the database's [`CommitProtocol`]: commit record, then durability and
    /// lock release in the protocol's order. Returns once the commit is durable (at once
    /// under `Async`). Without an agent to detach from, the pipelined protocols behave as
    /// their blocking counterparts; see [`crate::Agents`] for flush pipelining.
    pub fn commit(mut self) -> Result<()> {
        self.commit_record()?;
        let protocol: CommitProtocol = self.db.options.commit;
        let log = self.db.log.clone();
        let r = if protocol.early_release() {
            self.release_locks();
            match (protocol.durable(), self.ack_lsn()) {
                (true, Some(lsn)) => log.wait_durable(lsn).map(drop),
                _ => Ok(()),
            }
        } else {
            let r = self
                .ack_lsn()
                .map_or(Ok(()), |lsn| log.wait_durable(lsn).map(drop));
            self.release_locks();
            r
        };
        r.map_err(crate::Error::from)?;
        self.db.maybe_checkpoint();
        Ok(())
    }

    /// Rolls back every change, logging compensation records, and releases the locks.
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
        self.state = State::Aborted;
        self.release_locks();
        r
    }

    fn undo_all(&mut self) -> Result<()> {
        self.db.check()?;
        while let Some(e) = self.undo.pop() {
            let latch = self.db.tree_latch(e.tree);
            let mut logger = ClrLogger {
                txn: &self.shared,
                undo_next: e.prev,
            };
            self.db
                .tree_set(&latch, e.tree, &e.key, e.before.as_deref(), &mut logger)?;
        }
        if self.shared.chain().last.is_some() {
            let txn = self.shared.id;
            self.shared
                .append(&self.db.log, |prev| Record::End { txn, prev })?;
        }
        self.db.txns.end(self.shared.id);
        Ok(())
    }
}

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

/// An ordered range scan (see [`Transaction::scan`]).
pub struct Scan<'t> {
    txn: &'t mut Transaction,
    table: Table,
    from: Bound<Vec<u8>>,
    to: Bound<Vec<u8>>,
    buf: VecDeque<(Vec<u8>, Vec<u8>)>,
    done: bool,
}

impl Scan<'_> {
    fn refill(&mut self) -> Result<()> {
        self.txn.check_active()?;
        while self.buf.is_empty() && !self.done {
            let t = &mut *self.txn;
            let (locks, id, held, dep) = (&t.db.locks, t.shared.id, &mut t.held, &mut t.dep);
            let table = self.table.root;
            let mut try_lock = |key: &[u8]| {
                let k = LockKey {
                    table,
                    key: key.to_vec(),
                };
                match locks.try_lock(id, &k, LockMode::Shared, dep) {
                    Some(Granted::New) => {
                        held.push(k);
                        true
                    }
                    Some(_) => true,
                    None => false,
                }
            };
            let batch = scan_batch(
                &t.db,
                &self.table.latch,
                table,
                as_ref(&self.from),
                as_ref(&self.to),
                SCAN_BATCH,
                &mut try_lock,
            )?;
            self.buf.extend(batch.entries);
            match batch.end {
                BatchEnd::Done => self.done = true,
                BatchEnd::More(k) => self.from = Bound::Excluded(k),
                BatchEnd::Blocked(k) => {
                    // Wait for the lock with no latch held, then resume at that key.
                    let tbl = self.table.clone();
                    self.txn.lock(&tbl, &k, LockMode::Shared)?;
                    self.from = Bound::Included(k);
                }
            }
        }
        Ok(())
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
                return Some(Err(e));
            }
        }
        self.buf.pop_front().map(Ok)
    }
}
