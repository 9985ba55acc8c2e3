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
//! **Delivery.** Nothing an agent hands to a client — a commit, a rollback's value, an
//! error — is delivered before the log is durable up to the transaction's own last
//! record and every commit it depends on through early lock release
//! ([`Transaction::ack_lsn`]; this matters for read-only and rolled-back transactions,
//! whose values can come from data released early). Under the pipelined protocols a
//! rollback that must wait detaches like a commit; the others block; `async` waits for
//! nothing. Bodies run without the per-operation read barrier of direct transactions:
//! their values leave only through this one wait.
//!
//! **Failure.** An operation that fails fails the transaction (see [`Transaction`]); the
//! agent rolls it back and delivers the first error, whatever the body returned. A body
//! that panics is rolled back and answered with [`Error::Panicked`]; a completion that
//! panics is contained. Either way the agent carries on.
//!
//! **Shutdown.** Every request gets exactly one answer: requests accepted before
//! [`Agents::shutdown`] (or the pool's drop) run, detached commits are handed back
//! before the agents leave, and a request submitted after that — through a
//! [`Submitter`] that outlived its pool — is refused at once with
//! [`Error::Closed`].

use crate::breakdown::{enter, Activity, Clock, TimeBreakdown, TimeRecorder};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::ids::TxnId;
use crate::options::CommitProtocol;
use crate::txn::Sequencer;
use crate::txn::Transaction;
use parking_lot::{Condvar, Mutex};
use sluice_wal::Lsn;
use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::Instant;

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

/// Finishing a transaction handed back hardened: delivering its result.
type Job = Box<dyn FnOnce() + Send>;

/// A submitted request: run on an agent, or refused if the pool has shut down. Either
/// way its completion is called exactly once.
trait Request: Send {
    fn run(self: Box<Self>, pool: &Arc<Shared>);
    fn refuse(self: Box<Self>, error: Error);
}

struct Submitted<R, B, D> {
    body: B,
    done: D,
    _value: PhantomData<fn() -> R>,
}

impl<R, B, D> Request for Submitted<R, B, D>
where
    R: Send + 'static,
    B: FnOnce(&mut Transaction) -> Result<Outcome<R>> + Send + 'static,
    D: FnOnce(Result<Finished<R>>) + Send + 'static,
{
    fn run(self: Box<Self>, pool: &Arc<Shared>) {
        let s = *self;
        pool.execute(s.body, s.done);
    }
    fn refuse(self: Box<Self>, error: Error) {
        deliver(self.done, Err(error));
    }
}

/// Calls a completion, containing a panic in it: the agent must outlive its callers'
/// bugs (the default panic hook has already reported it).
fn deliver<R>(done: impl FnOnce(Result<Finished<R>>), r: Result<Finished<R>>) {
    let _ = catch_unwind(AssertUnwindSafe(move || done(r)));
}

/// The message of a caught panic.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

#[derive(Default)]
struct Queues {
    /// Transactions handed back hardened, to finish.
    hardened: VecDeque<Job>,
    /// New requests.
    requests: VecDeque<Box<dyn Request>>,
    /// Set once by shutdown: no request is accepted after it, and agents leave when
    /// nothing is queued or detached.
    stopping: bool,
    /// Agents parked waiting for work.
    idle: usize,
}

/// What an agent took from the queues.
enum Work {
    Finish(Job),
    Run(Box<dyn Request>),
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
    /// Record where the agents' time goes ([`Agents::time_breakdown`]): each agent keeps
    /// a clock that its table operations, lock requests, log inserts and waits switch
    /// (one clock read per switch, 42 switches per TPC-B transaction: about 1.8 µs of
    /// it, measured; the module docs of `breakdown.rs`). Off by default.
    pub time_breakdown: bool,
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
    /// The agents' clocks ([`AgentOptions::time_breakdown`]).
    time: Option<TimeRecorder>,
    /// Transactions detached to the log daemon and not yet handed back (queued in
    /// `hardened`). Incremented by the agent that detaches (which is running, so it
    /// sees the count before it can leave), decremented under the queue lock.
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

    /// Queues a new request, or refuses it if the pool is shutting down.
    fn push_request(self: &Arc<Self>, req: Box<dyn Request>) {
        let mut q = self.q.lock();
        if q.stopping {
            drop(q);
            req.refuse(Error::Closed("the agent pool is shut down"));
            return;
        }
        q.requests.push_back(req);
        // An agent submitting from its own completion will look at the queue next; waking
        // another agent would only cost a context switch.
        let on_agent = AGENT_OF.with(|a| a.get()) == self.id();
        if q.idle > 0 && !on_agent {
            drop(q);
            self.cv.notify_one();
        }
    }

    /// Queues the delivery of a transaction the daemon handed back.
    fn push_hardened(self: &Arc<Self>, job: Job) {
        let mut q = self.q.lock();
        q.hardened.push_back(job);
        let before = self.in_flight.fetch_sub(1, Ordering::SeqCst);
        assert!(before >= 1, "a hand-back without a detach");
        if q.stopping {
            // Agents parked only because something was in flight may leave now.
            drop(q);
            self.cv.notify_all();
        } else if q.idle > 0 {
            drop(q);
            self.cv.notify_one();
        }
    }

