//! Agents: a pool of worker threads that run transaction requests, and flush pipelining.
//!
//! Clients submit a transaction as a closure plus a completion; an agent thread runs it
//! and commits it by the database's [`CommitProtocol`]:
//!
//! | protocol | after the commit record | the agent | acknowledged when |
//! |---|---|---|---|
//! | `classic` | waits for durable, then releases locks | blocks on the log | durable |
//! | `elr` | releases locks, waits for durable | blocks on the log | durable |
//! | `pipelined` | detaches: registers with the log daemon, runs other work | never blocks | hardened: the daemon releases its locks and hands it back; an agent delivers |
//! | `elr-pipelined` | releases locks, detaches | never blocks | hardened (handed back) |
//! | `async` | releases locks | never blocks | at once (unsafe) |
//!
//! Under the pipelined protocols only the log daemon waits for the disk; agents pick up
//! hardened transactions before new requests so finished work leaves the system first.
//! A transaction that aborts after writing log records is hardened by its own agent
//! before it rolls back (Aether §4.2 — rare, so it is not worth handing to the daemon).
//!
//! "Acknowledged" here includes dependencies: a transaction that locked data released
//! early by a commit not yet durable waits for that commit too ([`Transaction::ack_lsn`]),
//! which matters for read-only transactions (an updater's own commit record is later in
//! the log than its predecessor's anyway).

use crate::db::Database;
use crate::error::{Error, Result};
use crate::ids::TxnId;
use crate::options::CommitProtocol;
use crate::txn::Transaction;
use parking_lot::{Condvar, Mutex};
use sluice_wal::Lsn;
use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;

/// What a transaction body decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<R> {
    /// Commit, then deliver the value.
    Commit(R),
    /// Roll back, then deliver the value (for "not found" and similar outcomes that are
    /// not errors).
    Rollback(R),
}

/// A finished transaction's value and whether it committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished<R> {
    /// What the body returned.
    pub value: R,
    /// True if it committed (and, unless the protocol is `async`, is durable).
    pub committed: bool,
}

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queues {
    /// Transactions handed back hardened, to finish.
    hardened: VecDeque<Job>,
    /// New requests.
    requests: VecDeque<Job>,
    stopping: bool,
    /// Agents parked waiting for work.
    idle: usize,
}

/// Counters of an agent pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentStats {
    /// Requests run.
    pub executed: u64,
    /// Transactions committed.
    pub committed: u64,
    /// Transactions rolled back (by request or on error).
    pub rolled_back: u64,
    /// Commits detached and handed back by the log daemon (flush pipelining).
    pub pipelined: u64,
    /// Times an agent parked for lack of work.
    pub parks: u64,
}

/// Called with each transaction's id and commit LSN right after its commit record is in
/// the log buffer (before it is durable or acknowledged). `None`: read-only.
pub type CommitHook = Arc<dyn Fn(TxnId, Option<Lsn>) + Send + Sync>;

/// How an agent pool is started.
#[derive(Clone, Default)]
pub struct AgentOptions {
    /// Agent threads (at least one).
    pub agents: usize,
    /// Observes every commit record (for auditing, replication, or crash tests that must
    /// know what might have committed).
    pub on_commit_record: Option<CommitHook>,
    /// The commit protocol; `None`: the database's ([`crate::Options::commit`]). Pools
    /// with different protocols may run over one database one after another (as the
    /// benchmarks do), not at the same time.
    pub protocol: Option<CommitProtocol>,
}

struct Shared {
    db: Database,
    protocol: CommitProtocol,
    hook: Option<CommitHook>,
    q: Mutex<Queues>,
    cv: Condvar,
    executed: AtomicU64,
    committed: AtomicU64,
    rolled_back: AtomicU64,
    pipelined: AtomicU64,
    parks: AtomicU64,
    /// Detached commits not yet handed back and finished.
    in_flight: AtomicU64,
}

thread_local! {
    /// The pool this thread is an agent of (its address), so a submission from inside a
    /// completion need not wake another agent: this one takes it next.
    static AGENT_OF: Cell<usize> = const { Cell::new(0) };
}

impl Shared {
    fn id(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }

    fn push(self: &Arc<Self>, job: Job, hardened: bool) {
        let mut q = self.q.lock();
        if hardened {
            q.hardened.push_back(job);
        } else {
            q.requests.push_back(job);
        }
        // An agent submitting from its own completion will look at the queue next; waking
        // another agent would only cost a context switch.
        let on_agent = AGENT_OF.with(|a| a.get()) == self.id();
        if q.idle > 0 && (hardened || !on_agent) {
            drop(q);
            self.cv.notify_one();
        }
    }

    fn run_agent(self: Arc<Self>) {
        AGENT_OF.with(|a| a.set(self.id()));
        loop {
            let job = {
                let mut q = self.q.lock();
                loop {
                    if let Some(j) = q.hardened.pop_front() {
                        break Some(j);
                    }
                    if let Some(j) = q.requests.pop_front() {
                        break Some(j);
                    }
                    if q.stopping {
                        break None;
                    }
                    q.idle += 1;
                    self.parks.fetch_add(1, Ordering::Relaxed);
                    self.cv.wait(&mut q);
                    q.idle -= 1;
                }
            };
            match job {
                Some(j) => j(),
                None => return,
            }
        }
    }

