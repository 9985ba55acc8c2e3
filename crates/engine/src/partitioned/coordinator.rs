//! The commit coordinator's bookkeeping, and the one rule that protects its records:
//!
//! **A coordinated commit record may leave partition 0's log only once every part it
//! names is durably decided** — the participant's own commit record is durable in its
//! log. Until then that record is the only word that the part committed: truncated, a
//! crash would find the part in doubt, and recovery would roll it back while partition 0
//! keeps its own part.
//!
//! Every coordinated commit holds a [`Pin`] from before its record is appended (a lower
//! bound of the record's LSN) until its parts are decided. The pin's stage says what it
//! waits for:
//! * `Deciding` — the record is being written or is not durable yet, or the participants
//!   are writing theirs;
//! * `Appended` — every participant appended its record: the pin holds until each is
//!   durable in its log (checked against the logs themselves, so a checkpoint that
//!   flushed them sees it at once);
//! * `Stuck` — a participant could not write its record, or the coordinator's log failed:
//!   the pin holds for the life of the handle, and restart recovery decides the part from
//!   the record.
//!
//! Everything that may truncate partition 0's log asks [`Coordinator::cap`]: the
//! background checkpointer, `checkpoint`, the closing checkpoint, and the checkpoint
//! after recovery (before the participants are open and recovered, nothing may go: their
//! recovery reads every record). Close first stops new coordinated commits and waits for
//! every `Deciding` pin to settle ([`Coordinator::drain`]).

use crate::db::Database;
use crate::error::{Error, Result};
use crate::inner::Inner;
use parking_lot::{Condvar, Mutex};
use sluice_wal::Lsn;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// How long close waits for pending decisions between two syncs of the coordinator's log
/// (a decision registered after a sync waits for the next flush, which a long group
/// commit delay may put off).
const DRAIN_SYNC_EVERY: Duration = Duration::from_millis(20);

/// What a pinned coordinated commit waits for (the module docs). A pin goes from
/// `Deciding` to `Appended` or `Stuck` (or leaves, released, with no record written);
/// `Appended` leaves once its parts are durable; `Stuck` never leaves.
enum Stage {
    Deciding,
    /// (partition, end of its commit record) of every part.
    Appended(Vec<(usize, Lsn)>),
    Stuck,
}

impl Stage {
    fn deciding(&self) -> bool {
        matches!(self, Stage::Deciding)
    }

    /// True if every part named is durable in its log, by `durable` (each participant's
    /// durable LSN, `None` for one that is gone): the record may leave partition 0's log.
    fn durably_decided(&self, durable: &[Option<Lsn>]) -> bool {
        match self {
            Stage::Appended(ends) => ends
                .iter()
                .all(|&(i, end)| durable[i].is_some_and(|d| d >= end)),
            Stage::Deciding | Stage::Stuck => false,
        }
    }
}

struct Pinned {
    /// At or below the start of the commit record.
    bound: Lsn,
    stage: Stage,
}

#[derive(Default)]
struct Pins {
    next_id: u64,
    live: BTreeMap<u64, Pinned>,
    /// Set by close: no new coordinated commit.
    closing: bool,
    /// Pins left after the last pruning (pruning again once there are twice as many keeps
    /// it amortised O(1) per commit).
    after_prune: usize,
}

/// The commit coordinator's shared state.
pub(crate) struct Coordinator {
    pins: Mutex<Pins>,
    /// Notified whenever a pin leaves `Deciding`.
    settled: Condvar,
    /// Every partition, once all are open and recovered (index = partition).
    parts: OnceLock<Vec<Weak<Inner>>>,
    pub(super) coordinated: AtomicU64,
    pub(super) local: AtomicU64,
    pub(super) commit_bytes: AtomicU64,
}

impl Coordinator {
    pub(super) fn new() -> Coordinator {
        Coordinator {
            pins: Mutex::new(Pins::default()),
            settled: Condvar::new(),
            parts: OnceLock::new(),
            coordinated: AtomicU64::new(0),
            local: AtomicU64::new(0),
            commit_bytes: AtomicU64::new(0),
        }
    }

