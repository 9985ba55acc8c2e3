//! Crash sweep of a horizontally partitioned log (2 and 3 directories) with the archiver
//! on: threads append and wait for durability, one of them truncating below its durable
//! end (which frees only archived segments), while the simulated disk loses power or the
//! process is killed at a seeded random operation — during work, archiving, truncation,
//! recycling or recovery.
//!
//! After every halt the log is reopened and checked: every record any incarnation
//! acknowledged durable is found, intact and in LSN order, in the log (at or above its
//! start) or in the archive (below it); the archive reads as a log of one directory with
//! no corruption and every record there is one that was written, at the LSN it was
//! written at; and every archived segment the log still holds is a byte-for-byte copy.

use crate::common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice_storage::{OpenOptions, SimStorage, Storage};
use sluice_wal::{segment, Log, Lsn, WalError};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const SEEDS_PER_LAYOUT: u64 = 300;
const MAX_LEN: usize = 700;
const ROUNDS: u32 = 3;
const ARCHIVE: &str = "/archive";

fn dirs(n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| PathBuf::from(format!("/dev{i}/log")))
        .collect()
}

#[derive(Default)]
struct Totals {
    acknowledged: u64,
    halts_mid_run: u64,
    halts_in_open: u64,
    archived_segments_checked: u64,
    records_only_in_archive: u64,
    archives_verified: u64,
}

struct Seed {
    seed: u64,
    sim: SimStorage,
    dirs: Vec<PathBuf>,
    rng: StdRng,
    /// Acknowledged records by LSN.
    acked: BTreeMap<Lsn, (u32, u32)>,
    next_thread: u32,
}

impl Seed {
    fn storage(&self) -> Arc<dyn Storage> {
        Arc::new(self.sim.pinned())
    }

    fn open(&self) -> sluice_wal::Result<Log> {
        Log::open_archived(self.storage(), &self.dirs, ARCHIVE, small_options())
    }

