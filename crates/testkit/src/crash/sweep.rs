//! The sweep itself: each seed runs a workload on a simulated disk with one halt armed,
//! recovers (halting recoveries in turn), checks every state a recovery shows, and
//! counts what it found.

use super::halt::{halted_recoveries, open_with_read_errors, Halt, HALTS};
use super::model::DIR;
use crate::fence::FencedStorage;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a crash sweep found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Seeds run.
    pub seeds: u64,
    /// Transactions whose commit was acknowledged, over all seeds.
    pub acknowledged: u64,
    /// Acknowledged transactions missing after recovery (must be 0).
    pub lost: u64,
    /// Under the `async` protocol only: acknowledged transactions a crash took away, as
    /// that protocol allows (the state must still be a commit prefix).
    pub lost_async: u64,
    /// Seeds whose recovered state broke a rule (must be 0).
    pub violations: u64,
    /// Seeds where the armed crash hit the running workload (not its end).
    pub crashes_mid_run: u64,
    /// Recoveries that were themselves interrupted by a crash.
    pub crashes_in_recovery: u64,
    /// Process kills (the page cache survives; a power loss follows later).
    pub process_kills: u64,
    /// Seeds whose workload hit a failed fsync (EIO or ENOSPC) and poisoned the database.
    pub failed_syncs: u64,
    /// Opens refused, as they must be, because a read failed during recovery.
    pub refused_opens: u64,
    /// Times a state shown after one recovery was found intact after a later halt.
    pub states_rechecked: u64,
    /// One line per violation, with its seed.
    pub failures: Vec<String>,
}

struct SeedResult {
    acknowledged: u64,
    lost: u64,
    lost_async: u64,
    mid_run: bool,
    in_recovery: u64,
    kills: u64,
    failed_syncs: u64,
    refused_opens: u64,
    rechecked: u64,
    problem: Option<String>,
    /// How this seed halted, named in its failure.
    halt: Option<Halt>,
}

impl SeedResult {
    fn new() -> SeedResult {
        SeedResult {
            acknowledged: 0,
            lost: 0,
            lost_async: 0,
            mid_run: false,
            in_recovery: 0,
            kills: 0,
            failed_syncs: 0,
            refused_opens: 0,
            rechecked: 0,
            problem: None,
            halt: None,
        }
    }

    fn fail(mut self, problem: String) -> SeedResult {
        self.problem = Some(match self.halt {
            Some(h) => format!("{h:?}: {problem}"),
            None => problem,
        });
        self
    }
}

/// The next incarnation of the database on the rebooted (or still running) machine.
fn reopen(sim: &SimStorage, options: Options) -> Result<Database, Error> {
    Database::open_on(FencedStorage::for_incarnation(sim), DIR, options)
}

/// A workload the crash sweep runs, halts and checks ([`sweep`]): the multi-key
/// transactions of [`crash_test`](super::crash_test) (checked against a model), or TPC-B
/// (`sluice_bench::experiments::tpcb_crash`). The sweep owns the halts — which one a seed draws, when
/// it strikes, the halts during recovery, the recheck that what one recovery showed
/// survives the next — and the workload says what to run and what a recovered database
/// must hold.
pub trait SweepWorkload {
    /// What a recovered database shows a client; every later recovery must show the
    /// same.
    type Shown: PartialEq;
    /// The database's options.
    fn options(&self) -> Options;
    /// The mid-run halt strikes at an operation drawn from `1..=crash_range()`: a little
    /// more than the run's mutating disk operations.
    fn crash_range(&self) -> u64;
    /// Whether acknowledged commits must survive (false under `async`: a loss is
    /// counted as `lost_async`, not a violation).
    fn durable(&self) -> bool {
        true
    }
    /// Prepares the new database before the halt is armed (tables, a load).
    fn setup(&mut self, db: &Database) -> Result<(), Error>;
    /// Runs the work with the halt armed, until it is done or the halt stops it,
    /// drawing what it needs from `rng`; drops every handle on `db` it holds.
    fn run(&mut self, db: &Database, rng: &mut StdRng);
    /// Transactions whose commit was acknowledged (after [`SweepWorkload::run`]).
    fn acknowledged(&self) -> u64;
    /// Reads and checks a recovered database: how many acknowledged transactions are
    /// missing, and the state it shows or what is wrong with it.
    fn check(&self, db: &Database) -> (u64, Result<Self::Shown, String>);
    /// How a later recovery's state differs from one shown before (for the failure).
    fn diff(&self, before: &Self::Shown, after: &Self::Shown) -> String;
    /// New work on the finally recovered database (it must take it).
    fn after_recovery(&self, db: &Database) -> Result<(), Error>;
}

