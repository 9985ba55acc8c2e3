//! The raft log store and state machine across a reopen — openraft's storage suite never
//! reopens a store, so these are the tests of what `log_store.rs` and `state_machine.rs`
//! promise about a restart:
//!
//! * after a clean close, a reopened store holds exactly what it held: vote, committed
//!   log id, purge point, last log id and every entry (also once a purge dropped whole
//!   WAL segments, and once no entry is left);
//! * after a power loss or a process kill at any point, the log store holds what it
//!   showed after some prefix of the operations asked of it (one ordered stream), and
//!   that prefix covers everything acknowledged: a vote once `save_vote` returned, an
//!   entry once its `IOFlushed` callback said so, a purge once `purge` returned, and
//!   whatever a previous reopen showed; a halt at each disk operation of a purge leaves
//!   the log as it was before the purge or after it;
//! * the state machine reopens to the applied position and data it had, never to less
//!   than an `apply` that returned (and its data agree with that position); a snapshot
//!   it built or installed is there after a power loss, and an install interrupted by a
//!   power loss leaves the old state or the new one, whole.
//!
//! Three tests install a second snapshot (with and without a power loss during the
//! install): they found that an emptied slot could not take a new database, which is why
//! each install now gets a directory never used before.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use openraft::entry::RaftEntry;
use openraft::storage::{IOFlushed, RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::type_config::TypeConfigExt;
use openraft::vote::RaftLeaderIdExt;
use openraft::{LogState, Membership, RaftLogReader, RaftSnapshotBuilder, RaftTypeConfig};
use sluice::Options;
use sluice_raft::types::{Entry, LogId, SnapshotData, SnapshotMeta, StoredMembership, Vote};
use sluice_raft::{Batch, Command, LogStore, StateMachine, TypeConfig};
use sluice_storage::{OsStorage, SimStorage, Storage};
use sluice_wal::LogOptions;

const LOG_DIR: &str = "/node/raft-log";
const SM_DIR: &str = "/node/sm";
/// Longest a single store call or callback may take before the test calls it a hang.
const PATIENCE: Duration = Duration::from_secs(30);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A small deterministic generator (SplitMix64): the seeds of a failing run replay it.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5EED_0F5A_1CE0_0000)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len() as u64 - 1) as usize]
    }
}

fn log_id(term: u64, node: u64, index: u64) -> LogId {
    LogId::new(
        <TypeConfig as RaftTypeConfig>::LeaderId::new_committed(term, node),
        index,
    )
}

/// A normal entry whose batch puts `value_len` bytes of `fill` under `k{index}`.
fn normal(term: u64, node: u64, index: u64, value_len: usize, fill: u8) -> Entry {
    Entry::new_normal(
        log_id(term, node, index),
        Batch::new()
            .put(format!("k{index}"), vec![fill; value_len])
            .into(),
    )
}

// ---------------------------------------------------------------------------------------
// The log store: what it shows, and a model of what it should show.
// ---------------------------------------------------------------------------------------

/// Everything a log store shows openraft.
#[derive(PartialEq)]
struct Seen {
    vote: Option<Vote>,
    committed: Option<LogId>,
    state: LogState<TypeConfig>,
    entries: Vec<Entry>,
}

impl Seen {
    /// A short description: the entries by log id only.
    fn describe(&self) -> String {
        let ids: Vec<String> = match self.entries.as_slice() {
            [] => Vec::new(),
            [only] => vec![only.log_id().to_string()],
            [first, .., last] => vec![
                format!("{} entries", self.entries.len()),
                first.log_id().to_string(),
                last.log_id().to_string(),
            ],
        };
        format!(
            "vote {:?}, committed {:?}, purged {:?}, last {:?}, entries [{}]",
            self.vote.map(|v| v.to_string()),
            self.committed.map(|c| c.to_string()),
            self.state.last_purged_log_id.map(|c| c.to_string()),
            self.state.last_log_id.map(|c| c.to_string()),
            ids.join(" .. ")
        )
    }

    /// Where `self` and `other` first differ, if they do.
    fn difference(&self, other: &Seen) -> Option<String> {
        if self == other {
            return None;
        }
        let mut d = format!(
            "\n  got:      {}\n  expected: {}",
            self.describe(),
            other.describe()
        );
        if let Some(i) = (0..self.entries.len().min(other.entries.len()))
            .find(|&i| self.entries[i] != other.entries[i])
        {
            d.push_str(&format!(
                "\n  first differing entry: got {} ({}), expected {} ({})",
                self.entries[i].log_id(),
                self.entries[i].payload,
                other.entries[i].log_id(),
                other.entries[i].payload
            ));
        }
        Some(d)
    }
}

async fn seen(store: &mut LogStore) -> Seen {
    Seen {
        vote: store.read_vote().await.expect("read_vote"),
        committed: store.read_committed().await.expect("read_committed"),
        state: store.get_log_state().await.expect("get_log_state"),
        entries: store
            .try_get_log_entries(..)
            .await
            .expect("try_get_log_entries"),
    }
}

/// One call on the log store.
#[derive(Clone, Debug)]
enum Op {
    Vote(Vote),
    Append(Vec<Entry>),
    TruncateAfter(Option<LogId>),
    Purge(LogId),
    Committed(Option<LogId>),
}

impl Op {
    fn describe(&self) -> String {
        match self {
            Op::Vote(v) => format!("vote {v}"),
            Op::Append(es) => format!("append {}..={}", es[0].log_id(), es[es.len() - 1].log_id()),
            Op::TruncateAfter(l) => format!("truncate_after {:?}", l.map(|l| l.to_string())),
            Op::Purge(l) => format!("purge {l}"),
            Op::Committed(c) => format!("committed {:?}", c.map(|c| c.to_string())),
        }
    }
}

/// What openraft's contract says a log store holds after a sequence of calls.
#[derive(Clone, Default)]
struct Model {
    vote: Option<Vote>,
    committed: Option<LogId>,
    purged: Option<LogId>,
    entries: BTreeMap<u64, Entry>,
}

impl Model {
    fn from_seen(s: &Seen) -> Model {
        Model {
            vote: s.vote,
            committed: s.committed,
            purged: s.state.last_purged_log_id,
            entries: s.entries.iter().map(|e| (e.index(), e.clone())).collect(),
        }
    }

