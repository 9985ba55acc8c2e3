//! Scans: ordered range scans read a batch at a time under latches, with every key and
//! gap they cover locked (serializable, no phantoms).

use super::locks::try_lock_name;
use super::transaction::Transaction;
use crate::breakdown::{enter, Activity};
use crate::btree::{scan_batch, BatchEnd, Btree};
use crate::error::Result;
use crate::key_range::KeyRange;
use crate::lock::{LockMode, LockName, TableLock};
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
            front: VecDeque::new(),
            back: VecDeque::new(),
            batch: SCAN_BATCH,
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
    /// The entry with the smallest key, without a scan: one descent, with the locks of a
    /// scan of the table that stops there (the key and the gap below it; the table's
    /// end if it is empty), so no smaller key can appear until the transaction ends.
    /// `None` if the table is empty.
    pub fn first(&mut self, table: &Table) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut s = self.scan_all(table);
        s.batch = 1;
        s.next().transpose()
    }

    /// The entry with the largest key, without a scan: the locks of a reverse scan that
    /// stops there (the table's end, the key and the gap below it), so no larger key can
    /// appear until the transaction ends. `None` if the table is empty.
    pub fn last(&mut self, table: &Table) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut s = self.scan_all(table);
        s.batch = 1;
        s.next_back().transpose()
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

/// An ordered range scan (see [`Transaction::scan`]), double-ended: `next` reads up
/// from the start of the range, `next_back` down from its end (`.rev()` scans in
/// descending key order), and the two meet in the middle, each entry handed out once.
/// Both directions lock the same keys and gaps (serializable, no phantoms); a batch read
/// backwards holds the table's structure latch exclusive while it reads (`btree/reverse.rs`).
pub struct Scan<'t> {
    txn: &'t mut Transaction,
    table: Table,
    /// What is left to read: the original range, narrowed from below to just after the
    /// last entry read forwards and from above to just below the last read backwards.
    from: Bound<Vec<u8>>,
    to: Bound<Vec<u8>>,
    /// Entries read, large values still as descriptors: each is read when handed out,
    /// with no latch held and without holding a batch of them in memory. `front` in
    /// ascending order, `back` in descending order; together with what is left
    /// between `from` and `to`, they are the entries not yet handed out.
    front: VecDeque<(Vec<u8>, StoredValue)>,
    back: VecDeque<(Vec<u8>, StoredValue)>,
    /// Entries read per batch.
    batch: usize,
    /// Nothing is left between `from` and `to` (or an error ended the scan).
    done: bool,
}

impl Scan<'_> {
    /// Reads the next batch from the front (`forward`) or the back of what is left.
    fn refill(&mut self, forward: bool) -> Result<()> {
        let _tree = enter(Activity::Tree);
        self.txn.usable()?;
        self.txn.use_table(&self.table, TableLock::Read)?;
        self.txn.db.check()?;
        let root = self.table.root;
        let buf_empty = |s: &Self| {
            if forward {
                s.front.is_empty()
            } else {
                s.back.is_empty()
            }
        };
        while buf_empty(self) && !self.done {
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
            let tree = Btree::new(&db.store, root, &self.table.latch);
            let (from, to) = (as_ref(&self.from), as_ref(&self.to));
            let batch = if forward {
                scan_batch(&tree, from, to, self.batch, &mut try_lock)?
            } else {
                tree.scan_batch_rev((from, to), self.batch, &mut try_lock)?
            };
            if let Some((last, _)) = batch.entries.last() {
                if forward {
                    self.from = Bound::Excluded(last.clone());
                } else {
                    self.to = Bound::Excluded(last.clone());
                }
            }
            let read = !batch.entries.is_empty();
            if forward {
                self.front.extend(batch.entries);
            } else {
                self.back.extend(batch.entries);
            }
            match batch.end {
                BatchEnd::Done => self.done = true,
                BatchEnd::More => {}
                // Entries read before the blocked name go out first; the next refill
                // meets the lock again.
                BatchEnd::Blocked(..) if read => {}
                BatchEnd::Blocked(name, mode) => {
                    // Wait with no latch held; the next batch re-reads from just after
                    // (before) the last entry read, so a key inserted beside the blocked
                    // one meanwhile is seen (and locked).
                    self.txn.lock(&self.table, name, mode)?;
                }
            }
        }
        // What the scan returns — its entries, and the absence of others — may depend
        // on commits released early: hand nothing out before they are durable.
        self.txn.read_barrier()
    }

    /// The next entry from the front or the back: from that end's buffer, refilled if
    /// needed, and once nothing is left to read, from the other end's.
    fn step(&mut self, forward: bool) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        let empty = if forward {
            self.front.is_empty()
        } else {
            self.back.is_empty()
        };
        if self.done && self.front.is_empty() && self.back.is_empty() {
            return None;
        }
        // A closed (or poisoned) database hands out nothing more, not even what the scan
        // read before: its calls return `Closed`, as every other operation's do.
        let refilled = match self.txn.db.check() {
            Ok(()) if empty && !self.done => self.refill(forward),
            checked => checked,
        };
        if let Err(e) = refilled {
            self.done = true;
            self.front.clear();
            self.back.clear();
            self.txn.fail(&e);
            return Some(Err(e));
        }
        let (k, v) = if forward {
            self.front.pop_front().or_else(|| self.back.pop_back())?
        } else {
            self.back.pop_front().or_else(|| self.front.pop_back())?
        };
        if !v.external {
            return Some(Ok((k, v.bytes)));
        }
        match self.txn.read_blob(self.table.root, &k, &v.bytes) {
            Ok(v) => Some(Ok((k, v))),
            Err(e) => {
                self.done = true;
                self.front.clear();
                self.back.clear();
                self.txn.fail(&e);
                Some(Err(e))
            }
        }
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
        self.step(true)
    }
}

impl DoubleEndedIterator for Scan<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}
