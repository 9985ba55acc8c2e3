//! An outside review of the io_uring flush path (`LogOptions::flush = FlushPath::IoUring`,
//! `flush/ring.rs`): attacks on its durability, liveness and commit-path guarantees.
//! Each test states the guarantee it checks; a failing one is a finding.

use crate::common::{check_payload, payload, sim, small_options, DIR};
use sluice_storage::{
    DirIdentity, FaultKind, FaultOp, FaultPlan, FileHandle, IoRing, LockGuard, OpenOptions,
    OsStorage, SimStorage, Storage,
};
use sluice_wal::{FlushPath, GroupCommit, Log, LogOptions, Lsn, WalError};
use std::collections::BTreeSet;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs `body` on its own thread and fails the test if it does not finish in `limit`
/// (a hang fails instead of hanging CI).
fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(body());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: did not finish within {limit:?} (hung)")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            panic!("{what}: panicked (its message is above)")
        }
    }
}

fn ring_options() -> LogOptions {
    LogOptions {
        flush: FlushPath::IoUring,
        ..small_options()
    }
}

/// The calling thread's voluntary context switches (each one a sleep: a park, a futex
/// wait, a timed sleep), from /proc.
fn voluntary_switches() -> u64 {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap()
}

/// The calling thread's CPU time (user + system) in clock ticks, from /proc.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

// ---------------------------------------------------------------------------------------
// Finding candidates
// ---------------------------------------------------------------------------------------

/// A round that covers many small segments must not poison the log on real io_uring.
/// `segment_bytes = 4096` is a valid option (MIN_SEGMENT_BYTES) and a round may carry
/// up to the whole buffer: here ~100 KiB of released bytes flushed by one wait, i.e. one
/// round over ~25 segments. On the daemon path this works; on the ring path the round's
/// chain has 3 operations per segment (write, failure point, sync), more than the
/// ring's 32 entries, so `UringRing::submit` refuses it (`InvalidInput`) and the log is
/// poisoned: every later commit fails although nothing went wrong on the device.
#[test]
fn a_round_over_many_small_segments_does_not_poison_a_real_io_uring_log() {
    within(Duration::from_secs(60), "many-segment round", || {
        for flush in [FlushPath::Daemon, FlushPath::IoUring] {
            let dir = tempfile::tempdir().unwrap();
            let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
            let options = LogOptions {
                segment_bytes: 4096,
                buffer_bytes: 256 << 10,
                flush,
                group_commit: GroupCommit {
                    // Nobody's threshold is reached while the records go in: the one
                    // wait below flushes them all in one round.
                    max_waiters: 1,
                    max_bytes: 1 << 30,
                    max_delay: Duration::from_secs(5),
                    adaptive: false,
                },
                ..LogOptions::default()
            };
            let log = Log::open(storage.clone(), dir.path(), options).unwrap();
            if flush == FlushPath::IoUring && log.flush_path().path != FlushPath::IoUring {
                eprintln!(
                    "io_uring refused here; nothing to test: {}",
                    log.flush_path()
                );
                return;
            }
            let mut last = None;
            for i in 0..100u32 {
                last = Some(log.append(&payload(0, i, 1000)).unwrap());
            }
            let end = last.unwrap().end;
            let r = log.wait_durable(end);
            assert!(
                r.is_ok(),
                "{flush}: one commit's wait over {} bytes ({} segments of 4 KiB) failed: {:?}; \
                 poisoned: {:?}",
                end.0,
                end.0 / 4096 + 1,
                r,
                log.poisoned()
            );
            log.close().unwrap();
            let log = Log::open(storage, dir.path(), options).unwrap();
            let n = log
                .read_from(log.start_lsn())
                .unwrap()
                .map(|r| check_payload(&r.unwrap().payload, 1000).expect("intact"))
                .collect::<Vec<_>>()
                .len();
            assert_eq!(n, 100, "{flush}: every record back");
            log.close().unwrap();
        }
    });
}