    fn last_log_id(&self) -> Option<LogId> {
        self.entries
            .last_key_value()
            .map(|(_, e)| e.log_id())
            .or(self.purged)
    }

    fn append_one(&mut self, e: &Entry) {
        self.entries.split_off(&e.index());
        self.entries.insert(e.index(), e.clone());
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Vote(v) => self.vote = Some(*v),
            Op::Append(es) => es.iter().for_each(|e| self.append_one(e)),
            Op::TruncateAfter(last) => {
                self.entries.split_off(&last.map_or(0, |l| l.index() + 1));
            }
            Op::Purge(p) => {
                if self.purged < Some(*p) {
                    self.entries = self.entries.split_off(&(p.index() + 1));
                    self.purged = Some(*p);
                }
            }
            Op::Committed(c) => self.committed = *c,
        }
    }

    fn seen(&self) -> Seen {
        Seen {
            vote: self.vote,
            committed: self.committed,
            state: LogState {
                last_purged_log_id: self.purged,
                last_log_id: self.last_log_id(),
            },
            entries: self.entries.values().cloned().collect(),
        }
    }

    /// `self.seen() == *s`, without copying the entries.
    fn matches(&self, s: &Seen) -> bool {
        self.vote == s.vote
            && self.committed == s.committed
            && self.purged == s.state.last_purged_log_id
            && self.last_log_id() == s.state.last_log_id
            && self.entries.len() == s.entries.len()
            && self.entries.values().zip(&s.entries).all(|(a, b)| a == b)
    }
}

/// Applies `op` to the store and to `model`, waiting for appends to be flushed.
async fn step(store: &mut LogStore, model: &mut Model, op: Op) {
    let what = op.describe();
    match &op {
        Op::Vote(v) => store.save_vote(v).await.expect(&what),
        Op::Append(es) => store.blocking_append(es.clone()).await.expect(&what),
        Op::TruncateAfter(l) => store.truncate_after(*l).await.expect(&what),
        Op::Purge(l) => store.purge(*l).await.expect(&what),
        Op::Committed(c) => store.save_committed(*c).await.expect(&what),
    }
    model.apply(&op);
}

/// Panics unless `got` is `expected`.
fn assert_seen(got: &Seen, expected: &Seen, when: &str) {
    if let Some(d) = got.difference(expected) {
        panic!("{when}: the log store differs from what it should hold:{d}");
    }
}

// ---------------------------------------------------------------------------------------
// 1. Close, then reopen.
// ---------------------------------------------------------------------------------------

fn close_options() -> LogOptions {
    LogOptions {
        segment_bytes: 64 << 10,
        buffer_bytes: 256 << 10,
        ..LogOptions::default()
    }
}

/// Closes `store` and reopens it (twice: a reopen changes nothing either), checking
/// that it holds exactly what `model` says, in whole and in ranges.
async fn close_and_reopen(
    store: LogStore,
    open: &dyn Fn() -> LogStore,
    model: &Model,
    when: &str,
) -> LogStore {
    let mut store = store;
    let expected = model.seen();
    assert_seen(
        &seen(&mut store).await,
        &expected,
        &format!("{when}, before close"),
    );
    store.close().expect("close");
    drop(store);
    let mut store = open();
    assert_seen(
        &seen(&mut store).await,
        &expected,
        &format!("{when}, after reopen"),
    );
    // Ranges read from the WAL (nothing is cached after a reopen).
    let indexes: Vec<u64> = model.entries.keys().copied().collect();
    if let (Some(&first), Some(&last)) = (indexes.first(), indexes.last()) {
        let mid = first + (last - first) / 2;
        for (lo, hi) in [
            (first, first),
            (mid, mid + 3),
            (last.saturating_sub(2), last + 5),
        ] {
            let got = store.try_get_log_entries(lo..=hi).await.expect("a range");
            let want: Vec<Entry> = model
                .entries
                .range(lo..=hi)
                .map(|(_, e)| e.clone())
                .collect();
            assert!(
                got == want,
                "{when}: entries {lo}..={hi} after reopen differ"
            );
        }
    }
    store.close().expect("close");
    drop(store);
    let mut store = open();
    assert_seen(
        &seen(&mut store).await,
        &expected,
        &format!("{when}, after a second reopen"),
    );
    store
}

async fn close_then_reopen(storage: Arc<dyn Storage>, dir: &Path) {
    let open = || LogStore::open(storage.clone(), dir, close_options()).expect("open the log");
    let mut store = open();
    let mut m = Model::default();

    // 1300 entries of about 1 KiB: about twenty 64 KiB segments, and more entries than
    // the store keeps cached once durable (so some are read back from the WAL).
    step(&mut store, &mut m, Op::Vote(Vote::new(1, 1))).await;
    for first in (1..=1300u64).step_by(50) {
        let batch = (first..first + 50)
            .map(|i| normal(1, 1, i, 1000 + (i % 48) as usize, i as u8))
            .collect();
        step(&mut store, &mut m, Op::Append(batch)).await;
    }
    // A new leader overwrites the tail.
    step(&mut store, &mut m, Op::Vote(Vote::new_committed(2, 2))).await;
    step(
        &mut store,
        &mut m,
        Op::TruncateAfter(Some(log_id(1, 1, 1250))),
    )
    .await;
    let batch = (1251..=1300).map(|i| normal(2, 2, i, 900, 0xA5)).collect();
    step(&mut store, &mut m, Op::Append(batch)).await;
    step(&mut store, &mut m, Op::Committed(Some(log_id(2, 2, 1280)))).await;

    // The oldest entries are read back from the WAL, the newest from memory.
    assert_seen(&seen(&mut store).await, &m.seen(), "before any purge");

    // A purge inside the log, dropping whole segments.
    let (segments, start) = (store.wal().segments().len(), store.wal().start_lsn());
    step(&mut store, &mut m, Op::Purge(log_id(1, 1, 700))).await;
    assert!(
        store.wal().segments().len() + 5 <= segments && store.wal().start_lsn() > start,
        "purging 700 entries of 1 KiB removes several 64 KiB segments ({} -> {} segments)",
        segments,
        store.wal().segments().len()
    );
    let mut store = close_and_reopen(store, &open, &m, "purged inside the log").await;

    // Entries appended without waiting: close makes them durable, and says so.
    let batch: Vec<Entry> = (1301..=1310).map(|i| normal(2, 2, i, 700, 0x3C)).collect();
    let (tx, rx) = TypeConfig::oneshot();
    store
        .append(batch.clone(), IOFlushed::signal(tx))
        .await
        .expect("append");
    m.apply(&Op::Append(batch));
    let mut store = close_and_reopen(store, &open, &m, "appended, then closed").await;
    let flushed = tokio::time::timeout(PATIENCE, rx)
        .await
        .expect("the callback ran");
    assert!(
        matches!(flushed, Ok(Ok(()))),
        "close made the entries durable, so their callback reports success: {flushed:?}"
    );

    // A purge at the last index: no entry left, the purge point is the last log id.
    step(&mut store, &mut m, Op::Committed(Some(log_id(2, 2, 1310)))).await;
    step(&mut store, &mut m, Op::Purge(log_id(2, 2, 1310))).await;
    assert!(m.entries.is_empty());
    assert!(
        store.wal().segments().len() <= 2,
        "with no entry left, the segments below the re-written records go: {:?}",
        store.wal().segments()
    );
    let mut store = close_and_reopen(store, &open, &m, "purged every entry").await;

    // Entries above the cut read back, and so does a further leader's vote.
    step(&mut store, &mut m, Op::Vote(Vote::new_committed(3, 1))).await;
    let batch = (1311..=1320).map(|i| normal(3, 1, i, 1100, 0x5A)).collect();
    step(&mut store, &mut m, Op::Append(batch)).await;
    let mut store = close_and_reopen(store, &open, &m, "appended above the cut").await;

    // A purge beyond the last entry (as after installing a snapshot from the leader).
    step(&mut store, &mut m, Op::Purge(log_id(3, 1, 1330))).await;
    step(&mut store, &mut m, Op::Committed(Some(log_id(3, 1, 1330)))).await;
    let mut store = close_and_reopen(store, &open, &m, "purged beyond the log").await;
    let batch = (1331..=1335).map(|i| normal(3, 1, i, 100, 0x77)).collect();
    step(&mut store, &mut m, Op::Append(batch)).await;
    let store = close_and_reopen(store, &open, &m, "appended after the snapshot's purge").await;
    store.close().expect("close");
}

