//! The commit sequencer: the steps of every commit protocol, written once.
//!
//! A commit is four steps, and the [`CommitProtocol`] decides only their order and who
//! waits:
//!
//! 1. **record** — the commit record goes into the log buffer (the transaction is now
//!    committed: recovery will redo it once the record is durable);
//! 2. **early release** (`elr`, `elr-pipelined`, `async`, and a transaction that chose
//!    [`Durability::Async`] under every protocol) — the locks are released now,
//!    before the record is durable; whoever takes them next inherits a dependency on this
//!    commit (`crate::lock`) and is not acknowledged before it is durable;
//! 3. **wait or detach** — the thread blocks until the log is durable up to the
//!    acknowledgement LSN (the commit's own end or a commit it depends on, whichever is
//!    later), or, under the pipelined protocols, hands that wait to the log's flush
//!    daemon and goes on with other work; `async` waits for nothing;
//! 4. **late release and deliver** — under the strict protocols the locks go only once
//!    durable (dropping the transaction releases them); then the result is handed out.
//!
//! [`Transaction::commit`](crate::Transaction::commit) runs the steps on the caller's
//! thread (a pipelined protocol without an agent to detach behaves as its blocking
//! counterpart); the agents (`agents.rs`) run them with detaching. A rolled-back transaction goes through step 3
//! too when what it returns may depend on commits not yet durable. And the read barrier
//! of direct transactions — an operation's value is held back until the commits it read
//! from are durable — is the same rule applied per operation.
//!
//! **A coordinated commit** over several logs (a partitioned database,
//! `crate::partitioned`) runs through the same sequencer, with a step of its own before
//! the four and one after them:
//!
//! * **before: harden the parts** ([`harden_parts`]) — every participant log durable
//!   past its part's records (all logs asked at once), under every protocol: the
//!   decision may not exist before the parts it commits are on disk;
//! * **steps 1 to 4** on partition 0's log, with the coordinator's record as the commit
//!   record: its acknowledgement stays one LSN (partition 0's; the parts are durable
//!   already), and early release applies to partition 0's locks only;
//! * **after: the decided parts** ([`Sequencer::on_durable`], then
//!   [`Sequencer::record_decided`] on each participant's log) — once the coordinator's
//!   record is durable, each part gets its own commit record and releases its locks at
//!   once, leaving no dependency: the decision is durable, so nobody who takes them next
//!   waits for that record, and nothing waits for it at all (the coordinator's
//!   bookkeeping, `partitioned/coordinator.rs`, keeps the decision in partition 0's log
//!   until it is durable).
//!
//! A part cannot go through [`Sequencer::record`] and [`Sequencer::wait`] instead without
//! changing what a commit waits for: under the strict protocols (`classic`, `pipelined`)
//! its locks would be held until its own record is durable, and the acknowledgement
//! would wait for that record too — one more flush of each participant log per commit,
//! which atomicity does not need (the decision is durable); under `elr` and
//! `elr-pipelined` its locks would leave that record's LSN behind, and the next
//! transaction on those keys would wait for that flush instead.

use crate::breakdown::flush_wait;
use crate::error::{Error, Result};
use crate::options::CommitProtocol;
use parking_lot::{Condvar, Mutex};
use sluice_wal::{Log, Lsn};
use std::sync::Arc;

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
    /// Releases every lock leaving no dependency behind: the commit is decided and
    /// durable elsewhere (a decided part of a coordinated commit).
    fn release_locks_decided(&mut self);
    /// The transaction's own choice of durability ([`Transaction::set_durability`](crate::Transaction::set_durability)).
    fn durability(&self) -> Durability;
}