    /// Every partition is open and recovered: from now on partition 0's log may be
    /// truncated below what the pins hold.
    pub(super) fn participants_open(&self, parts: &[Database]) {
        assert!(!parts.is_empty(), "partition 0 is open");
        let weak = parts.iter().map(|d| Arc::downgrade(&d.inner)).collect();
        assert!(self.parts.set(weak).is_ok(), "the participants open once");
    }

    /// Pins partition 0's log from `bound` on (at or below where the commit record will
    /// be appended) for a coordinated commit. Refused once the database is closing.
    pub(super) fn pin(self: &Arc<Self>, bound: Lsn) -> Result<Pin> {
        let mut p = self.pins.lock();
        if p.closing {
            return Err(Error::Closed("partitioned database"));
        }
        let id = p.next_id;
        p.next_id += 1;
        let old = p.live.insert(
            id,
            Pinned {
                bound,
                stage: Stage::Deciding,
            },
        );
        assert!(old.is_none(), "pin {id} taken twice");
        Ok(Pin {
            coordinator: self.clone(),
            id,
            settled: false,
        })
    }

    /// The truncation cap of partition 0's log (`coordination::TruncationCap`): below
    /// the lowest pin that is not durably decided. Runs on a checkpointing thread, never
    /// on a commit path, so it first flushes the participants past the records the pins
    /// wait for.
    pub(super) fn cap(&self) -> Result<Option<Lsn>> {
        let Some(parts) = self.parts.get() else {
            // The participants are not recovered yet: their recovery reads every record.
            return Ok(Some(Lsn(0)));
        };
        let mut wanted: BTreeMap<usize, Lsn> = BTreeMap::new();
        for pinned in self.pins.lock().live.values() {
            if let Stage::Appended(ends) = &pinned.stage {
                for &(i, end) in ends {
                    let w = wanted.entry(i).or_insert(end);
                    *w = (*w).max(end);
                }
            }
        }
        for (i, end) in wanted {
            if let Some(inner) = parts[i].upgrade() {
                // A log that fails here keeps its pins: the records it needs stay. Its
                // partition is poisoned and says so; partition 0's checkpoint is not.
                let _ = inner.store.log.wait_durable(end);
            }
        }
        let durable = durable_lsns(parts);
        let mut p = self.pins.lock();
        prune(&mut p, &durable);
        let cap = p.live.values().map(|pinned| pinned.bound).min();
        // The rule: every record a pin still holds (not yet durably decided) lies at or
        // above the cap, so the truncation it allows keeps it.
        debug_assert!(p
            .live
            .values()
            .all(|pinned| cap.is_some_and(|c| c <= pinned.bound)));
        Ok(cap)
    }

    /// Close's first step: no new coordinated commit from now on, and every decision under
    /// way settles — its participants' records appended, or stuck behind a failure —
    /// before the participants close. Parks; syncs the coordinator's log so that the
    /// decisions waiting for their record to be durable (under `async`) go on.
    pub(super) fn drain(&self, db0: &Database) {
        let mut p = self.pins.lock();
        p.closing = true;
        while p.live.values().any(|x| matches!(x.stage, Stage::Deciding)) {
            drop(p);
            // An error fails the waiting decisions (their pins stick): nothing to report
            // here, partition 0's close reports its log's failure.
            let _ = db0.log().sync();
            p = self.pins.lock();
            if p.live.values().any(|x| matches!(x.stage, Stage::Deciding)) {
                self.settled.wait_for(&mut p, DRAIN_SYNC_EVERY);
            }
        }
        // Closing, nothing is being decided, and nothing new can be: what is left is
        // either waiting for durable parts (`Appended`) or held for good (`Stuck`).
        debug_assert!(p.closing && p.live.values().all(|x| !x.stage.deciding()));
    }

    /// Every partition refuses work from now on (the outcome of a commit is unknown:
    /// restart recovery decides it).
    pub(super) fn poison_all(&self, cause: &dyn std::fmt::Display) {
        for inner in self
            .parts
            .get()
            .into_iter()
            .flatten()
            .filter_map(Weak::upgrade)
        {
            inner.health.poison(cause);
        }
    }