    fn run_agent(self: Arc<Self>, clock: Option<Clock>) {
        AGENT_OF.with(|a| a.set(self.id()));
        let _clock = clock.map(Clock::attach);
        let log = &self.db.inner.store.log;
        loop {
            // On the io_uring flush path the agents drive the log (sluice_wal's
            // `flush::ring`): between two pieces of work, reap a completed round (its
            // hand-backs land in `hardened`) and start the next; never block.
            log.poll_flush();
            let work = {
                let mut q = self.q.lock();
                loop {
                    if let Some(j) = q.hardened.pop_front() {
                        break Work::Finish(j);
                    }
                    if let Some(r) = q.requests.pop_front() {
                        break Work::Run(r);
                    }
                    if q.stopping && self.in_flight.load(Ordering::SeqCst) == 0 {
                        return;
                    }
                    if self.in_flight.load(Ordering::SeqCst) > 0 {
                        // Nothing to do but commits in flight: wait for their round in
                        // the kernel rather than park (unless another thread already
                        // waits for it, or the log has a flush daemon).
                        drop(q);
                        let waited = {
                            let _idle = enter(Activity::Idle);
                            log.wait_flush()
                        };
                        q = self.q.lock();
                        if waited {
                            continue;
                        }
                        if !q.hardened.is_empty() || !q.requests.is_empty() {
                            continue;
                        }
                    }
                    q.idle += 1;
                    self.parks.fetch_add(1, Ordering::Relaxed);
                    let idle = enter(Activity::Idle);
                    self.cv.wait(&mut q);
                    drop(idle);
                    q.idle -= 1;
                }
            };
            // Bodies and completions are caught where they run; this only keeps the
            // agent alive through a bug in the engine itself.
            let _ = catch_unwind(AssertUnwindSafe(|| match work {
                Work::Finish(j) => j(),
                Work::Run(r) => r.run(&self),
            }));
        }
    }

    /// Runs one request on this agent thread.
    fn execute<R: Send + 'static>(
        self: &Arc<Self>,
        body: impl FnOnce(&mut Transaction) -> Result<Outcome<R>>,
        done: impl FnOnce(Result<Finished<R>>) + Send + 'static,
    ) {
        self.executed.fetch_add(1, Ordering::Relaxed);
        let mut tx = Transaction::for_agent(self.db.inner.clone());
        let outcome = catch_unwind(AssertUnwindSafe(|| body(&mut tx)))
            .unwrap_or_else(|p| Err(Error::Panicked(panic_message(&*p))));
        let value = match outcome {
            Ok(Outcome::Commit(v)) => v,
            Ok(Outcome::Rollback(v)) => return self.abort(tx, Ok(v), done),
            Err(e) => return self.abort(tx, Err(e), done),
        };
        // Refused for a failed transaction: the abort delivers the first error.
        let started = Instant::now();
        let seq = Sequencer::new(&self.db.inner.store.log, self.protocol);
        let recorded = match seq.record(&mut tx) {
            Ok(r) => r,
            Err(e) => return self.abort(tx, Err(e), done),
        };
        if let Some(h) = &self.hook {
            // The commit record is in the log: a panicking observer cannot undo it.
            let id = tx.id();
            let _ = catch_unwind(AssertUnwindSafe(|| h(id, recorded.record)));
        }
        self.committed.fetch_add(1, Ordering::Relaxed);
        // Checkpoints are triggered by log volume from the commit path.
        self.db.inner.maybe_checkpoint();
        if seq.detaches(recorded.ack) {
            self.pipelined.fetch_add(1, Ordering::Relaxed);
        }
        let ok = Ok(Finished {
            value,
            committed: true,
        });
        self.deliver_when_durable(recorded.ack, Some(tx), ok, done, Some(started));
    }

    /// Delivers `result` once the log is durable up to `ack` (at once for `None`), by the
    /// sequencer's step 3: the agent blocks, or under the pipelined protocols detaches
    /// and picks up other work while the log daemon waits; the finishing step is then
    /// queued for an agent (the daemon does no transaction work itself). `tx` (still
    /// holding its locks under the strict protocols) is dropped once durable, which
    /// releases them. A commit's latency (from `started`) is recorded once it is
    /// durable (`Database::metrics`).
    fn deliver_when_durable<R: Send + 'static>(
        self: &Arc<Self>,
        ack: Option<Lsn>,
        tx: Option<Transaction>,
        result: Result<Finished<R>>,
        done: impl FnOnce(Result<Finished<R>>) + Send + 'static,
        started: Option<Instant>,
    ) {
        let seq = Sequencer::new(&self.db.inner.store.log, self.protocol);
        match ack {
            Some(ack) if seq.detaches(Some(ack)) => {
                self.in_flight.fetch_add(1, Ordering::SeqCst);
                let me = self.clone();
                seq.detach(ack, tx, move |r| {
                    if let (Ok(()), Some(s)) = (&r, started) {
                        me.db.inner.metrics.commits.record(s.elapsed());
                    }
                    me.push_hardened(Box::new(move || deliver(done, r.and(result))));
                });
            }
            _ => {
                let r = seq.wait(ack, tx);
                if let (Ok(()), Some(s)) = (&r, started) {
                    self.db.inner.metrics.commits.record(s.elapsed());
                }
                deliver(done, r.and(result));
            }
        }
    }

    /// Rolls back and delivers `result` — or, if an operation failed the transaction,
    /// the first error — once what the transaction logged and every commit it read from
    /// are durable.
    fn abort<R: Send + 'static>(
        self: &Arc<Self>,
        tx: Transaction,
        result: Result<R>,
        done: impl FnOnce(Result<Finished<R>>) + Send + 'static,
    ) {
        self.rolled_back.fetch_add(1, Ordering::Relaxed);
        let result = match tx.failure() {
            Some(first) => Err(first.clone()),
            None => result,
        };
        let seq = Sequencer::new(&self.db.inner.store.log, self.protocol);
        let (rolled, ack) = seq.rollback(tx);
        let r = rolled.and(result).map(|value| Finished {
            value,
            committed: false,
        });
        self.deliver_when_durable(ack, None, r, done, None);
    }
}