/// How one transaction's commit is acknowledged: its own choice within the database's
/// [`CommitProtocol`] (as redb's `set_durability` and fjall's `PersistMode`), set with
/// [`Transaction::set_durability`](crate::Transaction::set_durability).
///
/// **What an [`Async`](Durability::Async) commit guarantees after a crash.** It is
/// atomic (all of its changes or none) and in commit order: the commits a crash keeps are
/// a prefix of the log, so a crash loses at most a suffix of the async commits not yet
/// flushed, never a part of one, never one that an acknowledged durable commit came after
/// in the same log, and never a durable commit. (A partitioned database has a log per
/// partition: an async commit through one partition's handle orders nothing with a
/// durable commit through another's.) It is lost only if the crash comes before the log is
/// flushed past its commit record (the next group commit, a durable commit after it, a
/// checkpoint or a clean close flush it). The guarantees of every other transaction are
/// unchanged: a durable transaction that reads or overwrites data an async commit wrote
/// is handed nothing, and acknowledged only, once that commit is durable (the
/// early-lock-release dependency, `crate::lock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Durability {
    /// As the database's commit protocol says (the default): under every protocol but
    /// [`CommitProtocol::Async`] the commit is acknowledged once it and every commit it
    /// read from are durable.
    #[default]
    Durable,
    /// Acknowledged as soon as the commit record is in the log's memory buffer, without
    /// waiting for the flush, and its locks are released at once (early, leaving its
    /// commit LSN to whoever takes them next). Its reads are not held back for commits
    /// not yet durable. A crash may lose it (see the type's docs); under
    /// [`CommitProtocol::Async`] every commit is this.
    Async,
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
        let durable = self.durable(tx);
        // An async commit releases early under every protocol: it waits for nothing, and
        // whoever takes its locks next inherits the dependency on its record.
        if self.protocol.early_release() || !durable {
            tx.release_locks();
        }
        let ack = tx.ack_lsn().filter(|_| durable);
        // The acknowledgement waits for the commit's own record at least.
        debug_assert!(
            ack.is_none() || ack >= record,
            "the acknowledgement LSN {ack:?} is below the commit record's end {record:?}"
        );
        Ok(Recorded { record, ack })
    }

    /// True if `tx`'s acknowledgement waits for durability: the protocol is durable and
    /// the transaction did not choose [`Durability::Async`].
    pub(crate) fn durable(&self, tx: &impl Steps) -> bool {
        self.protocol.durable() && tx.durability() == Durability::Durable
    }

    /// Steps 3 and 4 on this thread: blocks until `ack` is durable, then drops `tx` —
    /// which releases its locks if they are still held (the strict protocols).
    pub(crate) fn wait(&self, ack: Option<Lsn>, tx: Option<impl Steps>) -> Result<()> {
        let r = match ack {
            Some(lsn) => flush_wait(|| self.log.wait_durable(lsn))
                .map(drop)
                .map_err(Error::from),
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
        self.on_durable(ack, move |r| {
            drop(tx);
            then(r);
        });
    }

    /// Calls `then` once the log is durable up to `lsn` (or has failed): at once, on
    /// this thread, if it is durable already; otherwise on the log's flush daemon, where
    /// `then` must be short. Step 3 of a detached commit, and the start of the last step of
    /// a coordinated one (the decided parts, once the coordinator's record is durable).
    pub(crate) fn on_durable(&self, lsn: Lsn, then: impl FnOnce(Result<()>) + Send + 'static) {
        self.log.on_durable(
            lsn,
            Box::new(move |r| then(r.map(drop).map_err(Error::from))),
        );
    }

    /// The last step of a coordinated commit, on a participant's log (a decided part): the part's own commit
    /// record, then its locks released with no dependency left behind (the decision is
    /// durable in the coordinator's log; see the module docs). Returns the record's end,
    /// which nothing waits for. The part's earlier records are durable (hardened before
    /// the decision).
    pub(crate) fn record_decided(&self, tx: &mut impl Steps) -> Result<Option<Lsn>> {
        debug_assert!(
            tx.last_lsn().is_none_or(|l| l <= self.log.durable_lsn()),
            "a part is decided only once its records are durable"
        );
        let end = tx.commit_record()?;
        tx.release_locks_decided();
        Ok(end)
    }

    /// Rolls back `tx` for an agent, and returns the rollback's result with what its
    /// delivery must wait for: the log durable up to the transaction's own last record
    /// and every commit it read from (its values may come from data released early).
    /// Under the pipelined protocols what it logged is hardened first, before the
    /// rollback (Aether §4.2: rare, so the agent does it itself).
    pub(crate) fn rollback(&self, tx: impl Steps) -> (Result<()>, Option<Lsn>) {
        let own = tx.last_lsn();
        let durable = self.durable(&tx);
        let hardened = match own {
            Some(end) if self.protocol.pipelined() => flush_wait(|| self.log.wait_durable(end))
                .map(drop)
                .map_err(Error::from),
            _ => Ok(()),
        };
        let ack = own
            .max(tx.dependency())
            .filter(|&a| durable && a > self.log.durable_lsn());
        (hardened.and(tx.rollback()), ack)
    }

    /// The read barrier of a direct transaction: returns once the commit `dep` (the
    /// latest early-released commit whose data the transaction locked) is durable, so
    /// that no value handed out depends on a commit a crash could take away. Nothing to
    /// wait for when `durability` is [`Durability::Async`] or the protocol `async`.
    pub(crate) fn barrier(&self, dep: Option<Lsn>, durability: Durability) -> Result<()> {
        match dep {
            Some(d)
                if self.protocol.durable()
                    && durability == Durability::Durable
                    && d > self.log.durable_lsn() =>
            {
                flush_wait(|| self.log.wait_durable(d))?;
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// The first step of a coordinated commit: blocks until each log is durable up to its LSN (a
/// participant log past its part's last record). The requests go to all the logs before
/// the first wait, so their flushes overlap (each log's group commit serves every
/// transaction waiting on it with one flush).
pub(crate) fn harden_parts(waits: &[(&Log, Lsn)]) -> Result<()> {
    harden_all(waits)?;
    debug_assert!(
        waits.iter().all(|&(log, lsn)| log.durable_lsn() >= lsn),
        "every part is durable once hardened"
    );
    Ok(())
}

fn harden_all(waits: &[(&Log, Lsn)]) -> Result<()> {
    let _waiting = crate::breakdown::enter(crate::breakdown::Activity::LogFlushWait);
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
    // Every log's flush is under way (each registration asked for one); now drive
    // them: on the io_uring path a log's round is reaped by a thread that waits for it,
    // and this one has nothing else to do. The callbacks count the outcomes.
    for &(log, lsn) in waits {
        let _ = log.wait_durable(lsn);
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