/// "A waiting loop never spins without parking": a committer blocked in `wait_durable`
/// while the group-commit thresholds are not reached (Aether's X > 1, a long T) must
/// sleep until the round, as on the daemon path. On the ring path `wait_durable` loops
/// `drive(Wait)` + `park_timeout(50 µs)`: it wakes ~10–20 thousand times a second for
/// the whole delay T, each time taking the driver's lock and re-evaluating the
/// group-commit rule.
#[test]
fn a_waiter_below_the_group_commit_thresholds_sleeps_instead_of_polling() {
    let mut report = Vec::new();
    for flush in [FlushPath::Daemon, FlushPath::IoUring] {
        let (_sim, storage) = sim(21);
        let options = LogOptions {
            flush,
            group_commit: GroupCommit {
                max_waiters: 8,
                max_bytes: 1 << 30,
                max_delay: Duration::from_millis(1500),
                adaptive: false,
            },
            ..small_options()
        };
        let log = Arc::new(Log::open(storage, DIR, options).unwrap());
        let a = log.append(b"one lonely commit").unwrap();
        let l = log.clone();
        let (switches, ticks, took) = within(Duration::from_secs(30), "the waiter", move || {
            let (s0, t0, at) = (voluntary_switches(), cpu_ticks(), Instant::now());
            l.wait_durable(a.end).unwrap();
            (voluntary_switches() - s0, cpu_ticks() - t0, at.elapsed())
        });
        report.push(format!(
            "{flush}: waited {took:?}, {switches} sleeps, {ticks} CPU ticks"
        ));
        log.close().unwrap();
    }
    eprintln!("{report:?}");
    let ring = &report[1];
    let switches: u64 = ring
        .split(", ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        switches < 200,
        "the ring path's waiter polled instead of sleeping until the round: {report:?}"
    );
}

/// A storage in front of a simulated disk that forwards everything (the ring included),
/// but whose directory syncs take `delay` once `slow` is set: a slow device for the
/// segment preparer (it syncs the directory for each segment it makes), which nothing on
/// the commit path should wait for.
#[derive(Clone)]
struct SlowPreparerDisk {
    sim: SimStorage,
    slow: Arc<AtomicBool>,
    delay: Duration,
}

impl Storage for SlowPreparerDisk {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        self.sim.open(path, options)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.sim.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.sim.list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.sim.exists(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.sim.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.sim.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.slow.load(Ordering::SeqCst) {
            std::thread::sleep(self.delay);
        }
        self.sim.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.sim.lock(path)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.sim.lock_shared(path)
    }
    fn dir_identity(&self, dir: &Path) -> io::Result<DirIdentity> {
        self.sim.dir_identity(dir)
    }
    fn scratch(&self) -> io::Result<Box<dyn FileHandle>> {
        self.sim.scratch()
    }
    fn io_ring(&self) -> io::Result<Box<dyn IoRing>> {
        self.sim.io_ring()
    }
    fn failpoint(&self, name: &'static str, path: &Path) -> io::Result<()> {
        self.sim.failpoint(name, path)
    }
}

