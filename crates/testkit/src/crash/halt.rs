//! How the machine fails during a seed: the halts, how each is armed on the simulated
//! disk, recoveries halted in turn, and an open under read errors.

use rand::rngs::StdRng;
use rand::Rng;
use sluice::Error;
use sluice_storage::{FailAction, FaultKind, FaultOp, FaultPlan, SimStorage};

/// How the machine fails during a seed (each seed draws one). The crash sweep draws from
/// its first four ([`HALTS`]); the swarm (`crate::swarm`) from all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Halt {
    /// Power loss at a random operation: unsynced writes are kept, dropped or garbled.
    PowerLoss,
    /// The process is killed at a random operation; the page cache survives, the database
    /// is reopened in the same boot (reading that cache), and a power loss follows.
    KillThenPowerLoss,
    /// An fsync fails (EIO or ENOSPC, once or from then on; Linux drops the failed pages
    /// from write-back but keeps them readable), then a kill or a power loss.
    FsyncFailure,
    /// A power loss, then read errors during the next recovery, which must fail cleanly.
    ReadErrorsInRecovery,
    /// A write or a length change fails (EIO or ENOSPC, once or from then on), then a
    /// kill or a power loss.
    WriteFailure,
    /// A named failure point (`sluice_storage::failpoint::ALL`: the steps between two
    /// disk operations) loses the power, kills the process or fails with EIO or ENOSPC
    /// at one of its first reaches; then a kill or a power loss if it has not halted.
    Failpoint,
}

pub(super) const HALTS: [Halt; 4] = [
    Halt::PowerLoss,
    Halt::KillThenPowerLoss,
    Halt::FsyncFailure,
    Halt::ReadErrorsInRecovery,
];

/// A seed's workload does a few dozen syncs; failing one in this range lands most
/// failures in the middle of it.
const SYNC_RANGE: u64 = 40;

/// How a run armed with a [`Halt`] ended ([`Armed::end_run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunEnd {
    /// The halt struck while the work ran (not after it).
    pub(crate) mid_run: bool,
    /// The process was killed (mid-run or after): the page cache survives until a
    /// later power loss.
    pub(crate) killed: bool,
}

impl Halt {
    /// Every halt, in the order the swarm draws them.
    pub(crate) const ALL: [Halt; 6] = [
        Halt::PowerLoss,
        Halt::KillThenPowerLoss,
        Halt::FsyncFailure,
        Halt::ReadErrorsInRecovery,
        Halt::WriteFailure,
        Halt::Failpoint,
    ];

    /// A short name, for a failure line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Halt::PowerLoss => "power",
            Halt::KillThenPowerLoss => "kill",
            Halt::FsyncFailure => "fsync",
            Halt::ReadErrorsInRecovery => "read-errors",
            Halt::WriteFailure => "write",
            Halt::Failpoint => "failpoint",
        }
    }

    /// Arms the halt on `sim` for a run of about `range` counted disk operations (the
    /// halt strikes at one drawn from `1..=range`); `data_files` are the data files a
    /// third of the fsync failures aim at (a checkpoint's sync fails too). The run
    /// starts now: [`Armed::end_run`] ends it.
    pub(crate) fn arm(
        self,
        sim: &SimStorage,
        rng: &mut StdRng,
        range: u64,
        data_files: &[String],
    ) -> Armed {
        let kind = |rng: &mut StdRng| {
            if rng.gen_bool(0.5) {
                FaultKind::Eio
            } else {
                FaultKind::Enospc
            }
        };
        match self {
            Halt::PowerLoss | Halt::ReadErrorsInRecovery => {
                sim.crash_at_op(rng.gen_range(1..=range))
            }
            Halt::KillThenPowerLoss => sim.kill_at_op(rng.gen_range(1..=range)),
            Halt::FsyncFailure => {
                let kind = kind(rng);
                // Log syncs outnumber data-file syncs (one per checkpoint) by far: aim a third
                // of the failures at the data file so that a checkpoint's sync fails too.
                let mut plan = if rng.gen_bool(1.0 / 3.0) {
                    // (No draw for a single file: the crash sweep's seeds replay as before.)
                    let file = match data_files {
                        [one] => one,
                        many => &many[rng.gen_range(0..many.len())],
                    };
                    FaultPlan::new(FaultOp::Sync, rng.gen_range(1..=2), kind).on(file)
                } else {
                    FaultPlan::new(FaultOp::Sync, rng.gen_range(1..=SYNC_RANGE), kind)
                };
                if rng.gen_bool(0.5) {
                    plan = plan.persistent();
                }
                sim.inject(plan);
            }
            Halt::WriteFailure => {
                let kind = kind(rng);
                let mut plan = FaultPlan::new(FaultOp::Write, rng.gen_range(1..=range), kind);
                if rng.gen_bool(0.5) {
                    plan = plan.persistent();
                }
                sim.inject(plan);
            }
            Halt::Failpoint => {
                let all = sluice_storage::failpoint::ALL;
                let name = all[rng.gen_range(0..all.len())];
                let action = match rng.gen_range(0..4) {
                    0 => FailAction::Kill,
                    1 => FailAction::Error(kind(rng)),
                    _ => FailAction::PowerLoss,
                };
                sim.set_failpoint(name, rng.gen_range(1..=3), action);
            }
        }
        Armed {
            halt: self,
            incarnation: sim.incarnation(),
            kills: sim.killed_count(),
        }
    }
}

