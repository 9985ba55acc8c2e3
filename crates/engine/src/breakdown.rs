//! Where agent threads' time goes (Aether Figs. 2 and 7): each agent of a pool started
//! with [`AgentOptions::time_breakdown`](crate::experiment::AgentOptions::time_breakdown)
//! keeps a clock that charges the time since its last switch to the [`Activity`] it was
//! in, and [`TimeRecorder::snapshot`] adds up every agent's clock (the activity under way
//! included), so the sum over activities is the agents' wall time: agents × seconds.
//!
//! **Where the switches are.** Code enters an activity with a [`Scope`] ([`enter`]) and
//! leaves it when the scope drops; scopes nest, and time goes to the innermost one (an
//! operation's own B+tree work excludes the lock it waited for inside). An agent thread
//! is in [`Activity::Other`] outside any scope and in [`Activity::Idle`] while it is
//! parked for lack of work. Scopes sit around coarse phases and around waits only —
//! a table operation, a lock request, a log insert, a wait for the log flush — never
//! around a page hit or a byte copied. A switch reads the clock once; measured on the
//! 2-core development machine (the least of 30 batches of 200,000), a scope entered and
//! left cost 88 ns, of which 2 × 22 ns are the clock, and a TPC-B transaction made 42
//! switches (counted over a run): about 1.8 µs per transaction. The waits inside a log
//! insert are timed by the log itself, and only when it waits
//! (`sluice_wal::insert_waited`); a page latch or a pool miss enters
//! [`Activity::PageWait`] only after a try failed.
//!
//! **Cost when off.** On a thread without a clock (any thread when no pool records: a
//! direct transaction, the log daemon, the checkpointer) a scope costs one thread-local
//! read and does nothing: 2 ns per scope, measured as above.
//!
//! **Reading while they run.** Each thread's clock is a seqlock: its owner bumps a
//! sequence number to odd, writes the time spent and its new activity, and bumps it to
//! even; a reader retries until it read one even number on both sides. A reader that
//! finds a write under way yields (the owner may be descheduled mid-write on a machine
//! with more agents than cores) instead of spinning.

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::atomic::{fence, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What an agent thread is doing: the categories of a [`TimeBreakdown`]. Work and
/// waiting are apart, so that contention (a wait for another thread) shows as its own
/// share, as in Aether Figs. 2 and 7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Activity {
    /// A table operation's own work: the B+tree's search and change and the buffer
    /// pool's page hits and latches (the operation's locks, log records and waits are
    /// counted apart; a table lock taken on its fast path counts here).
    Tree,
    /// Waiting for a page: a latch another thread holds, or a miss (a victim written
    /// back, the page read from disk).
    PageWait,
    /// The lock manager's work: key and gap locks taken and released (not waited for).
    Lock,
    /// Waiting for a lock another transaction holds (lock contention).
    LockWait,
    /// Inserting log records: reserving log-buffer space, copying the record, releasing
    /// it.
    LogInsert,
    /// Waiting inside a log insert: for the log buffer's lock, for the release turn, for
    /// a consolidation group's leader, or for ring space (log-buffer contention).
    LogInsertWait,
    /// Blocked until the log is durable: a commit waiting for its flush (the blocking
    /// protocols), a rollback hardening what it logged, a page write's write-ahead rule.
    LogFlushWait,
    /// Everything else on an agent: the transaction body's own code, commit bookkeeping,
    /// the agents' queues, delivering results (the benchmark client's next submission).
    Other,
    /// Parked for lack of work (no request queued, nothing handed back).
    Idle,
}

impl Activity {
    /// How many there are.
    pub const COUNT: usize = 9;

    /// Every activity, work first and each wait after the work it belongs to.
    pub const ALL: [Activity; Activity::COUNT] = [
        Activity::Tree,
        Activity::PageWait,
        Activity::Lock,
        Activity::LockWait,
        Activity::LogInsert,
        Activity::LogInsertWait,
        Activity::LogFlushWait,
        Activity::Other,
        Activity::Idle,
    ];

    /// The name in files and JSON (`log_insert_wait`, …).
    pub fn name(self) -> &'static str {
        match self {
            Activity::Tree => "tree",
            Activity::PageWait => "page_wait",
            Activity::Lock => "lock",
            Activity::LockWait => "lock_wait",
            Activity::LogInsert => "log_insert",
            Activity::LogInsertWait => "log_insert_wait",
            Activity::LogFlushWait => "log_flush_wait",
            Activity::Other => "other",
            Activity::Idle => "idle",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn from_index(i: u8) -> Option<Activity> {
        Activity::ALL.get(i as usize).copied()
    }
}

const _: () = assert!(Activity::ALL.len() == Activity::COUNT);

/// Time per [`Activity`], summed over a pool's agent threads: cumulative since the pool
/// started ([`Agents::time_breakdown`](crate::experiment::Agents::time_breakdown)); take
/// differences ([`TimeBreakdown::since`]) for a window. Serialises as a map from each
/// activity's name to nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeBreakdown {
    nanos: [u64; Activity::COUNT],
}