#[test]
fn a_closed_log_store_reopens_holding_exactly_what_it_held_on_the_real_disk() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
    runtime().block_on(close_then_reopen(storage, &dir.path().join("raft-log")));
}

#[test]
fn a_closed_log_store_reopens_holding_exactly_what_it_held_on_the_simulated_disk() {
    let sim = SimStorage::new(1);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    runtime().block_on(close_then_reopen(storage, Path::new(LOG_DIR)));
}

// ---------------------------------------------------------------------------------------
// 2. Power loss and process kill at many points.
// ---------------------------------------------------------------------------------------

const SWEEP_SEEDS: u64 = 500;
const ROUNDS: usize = 4;

/// Small segments, so that purges drop whole segments often.
fn sweep_options() -> LogOptions {
    LogOptions {
        segment_bytes: 16 << 10,
        buffer_bytes: 64 << 10,
        ..LogOptions::default()
    }
}

/// How a round ends.
#[derive(Clone, Copy, Debug)]
enum Halt {
    /// `crash_at_op(n)`, armed before the open.
    PowerLossAtOp(u64),
    /// `kill_at_op(n)`, armed before the open.
    KillAtOp(u64),
    /// `crash()` before the `n`-th operation of the round.
    PowerLossBefore(usize),
    /// `kill_process()` before the `n`-th operation of the round.
    KillBefore(usize),
}

/// What a call said about durability.
enum Ack {
    /// It returned once durable (with everything before it).
    Durable,
    /// Durable once this callback reports success.
    Callback(tokio::sync::oneshot::Receiver<io::Result<()>>),
    /// Nothing (it rides on what is made durable next).
    Nothing,
}

#[derive(Default, Debug)]
struct Totals {
    rounds: u64,
    halts_in_open: u64,
    acknowledged_ops: u64,
    lost_unacknowledged: u64,
    kept_unacknowledged: u64,
    purges_dropping_segments: u64,
    power_losses: u64,
    kills: u64,
}

struct Sweep {
    seed: u64,
    sim: SimStorage,
    rng: Rng,
    /// What the disk holds for sure: what the last successful open showed.
    baseline: Model,
    /// Calls attempted since then, in order.
    history: Vec<Op>,
    /// How many of `history` are acknowledged durable (a prefix: the stream is ordered).
    acked: usize,
}

impl Sweep {
    fn open(&self) -> io::Result<LogStore> {
        LogStore::open(Arc::new(self.sim.pinned()), LOG_DIR, sweep_options())
    }

    fn fail(&self, what: &str) -> ! {
        let ops: Vec<String> = self
            .history
            .iter()
            .enumerate()
            .map(|(i, op)| format!("  {i}: {}", op.describe()))
            .collect();
        panic!(
            "seed {}: {what}\n baseline: {}\n {} of these acknowledged:\n{}",
            self.seed,
            self.baseline.seen().describe(),
            self.acked,
            ops.join("\n")
        );
    }