fn run_seed<W: SweepWorkload>(seed: u64, w: &mut W) -> SeedResult {
    let mut rng = StdRng::seed_from_u64(seed);
    let halt = HALTS[rng.gen_range(0..HALTS.len())];
    let sim = SimStorage::new(seed);
    let mut res = SeedResult::new();
    res.halt = Some(halt);
    let opts = w.options();
    let options = || opts.clone();
    let setup = (|| {
        let db = reopen(&sim, options())?;
        w.setup(&db)?;
        Ok::<_, Error>(db)
    })();
    let db = match setup {
        Ok(x) => x,
        Err(e) => return res.fail(format!("setup failed: {e}")),
    };
    let armed = halt.arm(&sim, &mut rng, w.crash_range(), &[format!("{DIR}/data")]);
    w.run(&db, &mut rng);
    let failed_sync = halt == Halt::FsyncFailure && db.health().is_err();
    res.failed_syncs += failed_sync as u64;
    let end = armed.end_run(&sim, &mut rng);
    res.mid_run = end.mid_run;
    res.kills += end.killed as u64;
    drop(db);
    res.acknowledged = w.acknowledged();
    let durable = w.durable();

    // Recover, halting during recovery up to twice (a power loss or, after a kill, another
    // kill). A recovery that completes shows its state to a client; that state must
    // survive every later halt, power losses included (nothing a client was shown may
    // depend on data the device does not hold).
    let mut shown: Option<W::Shown> = None;
    let check_shown = |db: &Database, res: &mut SeedResult, shown: &mut Option<W::Shown>| {
        let (lost, got) = w.check(db);
        if lost > 0 {
            res.lost = res.lost.max(lost);
        }
        let got = got?;
        if let Some(before) = shown.as_ref() {
            if before != &got {
                return Err(format!(
                    "a state shown to a client after an earlier recovery was lost; {}",
                    w.diff(before, &got)
                ));
            }
            res.rechecked += 1;
        }
        *shown = Some(got);
        Ok::<(), String>(())
    };

    let killed = end.killed;
    let mut halted = 0;
    let r = halted_recoveries(
        &sim,
        &mut rng,
        killed,
        60,
        &mut halted,
        || reopen(&sim, options()),
        |db| check_shown(&db, &mut res, &mut shown),
    );
    res.in_recovery += halted;
    if let Err(p) = r {
        return res.fail(p);
    }
    if killed {
        // Reopen in the same boot from the page cache and show the state to a client;
        // then the power goes.
        match reopen(&sim, options()) {
            Ok(db) => {
                if let Err(p) = check_shown(&db, &mut res, &mut shown) {
                    return res.fail(p);
                }
                drop(db);
            }
            Err(e) => return res.fail(format!("recovery after a kill failed: {e}")),
        }
        sim.crash();
    }
    if halt == Halt::ReadErrorsInRecovery {
        match open_with_read_errors(&sim, &mut rng, || reopen(&sim, options())) {
            Ok(refused) => res.refused_opens += refused as u64,
            Err(p) => return res.fail(p),
        }
    }
    let db = match reopen(&sim, options()) {
        Ok(db) => db,
        Err(e) => return res.fail(format!("recovery failed: {e}")),
    };
    if let Err(p) = check_shown(&db, &mut res, &mut shown) {
        return res.fail(p);
    }
    if let Err(e) = db.verify() {
        return res.fail(format!("verify failed: {e}"));
    }
    // The recovered database takes new work.
    let after = w.after_recovery(&db).and_then(|()| db.close());
    if let Err(e) = after {
        return res.fail(format!("work after recovery failed: {e}"));
    }
    if !durable {
        res.lost_async = std::mem::take(&mut res.lost);
    }
    res
}

/// Runs `seeds` seeds of the workload `make(seed)` returns, starting at `first_seed`,
/// each halted and recovered as the module says, calling `progress` with each seed
/// finished. Panics inside a seed are caught and reported as violations.
pub fn sweep<W: SweepWorkload>(
    seeds: u64,
    first_seed: u64,
    mut progress: impl FnMut(u64),
    mut make: impl FnMut(u64) -> W,
) -> CrashReport {
    let mut report = CrashReport::default();
    for seed in first_seed..first_seed + seeds {
        let r = catch_unwind(AssertUnwindSafe(|| run_seed(seed, &mut make(seed)))).unwrap_or_else(
            |p| {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                SeedResult::new().fail(format!("panic: {msg}"))
            },
        );
        report.seeds += 1;
        report.acknowledged += r.acknowledged;
        report.lost += r.lost;
        report.lost_async += r.lost_async;
        report.crashes_mid_run += r.mid_run as u64;
        report.crashes_in_recovery += r.in_recovery;
        report.process_kills += r.kills;
        report.failed_syncs += r.failed_syncs;
        report.refused_opens += r.refused_opens;
        report.states_rechecked += r.rechecked;
        if let Some(p) = r.problem {
            report.violations += 1;
            report.failures.push(format!("seed {seed}: {p}"));
        }
        progress(seed);
    }
    report
}