    /// Runs one request on this agent thread.
    fn execute<R: Send + 'static>(
        self: &Arc<Self>,
        body: impl FnOnce(&mut Transaction) -> Result<Outcome<R>>,
        done: impl FnOnce(Result<Finished<R>>) + Send + 'static,
    ) {
        self.executed.fetch_add(1, Ordering::Relaxed);
        let mut tx = self.db.begin();
        let outcome = body(&mut tx);
        let value = match outcome {
            Ok(Outcome::Commit(v)) => v,
            Ok(Outcome::Rollback(v)) => return self.abort(tx, Ok(v), done),
            Err(e) => return self.abort(tx, Err(e), done),
        };
        let commit = match tx.commit_record() {
            Ok(c) => c,
            Err(e) => return self.abort(tx, Err(e), done),
        };
        if let Some(h) = &self.hook {
            h(tx.id(), commit);
        }
        self.committed.fetch_add(1, Ordering::Relaxed);
        // Checkpoints are triggered by log volume from the commit path.
        self.db.inner.maybe_checkpoint();
        let p = self.protocol;
        let log = self.db.inner.log.clone();
        let ok = move |value| {
            Ok(Finished {
                value,
                committed: true,
            })
        };
        if p.early_release() {
            tx.release_locks();
        }
        let Some(ack) = tx.ack_lsn().filter(|_| p.durable()) else {
            // Nothing to wait for: read-only on durable data, or async.
            drop(tx);
            return done(ok(value));
        };
        if !p.pipelined() {
            let r = log.wait_durable(ack);
            drop(tx); // releases the locks if still held (classic)
            return done(r.map_err(Error::from).and_then(|_| ok(value)));
        }
        // Flush pipelining: detach. The daemon calls back once `ack` is durable; the
        // callback only queues the finishing step for an agent (the daemon must not do
        // transaction work itself).
        self.pipelined.fetch_add(1, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let me = self.clone();
        log.on_durable(
            ack,
            Box::new(move |r| {
                // Release the locks here, on the daemon, rather than in the agent that
                // finishes the transaction: if every agent is waiting for a lock that a
                // detached transaction holds, no agent is free to run the hand-back, and
                // the pool stalls until lock timeouts (measured: TPC-B `pipelined` at
                // 1 tps with 2 agents). Releasing is a few hash-map operations.
                drop(tx);
                let me2 = me.clone();
                let finish: Job = Box::new(move || {
                    done(r.map_err(Error::from).and_then(|_| ok(value)));
                    me2.in_flight.fetch_sub(1, Ordering::SeqCst);
                });
                me.push(finish, true);
            }),
        );
    }

    fn abort<R>(&self, tx: Transaction, result: Result<R>, done: impl FnOnce(Result<Finished<R>>)) {
        self.rolled_back.fetch_add(1, Ordering::Relaxed);
        // Harden what the transaction logged before rolling it back (Aether §4.2).
        let hardened = match tx.last_lsn() {
            Some(end) if self.protocol.pipelined() => self
                .db
                .inner
                .log
                .wait_durable(end)
                .map(drop)
                .map_err(Error::from),
            _ => Ok(()),
        };
        let rolled = tx.rollback();
        let r = hardened.and(rolled).and(result).map(|value| Finished {
            value,
            committed: false,
        });
        done(r);
    }
}

/// A pool of agent threads running transactions by the database's commit protocol.
///
/// ```
/// use std::sync::Arc;
/// use sluice::{Agents, Database, Options, Outcome};
/// use sluice_storage::SimStorage;
///
/// let db = Database::open(Arc::new(SimStorage::new(3)), "/db", Options::default())?;
/// let t = db.create_table("t")?;
/// let agents = Agents::start(&db, 2);
/// let c = agents.execute(move |tx| {
///     tx.put(&t, b"k", b"v")?;
///     Ok(Outcome::Commit(7))
/// });
/// let done = c.wait()?;                 // durable when this returns
/// assert_eq!((done.value, done.committed), (7, true));
/// agents.shutdown();
/// # Ok::<(), sluice::Error>(())
/// ```
pub struct Agents {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Agents {
    /// Starts `agents` threads (at least one) over `db`, using its commit protocol.
    pub fn start(db: &Database, agents: usize) -> Agents {
        Agents::start_with(
            db,
            AgentOptions {
                agents,
                ..AgentOptions::default()
            },
        )
    }

    /// Starts a pool as `options` say.
    pub fn start_with(db: &Database, options: AgentOptions) -> Agents {
        let agents = options.agents;
        let shared = Arc::new(Shared {
            hook: options.on_commit_record,
            protocol: options.protocol.unwrap_or(db.inner.options.commit),
            db: db.clone(),
            q: Mutex::new(Queues::default()),
            cv: Condvar::new(),
            executed: AtomicU64::new(0),
            committed: AtomicU64::new(0),
            rolled_back: AtomicU64::new(0),
            pipelined: AtomicU64::new(0),
            parks: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
        });
        let threads = (0..agents.max(1))
            .map(|i| {
                let s = shared.clone();
                std::thread::Builder::new()
                    .name(format!("sluice-agent-{i}"))
                    .spawn(move || s.run_agent())
                    .expect("spawning an agent thread")
            })
            .collect();
        Agents { shared, threads }
    }