    /// A call openraft could make next on a store that shows `live`.
    fn next_op(&mut self, live: &Model) -> Option<Op> {
        let rng = &mut self.rng;
        let (term, node) = live
            .vote
            .map_or((0, 1), |v| (v.leader_id.term, v.leader_id.node_id));
        let last = live.last_log_id();
        let next = last.map_or(0, |l| l.index() + 1);
        let committed_index = live.committed.map(|c| c.index());
        let purged_index = live.purged.map(|p| p.index());
        let roll = rng.range(0, 99);
        Some(match roll {
            0..=11 => Op::Vote(match live.vote {
                Some(v) if !v.is_committed() && rng.chance(50) => Vote::new_committed(term, node),
                _ => {
                    let n = rng.range(1, 3);
                    if rng.chance(50) {
                        Vote::new(term + 1, n)
                    } else {
                        Vote::new_committed(term + 1, n)
                    }
                }
            }),
            12..=59 => {
                let k = rng.range(1, 4);
                let entries = (next..next + k)
                    .map(|i| {
                        if rng.chance(10) {
                            Entry::new_blank(log_id(term, node, i))
                        } else {
                            let len = rng.range(0, 1500) as usize;
                            normal(term, node, i, len, rng.next() as u8)
                        }
                    })
                    .collect();
                Op::Append(entries)
            }
            60..=69 => {
                // Never below the committed entry or the purge point.
                let floor = committed_index.max(purged_index);
                let mut candidates: Vec<Option<LogId>> = live
                    .entries
                    .range(floor.unwrap_or(0)..)
                    .map(|(_, e)| Some(e.log_id()))
                    .collect();
                match (floor, live.purged) {
                    (None, _) => candidates.push(None),
                    (Some(f), Some(p)) if p.index() == f => candidates.push(Some(p)),
                    _ => {}
                }
                if candidates.is_empty() {
                    return None;
                }
                Op::TruncateAfter(*rng.pick(&candidates))
            }
            70..=84 => {
                let above: Vec<LogId> = live
                    .entries
                    .range(committed_index.map_or(0, |c| c + 1)..)
                    .map(|(_, e)| e.log_id())
                    .collect();
                if above.is_empty() {
                    return None;
                }
                Op::Committed(Some(*rng.pick(&above)))
            }
            _ => {
                let committed = live.committed?;
                if live.purged >= Some(committed) {
                    return None;
                }
                if rng.chance(30) {
                    Op::Purge(committed)
                } else {
                    let ids: Vec<LogId> = live
                        .entries
                        .range(purged_index.map_or(0, |p| p + 1)..=committed.index())
                        .map(|(_, e)| e.log_id())
                        .collect();
                    Op::Purge(*rng.pick(&ids))
                }
            }
        })
    }

    /// Checks a freshly opened store against what was asked of it and acknowledged, then
    /// takes what it shows as the new baseline (the open made it durable).
    async fn check(&mut self, store: &mut LogStore, totals: &mut Totals) {
        let s = seen(store).await;
        // No hole, and the log state agrees with the entries.
        for w in s.entries.windows(2) {
            if w[1].index() != w[0].index() + 1 {
                self.fail(&format!(
                    "a hole between {} and {}: {}",
                    w[0].log_id(),
                    w[1].log_id(),
                    s.describe()
                ));
            }
        }
        let purged = s.state.last_purged_log_id;
        if let (Some(p), Some(first)) = (purged, s.entries.first()) {
            if first.index() != p.index() + 1 {
                self.fail(&format!(
                    "entries do not start right after the purge point: {}",
                    s.describe()
                ));
            }
        }
        if s.state.last_log_id != s.entries.last().map(|e| e.log_id()).or(purged) {
            self.fail(&format!(
                "the last log id is not the last entry's: {}",
                s.describe()
            ));
        }
        // What was acknowledged: the state after the first `acked` calls.
        let mut durable = self.baseline.clone();
        self.history[..self.acked]
            .iter()
            .for_each(|op| durable.apply(op));
        let later_vote = self.history[self.acked..]
            .iter()
            .any(|op| matches!(op, Op::Vote(_)));
        match (s.vote, durable.vote) {
            (_, None) => {}
            (None, Some(v)) => self.fail(&format!("the acknowledged vote {v} is lost")),
            (Some(got), Some(v)) => {
                let ok = if later_vote { got >= v } else { got == v };
                if !ok {
                    self.fail(&format!("vote {got} after reopen, {v} was acknowledged"));
                }
            }
        }
        if purged < durable.purged {
            self.fail(&format!(
                "purge point {:?} after reopen, {:?} was durable",
                purged.map(|p| p.to_string()),
                durable.purged.map(|p| p.to_string())
            ));
        }
        let removed_later = |index: u64| {
            self.history[self.acked..].iter().any(|op| match op {
                Op::TruncateAfter(l) => l.map_or(0, |l| l.index() + 1) <= index,
                Op::Purge(p) => p.index() >= index,
                Op::Append(es) => es[0].index() <= index,
                _ => false,
            })
        };
        let present: BTreeMap<u64, &Entry> = s.entries.iter().map(|e| (e.index(), e)).collect();
        for (i, e) in &durable.entries {
            if present.get(i) != Some(&e) && !removed_later(*i) {
                self.fail(&format!(
                    "acknowledged entry {} is {}: {}",
                    e.log_id(),
                    present
                        .get(i)
                        .map_or("missing".into(), |g| format!("replaced by {}", g.log_id())),
                    s.describe()
                ));
            }
        }
        // The whole of it: the store shows the state after some prefix of the calls (an
        // append's entries one by one), no shorter than the acknowledged one.
        let mut m = self.baseline.clone();
        let mut at = if self.acked == 0 && m.matches(&s) {
            Some(0)
        } else {
            None
        };
        'walk: for (i, op) in self.history.iter().enumerate() {
            if at.is_some() {
                break;
            }
            match op {
                Op::Append(es) => {
                    for (j, e) in es.iter().enumerate() {
                        m.append_one(e);
                        let whole = j + 1 == es.len();
                        // Part of an append only if it was not acknowledged.
                        if (i >= self.acked || (whole && i + 1 >= self.acked)) && m.matches(&s) {
                            at = Some(i + 1);
                            break 'walk;
                        }
                    }
                }
                op => {
                    m.apply(op);
                    if i + 1 >= self.acked && m.matches(&s) {
                        at = Some(i + 1);
                    }
                }
            }
        }
        let Some(at) = at else {
            self.fail(&format!(
                "the reopened store is not what any prefix of the calls left: {}",
                s.describe()
            ));
        };
        if at < self.history.len() {
            totals.lost_unacknowledged += 1;
        }
        if at > self.acked {
            totals.kept_unacknowledged += 1;
        }
        totals.acknowledged_ops += self.acked as u64;
        self.baseline = Model::from_seen(&s);
        self.history.clear();
        self.acked = 0;
    }
}

/// Runs `op` on `store`; says what acknowledges it.
async fn exec(store: &mut LogStore, op: &Op, totals: &mut Totals) -> io::Result<Ack> {
    Ok(match op {
        Op::Vote(v) => {
            store.save_vote(v).await?;
            Ack::Durable
        }
        Op::Append(es) => {
            let (tx, rx) = TypeConfig::oneshot();
            store.append(es.clone(), IOFlushed::signal(tx)).await?;
            Ack::Callback(rx)
        }
        Op::TruncateAfter(l) => {
            store.truncate_after(*l).await?;
            Ack::Nothing
        }
        Op::Purge(p) => {
            let before = store.wal().segments().len();
            store.purge(*p).await?;
            if store.wal().segments().len() < before {
                totals.purges_dropping_segments += 1;
            }
            Ack::Durable
        }
        Op::Committed(c) => {
            store.save_committed(*c).await?;
            Ack::Nothing
        }
    })
}