    pub(super) fn count_commit(&self, coordinated: bool, bytes: u64) {
        debug_assert!(bytes > 0, "a commit record has bytes");
        let n = if coordinated {
            &self.coordinated
        } else {
            &self.local
        };
        n.fetch_add(1, Ordering::Relaxed);
        self.commit_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A pin leaves `Deciding`, once: released (`None`: no record was written, nothing to
    /// keep), `Appended` or `Stuck`. Every other transition is a bug: a pin that left
    /// `Deciding` holds a record that is (or may be) in the log, and only pruning, once
    /// its parts are durable, may let it go.
    fn settle(&self, id: u64, stage: Option<Stage>) {
        let mut p = self.pins.lock();
        let pinned = p.live.get_mut(&id).expect("a pin settles once");
        assert!(pinned.stage.deciding(), "only a pin being decided settles");
        match stage {
            None => {
                p.live.remove(&id);
            }
            Some(Stage::Deciding) => unreachable!("a settled pin leaves Deciding"),
            Some(stage) => pinned.stage = stage,
        }
        let prune_due = p.live.len() >= 2 * p.after_prune + 64;
        drop(p);
        self.settled.notify_all();
        if let (true, Some(parts)) = (prune_due, self.parts.get()) {
            let durable = durable_lsns(parts);
            prune(&mut self.pins.lock(), &durable);
        }
    }
}

/// Each participant's durable LSN (`None`: gone; partition 0 is never a participant and
/// never upgraded here — this runs on its flush daemon, where dropping the last handle
/// of partition 0 would close it on the thread its close waits for). Read before the
/// pins are locked, so that no partition is ever dropped, and closed, under that lock.
fn durable_lsns(parts: &[Weak<Inner>]) -> Vec<Option<Lsn>> {
    let participant = |(i, w): (usize, &Weak<Inner>)| {
        (i > 0)
            .then(|| w.upgrade())
            .flatten()
            .map(|inner| inner.store.log.durable_lsn())
    };
    parts.iter().enumerate().map(participant).collect()
}

/// Drops the pins whose parts are all durable in their logs, by `durable` (read before:
/// a pin appended since is judged against an older LSN, which only keeps it longer).
fn prune(p: &mut Pins, durable: &[Option<Lsn>]) {
    debug_assert!(durable[0].is_none(), "partition 0 is never a participant");
    p.live
        .retain(|_, pinned| !pinned.stage.durably_decided(durable));
    p.after_prune = p.live.len();
}

/// A coordinated commit's hold on partition 0's log (see the module docs). Settled once,
/// by the commit; dropped unsettled (a path that forgot it, a panic) it sticks: keeping a
/// record too long costs log space, losing it costs a commit.
pub(crate) struct Pin {
    coordinator: Arc<Coordinator>,
    id: u64,
    settled: bool,
}

impl Pin {
    /// The commit record starts at `start`: truncation may go up to it.
    pub(super) fn raise(&self, start: Lsn) {
        let mut p = self.coordinator.pins.lock();
        let pinned = p.live.get_mut(&self.id).expect("a live pin");
        assert!(
            pinned.stage.deciding(),
            "a record is raised to while being decided"
        );
        assert!(pinned.bound <= start, "a pin's bound is below its record");
        pinned.bound = start;
    }

    /// No commit record was written (the transaction rolls back): nothing to keep.
    pub(super) fn release(mut self) {
        self.settled = true;
        self.coordinator.settle(self.id, None);
    }

    /// Every participant appended its commit record, ending at these LSNs of their logs:
    /// held until they are durable.
    pub(super) fn appended(mut self, ends: Vec<(usize, Lsn)>) {
        // Every part is outside partition 0, and named once: a pin with no part, or
        // with partition 0's own log among them, would leave as soon as it is pruned.
        debug_assert!(!ends.is_empty(), "a coordinated commit has parts");
        debug_assert!(ends.iter().all(|&(i, _)| i > 0));
        debug_assert!(ends.windows(2).all(|w| w[0].0 < w[1].0));
        self.settled = true;
        self.coordinator
            .settle(self.id, Some(Stage::Appended(ends)));
    }

    /// A part cannot be decided in its own log (or the coordinator's log failed): held
    /// for the life of the handle; restart recovery decides the part from the record.
    pub(super) fn stick(mut self) {
        self.settled = true;
        self.coordinator.settle(self.id, Some(Stage::Stuck));
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        if !self.settled {
            self.coordinator.settle(self.id, Some(Stage::Stuck));
        }
    }
}
