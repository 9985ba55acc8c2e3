//! The commit sequencer: the steps of every commit protocol, written once.
//!
//! A commit is four steps, and the [`CommitProtocol`] decides only their order and who
//! waits:
//!
//! 1. **record** — the commit record goes into the log buffer (the transaction is now
//!    committed: recovery will redo it once the record is durable);
//! 2. **early release** (`elr`, `elr-pipelined`, `async`) — the locks are released now,
//!    before the record is durable; whoever takes them next inherits a dependency on this
//!    commit (`lock.rs`) and is not acknowledged before it is durable;
//! 3. **wait or detach** — the thread blocks until the log is durable up to the
//!    acknowledgement LSN (the commit's own end or a commit it depends on, whichever is
//!    later), or, under the pipelined protocols, hands that wait to the log's flush
//!    daemon and goes on with other work; `async` waits for nothing;
//! 4. **late release and deliver** — under the strict protocols the locks go only once
//!    durable (dropping the transaction releases them); then the result is handed out.
//!
//! [`Transaction::commit`](crate::Transaction::commit) runs the steps on the caller's thread (a pipelined protocol
//! without an agent to detach behaves as its blocking counterpart); the agents
//! (`agents.rs`) run them with detaching. A rolled-back transaction goes through step 3
//! too when what it returns may depend on commits not yet durable. And the read barrier
//! of direct transactions — an operation's value is held back until the commits it read
//! from are durable — is the same rule applied per operation. A coordinated commit over
//! several logs (the partitioned log) plugs in here: its acknowledgement is then a vector
//! of LSNs.

use crate::error::{Error, Result};
use crate::options::CommitProtocol;
use sluice_wal::{Log, Lsn};

/// The steps a transaction offers the sequencer (implemented by
/// [`Transaction`](crate::Transaction); kept as a trait so that the sequencer depends on
/// what it sequences, not on the transaction's internals).
pub(crate) trait Steps: Send + 'static {
    /// Appends the commit record; returns its end (`None`: nothing was logged). After
    /// this the transaction is committed and takes no more operations.
    fn commit_record(&mut self) -> Result<Option<Lsn>>;
    /// Releases every lock (early: each exposing lock leaves the commit LSN behind).
    fn release_locks(&mut self);
    /// The LSN to be durable before acknowledging the commit (its own, or a later commit
    /// it depends on).
    fn ack_lsn(&self) -> Option<Lsn>;
    /// The end of the transaction's last log record.
    fn last_lsn(&self) -> Option<Lsn>;
    /// The latest early-released commit whose data the transaction locked.
    fn dependency(&self) -> Option<Lsn>;
    /// Rolls back every change and releases the locks.
    fn rollback(self) -> Result<()>;
}

/// Runs the commit steps of one protocol over one log.
pub(crate) struct Sequencer<'a> {
    log: &'a Log,
    protocol: CommitProtocol,
}

/// What steps 1 and 2 leave for step 3.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recorded {
    /// The end of the commit record (`None`: the transaction logged nothing).
    pub(crate) record: Option<Lsn>,
    /// The LSN the log must be durable up to before the commit is acknowledged (`None`:
    /// acknowledge at once — nothing to wait for, or `async`).
    pub(crate) ack: Option<Lsn>,
}

impl<'a> Sequencer<'a> {
    pub(crate) fn new(log: &'a Log, protocol: CommitProtocol) -> Sequencer<'a> {
        Sequencer { log, protocol }
    }

    /// Steps 1 and 2: the commit record, and the lock release if the protocol releases
    /// early. A failed transaction is refused ([`Error::TransactionFailed`]); the caller
    /// rolls it back.
    pub(crate) fn record(&self, tx: &mut impl Steps) -> Result<Recorded> {
        let record = tx.commit_record()?;
        if self.protocol.early_release() {
            tx.release_locks();
        }
        Ok(Recorded {
            record,
            ack: tx.ack_lsn().filter(|_| self.protocol.durable()),
        })
    }

    /// Steps 3 and 4 on this thread: blocks until `ack` is durable, then drops `tx` —
    /// which releases its locks if they are still held (the strict protocols).
    pub(crate) fn wait(&self, ack: Option<Lsn>, tx: Option<impl Steps>) -> Result<()> {
        let r = match ack {
            Some(lsn) => self.log.wait_durable(lsn).map(drop).map_err(Error::from),
            None => Ok(()),
        };
        drop(tx);
        r
    }

    /// True if step 3 detaches under this protocol (and there is something to wait for).
    pub(crate) fn detaches(&self, ack: Option<Lsn>) -> bool {
        ack.is_some() && self.protocol.pipelined()
    }

    /// Steps 3 and 4, detached: returns at once; once `ack` is durable the log's flush
    /// daemon drops `tx` (releasing its locks there: if every agent were waiting for a
    /// lock a detached transaction holds, no agent would be free to release them) and
    /// calls `then`, which must be short (it should only queue the delivery).
    pub(crate) fn detach(
        &self,
        ack: Lsn,
        tx: Option<impl Steps>,
        then: impl FnOnce(Result<()>) + Send + 'static,
    ) {
        self.log.on_durable(
            ack,
            Box::new(move |r| {
                drop(tx);
                then(r.map(drop).map_err(Error::from));
            }),
        );
    }

    /// Rolls back `tx` for an agent, and returns the rollback's result with what its
    /// delivery must wait for: the log durable up to the transaction's own last record
    /// and every commit it read from (its values may come from data released early).
    /// Under the pipelined protocols what it logged is hardened first, before the
    /// rollback (Aether §4.2: rare, so the agent does it itself).
    pub(crate) fn rollback(&self, tx: impl Steps) -> (Result<()>, Option<Lsn>) {
        let own = tx.last_lsn();
        let hardened = match own {
            Some(end) if self.protocol.pipelined() => {
                self.log.wait_durable(end).map(drop).map_err(Error::from)
            }
            _ => Ok(()),
        };
        let ack = own
            .max(tx.dependency())
            .filter(|&a| self.protocol.durable() && a > self.log.durable_lsn());
        (hardened.and(tx.rollback()), ack)
    }

    /// The read barrier of a direct transaction: returns once the commit `dep` (the
    /// latest early-released commit whose data the transaction locked) is durable, so
    /// that no value handed out depends on a commit a crash could take away.
    pub(crate) fn barrier(&self, dep: Option<Lsn>) -> Result<()> {
        match dep {
            Some(d) if self.protocol.durable() && d > self.log.durable_lsn() => {
                self.log.wait_durable(d)?;
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