impl Sweep {
    /// One incarnation: open (check what it shows), run calls, halt.
    async fn round(&mut self, totals: &mut Totals) {
        totals.rounds += 1;
        let incarnation = self.sim.incarnation();
        let ops = self.rng.range(5, 40) as usize;
        let halt = match self.rng.range(0, 3) {
            0 => Halt::PowerLossAtOp(self.rng.range(1, 150)),
            1 => Halt::KillAtOp(self.rng.range(1, 150)),
            2 => Halt::PowerLossBefore(self.rng.range(0, ops as u64) as usize),
            _ => Halt::KillBefore(self.rng.range(0, ops as u64) as usize),
        };
        match halt {
            Halt::PowerLossAtOp(n) => self.sim.crash_at_op(n),
            Halt::KillAtOp(n) => self.sim.kill_at_op(n),
            _ => {}
        }
        let mut store = match self.open() {
            Ok(store) => store,
            Err(e) => {
                if self.sim.incarnation() == incarnation {
                    self.fail(&format!("open failed without a halt ({halt:?}): {e}"));
                }
                totals.halts_in_open += 1;
                self.sim.disarm_crash();
                return;
            }
        };
        self.check(&mut store, totals).await;
        let mut live = self.baseline.clone();
        let mut pending = Vec::new();
        for n in 0..ops {
            if self.sim.incarnation() != incarnation {
                break;
            }
            match halt {
                Halt::PowerLossBefore(at) if at == n => self.sim.crash(),
                Halt::KillBefore(at) if at == n => self.sim.kill_process(),
                _ => {}
            }
            if self.sim.incarnation() != incarnation {
                break;
            }
            let Some(op) = self.next_op(&live) else {
                continue;
            };
            live.apply(&op);
            self.history.push(op.clone());
            let done = self.history.len();
            let result = tokio::time::timeout(PATIENCE, exec(&mut store, &op, totals))
                .await
                .unwrap_or_else(|_| self.fail(&format!("{} hangs", op.describe())));
            match result {
                Ok(Ack::Durable) => self.acked = done,
                Ok(Ack::Callback(mut rx)) => {
                    if self.rng.chance(40) {
                        let r = tokio::time::timeout(PATIENCE, &mut rx)
                            .await
                            .unwrap_or_else(|_| self.fail("an append's callback never ran"));
                        if let Ok(Ok(())) = r {
                            self.acked = done;
                        }
                    } else {
                        pending.push((done, rx));
                    }
                }
                Ok(Ack::Nothing) => {}
                Err(e) => {
                    if self.sim.incarnation() == incarnation {
                        self.fail(&format!("{} failed without a halt: {e}", op.describe()));
                    }
                    break;
                }
            }
        }
        if self.sim.incarnation() == incarnation {
            if self.rng.chance(50) {
                self.sim.crash();
            } else {
                self.sim.kill_process();
            }
        }
        self.sim.disarm_crash();
        // The stale store's drop stops its threads: every callback has run after it.
        drop(store);
        for (done, mut rx) in pending {
            if let Ok(Ok(())) = rx.try_recv() {
                self.acked = self.acked.max(done);
            }
        }
    }
}

#[test]
fn after_a_power_loss_or_a_process_kill_at_any_point_the_log_store_holds_a_prefix_of_its_calls_covering_all_it_acknowledged(
) {
    let rt = runtime();
    let mut totals = Totals::default();
    for seed in 0..SWEEP_SEEDS {
        let sim = SimStorage::new(seed);
        let mut sweep = Sweep {
            seed,
            sim: sim.clone(),
            rng: Rng::new(seed),
            baseline: Model::default(),
            history: Vec::new(),
            acked: 0,
        };
        rt.block_on(async {
            for _ in 0..ROUNDS {
                sweep.round(&mut totals).await;
            }
            // The last check: after whatever the last round ended with.
            sim.disarm_crash();
            let mut store = sweep
                .open()
                .unwrap_or_else(|e| sweep.fail(&format!("reopen: {e}")));
            sweep.check(&mut store, &mut totals).await;
            store.close().expect("close");
        });
        totals.power_losses += sim.crashed_count();
        totals.kills += sim.killed_count();
    }
    eprintln!("{totals:?}");
    // The sweep exercised what it is for.
    assert!(totals.halts_in_open > 0, "{totals:?}");
    assert!(totals.lost_unacknowledged > 0, "{totals:?}");
    assert!(totals.kept_unacknowledged > 0, "{totals:?}");
    assert!(totals.purges_dropping_segments > 20, "{totals:?}");
    assert!(totals.power_losses > 50 && totals.kills > 50, "{totals:?}");
}

/// Halts (`kill`: a process kill, else a power loss) at each disk operation of a purge
/// that drops whole segments in turn, until one purge finishes unharmed: the reopened
/// store is the log before the purge or after it, never anything else, and a purge
/// asked again goes through.
async fn halt_during_purge(kill: bool) -> (u64, u64) {
    let (mut befores, mut afters) = (0, 0);
    for n in 1.. {
        let sim = SimStorage::new(n);
        let open = || LogStore::open(Arc::new(sim.pinned()), LOG_DIR, sweep_options());
        let mut store = open().expect("open");
        let mut m = Model::default();
        step(&mut store, &mut m, Op::Vote(Vote::new_committed(1, 1))).await;
        let batch = (1..=200).map(|i| normal(1, 1, i, 800, i as u8)).collect();
        step(&mut store, &mut m, Op::Append(batch)).await;
        step(&mut store, &mut m, Op::Committed(Some(log_id(1, 1, 150)))).await;
        // Everything before the purge is durable: the halt can only take the purge.
        store.wal().sync().expect("sync");
        let before = m.clone();
        let purge = Op::Purge(log_id(1, 1, 120));
        m.apply(&purge);
        let after = m;
        let segments = store.wal().segments().len();
        if kill {
            sim.kill_at_op(n);
        } else {
            sim.crash_at_op(n);
        }
        let result = store.purge(log_id(1, 1, 120)).await;
        if sim.incarnation() == 0 {
            result.expect("a purge without a halt");
            sim.disarm_crash();
            assert!(store.wal().segments().len() + 4 <= segments);
            store.close().expect("close");
            assert!(n > 3, "a purge takes more than {n} disk operations");
            break;
        }
        drop(store);
        let mut store = open().unwrap_or_else(|e| panic!("halt at op {n}: reopen: {e}"));
        let got = seen(&mut store).await;
        if after.matches(&got) {
            afters += 1;
        } else if before.matches(&got) {
            befores += 1;
            step(&mut store, &mut before.clone(), purge).await;
            store.close().expect("close");
            let mut store = open().expect("reopen");
            assert_seen(
                &seen(&mut store).await,
                &after.seen(),
                &format!("halt at op {n}, purged again, reopened"),
            );
        } else {
            let d = got.difference(&after.seen()).unwrap_or_default();
            panic!("halt at op {n}: neither the log before the purge nor after it:{d}");
        }
    }
    (befores, afters)
}

