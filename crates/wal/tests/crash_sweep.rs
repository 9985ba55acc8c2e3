//! Crash sweep: several threads append and wait for durability over the simulated disk,
//! which fails at a seeded random point in one of four ways:
//!
//! * power loss (`crash_at_op`);
//! * a process kill (`kill_at_op`) that leaves the page cache behind, a reopen in the same
//!   boot, and a power loss at a random later point — possibly during that reopen's
//!   recovery, possibly while it works;
//! * an fsync that fails (EIO or ENOSPC, once or from then on; Linux drops the failed
//!   pages), then a kill or a power loss;
//! * any of the above followed by read errors during recovery, which must fail the open
//!   cleanly (an I/O error, never "corruption"), until the fault is cleared.
//!
//! After every halt the log is reopened and checked: every record that any incarnation
//! acknowledged durable — by `wait_durable`, or by reading it back after recovery — is
//! present and intact, in LSN order; nothing appears that was never written; a reopen
//! never reports corruption (the disk only ever does what real machines do); and the log
//! accepts appends again. Each seed ends with a power loss and a last check.
//!
//! One thread of each workload also truncates the log below its durable end every few
//! records, so segments are retired and recycled (their old frames left in place) all
//! through the sweep; a record below the recovered log's start counts as truncated, and
//! the start never passes what truncation asked for.
//!
//! Odd seeds run over a disk whose newly allocated segment space holds junk instead of
//! zeros (`common::JunkSpace`): the log writes no zeros into new segments (they are
//! allocated), and recovery must find the end of the log without them.

use crate::common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage};
use sluice_wal::{segment, Log, LogOptions, Lsn, WalError};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

const SEEDS: u64 = 2000;
const MAX_LEN: usize = 700;
/// Thread ids of the markers each check appends.
const MARKER: u32 = 9999;
/// The first thread of each workload truncates after every this many of its records.
const TRUNCATE_EVERY: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    PowerLoss,
    KillThenPowerLoss,
    FsyncFailure,
    ReadErrorsInRecovery,
}

const MODES: [Mode; 4] = [
    Mode::PowerLoss,
    Mode::KillThenPowerLoss,
    Mode::FsyncFailure,
    Mode::ReadErrorsInRecovery,
];

#[derive(Default)]
struct Totals {
    acknowledged: u64,
    recovered: u64,
    lost: u64,
    halts_mid_run: u64,
    kills: u64,
    halts_in_recovery: u64,
    failed_syncs: u64,
    refused_opens: u64,
    tails_cut: u64,
    recycled: u64,
}

/// What the test knows about one seed's log.
struct Seed {
    seed: u64,
    sim: SimStorage,
    opts: LogOptions,
    rng: StdRng,
    /// Records some incarnation acknowledged durable, with their LSNs.
    acked: HashMap<(u32, u32), Lsn>,
    /// The highest LSN truncation was asked to remove below.
    truncated_below: Lsn,
    /// Records ever handed to `append`.
    attempted: HashSet<(u32, u32)>,
    next_thread: u32,
    markers: u32,
    /// Segments the incarnations made from retired files.
    recycled: u64,
}

impl Seed {
    fn open(&self) -> sluice_wal::Result<Log> {
        let sim = self.sim.pinned();
        if self.seed % 2 == 1 {
            let junk = JunkSpace {
                sim,
                segment_bytes: self.opts.segment_bytes,
                seed: self.seed,
            };
            return Log::open(Arc::new(junk), DIR, self.opts);
        }
        Log::open(Arc::new(sim), DIR, self.opts)
    }

    /// Threads append and wait until they fail; acknowledged records are added to the
    /// model. Returns whether a thread saw an injected fault (an I/O error that is not a
    /// halt's).
    fn workload(&mut self, log: Log) -> bool {
        let threads = self.rng.gen_range(2..=4u32);
        let per_thread = self.rng.gen_range(5..=60u32);
        let base = self.next_thread;
        self.next_thread += threads;
        let acked = Mutex::new(Vec::new());
        let attempted = Mutex::new(Vec::new());
        let fault_seen = Mutex::new(false);
        let truncated_below = Mutex::new(self.truncated_below);
        std::thread::scope(|s| {
            for tid in base..base + threads {
                let (log, acked, attempted) = (&log, &acked, &attempted);
                let (fault_seen, truncated_below) = (&fault_seen, &truncated_below);
                s.spawn(move || {
                    for seq in 0..per_thread {
                        attempted.lock().unwrap().push((tid, seq));
                        let mut lsn = Lsn(0);
                        let durable = log
                            .append(&payload(tid, seq, MAX_LEN))
                            .and_then(|a| {
                                lsn = a.lsn;
                                log.wait_durable(a.end)
                            })
                            .and_then(|durable| {
                                if tid != base || seq % TRUNCATE_EVERY != 0 {
                                    return Ok(0);
                                }
                                let mut t = truncated_below.lock().unwrap();
                                *t = (*t).max(durable);
                                log.truncate_below(durable)
                            });
                        if let Err(e) = durable {
                            if let WalError::Io(io) | WalError::Poisoned(io) = &e {
                                if !SimStorage::is_crash_error(io) {
                                    *fault_seen.lock().unwrap() = true;
                                }
                            }
                            return;
                        }
                        acked.lock().unwrap().push(((tid, seq), lsn));
                    }
                });
            }
        });
        self.recycled += log.stats().segments_recycled;
        drop(log);
        self.acked.extend(acked.into_inner().unwrap());
        self.truncated_below = truncated_below.into_inner().unwrap();
        self.attempted.extend(attempted.into_inner().unwrap());
        fault_seen.into_inner().unwrap()
    }

