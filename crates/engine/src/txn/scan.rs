//! Scans: ordered range scans read a batch at a time under latches, with every key and
//! gap they cover locked (serializable, no phantoms).

use super::locks::try_lock_name;
use super::transaction::Transaction;
use crate::btree::{scan_batch, BatchEnd, Btree};
use crate::error::Result;
use crate::key_range::KeyRange;
use crate::lock::{LockMode, LockName};
use crate::page::StoredValue;
use crate::table::Table;
use std::collections::VecDeque;
use std::ops::Bound;

/// Entries a scan reads per latch session.
const SCAN_BATCH: usize = 256;

impl Transaction {
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

    /// The entries whose keys start with `prefix`, in key order, with the same locking
    /// as [`Transaction::scan`] (an empty prefix scans the whole table).
    pub fn scan_prefix(&mut self, table: &Table, prefix: impl AsRef<[u8]>) -> Scan<'_> {
        let prefix = prefix.as_ref();
        match prefix_end(prefix) {
            Some(end) => self.scan(table, prefix.to_vec()..end),
            None => self.scan(table, prefix.to_vec()..),
        }
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
