//! A transaction of a partitioned database, and the commit coordinator's protocol.

use super::{PartitionedTable, Shared};
use crate::error::{Error, Result};
use crate::key_range::KeyRange;
use crate::log_record::Participant;
use crate::txn::{Scan, Transaction};
use parking_lot::{Condvar, Mutex};
use sluice_wal::{Log, Lsn};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A transaction over every partition of a [`Partitioned`](super::Partitioned)
/// database: a part in each partition it touches, begun when it first does, and one
/// outcome for all of them (see the module docs of `partitioned`). Dropping it rolls
/// back. Once an operation fails, the transaction has failed, as an ordinary
/// [`Transaction`] does: commit rolls back and returns the error.
pub struct PartitionedTransaction {
    shared: Arc<Shared>,
    parts: Vec<Option<Transaction>>,
}

impl std::fmt::Debug for PartitionedTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionedTransaction")
            .field("parts", &self.parts)
            .finish()
    }
}

impl PartitionedTransaction {
    pub(crate) fn new(shared: Arc<Shared>) -> PartitionedTransaction {
        let parts = (0..shared.parts.len()).map(|_| None).collect();
        PartitionedTransaction { shared, parts }
    }

    fn part(&mut self, t: &PartitionedTable) -> Result<&mut Transaction> {
        let i = t.partition;
        if i >= self.parts.len() {
            return Err(Error::InvalidArgument(format!(
                "table {:?} is of partition {i}, but this database has {} log managers",
                t.table.name(),
                self.parts.len()
            )));
        }
        let db = &self.shared.parts[i];
        Ok(self.parts[i].get_or_insert_with(|| db.begin()))
    }

    /// The value of `key` in `table` (see [`Transaction::get`]).
    pub fn get(&mut self, table: &PartitionedTable, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.part(table)?.get(&table.table, key)
    }

    /// As [`PartitionedTransaction::get`], locking the key for an update.
    pub fn get_for_update(
        &mut self,
        table: &PartitionedTable,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.part(table)?.get_for_update(&table.table, key)
    }

    /// Sets `key` to `value`; the old value (see [`Transaction::put`]).
    pub fn put(
        &mut self,
        table: &PartitionedTable,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.part(table)?.put(&table.table, key, value)
    }

    /// Deletes `key`; the old value (see [`Transaction::delete`]).
    pub fn delete(&mut self, table: &PartitionedTable, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.part(table)?.delete(&table.table, key)
    }