#[test]
fn a_power_loss_at_each_step_of_a_purge_leaves_the_log_before_or_after_it() {
    let (befores, afters) = runtime().block_on(halt_during_purge(false));
    assert!(
        befores > 0 && afters > 0,
        "before {befores} times, after {afters} times"
    );
}

#[test]
fn a_process_kill_at_each_step_of_a_purge_leaves_the_log_before_or_after_it() {
    let (befores, afters) = runtime().block_on(halt_during_purge(true));
    assert!(
        befores > 0 && afters > 0,
        "before {befores} times, after {afters} times"
    );
}

// ---------------------------------------------------------------------------------------
// 3. The state machine.
// ---------------------------------------------------------------------------------------

type Data = BTreeMap<Vec<u8>, Vec<u8>>;

/// What the state machine should hold after each applied index.
struct SmModel {
    /// Data and membership after each index applied (`None`: before any).
    after: BTreeMap<u64, (Data, StoredMembership)>,
    data: Data,
    membership: StoredMembership,
    entries: Vec<Entry>,
}

impl SmModel {
    fn new() -> SmModel {
        SmModel {
            after: BTreeMap::new(),
            data: Data::new(),
            membership: StoredMembership::default(),
            entries: Vec::new(),
        }
    }

    fn apply(&mut self, e: &Entry) {
        match &e.payload {
            openraft::EntryPayload::Blank => {}
            openraft::EntryPayload::Normal(proposal) => {
                // Each batch of the entry is atomic on its own.
                for batch in proposal.batches.iter() {
                    let mut next = self.data.clone();
                    let mut ok = true;
                    for c in &batch.commands {
                        match c {
                            Command::Put { key, value } => {
                                next.insert(key.clone(), value.clone());
                            }
                            Command::Delete { key } => {
                                next.remove(key);
                            }
                            Command::CompareAndSet { key, expected, new } => {
                                if next.get(key) != expected.as_ref() {
                                    ok = false;
                                    break;
                                }
                                match new {
                                    Some(v) => next.insert(key.clone(), v.clone()),
                                    None => next.remove(key),
                                };
                            }
                        }
                    }
                    if ok {
                        self.data = next;
                    }
                }
            }
            openraft::EntryPayload::Membership(m) => {
                self.membership = StoredMembership::new(Some(e.log_id()), m.clone());
            }
        }
        self.after
            .insert(e.index(), (self.data.clone(), self.membership.clone()));
        self.entries.push(e.clone());
    }

    /// `count` entries from index `next`: batches of puts, deletes and compare-and-sets
    /// over a small key space (some checks fail), a blank now and then, a membership at
    /// index 2.
    fn generate(&mut self, rng: &mut Rng, term: u64, count: u64) -> Vec<Entry> {
        let next = self.entries.last().map_or(1, |e| e.index() + 1);
        let mut out = Vec::new();
        for i in next..next + count {
            let id = log_id(term, 1, i);
            let e = if i == 2 {
                Entry::new_membership(
                    id,
                    Membership::new_with_defaults(vec![BTreeSet::from([1, 2, 3])], []),
                )
            } else if rng.chance(8) {
                Entry::new_blank(id)
            } else {
                let mut b = Batch::new();
                for _ in 0..rng.range(1, 4) {
                    let key = format!("key{}", rng.range(0, 30)).into_bytes();
                    b = match rng.range(0, 9) {
                        0 | 1 => b.delete(key),
                        2 | 3 => {
                            let expected = if rng.chance(70) {
                                self.data.get(&key).cloned()
                            } else {
                                Some(b"never".to_vec())
                            };
                            let new = rng.chance(80).then(|| format!("cas{i}").into_bytes());
                            b.compare_and_set(key, expected, new)
                        }
                        _ => b.put(key, vec![rng.next() as u8; rng.range(1, 200) as usize]),
                    };
                }
                Entry::new_normal(id, b.into())
            };
            self.apply(&e);
            out.push(e);
        }
        out
    }

    /// The applied state and data after `applied`.
    fn at(&self, applied: Option<LogId>) -> (Option<LogId>, StoredMembership, Data) {
        match applied {
            None => (None, StoredMembership::default(), Data::new()),
            Some(id) => {
                let (data, m) = self.after.get(&id.index()).expect("an applied index");
                (applied, m.clone(), data.clone())
            }
        }
    }
}

async fn apply(sm: &mut StateMachine, entries: Vec<Entry>) -> io::Result<()> {
    sm.apply(futures::stream::iter(
        entries.into_iter().map(|e| Ok((e, None))),
    ))
    .await
}

/// The applied state and data of `sm`.
async fn sm_state(sm: &mut StateMachine) -> (Option<LogId>, StoredMembership, Data) {
    let (applied, membership) = sm.applied_state().await.expect("applied_state");
    let data = sm.dump().expect("dump").into_iter().collect();
    (applied, membership, data)
}

fn describe_sm(s: &(Option<LogId>, StoredMembership, Data)) -> String {
    format!(
        "applied {:?}, membership {:?}, {} keys",
        s.0.map(|l| l.to_string()),
        s.1,
        s.2.len()
    )
}

