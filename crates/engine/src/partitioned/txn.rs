//! A transaction of a partitioned database, and the commit coordinator's protocol.

use super::coordinator::{Coordinator, Pin};
use super::{PartitionedTable, Shared};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::key_range::KeyRange;
use crate::log_record::Participant;
use crate::txn::{harden_parts, Scan, Sequencer, Transaction};
use parking_lot::Mutex;
use sluice_wal::{Log, Lsn};
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
    pub fn get(
        &mut self,
        table: &PartitionedTable,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.part(table)?.get(&table.table, key)
    }

    /// As [`PartitionedTransaction::get`], locking the key for an update.
    pub fn get_for_update(
        &mut self,
        table: &PartitionedTable,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.part(table)?.get_for_update(&table.table, key)
    }

    /// Sets `key` to `value`; the old value (see [`Transaction::put`]).
    pub fn put(
        &mut self,
        table: &PartitionedTable,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.part(table)?.put(&table.table, key, value)
    }

    /// Deletes `key`; the old value (see [`Transaction::delete`]).
    pub fn delete(
        &mut self,
        table: &PartitionedTable,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.part(table)?.delete(&table.table, key)
    }

    /// An ordered scan of `range` in `table` (see [`Transaction::scan`]).
    pub fn scan(&mut self, table: &PartitionedTable, range: impl KeyRange) -> Result<Scan<'_>> {
        Ok(self.part(table)?.scan(&table.table, range))
    }

    /// The entry with the smallest key of `table` (see [`Transaction::first`]).
    pub fn first(&mut self, table: &PartitionedTable) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.part(table)?.first(&table.table)
    }

    /// The entry with the largest key of `table` (see [`Transaction::last`]).
    pub fn last(&mut self, table: &PartitionedTable) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.part(table)?.last(&table.table)
    }

    /// The number of entries in `table` (see [`Transaction::len`]).
    pub fn len(&mut self, table: &PartitionedTable) -> Result<u64> {
        self.part(table)?.len(&table.table)
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
    /// waiters with one flush); every partition of the transaction still taking work;
    /// then partition 0's commit record naming the parts, under the database's commit
    /// protocol; then, once it is durable, each part's own commit record and its locks
    /// released.
    ///
    /// An error means the commit is not acknowledged. Mostly it was rolled back; but if a
    /// participant fails after partition 0's record is written (it cannot write its own),
    /// or partition 0's log fails with the record in it, the outcome is decided by
    /// restart recovery: the failed partitions refuse work until the database is reopened,
    /// and recovery commits the part if the record is durable. Under `async` a failure
    /// after the decision is not reported: the commit was acknowledged at its decision.
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
            let r = self.commit_local();
            debug_assert!(
                r.is_err() || self.all_ended(),
                "a local commit ends every part"
            );
            return r;
        }
        let coordinator = self.shared.coordinator.clone();
        let db0 = &self.shared.parts[0];
        // The pin first, below where the commit record will go: from the moment the
        // record exists, no checkpoint truncates it before its parts are decided.
        let pin = match coordinator.pin(db0.log().durable_lsn()) {
            Ok(pin) => pin,
            Err(e) => return self.roll_back_for(e),
        };
        // 1. The participants' logs durable past their parts (the sequencer's step before
        // the decision).
        let waits: Vec<(&Log, Lsn)> = logged
            .iter()
            .map(|&i| {
                let t = self.parts[i].as_ref().expect("logged");
                (self.shared.parts[i].log(), t.last_lsn().expect("logged"))
            })
            .collect();
        // The vote: a part whose partition no longer takes work (its data file failed,
        // say, while its log is healthy) could not write its commit record; deciding
        // without it would acknowledge a commit that partition never finishes.
        if let Err(e) = harden_parts(&waits).and_then(|()| self.vote()) {
            pin.release();
            return self.roll_back_for(e);
        }
        // 2. The coordinator's commit record, under the commit protocol (the sequencer's
        // four steps on partition 0's log).
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
        let t0 = self.parts[0].take().unwrap_or_else(|| db0.begin());
        let mut record = None;
        let r = t0.commit_coordinated(Some(participants), |r| record = r);
        match (r, record) {
            (Ok(()), Some((start, end))) => {
                assert!(start < end, "a commit record ends after it starts");
                coordinator.count_commit(true, end.0 - start.0);
                pin.raise(start);
                // 3. Once the coordinator's record is durable (at once, unless the
                // protocol is `async`): each part's own commit record, then its locks.
                // Not before: a part's record durable without the coordinator's would
                // commit the part alone.
                //
                // The callback holds the participants and the coordinator, never the
                // database's shared state or partition 0: under `async` it may run on
                // partition 0's flush daemon after the last handle is gone, and dropping
                // partition 0 there would close it on the thread its close waits for.
                let coordinator = coordinator.clone();
                let parts: Vec<Part> = logged
                    .into_iter()
                    .map(|i| Part {
                        partition: i,
                        db: self.shared.parts[i].clone(),
                        txn: self.parts[i].take().expect("logged"),
                    })
                    .collect();
                let finished = Arc::new(Mutex::new(None));
                let f = finished.clone();
                Sequencer::new(db0.log(), db0.options().commit).on_durable(end, move |r| {
                    *f.lock() = Some(finish_parts(&coordinator, parts, r, pin));
                });
                // Under a durable protocol the record is durable: the parts are finished.
                let finished = finished.lock().take();
                debug_assert!(
                    finished.is_some() || !db0.options().commit.durable(),
                    "a durable commit's record is durable when it returns"
                );
                // Read-only parts elsewhere: their locks go now.
                self.finish_read_only();
                debug_assert!(self.all_ended(), "a coordinated commit ends every part");
                finished.unwrap_or(Ok(()))
            }
            (Ok(()), None) => unreachable!("a coordinated commit always writes its record"),
            (Err(e), Some(_)) => {
                // The commit record may be durable or not: no part may be rolled back.
                // Every partition refuses work from now on; restart recovery decides.
                coordinator.poison_all(&e);
                pin.stick();
                Err(e)
            }
            (Err(e), None) => {
                pin.release();
                self.roll_back_for(e)
            }
        }
    }

    /// Rolls back every part of a commit that cannot go on, and returns why it cannot: a
    /// part's rollback that fails too (its partition failed) says less than the cause, and
    /// its partition reports its own failure from now on.
    fn roll_back_for(&mut self, cause: Error) -> Result<()> {
        let _ = self.rollback_all();
        Err(cause)
    }

    /// Commit without the coordinator: nothing was logged outside partition 0.
    fn commit_local(&mut self) -> Result<()> {
        if let Err(e) = self.vote() {
            return self.roll_back_for(e);
        }
        if let Some(t0) = self.parts[0].take() {
            let mut record = None;
            t0.commit_coordinated(None, |r| record = r)?;
            if let Some((start, end)) = record {
                self.shared.coordinator.count_commit(false, end.0 - start.0);
            }
        }
        self.finish_read_only();
        Ok(())
    }

    /// True once every part has ended (committed, rolled back, or handed to the decision).
    fn all_ended(&self) -> bool {
        self.parts.iter().all(Option::is_none)
    }

    /// Every partition the transaction has a part in outside partition 0 still takes work
    /// (partition 0's own commit checks its own). The error names the partition.
    fn vote(&self) -> Result<()> {
        for (i, t) in self.parts.iter().enumerate().skip(1) {
            if t.is_some() {
                self.shared.parts[i].health().map_err(|e| match e {
                    Error::Poisoned(why) => Error::Poisoned(format!("partition {i}: {why}")),
                    e => e,
                })?;
            }
        }
        Ok(())
    }

    /// Ends the parts outside partition 0 that logged nothing, once the outcome is decided:
    /// nothing to log or wait for (their locks were never released early), only their
    /// locks to release. A failure here (the partition failed since the vote) changes no
    /// outcome and is not the commit's: dropping the part releases its locks all the same.
    fn finish_read_only(&mut self) {
        for t in self.parts.iter_mut().skip(1).filter_map(Option::take) {
            debug_assert!(!t.has_logged(), "only read-only parts are left");
            let _ = t.commit();
        }
    }
}

