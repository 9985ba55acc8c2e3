//! Commit: the steps a transaction offers the commit sequencer (`commit.rs`) — its commit
//! record, its lock release (early or late), what its acknowledgement waits for — and
//! [`Transaction::commit`], which runs them in the protocol's order.

use super::commit::{Durability, Sequencer, Steps};
use super::transaction::{State, Transaction};
use crate::breakdown::{enter, Activity};
use crate::error::{Error, Result};
use crate::lock::{LockKey, LockName, TableLock};
use crate::log_record::{Participant, Record};
use sluice_wal::Lsn;
use std::time::Instant;

impl Transaction {
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
                    at: self.db.store.commit_clock.stamp(),
                    participants,
                })?;
            Some(a.end)
        } else if self.shared.chain().last.is_some() {
            let a = self
                .shared
                .append(&self.db.store.log, |prev| Record::Commit {
                    txn,
                    prev,
                    at: self.db.store.commit_clock.stamp(),
                })?;
            Some(a.end)
        } else {
            None
        };
        self.db.txns.end(self.shared.id);
        self.state = State::Committed;
        self.undo.clear();
        self.commit_end = end;
        self.finish_drops();
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
        let early = match self.state {
            State::Committed => self.commit_end,
            _ => {
                // Under the drop lock the create holds: a use waiting for it finds the
                // table gone, as after a drop.
                for t in self.tables.iter().filter(|t| t.created) {
                    t.latch.mark_abandoned();
                }
                None
            }
        };
        self.release_all(early);
    }

    /// Releases every lock: the table locks taken on the fast path (in their stripe,
    /// or in the lock table if a strong request moved them), those in the lock table
    /// (`held`), then the strong table requests begun (`lock/fast.rs`), which let weak
    /// requests back on the fast path only once their locks are gone. A name of the lock
    /// table is released once, however many holds reach it: two tables' holds share
    /// their names when a dropped table's handle meets the table now on its root page
    /// (holds are per latch, names per root).
    fn release_all(&mut self, early: Option<Lsn>) {
        let _lock = enter(Activity::Lock);
        let txn = self.shared.id;
        let mut held = std::mem::take(&mut self.held);
        let durable = self.db.store.log.durable_lsn();
        let own = TableLock::own_stripe(txn);
        let tables = std::mem::take(&mut self.tables);
        for t in tables.iter().filter(|t| t.fast) {
            if !t.latch.table_locks.release(txn, own, early, durable) {
                let moved = LockKey {
                    table: t.root,
                    name: LockName::Table(own),
                };
                if !held.contains(&moved) {
                    held.push(moved);
                }
            }
        }
        self.db.locks.release(txn, &held, early, durable);
        for t in tables.iter().filter(|t| t.strong) {
            t.latch.table_locks.end_strong(t.modes, early);
        }
    }

    /// Releases the locks of a transaction whose commit is already decided and durable
    /// elsewhere — a participant of a partitioned database, once the coordinator's commit
    /// record is durable: nobody who takes them next depends on this log's own commit
    /// record, which may still be in its buffer.
    pub(crate) fn release_locks_decided(&mut self) {
        debug_assert_eq!(
            self.state,
            State::Committed,
            "only a part whose commit record is written releases as decided"
        );
        self.release_all(None);
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
    /// depends on, is durable (at once under `Async`, or for a transaction that chose
    /// [`Durability::Async`](crate::Durability::Async): see [`Transaction::set_durability`]). Without an agent to detach from,
    /// the pipelined protocols behave as their blocking counterparts; see
    /// [`crate::experiment::Agents`] for flush pipelining. A failed transaction (see the type's
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
        let started = Instant::now();
        let db = self.db.clone();
        let seq = Sequencer::new(&db.store.log, db.options.commit);
        let recorded = seq.record(&mut self)?;
        observe(recorded.record);
        db.maybe_checkpoint();
        // Direct transactions have no agent to detach from: they wait.
        let r = seq.wait(recorded.ack, Some(self));
        if r.is_ok() {
            db.metrics.commits.record(started.elapsed());
        }
        r
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
    fn release_locks_decided(&mut self) {
        Transaction::release_locks_decided(self)
    }
    fn durability(&self) -> Durability {
        self.durability
    }
}