async fn sm_close_then_reopen(storage: Arc<dyn Storage>, dir: &Path) {
    let open = || StateMachine::open(storage.clone(), dir, Options::small()).expect("open the SM");
    let mut rng = Rng::new(7);
    let mut model = SmModel::new();
    let mut sm = open();
    let mut snapshot = None;
    for (k, count) in [1u64, 1, 30, 60, 25].into_iter().enumerate() {
        let entries = model.generate(&mut rng, 1, count);
        apply(&mut sm, entries).await.expect("apply");
        if k == 3 {
            let mut b = sm.get_snapshot_builder().await;
            snapshot = Some(b.build_snapshot().await.expect("build_snapshot"));
        }
        let last = model.entries.last().map(|e| e.log_id());
        let expected = model.at(last);
        let got = sm_state(&mut sm).await;
        assert!(
            got == expected,
            "before close: {} != {}",
            describe_sm(&got),
            describe_sm(&expected)
        );
        sm.close().expect("close");
        drop(sm);
        sm = open();
        let got = sm_state(&mut sm).await;
        assert!(
            got == expected,
            "after reopen {k}: {} != {}",
            describe_sm(&got),
            describe_sm(&expected)
        );
    }
    let snapshot = snapshot.expect("built");
    let current = sm
        .get_current_snapshot()
        .await
        .expect("get_current_snapshot")
        .expect("the built snapshot survives the reopens");
    assert_eq!(current.meta, snapshot.meta);
    assert!(current.snapshot == snapshot.snapshot);
    sm.close().expect("close");
}

#[test]
fn a_closed_state_machine_reopens_with_its_applied_state_and_data_on_the_real_disk() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
    runtime().block_on(sm_close_then_reopen(storage, &dir.path().join("sm")));
}

#[test]
fn a_closed_state_machine_reopens_with_its_applied_state_and_data_on_the_simulated_disk() {
    let sim = SimStorage::new(3);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    runtime().block_on(sm_close_then_reopen(storage, Path::new(SM_DIR)));
}

fn open_sm(sim: &SimStorage) -> io::Result<StateMachine> {
    StateMachine::open(Arc::new(sim.pinned()), SM_DIR, Options::small())
}

#[test]
fn after_a_power_loss_or_kill_the_applied_position_never_goes_back_and_agrees_with_the_data() {
    let rt = runtime();
    let mut mid_apply_halts = 0;
    for seed in 0..24u64 {
        let sim = SimStorage::new(seed);
        let mut rng = Rng::new(seed);
        let mut model = SmModel::new();
        rt.block_on(async {
            let mut sm = open_sm(&sim).expect("open");
            let calls = rng.range(1, 6);
            let mut reached = None;
            for _ in 0..calls {
                let count = rng.range(1, 8);
                let entries = model.generate(&mut rng, 1, count);
                apply(&mut sm, entries).await.expect("apply");
                reached = model.entries.last().map(|e| e.log_id());
            }
            // Sometimes a last call the halt interrupts (or not).
            let kill = rng.chance(30);
            if rng.chance(50) {
                let n = rng.range(1, 6);
                if kill {
                    sim.kill_at_op(n);
                } else {
                    sim.crash_at_op(n);
                }
                let count = rng.range(1, 8);
                let entries = model.generate(&mut rng, 1, count);
                let incarnation = sim.incarnation();
                if apply(&mut sm, entries).await.is_ok() && sim.incarnation() == incarnation {
                    reached = model.entries.last().map(|e| e.log_id());
                } else {
                    mid_apply_halts += 1;
                }
            }
            if sim.incarnation() == 0 {
                if kill {
                    sim.kill_process();
                } else {
                    sim.crash();
                }
            }
            sim.disarm_crash();
            drop(sm);
            let mut sm = open_sm(&sim).expect("reopen");
            let got = sm_state(&mut sm).await;
            assert!(
                got.0 >= reached,
                "seed {seed}: applied {:?} after reopen, apply had returned at {:?}",
                got.0.map(|l| l.to_string()),
                reached.map(|l| l.to_string())
            );
            let expected = model.at(got.0);
            assert!(
                got == expected,
                "seed {seed}: the data disagree with the applied position: {} != {}",
                describe_sm(&got),
                describe_sm(&expected)
            );
            sm.close().expect("close");
        });
    }
    assert!(mid_apply_halts > 0, "some halts landed inside an apply");
}

#[test]
fn a_snapshot_built_before_a_power_loss_is_offered_after_it() {
    runtime().block_on(async {
        for seed in 0..6 {
            let sim = SimStorage::new(seed);
            let mut rng = Rng::new(seed);
            let mut model = SmModel::new();
            let mut sm = open_sm(&sim).expect("open");
            let entries = model.generate(&mut rng, 1, 40);
            apply(&mut sm, entries).await.expect("apply");
            let mut b = sm.get_snapshot_builder().await;
            let built = b.build_snapshot().await.expect("build_snapshot");
            sim.crash();
            drop((b, sm));
            let mut sm = open_sm(&sim).expect("reopen");
            let current = sm
                .get_current_snapshot()
                .await
                .expect("get_current_snapshot")
                .unwrap_or_else(|| panic!("seed {seed}: the built snapshot is gone"));
            assert_eq!(current.meta, built.meta, "seed {seed}");
            assert!(current.snapshot == built.snapshot, "seed {seed}");
            // The state machine is at least where the snapshot is.
            let got = sm_state(&mut sm).await;
            assert!(got.0 >= built.meta.last_log_id, "seed {seed}");
            sm.close().expect("close");
        }
    });
}

/// A snapshot, and the data it holds.
type Snap = (SnapshotMeta, SnapshotData, Data);

/// A snapshot of a state machine of its own with `count` entries of `term`.
async fn a_snapshot(seed: u64, term: u64, count: u64) -> Snap {
    let sim = SimStorage::new(seed);
    let mut rng = Rng::new(seed);
    let mut model = SmModel::new();
    let mut sm = open_sm(&sim).expect("open");
    let entries = model.generate(&mut rng, term, count);
    apply(&mut sm, entries).await.expect("apply");
    let mut b = sm.get_snapshot_builder().await;
    let snap = b.build_snapshot().await.expect("build_snapshot");
    let data = sm_state(&mut sm).await.2;
    assert!(data == model.data);
    sm.close().expect("close");
    (snap.meta, snap.snapshot, data)
}

/// What installing `snap` should leave.
fn installed(snap: &Snap) -> (Option<LogId>, StoredMembership, Data) {
    (
        snap.0.last_log_id,
        snap.0.last_membership.clone(),
        snap.2.clone(),
    )
}

