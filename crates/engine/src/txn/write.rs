//! Reads and writes: point reads under a record lock, and puts and deletes under record
//! and gap locks, each change logged and remembered for undo.

use super::locks::TxnGaps;
use super::transaction::{latch_address, Remembered, Transaction, UndoEntry};
use crate::breakdown::{enter, Activity};
use crate::btree::{Btree, ChangeLogger, LeafChange, SetOutcome};
use crate::error::{Error, Result};
use crate::key_range::KeyRange;
use crate::lock::{LockMode, LockName, TableLock};
use crate::log_record::{Change, Record};
use crate::page::CellValue;
use crate::store::Store;
use crate::table::Table;
use crate::txn_table::TxnShared;
use sluice_wal::Appended;
use smallvec::SmallVec;
use std::ops::Bound;

/// Times an insert or delete may find its next key changed after waiting for a gap
/// lock before it gives up as a victim of contention (each retry needs another
/// transaction to have inserted or deleted right there meanwhile).
const MAX_GAP_RETRIES: usize = 1000;

pub(super) struct TxnLogger<'a> {
    pub(super) txn: &'a TxnShared,
    pub(super) undo: &'a mut Vec<UndoEntry>,
}

impl ChangeLogger for TxnLogger<'_> {
    fn log(&mut self, store: &Store, change: LeafChange<'_>) -> Result<Appended> {
        let LeafChange {
            page,
            tree,
            key,
            old,
            new,
        } = change;
        // Only the changed bytes of an update when that is smaller (`log_record::Delta`).
        let change = Change::between(old, new).expect("no change is not logged");
        let txn = self.txn.id;
        let (a, record) = self.txn.append_keeping(&store.log, |prev| Record::Update {
            txn,
            prev,
            page,
            tree,
            key: key.to_vec(),
            change,
        })?;
        // The record is encoded and in the log: its key and change move to the undo
        // list instead of being copied again.
        let Record::Update {
            prev, key, change, ..
        } = record
        else {
            unreachable!("built as an update above")
        };
        self.undo.push(UndoEntry {
            prev,
            tree,
            key,
            undo: change.into_undo(),
        });
        Ok(a)
    }
}

impl Transaction {
    /// The value of `key`, read under a record S lock (which also holds for an absent
    /// key: inserting it needs record X).
    pub fn get(&mut self, table: &Table, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.usable()?;
        let _tree = enter(Activity::Tree);
        let r = self.read(table, key.as_ref(), LockMode::RECORD_S);
        self.settle(r)
    }

    /// The value of `key`, read under a record X lock (for read-modify-write).
    pub fn get_for_update(
        &mut self,
        table: &Table,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.usable()?;
        let _tree = enter(Activity::Tree);
        let r = self.read(table, key.as_ref(), LockMode::RECORD_X);
        self.settle(r)
    }

    pub(super) fn read(
        &mut self,
        table: &Table,
        key: &[u8],
        mode: LockMode,
    ) -> Result<Option<Vec<u8>>> {
        self.use_table(table, TableLock::Read)?;
        self.check_key(key, None)?;
        self.db.check()?;
        self.lock(table, LockName::key(key), mode)?;
        let tree = Btree::new(&self.db.store, table.root, &table.latch);
        let value = if mode == LockMode::RECORD_X {
            // Read for update: the write that follows can skip the descent.
            let (value, leaf) = tree.get_remembering(key)?;
            self.remembered = Some(Remembered {
                latch: latch_address(table),
                key: SmallVec::from_slice(key),
                leaf,
            });
            value
        } else {
            tree.get(key)?
        };
        match value {
            Some(v) if v.external => self.read_blob(table.root, key, &v.bytes).map(Some),
            v => Ok(v.map(|v| v.bytes)),
        }
    }

    pub(super) fn set(
        &mut self,
        table: &Table,
        key: &[u8],
        new: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.usable()?;
        let _tree = enter(Activity::Tree);
        let r = self.write(table, key, new);
        self.settle(r)
    }

    /// Record X on the key; an insert or delete also locks its next key under the leaf
    /// latch (`btree/write.rs`), and if that lock is not free, waits for it with no
    /// latch held and starts over.
    pub(super) fn write(
        &mut self,
        table: &Table,
        key: &[u8],
        new: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        if self.db.options.read_only {
            return Err(Error::ReadOnly);
        }
        self.use_table(table, TableLock::Write)?;
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
        // A leaf this key's `get_for_update` found: the first attempt may start there.
        let mut seen = self.remembered.take().and_then(|r| r.leaf_for(table, key));
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
                match tree.set_locking(key, cell, &mut logger, Some(&mut gaps), seen.take())? {
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
    pub fn put(
        &mut self,
        table: &Table,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.set(table, key.as_ref(), Some(value.as_ref()))
    }

    /// Deletes `key`; returns the value it had (`None` if it was absent).
    pub fn delete(&mut self, table: &Table, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.set(table, key.as_ref(), None)
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
}