    /// Opens the log for a round whose halt may come during recovery: `Some(log)` if it
    /// opened, `None` if the armed halt (or an injected fault, if `faults`) stopped it.
    fn open_for_round(&self, faults: bool, totals: &mut Totals) -> Option<Log> {
        let incarnation = self.sim.incarnation();
        match self.open() {
            Ok(log) => Some(log),
            Err(e) => {
                let seed = self.seed;
                assert!(
                    !matches!(e, WalError::Corruption { .. }),
                    "seed {seed}: {e}"
                );
                let halted = self.sim.incarnation() > incarnation;
                assert!(
                    halted || (faults && e.is_io()),
                    "seed {seed}: open failed without a halt or a fault: {e}"
                );
                totals.halts_in_recovery += u64::from(halted);
                None
            }
        }
    }

    /// Runs a workload on a freshly opened log (if it opens) and then makes sure the
    /// incarnation is over: if the armed halt did not fire, `halt` ends it. Returns
    /// whether an injected fault was seen.
    fn round(&mut self, faults: bool, halt: fn(&SimStorage), totals: &mut Totals) -> bool {
        let incarnation = self.sim.incarnation();
        let fault_seen = match self.open_for_round(faults, totals) {
            Some(log) => self.workload(log),
            None => faults,
        };
        if self.sim.incarnation() == incarnation {
            halt(&self.sim);
        } else {
            totals.halts_mid_run += 1;
        }
        self.sim.disarm_crash();
        fault_seen
    }

    /// Reopens and checks everything known; the reopened log's records count as
    /// acknowledged from then on (it reported them durable), and so does a new marker.
    fn check(&mut self, what: &str, totals: &mut Totals) {
        let seed = self.seed;
        self.sim.clear_faults();
        self.sim.disarm_crash();
        let log = self
            .open()
            .unwrap_or_else(|e| panic!("seed {seed} {what}: reopen failed: {e}"));
        totals.tails_cut += u64::from(log.recovery().cut_bytes > 0);
        let records = read_all(&log);
        let start = log.start_lsn();
        assert!(
            start <= segment::segment_start(self.truncated_below, self.opts.segment_bytes),
            "seed {seed} {what}: the log starts at {start}, past what truncation asked for"
        );
        let mut seen = HashMap::new();
        let mut last_seq: HashMap<u32, u32> = HashMap::new();
        let mut prev = None;
        for (lsn, p) in &records {
            assert!(prev < Some(*lsn), "seed {seed} {what}: LSNs not increasing");
            prev = Some(*lsn);
            let (t, q) = check_payload(p, MAX_LEN)
                .unwrap_or_else(|| panic!("seed {seed} {what}: record at {lsn} is not ours"));
            assert!(
                self.attempted.contains(&(t, q)),
                "seed {seed} {what}: record ({t},{q}) was never appended"
            );
            assert!(
                seen.insert((t, q), *lsn).is_none(),
                "seed {seed} {what}: ({t},{q}) twice"
            );
            if let Some(&before) = last_seq.get(&t) {
                assert!(before < q, "seed {seed} {what}: thread {t} out of order");
            }
            last_seq.insert(t, q);
        }
        // Truncation gave up the records below the start.
        let lost: Vec<_> = self
            .acked
            .iter()
            .filter(|(k, &lsn)| lsn >= start && !seen.contains_key(k))
            .collect();
        totals.lost += lost.len() as u64;
        assert!(
            lost.is_empty(),
            "seed {seed} {what}: acknowledged records lost: {lost:?}"
        );
        totals.recovered += records.len() as u64;
        self.acked.extend(seen);

        let marker = (MARKER, self.markers);
        self.markers += 1;
        self.attempted.insert(marker);
        let a = log
            .append(&payload(marker.0, marker.1, MAX_LEN))
            .expect("append after recovery");
        log.wait_durable(a.end).expect("durable after recovery");
        self.acked.insert(marker, a.lsn);
        assert_eq!(log.close().unwrap(), a.end);
    }
}

fn power_loss(sim: &SimStorage) {
    sim.crash();
}

fn kill(sim: &SimStorage) {
    sim.kill_process();
}

