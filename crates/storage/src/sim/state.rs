//! What every clone of one [`SimStorage`](super::SimStorage) shares: the state behind
//! its one mutex (the disk, the halts and faults, the counters, the trace, the locks,
//! the named failure points) and the gate every counted operation passes.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};
use rand::rngs::StdRng;

use super::disk::{Disk, InodeId};
use super::fault::FailAction;
use super::fault::{halt_error, Faults, Halt, OpKind};
use super::record::{SimStats, TraceEvent};
use crate::parent_dir;

/// Who holds a lock: one exclusive guard, or any number of shared ones.
#[derive(Debug)]
pub(super) enum Held {
    Exclusive(u64),
    Shared(Vec<u64>),
}

/// Everything behind the one mutex. A test disk values simple and obviously correct over
/// concurrency: every operation takes the lock for a few memory copies.
#[derive(Debug)]
pub(super) struct State {
    pub(super) disk: Disk,
    /// Consumed only by power losses, so the same seed and operations give the same
    /// outcome.
    pub(super) rng: StdRng,
    pub(super) faults: Faults,
    /// `Some((n, halt))`: the n-th counted operation from now halts the system that way.
    pub(super) halt_countdown: Option<(u64, Halt)>,
    /// Bumped by every power loss and every process kill: handles, locks and pinned views
    /// belong to the incarnation they were made in.
    pub(super) incarnation: u64,
    /// How each past incarnation ended, and that halt's 1-based number (the n-th power
    /// loss or kill); index = incarnation.
    pub(super) ends: Vec<(Halt, u64)>,
    pub(super) stats: SimStats,
    pub(super) trace: Option<Vec<TraceEvent>>,
    /// Held locks: path -> the tokens of the guards holding it.
    pub(super) locks: HashMap<PathBuf, Held>,
    pub(super) next_lock_token: u64,
    /// Named failure points registered on this disk ([`SimStorage::set_failpoint`](super::SimStorage::set_failpoint)).
    pub(super) failpoints: HashMap<&'static str, ArmedPoint>,
}

/// A registered named failure point: how often the code reached it, and what happens
/// at the `nth` reach (once).
#[derive(Debug)]
pub(super) struct ArmedPoint {
    pub(super) hits: u64,
    pub(super) nth: u64,
    pub(super) action: FailAction,
}

impl State {
    /// The gate every counted operation passes before it is applied: counts it, fires an
    /// armed halt (the operation is then not applied) and injected faults. `paths` are the
    /// paths the operation concerns, for path-scoped fault plans.
    pub(super) fn begin(&mut self, op: OpKind, paths: &[&Path]) -> io::Result<()> {
        assert_ne!(op, OpKind::Read, "reads are not counted operations");
        self.stats.ops += 1;
        if let Some((left, halt)) = self.halt_countdown {
            assert!(left >= 1);
            if left == 1 {
                let number = self.halt(halt);
                let detail = "this operation was the crash point and was not applied";
                return Err(halt_error(halt, number, detail));
            }
            self.halt_countdown = Some((left - 1, halt));
        }
        self.fault(op, paths)
    }

    /// The fault check alone: what a read passes (reads are not counted).
    pub(super) fn fault(&mut self, op: OpKind, paths: &[&Path]) -> io::Result<()> {
        match self.faults.check(op, paths) {
            Some(kind) => Err(kind.to_error()),
            None => Ok(()),
        }
    }

    /// Ends the current incarnation; returns the halt's number (1-based, per kind).
    pub(super) fn halt(&mut self, halt: Halt) -> u64 {
        self.halt_countdown = None;
        let number = match halt {
            Halt::PowerLoss => {
                self.disk.crash(&mut self.rng);
                self.stats.crashes += 1;
                self.stats.crashes
            }
            Halt::ProcessKill => {
                self.disk.kill();
                self.stats.process_kills += 1;
                self.stats.process_kills
            }
        };
        // A dead process holds no locks, with or without power.
        self.locks.clear();
        assert_eq!(self.ends.len() as u64, self.incarnation);
        self.ends.push((halt, number));
        self.incarnation += 1;
        number
    }

