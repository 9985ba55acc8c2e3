//! Rollback: the undo list walked backwards, each undo logged as a compensation record;
//! a rollback that cannot finish keeps its locks and stops the database. Dropping an
//! active transaction rolls it back.

use super::transaction::{State, Transaction};
use crate::btree::{Btree, ClrLogger};
use crate::error::{Error, Result};
use crate::log_record::Record;

impl Transaction {
    /// Rolls back every change, logging compensation records, and releases the locks.
    /// Works on a failed transaction too.
    pub fn rollback(mut self) -> Result<()> {
        self.rollback_in_place()
    }

    pub(super) fn rollback_in_place(&mut self) -> Result<()> {
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
                self.db.health.poison(format!(
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

    pub(super) fn undo_all(&mut self) -> Result<()> {
        self.db.check()?;
        while let Some(e) = self.undo.last() {
            let latch = self.db.store.tree_latch(e.tree);
            let mut logger = ClrLogger {
                txn: &self.shared,
                undo_next: e.prev,
            };
            let tree = Btree::new(&self.db.store, e.tree, &latch);
            // A rollback must not give up while it can still make progress: a pool
            // whose frames are all pinned frees them as the other transactions' waits
            // time out, so a full pool is waited out (bounded), not reported.
            let mut waited = std::time::Duration::ZERO;
            loop {
                match tree.undo(&e.key, &e.undo, &mut logger) {
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
        // Whatever it still holds (a strict protocol's commit leaves its locks to this):
        // in the lock table, and table locks on the fast path (`lock/fast.rs`).
        self.release_locks();
    }
}