impl TimeBreakdown {
    /// The time spent in `a`.
    pub fn get(&self, a: Activity) -> Duration {
        Duration::from_nanos(self.nanos[a.index()])
    }

    /// The time of every activity together: the agents' wall time over the period.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.nanos.iter().sum())
    }

    /// What was spent between `earlier` and `self` (of the same pool).
    pub fn since(&self, earlier: &TimeBreakdown) -> TimeBreakdown {
        let mut nanos = [0; Activity::COUNT];
        for (i, n) in nanos.iter_mut().enumerate() {
            *n = self.nanos[i].saturating_sub(earlier.nanos[i]);
        }
        TimeBreakdown { nanos }
    }

    /// Each activity with its time, in [`Activity::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (Activity, Duration)> + '_ {
        Activity::ALL.iter().map(|&a| (a, self.get(a)))
    }
}

/// A breakdown of the given times (an activity given twice adds up), for a caller's own
/// accounting and for tests of what reads breakdowns.
impl FromIterator<(Activity, Duration)> for TimeBreakdown {
    fn from_iter<I: IntoIterator<Item = (Activity, Duration)>>(times: I) -> TimeBreakdown {
        let mut nanos = [0u64; Activity::COUNT];
        for (a, d) in times {
            let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            nanos[a.index()] = nanos[a.index()].saturating_add(n);
        }
        TimeBreakdown { nanos }
    }
}

impl Serialize for TimeBreakdown {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(Activity::COUNT))?;
        for a in Activity::ALL {
            m.serialize_entry(a.name(), &self.nanos[a.index()])?;
        }
        m.end()
    }
}

/// `activity` of a thread that has left (its time is all in `spent`).
const GONE: u8 = u8::MAX;

/// One thread's clock, written by that thread only (see the module docs: a seqlock).
struct ThreadClock {
    seq: AtomicU64,
    /// The activity under way ([`GONE`] once the thread detached).
    activity: AtomicU8,
    /// When it began, nanoseconds since the recorder's epoch.
    since: AtomicU64,
    /// Time spent in each activity up to `since`.
    spent: [AtomicU64; Activity::COUNT],
}

/// The clocks of a pool's agent threads.
pub(crate) struct TimeRecorder {
    epoch: Instant,
    threads: Mutex<Vec<Arc<CachePadded<ThreadClock>>>>,
}