/// A state machine on `sim` with entries of its own (term 1) after `installed_before`,
/// a snapshot it installed first (so that its live database is in a later generation).
async fn a_target(sim: &SimStorage, installed_before: Option<&Snap>) -> StateMachine {
    let mut rng = Rng::new(2000);
    let mut model = SmModel::new();
    let mut sm = open_sm(sim).expect("open");
    if let Some((meta, bytes, _)) = installed_before {
        sm.install_snapshot(meta, bytes.clone())
            .await
            .expect("install the first snapshot");
        // The entries continue the snapshot's.
        model
            .entries
            .push(Entry::new_blank(meta.last_log_id.expect("a last log id")));
    }
    let entries = model.generate(&mut rng, 1, 25);
    apply(&mut sm, entries).await.expect("apply");
    sm
}

/// Installs `snap` on a target (with `installed_before` installed first), loses power
/// right after the install returns, reopens: the installed state is there, and offered
/// as the current snapshot.
async fn install_then_power_loss(installed_before: Option<&Snap>, snap: &Snap) {
    for seed in 0..8 {
        install_then_power_loss_on(&SimStorage::new(seed), installed_before, snap).await;
    }
}

async fn install_then_power_loss_on(
    sim: &SimStorage,
    installed_before: Option<&Snap>,
    snap: &Snap,
) {
    let seed = sim.seed();
    let mut sm = a_target(sim, installed_before).await;
    sm.install_snapshot(&snap.0, snap.1.clone())
        .await
        .expect("install");
    sim.crash();
    drop(sm);
    let mut sm = open_sm(sim).expect("reopen");
    let got = sm_state(&mut sm).await;
    let expected = installed(snap);
    assert!(
        got == expected,
        "seed {seed}: {} != {}",
        describe_sm(&got),
        describe_sm(&expected)
    );
    let current = sm.get_current_snapshot().await.expect("read").expect("one");
    assert_eq!(current.meta, snap.0);
    // The reopened state machine goes on applying.
    let next = log_id(3, 1, snap.0.last_log_id.expect("an id").index() + 1);
    apply(
        &mut sm,
        vec![Entry::new_normal(
            next,
            Batch::new().put("after", "install").into(),
        )],
    )
    .await
    .expect("apply after the install");
    assert_eq!(sm.get(b"after").expect("get"), Some(b"install".to_vec()));
    sm.close().expect("close");
}

#[test]
fn a_snapshot_installed_before_a_power_loss_is_the_state_after_it() {
    runtime().block_on(async {
        let snap = a_snapshot(1000, 2, 60).await;
        install_then_power_loss(None, &snap).await;
    });
}

#[test]
fn a_second_snapshot_installed_before_a_power_loss_is_the_state_after_it() {
    runtime().block_on(async {
        let earlier = a_snapshot(3000, 1, 5).await;
        let snap = a_snapshot(1000, 2, 60).await;
        install_then_power_loss(Some(&earlier), &snap).await;
    });
}

/// Arms a power loss at each disk operation of an install in turn (on a target with
/// `installed_before` installed first), until one install finishes unharmed; after each
/// power loss the reopened state machine is the old state or the new one, whole. With
/// `reinstall`, an install interrupted so is then done again on the reopened state
/// machine. Returns how many times the old and the new state were found.
async fn power_loss_during_install(
    installed_before: Option<&Snap>,
    snap: &Snap,
    reinstall: bool,
) -> (u64, u64) {
    let new = installed(snap);
    let (mut olds, mut news) = (0, 0);
    for n in 1.. {
        let sim = SimStorage::new(n);
        let mut sm = a_target(&sim, installed_before).await;
        let old = sm_state(&mut sm).await;
        sim.crash_at_op(n);
        let result = sm.install_snapshot(&snap.0, snap.1.clone()).await;
        if sim.crashed_count() == 0 {
            // The install finished before its n-th disk operation: every one is covered.
            result.expect("an install without a power loss");
            sim.disarm_crash();
            sm.close().expect("close");
            assert!(n > 10, "an install takes more than {n} disk operations");
            break;
        }
        drop(sm);
        let mut sm =
            open_sm(&sim).unwrap_or_else(|e| panic!("power loss at op {n}: reopen failed: {e}"));
        let got = sm_state(&mut sm).await;
        if got == old {
            olds += 1;
            if reinstall {
                sm.install_snapshot(&snap.0, snap.1.clone())
                    .await
                    .unwrap_or_else(|e| panic!("power loss at op {n}: installing again: {e}"));
                assert!(
                    sm_state(&mut sm).await == new,
                    "power loss at op {n}: reinstalled"
                );
            }
        } else if got == new {
            news += 1;
        } else {
            panic!(
                "power loss at op {n}: neither the old state nor the new: {} (old: {}, new: {})",
                describe_sm(&got),
                describe_sm(&old),
                describe_sm(&new)
            );
        }
        sm.close().expect("close");
    }
    (olds, news)
}

#[test]
fn a_power_loss_during_a_snapshot_install_leaves_the_old_state_or_the_new_whole() {
    runtime().block_on(async {
        let snap = a_snapshot(1000, 2, 60).await;
        let (olds, news) = power_loss_during_install(None, &snap, false).await;
        assert!(olds > 0 && news > 0, "old {olds} times, new {news} times");
    });
}

#[test]
fn after_a_power_loss_during_an_install_the_next_install_succeeds_and_a_second_install_is_as_atomic(
) {
    runtime().block_on(async {
        let earlier = a_snapshot(3000, 1, 5).await;
        let snap = a_snapshot(1000, 2, 60).await;
        let (olds, _) = power_loss_during_install(None, &snap, true).await;
        assert!(olds > 0, "some power losses left the old state");
        let (olds, news) = power_loss_during_install(Some(&earlier), &snap, true).await;
        assert!(olds > 0 && news > 0, "old {olds} times, new {news} times");
    });
}

#[test]
fn a_state_machine_installs_a_second_snapshot() {
    runtime().block_on(async {
        let earlier = a_snapshot(3000, 1, 5).await;
        let snap = a_snapshot(1000, 2, 60).await;
        let sim = SimStorage::new(5);
        let mut sm = open_sm(&sim).expect("open");
        sm.install_snapshot(&earlier.0, earlier.1.clone())
            .await
            .expect("the first install");
        assert!(sm_state(&mut sm).await == installed(&earlier));
        sm.install_snapshot(&snap.0, snap.1.clone())
            .await
            .expect("the second install");
        assert!(sm_state(&mut sm).await == installed(&snap));
        sm.close().expect("close");
    });
}