/// A [`Halt`] armed for a run that has begun.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Armed {
    halt: Halt,
    incarnation: u64,
    kills: u64,
}

impl Armed {
    /// After the run: disarms what [`Halt::arm`] armed and, if the halt has not struck,
    /// halts the machine now (a kill after a kill halt, and after half the failed syncs,
    /// writes and failure points; a power loss otherwise).
    pub(crate) fn end_run(self, sim: &SimStorage, rng: &mut StdRng) -> RunEnd {
        sim.clear_faults();
        sim.clear_failpoints();
        sim.disarm_crash();
        if sim.incarnation() > self.incarnation {
            return RunEnd {
                mid_run: true,
                killed: sim.killed_count() > self.kills,
            };
        }
        let kill = self.halt == Halt::KillThenPowerLoss
            || (matches!(
                self.halt,
                Halt::FsyncFailure | Halt::WriteFailure | Halt::Failpoint
            ) && rng.gen_bool(0.5));
        if kill {
            sim.kill_process();
        } else {
            sim.crash();
        }
        RunEnd {
            mid_run: false,
            killed: kill,
        }
    }
}

/// Recovers with halts: up to twice (each time with probability one half) a recovery is
/// halted at one of its first `ops` counted disk operations — by a power loss, or after a
/// kill by another kill half the time; `halted` counts them. A recovery the halt missed
/// shows its state to a client (`shown`), and then the machine halts anyway, so that the
/// next open recovers once more from whatever that close left.
pub(crate) fn halted_recoveries<D>(
    sim: &SimStorage,
    rng: &mut StdRng,
    killed: bool,
    ops: u64,
    halted: &mut u64,
    mut open: impl FnMut() -> Result<D, Error>,
    mut shown: impl FnMut(D) -> Result<(), String>,
) -> Result<(), String> {
    for _ in 0..2 {
        if !rng.gen_bool(0.5) {
            break;
        }
        let before = sim.incarnation();
        let n = rng.gen_range(1..=ops);
        if killed && rng.gen_bool(0.5) {
            sim.kill_at_op(n);
        } else {
            sim.crash_at_op(n);
        }
        let r = open();
        sim.disarm_crash();
        if sim.incarnation() > before {
            *halted += 1;
            drop(r);
            continue;
        }
        match r {
            Ok(db) => shown(db)?,
            Err(e) => return Err(format!("recovery failed: {e}")),
        }
        // Recovery finished and the handle closed: halt anyway, so the next open
        // recovers once more from whatever that close left.
        if killed && rng.gen_bool(0.5) {
            sim.kill_process();
        } else {
            sim.crash();
        }
    }
    Ok(())
}

/// Opens with read errors injected (the n-th read from now fails with EIO, once or from
/// then on): the open must fail with an I/O error — never report corruption, never panic
/// — or succeed where the failed reads were not needed. Returns whether it refused; the
/// power goes afterwards.
pub(crate) fn open_with_read_errors<D>(
    sim: &SimStorage,
    rng: &mut StdRng,
    open: impl FnOnce() -> Result<D, Error>,
) -> Result<bool, String> {
    let mut plan = FaultPlan::new(FaultOp::Read, rng.gen_range(1..=200), FaultKind::Eio);
    if rng.gen_bool(0.5) {
        plan = plan.persistent();
    }
    sim.inject(plan);
    let r = open();
    sim.clear_faults();
    let refused = match r {
        Err(e) if is_disk_error(&e) => true,
        Err(e) => {
            return Err(format!(
                "a read error during recovery was reported as something else: {e}"
            ))
        }
        Ok(db) => {
            drop(db);
            false
        }
    };
    sim.crash();
    Ok(refused)
}

/// True for errors a failing disk explains (an injected fault or a halt), as opposed to
/// errors that mean the engine is wrong (corruption, a panic-free but false refusal).
fn is_disk_error(e: &Error) -> bool {
    e.is_io()
}