/// This thread's side of its clock: the owner keeps the values it publishes, so a switch
/// reads no shared memory.
struct Local {
    clock: Arc<CachePadded<ThreadClock>>,
    epoch: Instant,
    activity: Activity,
    since: u64,
    spent: [u64; Activity::COUNT],
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

fn nanos_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl Local {
    /// Charges the time since the last switch to the current activity (`moved` of it to
    /// another one instead), then makes `to` current (`None`: the thread leaves).
    fn switch(&mut self, to: Option<Activity>, moved: Option<(Activity, Duration)>) {
        let now = nanos_since(self.epoch).max(self.since);
        let mut here = now - self.since;
        let from = self.activity.index();
        let moved = moved.map(|(other, d)| {
            let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).min(here);
            here -= d;
            self.spent[other.index()] += d;
            other.index()
        });
        self.spent[from] += here;
        self.since = now;
        if let Some(to) = to {
            self.activity = to;
        }
        let c = &self.clock;
        // The seqlock's write: odd, the values that changed, even (module docs).
        let s = c.seq.load(Ordering::Relaxed);
        c.seq.store(s + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        for i in std::iter::once(from).chain(moved) {
            c.spent[i].store(self.spent[i], Ordering::Relaxed);
        }
        c.since.store(now, Ordering::Relaxed);
        c.activity
            .store(to.map_or(GONE, |a| a.index() as u8), Ordering::Relaxed);
        c.seq.store(s + 2, Ordering::Release);
    }
}

impl TimeRecorder {
    pub(crate) fn new() -> TimeRecorder {
        TimeRecorder {
            epoch: Instant::now(),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// A new clock of this recorder, counting from now in `activity`: made by whoever
    /// starts the thread it is for, so that the thread's time counts from its start even
    /// if the scheduler runs it later: a pool's agents exist from when it starts. (Made
    /// by each thread itself, a 0.3 s run of two agents on the loaded 2-core machine
    /// missed 69 ms of their 600.)
    pub(crate) fn clock(&self, activity: Activity) -> Clock {
        let since = nanos_since(self.epoch);
        let shared = Arc::new(CachePadded::new(ThreadClock {
            seq: AtomicU64::new(0),
            activity: AtomicU8::new(activity.index() as u8),
            since: AtomicU64::new(since),
            spent: std::array::from_fn(|_| AtomicU64::new(0)),
        }));
        self.threads.lock().push(shared.clone());
        Clock {
            shared,
            epoch: self.epoch,
            activity,
            since,
        }
    }

    /// A new clock ([`TimeRecorder::clock`]) attached to this thread at once.
    #[cfg(test)]
    fn attach(&self, activity: Activity) -> Attached {
        self.clock(activity).attach()
    }

    /// Every clock's time so far, the activity under way included.
    pub(crate) fn snapshot(&self) -> TimeBreakdown {
        let now = nanos_since(self.epoch);
        let mut total = [0u64; Activity::COUNT];
        for c in self.threads.lock().iter() {
            let (spent, activity, since) = loop {
                let s1 = c.seq.load(Ordering::Acquire);
                if s1 % 2 == 1 {
                    std::thread::yield_now();
                    continue;
                }
                let spent: [u64; Activity::COUNT] =
                    std::array::from_fn(|i| c.spent[i].load(Ordering::Relaxed));
                let activity = c.activity.load(Ordering::Relaxed);
                let since = c.since.load(Ordering::Relaxed);
                fence(Ordering::Acquire);
                if c.seq.load(Ordering::Relaxed) == s1 {
                    break (spent, activity, since);
                }
            };
            for (t, s) in total.iter_mut().zip(spent) {
                *t += s;
            }
            if let Some(a) = Activity::from_index(activity) {
                total[a.index()] += now.saturating_sub(since);
            }
        }
        TimeBreakdown { nanos: total }
    }
}

/// A clock not attached to a thread yet ([`TimeRecorder::clock`]); its time counts
/// already.
pub(crate) struct Clock {
    shared: Arc<CachePadded<ThreadClock>>,
    epoch: Instant,
    activity: Activity,
    since: u64,
}

impl Clock {
    /// Makes this the clock of the calling thread until the returned guard drops (the
    /// thread's time after that is its own, uncounted); also switches on the log's
    /// timing of this thread's insert waits.
    pub(crate) fn attach(self) -> Attached {
        LOCAL.with(|l| {
            let mut l = l.borrow_mut();
            assert!(l.is_none(), "a thread has one clock at a time");
            *l = Some(Local {
                clock: self.shared,
                epoch: self.epoch,
                activity: self.activity,
                since: self.since,
                spent: [0; Activity::COUNT],
            });
        });
        sluice_wal::time_insert_waits(true);
        Attached {
            _thread: PhantomData,
        }
    }
}

/// A thread's clock, attached until this drops (on that thread: it is not `Send`).
pub(crate) struct Attached {
    _thread: PhantomData<*const ()>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        sluice_wal::time_insert_waits(false);
        LOCAL.with(|l| {
            if let Some(mut local) = l.borrow_mut().take() {
                local.switch(None, None);
            }
        });
    }
}

/// An activity entered; the thread goes back to the one before when this drops.
#[must_use = "the activity ends when the scope drops"]
pub(crate) struct Scope {
    /// The activity to go back to; `None` on a thread without a clock.
    back: Option<Activity>,
}

/// Enters `a` on this thread (nothing, if it has no clock).
pub(crate) fn enter(a: Activity) -> Scope {
    let back = LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        let local = l.as_mut()?;
        let back = local.activity;
        local.switch(Some(a), None);
        Some(back)
    });
    Scope { back }
}

impl Scope {
    /// True if this thread has a clock (the scope counts).
    pub(crate) fn counts(&self) -> bool {
        self.back.is_some()
    }