    /// An ordered scan of `range` in `table` (see [`Transaction::scan`]).
    pub fn scan(&mut self, table: &PartitionedTable, range: impl KeyRange) -> Result<Scan<'_>> {
        Ok(self.part(table)?.scan(&table.table, range))
    }

    /// The first error an operation of any part returned, if any.
    pub fn failure(&self) -> Option<&Error> {
        self.parts.iter().flatten().find_map(Transaction::failure)
    }

    /// Rolls back every part.
    pub fn rollback(mut self) -> Result<()> {
        self.rollback_all()
    }

    fn rollback_all(&mut self) -> Result<()> {
        let mut first = Ok(());
        for t in self.parts.iter_mut().filter_map(Option::take) {
            let r = t.rollback();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    /// Commits every part atomically and returns once the commit (and everything it
    /// read from) is durable in every log, or, under `async`, once it is decided.
    ///
    /// With parts logged outside partition 0, the coordinator's protocol runs: those
    /// logs durable past the parts' records (all requested at once, each log serving its
    /// waiters with one flush); then partition 0's commit record naming them, under the
    /// database's commit protocol; then, once it is durable, each part's own commit
    /// record and its locks released.
    pub fn commit(mut self) -> Result<()> {
        if let Some(cause) = self.failure().cloned() {
            let txn = self
                .parts
                .iter()
                .flatten()
                .find(|t| t.failure().is_some())
                .map(Transaction::id)
                .expect("a part failed");
            let rolled = self.rollback_all();
            let failed = Error::TransactionFailed {
                txn,
                cause: Box::new(cause),
            };
            return rolled.and(Err(failed));
        }
        let logged: Vec<usize> = (1..self.parts.len())
            .filter(|&i| self.parts[i].as_ref().is_some_and(Transaction::has_logged))
            .collect();
        if logged.is_empty() {
            return self.commit_local();
        }
        // 1. The participants' logs durable past their parts.
        let waits: Vec<(&Log, Lsn)> = logged
            .iter()
            .map(|&i| {
                let t = self.parts[i].as_ref().expect("logged");
                (self.shared.parts[i].log(), t.last_lsn().expect("logged"))
            })
            .collect();
        if let Err(e) = wait_all(&waits) {
            let rolled = self.rollback_all();
            return rolled.and(Err(e));
        }
        // 2. The coordinator's commit record, under the commit protocol.
        let participants: Vec<Participant> = logged
            .iter()
            .map(|&i| {
                let t = self.parts[i].as_ref().expect("logged");
                Participant {
                    partition: i as u16,
                    txn: t.id(),
                    last: t.last_record().expect("logged"),
                }
            })
            .collect();
        let coordinator = self.shared.coordinator.clone();
        let db0 = &self.shared.parts[0];
        let t0 = self.parts[0].take().unwrap_or_else(|| db0.begin());
        let bound = db0.log().durable_lsn();
        coordinator.enter(bound);
        let mut record = None;
        let r = t0.commit_coordinated(Some(participants), |r| record = r);
        match (r, record) {
            (Ok(()), Some((start, end))) => {
                coordinator.count_commit(true, end.0 - start.0);
                // 3. Once the coordinator's record is durable (at once, unless the
                // protocol is `async`): each part's own commit record, then its locks.
                // Not before: a part's record durable without the coordinator's would
                // commit the part alone.
                let shared = self.shared.clone();
                let parts: Vec<(usize, Transaction)> = logged
                    .into_iter()
                    .map(|i| (i, self.parts[i].take().expect("logged")))
                    .collect();
                db0.log().on_durable(
                    end,
                    Box::new(move |r| {
                        finish_parts(&shared, parts, r.map(drop).map_err(Error::from));
                        shared.coordinator.leave(bound);
                    }),
                );
                // Read-only parts elsewhere: their locks go now.
                self.commit_local_rest()
            }
            (Ok(()), None) => unreachable!("a coordinated commit always writes its record"),
            (Err(e), Some(_)) => {
                // The commit record may be durable or not: no part may be rolled back.
                // Every partition refuses work from now on; restart recovery decides.
                for d in &self.shared.parts {
                    d.inner.poison_with(&e);
                }
                coordinator.leave(bound);
                Err(e)
            }
            (Err(e), None) => {
                coordinator.leave(bound);
                self.rollback_all().and(Err(e))
            }
        }
    }

    /// Commit without the coordinator: nothing was logged outside partition 0.
    fn commit_local(&mut self) -> Result<()> {
        if let Some(t0) = self.parts[0].take() {
            let mut record = None;
            t0.commit_coordinated(None, |r| record = r)?;
            if let Some((start, end)) = record {
                self.shared.coordinator.count_commit(false, end.0 - start.0);
            }
        }
        self.commit_local_rest()
    }

    /// Commits the read-only parts outside partition 0 (nothing to log, nothing to wait
    /// for: their locks were never released early).
    fn commit_local_rest(&mut self) -> Result<()> {
        let mut first = Ok(());
        for t in self.parts.iter_mut().skip(1).filter_map(Option::take) {
            let r = t.commit();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// Step 3 of a coordinated commit, once the coordinator's record is durable (`decided`
/// is `Ok`): each part's own commit record, then its locks. If the coordinator's log
/// failed instead, the outcome is unknown: every partition is poisoned, so dropping the
/// parts rolls nothing back, and restart recovery decides.
fn finish_parts(shared: &Shared, parts: Vec<(usize, Transaction)>, decided: Result<()>) {
    if let Err(e) = decided {
        for d in &shared.parts {
            d.inner.poison_with(&e);
        }
        return;
    }
    for (i, mut t) in parts {
        match t.commit_record() {
            Ok(end) => {
                if let Some(end) = end {
                    shared.coordinator.appended[i].fetch_max(end.0, Ordering::AcqRel);
                }
                t.release_locks_decided();
                // The participant's log grew: its checkpointer decides whether that is
                // enough for a checkpoint (a notification; the work is on its thread).
                shared.parts[i].inner.maybe_checkpoint();
            }
            // The outcome is in the coordinator's durable log; recovery of this
            // partition (which has failed) will commit the part.
            Err(e) => shared.parts[i].inner.poison_with(&e),
        }
    }
}

/// Blocks until each log is durable up to its LSN; the requests go to all the logs
/// before the first wait, so their flushes overlap.
fn wait_all(waits: &[(&Log, Lsn)]) -> Result<()> {
    if let [(log, lsn)] = waits {
        log.wait_durable(*lsn)?;
        return Ok(());
    }
    struct Count {
        left: usize,
        error: Option<sluice_wal::WalError>,
    }
    let state = Arc::new((
        Mutex::new(Count {
            left: waits.len(),
            error: None,
        }),
        Condvar::new(),
    ));
    for &(log, lsn) in waits {
        let s = state.clone();
        log.on_durable(
            lsn,
            Box::new(move |r| {
                let mut c = s.0.lock();
                c.left -= 1;
                if let Err(e) = r {
                    c.error.get_or_insert(e);
                }
                if c.left == 0 {
                    s.1.notify_all();
                }
            }),
        );
    }
    let mut c = state.0.lock();
    while c.left > 0 {
        state.1.wait(&mut c);
    }
    match c.error.take() {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