    /// The commit protocol the agents use.
    pub fn protocol(&self) -> CommitProtocol {
        self.shared.protocol
    }

    /// Submits a transaction: `body` runs on an agent inside a fresh transaction and
    /// decides its outcome; `done` receives the result once it is acknowledged (see the
    /// module docs for when that is). `done` runs on an agent thread — it may submit the
    /// client's next request, which that same agent then picks up without a context
    /// switch. An error from `body` rolls the transaction back and is delivered to `done`.
    pub fn submit<R, B, D>(&self, body: B, done: D)
    where
        R: Send + 'static,
        B: FnOnce(&mut Transaction) -> Result<Outcome<R>> + Send + 'static,
        D: FnOnce(Result<Finished<R>>) + Send + 'static,
    {
        self.submitter().submit(body, done)
    }

    /// A cheap handle that can submit from anywhere (for example from inside a
    /// completion), without owning the pool.
    pub fn submitter(&self) -> Submitter {
        Submitter {
            shared: self.shared.clone(),
        }
    }

    /// Submits `body` and returns a completion to wait on (blocking or as a future).
    pub fn execute<R, B>(&self, body: B) -> Completion<R>
    where
        R: Send + 'static,
        B: FnOnce(&mut Transaction) -> Result<Outcome<R>> + Send + 'static,
    {
        let (c, done) = Completion::new();
        self.submit(body, done);
        c
    }

    /// The counters.
    pub fn stats(&self) -> AgentStats {
        let s = &self.shared;
        AgentStats {
            executed: s.executed.load(Ordering::Relaxed),
            committed: s.committed.load(Ordering::Relaxed),
            rolled_back: s.rolled_back.load(Ordering::Relaxed),
            pipelined: s.pipelined.load(Ordering::Relaxed),
            parks: s.parks.load(Ordering::Relaxed),
        }
    }

    /// Requests waiting for an agent.
    pub fn queued(&self) -> usize {
        self.shared.q.lock().requests.len()
    }

    /// Lets the agents finish every queued request and hardened transaction, then stops
    /// them. Pipelined commits still in flight are delivered as the log hardens them (or
    /// fails them when the database closes).
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        // Detached commits come back through the agents: keep them running until every
        // one is delivered (a failed log fails them promptly, so this ends).
        while self.shared.in_flight.load(Ordering::SeqCst) > 0 && !self.threads.is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.shared.q.lock().stopping = true;
        self.shared.cv.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Hardened transactions the daemon queued after the agents left: finish them here.
        loop {
            let job = self.shared.q.lock().hardened.pop_front();
            match job {
                Some(j) => j(),
                None => break,
            }
        }
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Submits transactions to an agent pool; cloneable and sendable.
#[derive(Clone)]
pub struct Submitter {
    shared: Arc<Shared>,
}

impl Submitter {
    /// As [`Agents::submit`].
    pub fn submit<R, B, D>(&self, body: B, done: D)
    where
        R: Send + 'static,
        B: FnOnce(&mut Transaction) -> Result<Outcome<R>> + Send + 'static,
        D: FnOnce(Result<Finished<R>>) + Send + 'static,
    {
        let s = self.shared.clone();
        let job: Job = Box::new(move || s.execute(body, done));
        self.shared.push(job, false);
    }
}

struct CompletionState<R> {
    result: Option<Result<Finished<R>>>,
    waker: Option<Waker>,
}

/// The result of a submitted transaction: [`Completion::wait`] blocks for it, or `.await`
/// it.
pub struct Completion<R> {
    state: Arc<(Mutex<CompletionState<R>>, Condvar)>,
}

impl<R: Send + 'static> Completion<R> {
    fn new() -> (
        Completion<R>,
        impl FnOnce(Result<Finished<R>>) + Send + 'static,
    ) {
        let state = Arc::new((
            Mutex::new(CompletionState {
                result: None,
                waker: None,
            }),
            Condvar::new(),
        ));
        let s2 = state.clone();
        let done = move |r| {
            let waker = {
                let mut g = s2.0.lock();
                g.result = Some(r);
                g.waker.take()
            };
            s2.1.notify_all();
            if let Some(w) = waker {
                w.wake();
            }
        };
        (Completion { state }, done)
    }

    /// Blocks until the transaction is acknowledged (or failed).
    pub fn wait(self) -> Result<Finished<R>> {
        let mut g = self.state.0.lock();
        loop {
            if let Some(r) = g.result.take() {
                return r;
            }
            self.state.1.wait(&mut g);
        }
    }
}

impl<R> Future for Completion<R> {
    type Output = Result<Finished<R>>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut g = self.state.0.lock();
        match g.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                g.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