    /// Leaves the scope, charging `part` of its time (at most all of it) to `to`
    /// instead.
    pub(crate) fn leave_moving(mut self, part: Duration, to: Activity) {
        if let Some(back) = self.back.take() {
            LOCAL.with(|l| {
                if let Some(local) = l.borrow_mut().as_mut() {
                    local.switch(Some(back), Some((to, part)));
                }
            });
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if let Some(back) = self.back {
            LOCAL.with(|l| {
                if let Some(local) = l.borrow_mut().as_mut() {
                    local.switch(Some(back), None);
                }
            });
        }
    }
}

/// Runs `insert` (one log insert) as [`Activity::LogInsert`], with the time the log
/// says it waited inside moved to [`Activity::LogInsertWait`].
pub(crate) fn log_insert<T>(insert: impl FnOnce() -> T) -> T {
    let scope = enter(Activity::LogInsert);
    if !scope.counts() {
        return insert();
    }
    let waited = sluice_wal::insert_waited();
    let r = insert();
    scope.leave_moving(
        sluice_wal::insert_waited().saturating_sub(waited),
        Activity::LogInsertWait,
    );
    r
}

/// Runs `wait` (a wait for the log to be durable) as [`Activity::LogFlushWait`].
pub(crate) fn flush_wait<T>(wait: impl FnOnce() -> T) -> T {
    let _scope = enter(Activity::LogFlushWait);
    wait()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(d: Duration) {
        let t = Instant::now();
        while t.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn scopes_nest_and_the_innermost_gets_the_time() {
        let r = TimeRecorder::new();
        let clock = r.attach(Activity::Other);
        busy(Duration::from_millis(4));
        {
            let _tree = enter(Activity::Tree);
            busy(Duration::from_millis(6));
            {
                let _lock = enter(Activity::Lock);
                busy(Duration::from_millis(8));
            }
            busy(Duration::from_millis(2));
        }
        let s = enter(Activity::LogInsert);
        busy(Duration::from_millis(10));
        s.leave_moving(Duration::from_millis(7), Activity::LogInsertWait);
        drop(clock);
        let b = r.snapshot();
        let ms = |a| b.get(a).as_secs_f64() * 1e3;
        // Each at least what was spent in it, and not much more (a loaded machine may
        // deschedule the thread inside a busy loop, which only adds).
        assert!(ms(Activity::Other) >= 4.0, "{b:?}");
        assert!(
            ms(Activity::Tree) >= 8.0 && ms(Activity::Tree) < 8.0 + 50.0,
            "{b:?}"
        );
        assert!(ms(Activity::Lock) >= 8.0, "{b:?}");
        assert_eq!(b.get(Activity::LogInsertWait), Duration::from_millis(7));
        assert!(ms(Activity::LogInsert) >= 3.0, "{b:?}");
        assert_eq!(b.get(Activity::Idle), Duration::ZERO);
        // Detached: nothing more is counted, and scopes on this thread do nothing.
        let s = enter(Activity::Tree);
        assert!(!s.counts());
        drop(s);
        busy(Duration::from_millis(3));
        assert_eq!(r.snapshot(), b);
    }

    #[test]
    fn a_clock_counts_from_when_it_is_made_not_from_when_its_thread_runs() {
        let r = TimeRecorder::new();
        let made = Instant::now();
        let clock = r.clock(Activity::Other);
        std::thread::sleep(Duration::from_millis(20));
        std::thread::scope(|s| {
            s.spawn(move || drop(clock.attach()));
        });
        let b = r.snapshot();
        assert!(b.get(Activity::Other) >= Duration::from_millis(20), "{b:?}");
        assert!(b.total() <= made.elapsed(), "{b:?}");
    }

    #[test]
    fn a_snapshot_counts_the_activity_under_way_of_every_thread() {
        let r = Arc::new(TimeRecorder::new());
        let (idle_tx, idle_rx) = std::sync::mpsc::channel::<()>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        // Each thread reports its life: from before its attach to after its detach.
        let parked = {
            let r = r.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let c = r.attach(Activity::Other);
                let idle = enter(Activity::Idle);
                idle_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                drop(idle);
                drop(c);
                t0.elapsed()
            })
        };
        let switching = {
            let r = r.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let c = r.attach(Activity::Other);
                while t0.elapsed() < Duration::from_millis(100) {
                    let _t = enter(Activity::Tree);
                    let _l = enter(Activity::Lock);
                }
                drop(c);
                t0.elapsed()
            })
        };
        idle_rx.recv().unwrap();
        let parked_at = Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        // The parked thread has not switched since it went idle: all of that is under
        // way, and counted.
        let mid = r.snapshot();
        assert!(
            mid.get(Activity::Idle) >= parked_at.elapsed().min(Duration::from_millis(30)),
            "{mid:?}"
        );
        let lives = switching.join().unwrap() + {
            go_tx.send(()).unwrap();
            parked.join().unwrap()
        };
        let end = r.snapshot();
        // Each thread counted from its attach to its detach: the sum is their lives,
        // less the moments before the attach and after the detach.
        assert!(end.total() <= lives, "{end:?} over {lives:?}");
        assert!(
            end.total() + Duration::from_millis(20) >= lives,
            "{end:?} under {lives:?}"
        );
        assert!(end.get(Activity::Tree) > Duration::ZERO);
        assert!(end.get(Activity::Lock) > Duration::ZERO);
        assert_eq!(r.snapshot(), end, "detached clocks no longer grow");
        let json = serde_json::to_string(&end.since(&mid)).unwrap();
        assert!(
            json.starts_with("{\"tree\":") && json.contains("\"idle\":"),
            "{json}"
        );
    }
}