/// A part of a coordinated commit outside partition 0, waiting for the decision.
struct Part {
    partition: usize,
    db: Database,
    txn: Transaction,
}

/// Step 3 of a coordinated commit, once the coordinator's record is durable (`decided`
/// is `Ok`): each part's own commit record, then its locks (the sequencer's
/// [`record_decided`](Sequencer::record_decided)); the pin then holds partition
/// 0's log until those records are durable. If the coordinator's log failed instead, the
/// outcome is unknown: every partition is poisoned, so dropping the parts rolls nothing
/// back, and restart recovery decides. If a part cannot write its record, its partition
/// is poisoned the same way and the pin sticks: the coordinator's record stays, and
/// recovery of that partition commits the part from it. The error is the commit's.
fn finish_parts(
    coordinator: &Coordinator,
    parts: Vec<Part>,
    decided: Result<()>,
    pin: Pin,
) -> Result<()> {
    if let Err(e) = decided {
        coordinator.poison_all(&e);
        pin.stick();
        return Err(e);
    }
    debug_assert!(
        !parts.is_empty(),
        "a coordinated commit has parts outside partition 0"
    );
    let mut ends = Vec::with_capacity(parts.len());
    let mut failed = None;
    for Part {
        partition: i,
        db,
        mut txn,
    } in parts
    {
        debug_assert!(i > 0, "partition 0 is the coordinator, never a part");
        match Sequencer::new(db.log(), db.options().commit).record_decided(&mut txn) {
            Ok(end) => {
                // A part that logged writes a record: the pin must wait for every one.
                debug_assert!(end.is_some(), "partition {i}'s part logged nothing");
                ends.extend(end.map(|end| (i, end)));
                // The participant's log grew: its checkpointer decides whether that is
                // enough for a checkpoint (a notification; the work is on its thread).
                db.inner.maybe_checkpoint();
            }
            Err(e) => {
                let e = Error::Poisoned(format!(
                    "partition {i} cannot write its commit record ({e}); the commit is decided in partition 0's log, and reopening the database completes it"
                ));
                // Poisoned before the part is dropped: the drop's rollback must find the
                // partition refusing work, or it would undo a committed part.
                db.inner.health.poison(&e);
                drop(txn);
                failed.get_or_insert(e);
            }
        }
    }
    match failed {
        None => {
            pin.appended(ends);
            Ok(())
        }
        Some(e) => {
            pin.stick();
            Err(e)
        }
    }
}