fn run_seed(seed: u64, totals: &mut Totals) {
    let mut s = Seed {
        seed,
        sim: SimStorage::new(seed),
        opts: small_options(),
        rng: StdRng::seed_from_u64(seed),
        acked: HashMap::new(),
        truncated_below: Lsn(0),
        attempted: HashSet::new(),
        next_thread: 0,
        markers: 0,
        recycled: 0,
    };
    for round in 0..2u64 {
        let mode = MODES[((seed + round) % MODES.len() as u64) as usize];
        let what = format!("round {round} {mode:?}");
        match mode {
            Mode::PowerLoss => {
                s.sim.crash_at_op(s.rng.gen_range(1..=120));
                s.round(false, power_loss, totals);
            }
            Mode::KillThenPowerLoss => {
                let kills = s.sim.killed_count();
                s.sim.kill_at_op(s.rng.gen_range(1..=120));
                s.round(false, kill, totals);
                totals.kills += s.sim.killed_count() - kills;
                // The next incarnation, in the same boot: it recovers from the page cache,
                // reports what it found as durable, works, and loses power somewhere.
                s.sim.crash_at_op(s.rng.gen_range(1..=80));
                let incarnation = s.sim.incarnation();
                if let Some(log) = s.open_for_round(false, totals) {
                    let found: Vec<_> = read_all(&log)
                        .iter()
                        .map(|(lsn, p)| (check_payload(p, MAX_LEN).expect("ours"), *lsn))
                        .collect();
                    s.acked.extend(found);
                    s.workload(log);
                }
                if s.sim.incarnation() == incarnation {
                    s.sim.crash();
                }
                s.sim.disarm_crash();
            }
            Mode::FsyncFailure => {
                let kind = if s.rng.gen_bool(0.5) {
                    FaultKind::Eio
                } else {
                    FaultKind::Enospc
                };
                let mut plan = FaultPlan::new(FaultOp::Sync, s.rng.gen_range(1..=20), kind);
                if s.rng.gen_bool(0.5) {
                    plan = plan.persistent();
                }
                s.sim.inject(plan);
                let halt = if s.rng.gen_bool(0.5) {
                    kill
                } else {
                    power_loss
                };
                let fault_seen = s.round(true, halt, totals);
                totals.failed_syncs += u64::from(fault_seen);
                s.sim.clear_faults();
            }
            Mode::ReadErrorsInRecovery => {
                s.sim.crash_at_op(s.rng.gen_range(1..=120));
                let halt = if s.rng.gen_bool(0.5) {
                    kill
                } else {
                    power_loss
                };
                s.round(false, halt, totals);
                let mut plan =
                    FaultPlan::new(FaultOp::Read, s.rng.gen_range(1..=8), FaultKind::Eio);
                if s.rng.gen_bool(0.5) {
                    plan = plan.persistent();
                }
                s.sim.inject(plan);
                match s.open() {
                    Ok(log) => drop(log), // the fault came after recovery's reads
                    Err(e) => {
                        assert!(
                            e.is_io() && !matches!(e, WalError::Corruption { .. }),
                            "seed {seed} {what}: a read error must fail the open as I/O: {e}"
                        );
                        totals.refused_opens += 1;
                    }
                }
                s.sim.clear_faults();
            }
        }
        s.check(&what, totals);
    }
    // Everything any incarnation acknowledged survives one more power loss.
    s.sim.crash();
    s.check("final power loss", totals);
    totals.acknowledged += s.acked.len() as u64;
    totals.recycled += s.recycled;
}

#[test]
fn acknowledged_records_survive_crashes() {
    let mut totals = Totals::default();
    for seed in 0..SEEDS {
        run_seed(seed, &mut totals);
    }
    println!(
        "wal crash sweep: {SEEDS} seeds; {} halts mid-run, {} in recovery, {} kills, {} \
         fsync-failure rounds, {} opens refused on read errors, {} torn tails cut, {} \
         segments recycled; acknowledged {}, recovered {}, lost {}",
        totals.halts_mid_run,
        totals.halts_in_recovery,
        totals.kills,
        totals.failed_syncs,
        totals.refused_opens,
        totals.tails_cut,
        totals.recycled,
        totals.acknowledged,
        totals.recovered,
        totals.lost
    );
    assert_eq!(totals.lost, 0);
    assert!(
        totals.acknowledged > SEEDS,
        "the sweep acknowledged too little to mean much"
    );
    assert!(
        totals.halts_mid_run > SEEDS / 2,
        "most halts must hit a running workload"
    );
    assert!(totals.kills > SEEDS / 8, "kills must happen");
    assert!(
        totals.failed_syncs > SEEDS / 8,
        "fsync failures must hit the log"
    );
    assert!(
        totals.halts_in_recovery > 0,
        "some halts must land in recovery"
    );
    assert!(
        totals.refused_opens > SEEDS / 16,
        "read errors must refuse opens"
    );
    assert!(
        totals.recycled > SEEDS / 4,
        "truncation must recycle segments"
    );
    assert!(
        totals.tails_cut > SEEDS / 10,
        "crashes must leave torn tails to recover from"
    );
}