/// A pool of agent threads running transactions by the database's commit protocol.
///
/// ```
/// use std::sync::Arc;
/// use sluice::{Database, Options};
/// use sluice::experiment::{Agents, Outcome};
/// use sluice_storage::SimStorage;
///
/// let db = Database::open_on(Arc::new(SimStorage::new(3)), "/db", Options::default())?;
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
            time: options.time_breakdown.then(TimeRecorder::new),
            in_flight: AtomicU64::new(0),
        });
        let threads = (0..agents.max(1))
            .map(|i| {
                let s = shared.clone();
                // Made here, so the agent's time counts from the pool's start however
                // late the thread first runs; outside every scope an agent is in
                // `Other` (module `breakdown`).
                let clock = s.time.as_ref().map(|t| t.clock(Activity::Other));
                std::thread::Builder::new()
                    .name(format!("sluice-agent-{i}"))
                    .spawn(move || s.run_agent(clock))
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
    /// switch. An error from `body` (or from any operation it ran, even one it ignored)
    /// rolls the transaction back and is delivered to `done`; so is a panic in `body`, as
    /// [`Error::Panicked`]. `done` is called exactly once, on an agent thread, or on the
    /// caller's thread with [`Error::Closed`] if the pool is shut down.
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

    /// Where the agents' time has gone since the pool started, summed over the agents
    /// (the activity each is in now included): the sum over activities is the agents'
    /// wall time. `None` unless the pool was started with
    /// [`AgentOptions::time_breakdown`]. Take two and subtract for a window.
    pub fn time_breakdown(&self) -> Option<TimeBreakdown> {
        self.shared.time.as_ref().map(TimeRecorder::snapshot)
    }

    /// Requests waiting for an agent.
    pub fn queued(&self) -> usize {
        self.shared.q.lock().requests.len()
    }

    /// Lets the agents finish every queued request and every detached transaction
    /// (delivered as the log hardens it, or failed if the log fails), then stops them.
    /// Requests submitted from then on — from a completion, or through a [`Submitter`]
    /// — are refused with [`Error::Closed`]. Dropping the pool does the same.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.q.lock().stopping = true;
        self.shared.cv.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Agents leave only when nothing is queued or detached, and nothing is accepted
        // after `stopping`: every request has been answered. Only agents killed by
        // something `catch_unwind` cannot catch could leave work behind; answer it here
        // rather than assert in a drop.
        let (requests, hardened) = {
            let mut q = self.shared.q.lock();
            (
                std::mem::take(&mut q.requests),
                std::mem::take(&mut q.hardened),
            )
        };
        debug_assert!(
            requests.is_empty()
                && hardened.is_empty()
                && self.shared.in_flight.load(Ordering::SeqCst) == 0,
            "agents left with requests unanswered"
        );
        for r in requests {
            r.refuse(Error::Closed("the agent pool is shut down"));
        }
        for j in hardened {
            j();
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
    /// As [`Agents::submit`]. After the pool is shut down or dropped, `done` is called
    /// at once with [`Error::Closed`].
    pub fn submit<R, B, D>(&self, body: B, done: D)
    where
        R: Send + 'static,
        B: FnOnce(&mut Transaction) -> Result<Outcome<R>> + Send + 'static,
        D: FnOnce(Result<Finished<R>>) + Send + 'static,
    {
        self.shared.push_request(Box::new(Submitted {
            body,
            done,
            _value: PhantomData,
        }));
    }
}

struct CompletionState<R> {
    result: Option<Result<Finished<R>>>,
    waker: Option<Waker>,
}

/// The result of a submitted transaction: [`Completion::wait`] blocks for it, or `.await`
/// it. Dropping it cancels nothing: the transaction runs and commits or rolls back as its
/// closure decides; only the result is discarded.
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