/// `Log::on_durable` "never blocks", and an agent's `poll_flush` must "never block":
/// neither may wait for the segment preparer (background work on a commit path). On the
/// ring path both run `RingDriver::start` on the caller's thread, which plans the round
/// (`SegmentWriter::plan`): `Preparer::obtain` waits for the next segment to be made and
/// `Preparer::reserve` for an extension. With a preparer held up by a slow device, the
/// registering committer (an agent) is held up with it.
#[test]
fn on_durable_never_waits_for_the_segment_preparer() {
    let delay = Duration::from_millis(700);
    let mut report = Vec::new();
    let mut took_by_path = Vec::new();
    for flush in [FlushPath::Daemon, FlushPath::IoUring] {
        let sim = SimStorage::new(5);
        let slow = Arc::new(AtomicBool::new(false));
        let disk = SlowPreparerDisk {
            sim: sim.clone(),
            slow: slow.clone(),
            delay,
        };
        let storage: Arc<dyn Storage> = Arc::new(disk);
        let options = LogOptions {
            flush,
            segment_bytes: 8192,
            buffer_bytes: 64 << 10,
            group_commit: GroupCommit {
                max_waiters: 1,
                max_bytes: 1 << 30,
                max_delay: Duration::from_secs(5),
                adaptive: false,
            },
            ..LogOptions::default()
        };
        let log = Arc::new(Log::open(storage, DIR, options).unwrap());
        slow.store(true, Ordering::SeqCst);
        // ~20 KiB released, nothing flushed yet: the round a registration starts crosses
        // into segments the (slow) preparer has not made yet.
        let mut last = None;
        for i in 0..40u32 {
            last = Some(log.append(&payload(1, i, 1000)).unwrap());
        }
        let end = last.unwrap().end;
        let l = log.clone();
        let (took, rx) = within(Duration::from_secs(30), "on_durable", move || {
            let (tx, rx) = mpsc::channel();
            let at = Instant::now();
            l.on_durable(end, Box::new(move |r| drop(tx.send(r))));
            (at.elapsed(), rx)
        });
        report.push(format!("{flush}: on_durable took {took:?}"));
        took_by_path.push(took);
        // The commit completes in the end (whoever drives).
        let r = within(Duration::from_secs(30), "the callback", {
            let log = log.clone();
            move || loop {
                log.poll_flush();
                if let Ok(r) = rx.try_recv() {
                    return r;
                }
                if !log.wait_flush() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        });
        assert!(r.unwrap() >= end);
        slow.store(false, Ordering::SeqCst);
        log.close().unwrap();
    }
    eprintln!("{report:?}");
    assert!(
        took_by_path[1] < Duration::from_millis(100),
        "on_durable blocked on the segment preparer on the ring path: {report:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Attacks expected to hold (kept as regression tests)
// ---------------------------------------------------------------------------------------

/// `Log::sync` asked while a round is in flight (submitted, not reaped) must not be
/// served by that round: the bytes appended after it started are durable when `sync`
/// returns, across a power loss.
#[test]
fn a_sync_asked_during_a_round_in_flight_covers_bytes_appended_after_it() {
    for seed in 0..16u64 {
        let (sim, storage) = sim(seed);
        let log = Log::open(storage.clone(), DIR, ring_options()).unwrap();
        let a = log.append(&payload(0, 0, 200)).unwrap();
        // Registering starts the round for `a` and leaves it in flight (nobody reaps).
        let (tx, _rx) = mpsc::channel();
        log.on_durable(a.end, Box::new(move |r| drop(tx.send(r))));
        let b = log.append(&payload(0, 1, 200)).unwrap();
        let durable = within(Duration::from_secs(20), "sync", {
            let log = Arc::new(log);
            move || {
                let d = log.sync();
                (d, log)
            }
        });
        let (d, log) = durable;
        let d = d.unwrap();
        assert!(d >= b.end, "seed {seed}: sync returned {d} below {}", b.end);
        drop(log);
        sim.crash();
        let log = Log::open(storage, DIR, ring_options()).unwrap();
        let found: BTreeSet<_> = log
            .read_from(log.start_lsn())
            .unwrap()
            .map(|r| check_payload(&r.unwrap().payload, 200).unwrap())
            .collect();
        assert!(found.contains(&(0, 1)), "seed {seed}: synced record lost");
    }
}

/// A write (not a sync) failing at completion of the chain: the callback gets the error,
/// nothing is published durable past the failure, and the log is poisoned.
#[test]
fn a_write_failing_at_completion_fails_the_callback_and_publishes_nothing() {
    for kind in [FaultKind::Eio, FaultKind::Enospc] {
        let (sim, storage) = sim(31);
        let log = Arc::new(Log::open(storage, DIR, ring_options()).unwrap());
        let a = log.append(b"first").unwrap();
        log.wait_durable(a.end).unwrap();
        sim.inject(FaultPlan::new(FaultOp::Write, 1, kind));
        let b = log.append(b"second").unwrap();
        let (tx, rx) = mpsc::channel();
        log.on_durable(b.end, Box::new(move |r| drop(tx.send(r))));
        let l = log.clone();
        let r = within(Duration::from_secs(20), "the failed callback", move || {
            loop {
                l.poll_flush();
                if let Ok(r) = rx.try_recv() {
                    return r;
                }
                l.wait_flush();
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        assert!(r.is_err(), "{kind:?}: acknowledged a failed write: {r:?}");
        assert!(log.durable_lsn() < b.end);
        assert!(log.poisoned().is_some());
        assert!(log.wait_durable(b.end).is_err());
        assert!(log.sync().is_err());
    }
}

/// A callback that closes the log, run by a committer that reaps (not the daemon): no
/// deadlock, and `close` returns (the backstop is joined from a foreign thread).
#[test]
fn a_callback_that_closes_the_log_on_a_reaping_thread_does_not_deadlock() {
    for seed in 0..8u64 {
        let (_sim, storage) = sim(seed);
        let log = Arc::new(Log::open(storage, DIR, ring_options()).unwrap());
        let a = log.append(b"closing").unwrap();
        let (tx, rx) = mpsc::channel();
        let l2 = log.clone();
        log.on_durable(
            a.end,
            Box::new(move |r| {
                let closed = l2.close();
                drop(tx.send((r, closed)));
            }),
        );
        let l = log.clone();
        let (r, closed) = within(Duration::from_secs(20), "close in a callback", move || {
            loop {
                l.poll_flush();
                if let Ok(x) = rx.try_recv() {
                    return x;
                }
                l.wait_flush();
                std::thread::sleep(Duration::from_micros(100));
            }
        });
        assert!(r.unwrap() >= a.end);
        assert!(closed.unwrap() >= a.end, "seed {seed}");
        assert!(matches!(log.append(b"x"), Err(WalError::Closed)));
    }
}

/// A callback registered by a thread that never polls (a raft future's owner) completes
/// through the backstop within a few group-commit delays.
#[test]
fn a_callback_nobody_polls_for_completes_through_the_backstop() {
    let (_sim, storage) = sim(41);
    let log = Log::open(storage, DIR, ring_options()).unwrap();
    for i in 0..20u32 {
        let a = log.append(&payload(2, i, 100)).unwrap();
        let (tx, rx) = mpsc::channel();
        log.on_durable(a.end, Box::new(move |r| drop(tx.send(r))));
        let r = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a callback stranded: nobody reaped its round");
        assert!(r.unwrap() >= a.end);
    }
    log.close().unwrap();
}

/// `close` drains: records appended (no wait, no callback) before `close` are durable,
/// on the ring path, across a power loss right after it.
#[test]
fn close_drains_everything_appended_on_the_ring_path() {
    for seed in 0..12u64 {
        let (sim, storage) = sim(seed);
        let log = Log::open(storage.clone(), DIR, ring_options()).unwrap();
        for i in 0..30u32 {
            log.append(&payload(3, i, 300)).unwrap();
        }
        let log = Arc::new(log);
        let l = log.clone();
        within(Duration::from_secs(20), "close", move || l.close().unwrap());
        drop(log);
        sim.crash();
        let log = Log::open(storage, DIR, ring_options()).unwrap();
        let n = log
            .read_from(log.start_lsn())
            .unwrap()
            .map(|r| check_payload(&r.unwrap().payload, 300).unwrap())
            .collect::<Vec<_>>()
            .len();
        assert_eq!(n, 30, "seed {seed}: close lost appended records");
    }
}

/// Real io_uring, several threads mixing blocking waits, callbacks and syncs: everything
/// acknowledged is read back intact after close and reopen.
#[test]
fn real_io_uring_threads_acknowledge_only_what_reads_back() {
    within(Duration::from_secs(60), "real io_uring", || {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
        let options = LogOptions {
            segment_bytes: 64 << 10,
            ..ring_options()
        };
        let log = Arc::new(Log::open(storage.clone(), dir.path(), options).unwrap());
        if log.flush_path().path != FlushPath::IoUring {
            eprintln!("io_uring refused here: {}", log.flush_path());
            return;
        }
        let acked = Arc::new(parking_lot::Mutex::new(BTreeSet::new()));
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let (log, acked) = (log.clone(), acked.clone());
                std::thread::spawn(move || {
                    for i in 0..150u32 {
                        let a = log.append(&payload(t, i, 700)).unwrap();
                        match (t + i) % 3 {
                            0 => {
                                log.wait_durable(a.end).unwrap();
                            }
                            1 => {
                                let (tx, rx) = mpsc::channel();
                                log.on_durable(a.end, Box::new(move |r| drop(tx.send(r))));
                                loop {
                                    log.poll_flush();
                                    if let Ok(r) = rx.try_recv() {
                                        r.unwrap();
                                        break;
                                    }
                                    log.wait_flush();
                                }
                            }
                            _ => {
                                assert!(log.sync().unwrap() >= a.end);
                            }
                        }
                        acked.lock().insert((t, i));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        log.close().unwrap();
        drop(log);
        let log = Log::open(storage, dir.path(), options).unwrap();
        let found: BTreeSet<_> = log
            .read_from(log.start_lsn())
            .unwrap()
            .map(|r| check_payload(&r.unwrap().payload, 700).unwrap())
            .collect();
        let acked = acked.lock();
        assert!(acked.is_subset(&found));
        assert_eq!(found.len(), 600);
        let _ = Lsn(0);
    });
}

/// A power loss or a process kill at the `wal.flush.written` failure point, reached in a
/// ring chain on whichever thread reaps it (a waiter, a polling callback owner, the
/// backstop): nothing acknowledged is lost, on every reach of the point from the 1st to
/// the 12th.
#[test]
fn a_halt_at_the_written_point_in_a_ring_chain_loses_nothing_acknowledged() {
    use sluice_storage::{failpoint, FailAction};
    for action in [FailAction::PowerLoss, FailAction::Kill] {
        for nth in 1..=12u64 {
            let (sim, storage) = sim(100 + nth);
            let log = Arc::new(Log::open(storage.clone(), DIR, ring_options()).unwrap());
            sim.set_failpoint(failpoint::LOG_WRITTEN, nth, action);
            let acked = Arc::new(parking_lot::Mutex::new(BTreeSet::new()));
            let threads: Vec<_> = (0..3u32)
                .map(|t| {
                    let (log, acked) = (log.clone(), acked.clone());
                    std::thread::spawn(move || {
                        for i in 0..30u32 {
                            let Ok(a) = log.append(&payload(t, i, 400)) else {
                                return;
                            };
                            let ok = if t == 0 {
                                log.wait_durable(a.end).is_ok()
                            } else {
                                let (tx, rx) = mpsc::channel();
                                log.on_durable(a.end, Box::new(move |r| drop(tx.send(r))));
                                loop {
                                    if t == 1 {
                                        log.poll_flush();
                                    }
                                    match rx.recv_timeout(Duration::from_millis(1)) {
                                        Ok(r) => break r.is_ok(),
                                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                                        Err(_) => break false,
                                    }
                                }
                            };
                            if !ok {
                                return;
                            }
                            acked.lock().insert((t, i));
                        }
                    })
                })
                .collect();
            let l = log.clone();
            within(Duration::from_secs(30), "the committers", move || {
                for t in threads {
                    t.join().unwrap();
                }
                let _ = l.close();
            });
            drop(log);
            sim.clear_failpoints();
            sim.crash();
            let log = Log::open(storage, DIR, ring_options()).unwrap();
            let found: BTreeSet<_> = log
                .read_from(log.start_lsn())
                .unwrap()
                .map(|r| check_payload(&r.unwrap().payload, 400).expect("intact"))
                .collect();
            let acked = acked.lock();
            let lost: Vec<_> = acked.difference(&found).collect();
            assert!(lost.is_empty(), "{action:?} at reach {nth}: lost {lost:?}");
        }
    }
}

/// The same limit with the default group commit (L = 1 MiB, T = 1 ms, a 4 MiB buffer)
/// and 64 KiB segments: a burst of appends with nobody waiting lets the backstop (woken
/// at L) flush a round of ≥ 1 MiB, over ≥ 16 segments, ≥ 48 chain operations: the real
/// io_uring refuses the chain and the log is poisoned with no device error at all.
#[test]
fn a_burst_with_default_group_commit_and_64k_segments_does_not_poison_a_real_io_uring_log() {
    within(Duration::from_secs(60), "a 2 MiB burst", || {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
        let options = LogOptions {
            segment_bytes: 64 << 10,
            flush: FlushPath::IoUring,
            ..LogOptions::default()
        };
        let log = Log::open(storage, dir.path(), options).unwrap();
        if log.flush_path().path != FlushPath::IoUring {
            eprintln!(
                "io_uring refused here; nothing to test: {}",
                log.flush_path()
            );
            return;
        }
        let record = vec![7u8; 4000];
        let mut appended = 0;
        for _ in 0..512 {
            match log.append(&record) {
                Ok(_) => appended += 1,
                Err(e) => panic!("append {appended} refused: {e}"),
            }
        }
        let r = log.sync();
        assert!(
            r.is_ok() && log.poisoned().is_none(),
            "a 2 MiB burst poisoned the log: {r:?}"
        );
        log.close().unwrap();
    });
}