    /// Threads append and wait until the halt stops them.
    fn workload(&mut self, log: &Log) {
        let threads = self.rng.gen_range(2..=3u32);
        let per_thread = self.rng.gen_range(10..=80u32);
        let base = self.next_thread;
        self.next_thread += threads;
        let acked = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for tid in base..base + threads {
                let acked = &acked;
                s.spawn(move || {
                    for seq in 0..per_thread {
                        let r = log.append(&payload(tid, seq, MAX_LEN)).and_then(|a| {
                            log.wait_durable(a.end)?;
                            Ok(a.lsn)
                        });
                        let lsn = match r {
                            Ok(lsn) => lsn,
                            Err(_) => return,
                        };
                        acked.lock().unwrap().push((lsn, (tid, seq)));
                        if tid == base && seq % 6 == 5 && log.truncate_below(lsn).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        for (lsn, id) in acked.into_inner().unwrap() {
            assert!(self.acked.insert(lsn, id).is_none());
        }
    }

    fn check(&mut self, what: &str, totals: &mut Totals) {
        let seed = self.seed;
        self.sim.disarm_crash();
        let log = self
            .open()
            .unwrap_or_else(|e| panic!("seed {seed} {what}: reopen failed: {e}"));
        let start = log.start_lsn();
        let archived = log.archived_lsn().unwrap();
        assert!(
            archived >= start,
            "seed {seed} {what}: segments below {start} were freed, only {archived} archived"
        );
        // The log, from its start.
        let mut found: HashMap<Lsn, (u32, u32)> = HashMap::new();
        for (lsn, p) in read_all(&log) {
            let id = check_payload(&p, MAX_LEN)
                .unwrap_or_else(|| panic!("seed {seed} {what}: record at {lsn} is not ours"));
            found.insert(lsn, id);
        }
        // The archive, read as a log of one directory.
        let storage = self.storage();
        let archive = Log::open_read_only(storage.clone(), ARCHIVE, small_options())
            .unwrap_or_else(|e| panic!("seed {seed} {what}: archive does not open: {e}"));
        let archive_records = read_all(&archive);
        drop(archive);
        for (lsn, p) in archive_records {
            let id = check_payload(&p, MAX_LEN).unwrap_or_else(|| {
                panic!("seed {seed} {what}: archived record at {lsn} is not ours")
            });
            if let Some(other) = found.insert(lsn, id) {
                assert_eq!(
                    other, id,
                    "seed {seed} {what}: archive and log differ at {lsn}"
                );
            } else {
                totals.records_only_in_archive += 1;
            }
        }
        for (lsn, id) in &self.acked {
            assert_eq!(
                found.get(lsn),
                Some(id),
                "seed {seed} {what}: acknowledged record {id:?} at {lsn} lost (log starts at \
                 {start}, archived below {archived})"
            );
        }
        // Archived segments still in the log are complete copies.
        let s = log.segment_bytes();
        for name in storage.list(Path::new(ARCHIVE)).unwrap() {
            let Some(seg) = segment::parse_segment_name(&name) else {
                continue;
            };
            if seg < start || !log.segments().contains(&seg) {
                continue;
            }
            let dir = &self.dirs[(seg.0 / s) as usize % self.dirs.len()];
            let read = |path: &Path| {
                let f = storage.open(path, OpenOptions::READ_ONLY).unwrap();
                let mut b = vec![0u8; (segment::SEGMENT_HEADER_BYTES + s) as usize];
                f.read_exact_at(&mut b, 0).unwrap();
                b
            };
            assert!(
                read(&Path::new(ARCHIVE).join(&name)) == read(&dir.join(&name)),
                "seed {seed} {what}: archived {name} is not a copy"
            );
            totals.archived_segments_checked += 1;
        }
        // The reopened log reported these durable: they count from now on.
        for (lsn, id) in found.iter().filter(|(l, _)| **l >= start) {
            self.acked.insert(*lsn, *id);
        }
        let archiver_failed = log.archive_error();
        log.close().unwrap();
        // The reopened archiver listed every copy (and, closed, it is between copies: a
        // renamed copy has its entry unless the archiver stopped on an error): the
        // manifest names them all, each whole, and they hold one range of the log, up to
        // what the log counted archived.
        let report = sluice_wal::verify_archive(&*storage, Path::new(ARCHIVE))
            .unwrap_or_else(|e| panic!("seed {seed} {what}: verify_archive: {e}"));
        assert!(
            report.is_intact() && (report.unlisted.is_empty() || archiver_failed.is_some()),
            "seed {seed} {what}: {report}"
        );
        if let Some((_, end)) = report.reachable {
            assert!(
                end >= archived,
                "seed {seed} {what}: {report}, archived {archived}"
            );
        }
        totals.archives_verified += 1;
    }
}

fn run_seed(seed: u64, n: usize, totals: &mut Totals) {
    let mut s = Seed {
        seed,
        sim: SimStorage::new(seed),
        dirs: dirs(n),
        rng: StdRng::seed_from_u64(seed ^ (n as u64) << 32),
        acked: BTreeMap::new(),
        next_thread: 0,
    };
    for round in 0..ROUNDS {
        let at = s.rng.gen_range(1..=200);
        let kill = s.rng.gen_bool(0.3);
        if kill {
            s.sim.kill_at_op(at);
        } else {
            s.sim.crash_at_op(at);
        }
        let incarnation = s.sim.incarnation();
        match s.open() {
            Ok(log) => {
                s.workload(&log);
                drop(log);
            }
            Err(e) => {
                assert!(
                    !matches!(
                        e,
                        WalError::Corruption { .. } | WalError::InvalidArgument(_)
                    ),
                    "seed {seed}: {e}"
                );
                totals.halts_in_open += 1;
            }
        }
        if s.sim.incarnation() == incarnation {
            s.sim.crash();
        } else {
            totals.halts_mid_run += 1;
        }
        s.check(&format!("{n} dirs round {round}"), totals);
    }
    totals.acknowledged += s.acked.len() as u64;
}

fn sweep(n: usize) {
    let mut totals = Totals::default();
    for seed in 0..SEEDS_PER_LAYOUT {
        run_seed(seed, n, &mut totals);
    }
    println!(
        "partitioned crash sweep, {n} dirs: {SEEDS_PER_LAYOUT} seeds; {} halts mid-run, {} in \
         open; {} acknowledged; {} records found only in the archive; {} archived segments \
         compared; {} archives verified against their manifest",
        totals.halts_mid_run,
        totals.halts_in_open,
        totals.acknowledged,
        totals.records_only_in_archive,
        totals.archived_segments_checked,
        totals.archives_verified
    );
    assert!(
        totals.halts_mid_run > SEEDS_PER_LAYOUT,
        "halts must hit work"
    );
    assert!(
        totals.records_only_in_archive > 0,
        "truncation must free archived segments"
    );
    assert!(totals.archived_segments_checked > SEEDS_PER_LAYOUT / 2);
}

#[test]
fn acknowledged_records_survive_crashes_with_two_directories_and_the_archiver() {
    sweep(2);
}

#[test]
fn acknowledged_records_survive_crashes_with_three_directories_and_the_archiver() {
    sweep(3);
}

/// Named failure points of a partitioned, archived log: an archived copy renamed before
/// the archive directory's sync, a segment created or recycled and renamed before its
/// directory's sync, segments retired by truncation before the directory's sync. Each is
/// met at its first to fourth reach, under several seeds, with a process kill (a reopen
/// in the same boot, then a power loss), a power loss, or an EIO (then a power loss);
/// every acknowledged record must be found in the log or the archive, as above.
fn failpoint_sweep(n: usize) {
    use sluice_storage::failpoint::{ARCHIVE_RENAMED, SEGMENT_RENAMED, SEGMENT_RETIRED};
    use sluice_storage::{FailAction, FaultKind};
    let mut totals = Totals::default();
    let (mut runs, mut reached) = (0u64, 0u64);
    let mut reached_per_point = Vec::new();
    for point in [ARCHIVE_RENAMED, SEGMENT_RENAMED, SEGMENT_RETIRED] {
        let before = reached;
        for action in [
            FailAction::Kill,
            FailAction::PowerLoss,
            FailAction::Error(FaultKind::Eio),
        ] {
            for nth in 1..=4 {
                for seed in 0..5 {
                    let mut s = Seed {
                        seed,
                        sim: SimStorage::new(seed),
                        dirs: dirs(n),
                        rng: StdRng::seed_from_u64(seed ^ (nth << 8) ^ (n as u64) << 32),
                        acked: BTreeMap::new(),
                        next_thread: 0,
                    };
                    s.sim.set_failpoint(point, nth, action);
                    let incarnation = s.sim.incarnation();
                    match s.open() {
                        Ok(log) => {
                            s.workload(&log);
                            drop(log);
                        }
                        Err(e) => assert!(
                            !matches!(
                                e,
                                WalError::Corruption { .. } | WalError::InvalidArgument(_)
                            ),
                            "seed {seed}: {e}"
                        ),
                    }
                    runs += 1;
                    reached += (s.sim.failpoint_hits(point) >= nth) as u64;
                    s.sim.clear_failpoints();
                    let what = format!("{n} dirs, {point} reach {nth}, {action:?}");
                    if s.sim.incarnation() > incarnation {
                        totals.halts_mid_run += 1;
                    }
                    if action == FailAction::Kill {
                        s.check(&format!("{what}, reopened after the kill"), &mut totals);
                    }
                    s.sim.crash();
                    s.check(&what, &mut totals);
                    totals.acknowledged += s.acked.len() as u64;
                }
            }
        }
        reached_per_point.push((point, reached - before));
    }
    println!(
        "partitioned log, named failure points, {n} dirs: {runs} runs, {reached} reached their \
         point ({reached_per_point:?}), {} halted there; {} acknowledged; {} records found only \
         in the archive",
        totals.halts_mid_run, totals.acknowledged, totals.records_only_in_archive
    );
    for (point, r) in &reached_per_point {
        assert!(*r > 0, "no run reached {point}");
    }
    assert!(
        reached > runs / 2,
        "too few runs reached their point: {reached} of {runs}"
    );
    assert!(totals.halts_mid_run > runs / 4, "halts must hit work");
}

#[test]
fn acknowledged_records_survive_named_failure_points_with_two_directories() {
    failpoint_sweep(2);
}

#[test]
fn acknowledged_records_survive_named_failure_points_with_three_directories() {
    failpoint_sweep(3);
}