    /// The error with which anything of incarnation `incarnation` (a past one) answers.
    pub(super) fn stale(&self, incarnation: u64, detail: &'static str) -> io::Error {
        assert!(
            incarnation < self.incarnation,
            "incarnation {incarnation} is alive"
        );
        let (halt, number) = self.ends[incarnation as usize];
        halt_error(halt, number, detail)
    }

    pub(super) fn record(&mut self, event: impl FnOnce() -> TraceEvent) {
        if let Some(trace) = &mut self.trace {
            trace.push(event());
        }
    }

    /// Creates a file at `path` (checked free and valid) as a counted operation.
    pub(super) fn create(&mut self, path: &Path) -> io::Result<InodeId> {
        self.disk.check_file_path(path)?;
        self.begin(OpKind::Create, &[path, &parent_dir(path)])?;
        let inode = self.disk.create_file(path);
        self.record(|| TraceEvent::Create(path.to_path_buf()));
        Ok(inode)
    }

    /// The code reached the named failure point `name`: counts it if it is registered,
    /// and does its action at the chosen reach. Not a counted operation.
    pub(super) fn failpoint(&mut self, name: &'static str) -> io::Result<()> {
        let Some(point) = self.failpoints.get_mut(name) else {
            return Ok(());
        };
        point.hits += 1;
        if point.hits != point.nth {
            return Ok(());
        }
        let detail = "the machine halted at a named failure point";
        match point.action {
            FailAction::Count => Ok(()),
            FailAction::Error(kind) => Err(kind.to_error()),
            FailAction::PowerLoss => {
                let number = self.halt(Halt::PowerLoss);
                Err(halt_error(Halt::PowerLoss, number, detail))
            }
            FailAction::Kill => {
                let number = self.halt(Halt::ProcessKill);
                Err(halt_error(Halt::ProcessKill, number, detail))
            }
        }
    }

    /// fsync of a directory as a counted operation.
    pub(super) fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        if !self.disk.is_dir(dir) {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no such directory"));
        }
        // A failed directory sync changes nothing: the journal keeps the operations.
        self.begin(OpKind::SyncDir, &[dir])?;
        self.disk.sync_dir(dir);
        self.stats.dir_syncs += 1;
        self.record(|| TraceEvent::SyncDir(dir.to_path_buf()));
        Ok(())
    }
}

/// The number the next simulated disk gets.
pub(super) static NEXT_DISK: AtomicU64 = AtomicU64::new(0);

/// Shared by every clone of one `SimStorage` and by its handles and lock guards.
pub(super) struct Shared {
    pub(super) seed: u64,
    /// This disk's number, unique in the process: what tells its directories from
    /// another simulated disk's in a [`DirIdentity`](crate::DirIdentity).
    pub(super) disk: u64,
    pub(super) state: Mutex<State>,
    /// True once a named failure point was registered: until then reaching one costs
    /// this load and nothing else.
    pub(super) failpoints: AtomicBool,
    /// Notified at every reach of a registered point ([`SimStorage::wait_failpoint`](super::SimStorage::wait_failpoint)).
    pub(super) reached: Condvar,
    /// True while [`Storage::io_ring`](crate::Storage::io_ring) is refused, as a kernel
    /// without io_uring (or a seccomp filter) refuses it
    /// ([`SimStorage::refuse_io_ring`](super::SimStorage::refuse_io_ring)).
    pub(super) ring_refused: AtomicBool,
    /// Rings handed out so far (each seeded apart).
    pub(super) rings: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// Whether any named failure point was ever registered on this disk.
    pub(super) fn failpoints_registered(&self) -> bool {
        self.failpoints.load(Ordering::Acquire)
    }
}
