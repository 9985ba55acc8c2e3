//! One seed: its database created and loaded, then two or three sessions, each of work
//! under an armed halt, a halt (or a clean close and then a power loss anyway), and
//! recoveries — halted ones, a read-only open, an open with read errors — every one of
//! which that completes shows its state to a client and is judged; every state shown must
//! equal the one shown before it since the halt (nothing shown may depend on what the
//! device does not hold, read-only opens included), and the last becomes the settled
//! state the next session starts from. At the end: `verify`, and new work.

use super::client::run_session;
use super::config::{Config, Layout, MARK};
use super::engine::{open, Db, Ops, Rows, Tbl};
use super::oracle::{check_chunks, Expected, Lost};
use super::scratch::{create_fences, read_rows, TableCounts, SCRATCH};
use super::workload::initial_rows;
use crate::crash::{diff_message, halted_recoveries, open_with_read_errors, Halt};
use rand::rngs::StdRng;
use rand::SeedableRng;
use sluice::Error;
use sluice_storage::SimStorage;

/// What one seed did and found.
#[derive(Debug, Default)]
pub(crate) struct SeedResult {
    pub(crate) acknowledged: u64,
    /// Acknowledged commits missing where they must not be.
    pub(crate) lost: u64,
    /// Acknowledged commits a crash took away under `async`, or async commits
    /// (`Durability::Async`) under any protocol (allowed).
    pub(crate) lost_async: u64,
    /// The first broken rule.
    pub(crate) problem: Option<String>,
    /// The dimension values the seed exercised (`protocol=elr`, ...).
    pub(crate) coverage: Vec<String>,
    pub(crate) halts_mid_run: u64,
    pub(crate) halts_in_recovery: u64,
    pub(crate) read_only_opens: u64,
    pub(crate) read_only_spilled: u64,
    pub(crate) refused_opens: u64,
    pub(crate) clean_closes: u64,
    pub(crate) states_rechecked: u64,
    pub(crate) audits: u64,
    pub(crate) pool_full: u64,
    /// Scratch tables committed transactions created, dropped and renamed.
    pub(crate) tables: TableCounts,
    /// Compactions that completed during the work, and the data-file pages they
    /// returned to the file system.
    pub(crate) compactions: u64,
    pub(crate) pages_returned: u64,
    /// Archives checked after a recovery (`super::archive::check_live`), and copies
    /// their manifests listed then.
    pub(crate) archives_checked: u64,
    pub(crate) archived_segments: u64,
    /// Copies found byte for byte equal to the log's segments at the halts.
    pub(crate) archive_copies_compared: u64,
    /// After the final close: records read from the archives as logs, and those an
    /// archive and its log both held, found equal.
    pub(crate) archived_records_read: u64,
    pub(crate) archived_records_compared: u64,
    /// Backups taken and checked (`super::backup`), and restored after the final close.
    pub(crate) backups: u64,
    pub(crate) restores: u64,
}

/// Disk operations a halted recovery draws its halt from, per partition.
const RECOVERY_OPS: u64 = 60;

/// Counted disk operations per transaction a session's halt is drawn over: of the seeds
/// with a power-loss or kill session, about 80 % had one strike while the work ran
/// (4,000 seeds).
const OPS_PER_TXN: u64 = 4;

/// Runs seed `seed`.
pub(crate) fn run_seed(seed: u64) -> SeedResult {
    let cfg = Config::draw(seed);
    let mut res = SeedResult {
        coverage: coverage(&cfg),
        ..SeedResult::default()
    };
    if let Err(p) = Seed::new(&cfg, &mut res).run() {
        res.problem = Some(p);
    }
    res
}

/// The dimension values a configuration exercises (before the halts decide what
/// happens: `read-only=opened` is added when a read-only open succeeds).
fn coverage(cfg: &Config) -> Vec<String> {
    let mut c = vec![
        format!("protocol={}", cfg.protocol),
        format!(
            "driver={}",
            if cfg.agents().is_some() {
                "agents"
            } else {
                "direct"
            }
        ),
        format!("page={}", cfg.page_size),
        format!("threads={}", cfg.threads),
        format!("sessions={}", cfg.sessions.len()),
        format!("insert={}", cfg.variant),
    ];
    if cfg.pool_pages == 16 {
        c.push("pool=16".into());
    }
    if cfg.large.share > 0.0 {
        c.push("large-values".into());
    }
    if cfg.async_share > 0.0 {
        c.push("async-commits".into());
    }
    if cfg.scratch_share > 0.0 {
        c.push("scratch-tables".into());
    }
    if cfg.compact {
        c.push("compaction".into());
    }
    if cfg.archive {
        c.push("log-archive".into());
    }
    if cfg.backup {
        c.push("backup".into());
        c.push(
            match cfg.replay {
                sluice::Replay::SortedRuns => "restore=sorted-runs",
                sluice::Replay::LogOrder => "restore=log-order",
            }
            .into(),
        );
        if cfg.incremental {
            c.push("backup=incremental".into());
        }
    }
    if cfg.preallocate == sluice_wal::Preallocate::Zeros {
        c.push("segments=zeros".into());
    }
    c.push(
        match (cfg.flush, cfg.ring_refused) {
            (sluice_wal::FlushPath::IoUring, false) => "flush=io-uring",
            (sluice_wal::FlushPath::IoUring, true) => "flush=refused",
            (sluice_wal::FlushPath::Daemon, _) => "flush=daemon",
        }
        .into(),
    );
    if cfg.agent_clocks && cfg.agents().is_some() {
        c.push("agent-clocks".into());
    }
    match &cfg.layout {
        Layout::Plain { log_dir } => {
            c.push("layout=plain".into());
            if log_dir.is_some() {
                c.push("log-dir=elsewhere".into());
            }
        }
        Layout::Partitioned(p) => {
            c.push("layout=partitioned".into());
            c.push(format!("log-managers={}", p.log_managers));
            if p.log_dirs.iter().any(Option::is_some) {
                c.push("log-dir=elsewhere".into());
            }
        }
    }
    let mut kinds: Vec<&str> = cfg.strategies.iter().map(super::config::kind).collect();
    for w in kinds.windows(2) {
        c.push(format!("switch={}>{}", w[0], w[1]));
    }
    kinds.sort_unstable();
    kinds.dedup();
    c.extend(kinds.iter().map(|k| format!("strategy={k}")));
    for p in &cfg.sessions {
        c.push(format!("halt={}", p.halt.name()));
        if p.late {
            c.push("halt=late".into());
        }
        if p.read_only.is_some() {
            c.push("read-only=drawn".into());
        }
    }
    c.sort();
    c.dedup();
    c
}

/// A seed in progress.
struct Seed<'a> {
    cfg: &'a Config,
    res: &'a mut SeedResult,
    sim: SimStorage,
    rng: StdRng,
    /// The state the last recovery showed.
    settled: Rows,
    /// Print each step on stderr (`SLUICE_SWARM_TRACE` set): for replaying a seed.
    trace: bool,
}

impl<'a> Seed<'a> {
    fn new(cfg: &'a Config, res: &'a mut SeedResult) -> Seed<'a> {
        Seed {
            cfg,
            res,
            sim: {
                let sim = SimStorage::new(cfg.seed);
                sim.refuse_io_ring(cfg.ring_refused);
                sim
            },
            rng: StdRng::seed_from_u64(cfg.seed),
            settled: Rows::new(),
            trace: std::env::var_os("SLUICE_SWARM_TRACE").is_some(),
        }
    }

    fn note(&self, what: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("seed {}: {}", self.cfg.seed, what());
        }
    }

    fn run(&mut self) -> Result<(), String> {
        let cfg = self.cfg;
        self.note(|| cfg.short());
        let (mut db, mut tables) = self.create().map_err(|e| format!("setup failed: {e}"))?;
        for s in 0..cfg.sessions.len() {
            let (next, next_tables) = self.session(s, db, tables)?;
            db = next;
            tables = next_tables;
        }
        db.verify().map_err(|e| format!("verify failed: {e}"))?;
        let backed_up = match cfg.backup {
            true => Some(super::backup::take(&self.sim, cfg, &db, &tables)?),
            false => None,
        };
        self.res.backups += backed_up.is_some() as u64;
        // The recovered database takes new work.
        let mut tx = db.begin();
        let r = match tx.put(&tables[MARK[0]], b"after", b"recovery") {
            Ok(_) => tx.commit(),
            Err(e) => tx.rollback().and(Err(e)),
        };
        drop(tables);
        r.and_then(|()| db.close())
            .map_err(|e| format!("work after recovery failed: {e}"))?;
        if cfg.archive {
            let c = super::archive::check_closed(&self.sim, cfg)
                .map_err(|p| format!("after the final close: {p}"))?;
            self.res.archived_records_read += c.archived_records;
            self.res.archived_records_compared += c.records;
            self.note(|| format!("archives after the final close: {c:?}"));
        }
        if let Some(rows) = backed_up {
            super::backup::restore(&self.sim, cfg, &rows)?;
            self.res.restores += 1;
        }
        Ok(())
    }

    /// Creates the database, its tables and the loaded rows, and checkpoints (before
    /// any halt is armed).
    fn create(&mut self) -> Result<(Db, Vec<Tbl>), Error> {
        let db = open(&self.sim, self.cfg, self.cfg.options(0))?;
        let tables = db.create_tables()?;
        create_fences(&db, self.cfg)?;
        self.settled = initial_rows(self.cfg);
        let mut tx = db.begin();
        // The scratch tables' fences are tables of their own (`create_fences`).
        for ((t, k), v) in self.settled.iter().filter(|((t, _), _)| *t != SCRATCH) {
            tx.put(&tables[*t], k, v)?;
        }
        tx.commit()?;
        db.checkpoint()?;
        Ok((db, tables))
    }

    /// Session `s`: work on `db` under its halt, the halt, and the recoveries; returns
    /// the database the last recovery opened (with the next session's options).
    fn session(&mut self, s: usize, db: Db, tables: Vec<Tbl>) -> Result<(Db, Vec<Tbl>), String> {
        let cfg = self.cfg;
        let plan = cfg.sessions[s];
        let range = if plan.late {
            1 << 40
        } else {
            ((cfg.threads * cfg.txns) as u64 * OPS_PER_TXN).max(8)
        };
        let armed = plan
            .halt
            .arm(&self.sim, &mut self.rng, range, &cfg.data_files());
        let incarnation = self.sim.incarnation();
        self.note(|| format!("session {s}: {:?} armed over {range} operations", plan.halt));
        let run = run_session(&db, &tables, cfg, s, &self.settled, &mut self.rng);
        self.res.audits += run.audits;
        self.res.pool_full += run.pool_full;
        self.res.tables.merge(run.tables);
        self.res.compactions += run.compactions;
        self.res.pages_returned += run.pages_returned;
        let mut clean = false;
        if run.violation.is_none()
            && plan.clean_close
            && self.sim.incarnation() == incarnation
            && db.health().is_ok()
        {
            // Close while the halt is still armed: it may strike during the close.
            drop(tables);
            match db.close() {
                Ok(()) => clean = self.sim.incarnation() == incarnation,
                Err(e) if e.is_io() => {}
                Err(e) => return Err(format!("session {s}: a clean close failed: {e}")),
            }
        } else {
            drop(tables);
            drop(db);
        }
        let end = armed.end_run(&self.sim, &mut self.rng);
        if cfg.archive {
            self.res.archive_copies_compared += super::archive::check_at_halt(&self.sim, cfg)
                .map_err(|p| format!("session {s} ({}): {p}", plan.halt.name()))?;
        }
        self.note(|| {
            let threads: Vec<String> = run
                .threads
                .iter()
                .map(|t| {
                    let acked = t.attempts.iter().filter(|a| a.acked).count();
                    format!("{}/{acked}", t.attempts.len())
                })
                .collect();
            format!(
                "session {s}: attempts/acknowledged per thread {threads:?}; {end:?}, clean close {clean}; {:?}",
                run.violation
            )
        });
        if let Some(v) = run.violation {
            return Err(format!("session {s} ({}): {v}", plan.halt.name()));
        }
        self.res.halts_mid_run += end.mid_run as u64;
        self.res.clean_closes += clean as u64;
        if end.mid_run {
            self.res
                .coverage
                .push(format!("struck-mid-run={}", plan.halt.name()));
        }
        if clean {
            self.res
                .coverage
                .push(format!("clean-close={}", cfg.protocol));
        }
        self.res.acknowledged += run
            .threads
            .iter()
            .flat_map(|t| &t.attempts)
            .filter(|a| a.acked)
            .count() as u64;
        let durable = cfg.protocol.durable() || clean;
        let settled = std::mem::take(&mut self.settled);
        let mut shown = Shown {
            trace: self.trace.then_some(cfg.seed),
            expected: Expected::new(cfg, &settled, &run.threads, durable, clean),
            state: None,
            lost: Lost::default(),
            rechecked: 0,
        };
        let r = self.recover(s, end.killed, &mut shown);
        self.res.states_rechecked += shown.rechecked;
        self.res.lost += shown.lost.kept;
        self.res.lost_async += shown.lost.allowed;
        // How the session ended, for the failure: the halt, whether it struck while the
        // work ran, whether the process was killed, whether the database closed cleanly.
        let how = format!(
            "{}{}{}{}{}",
            if plan.late { "late " } else { "" },
            plan.halt.name(),
            if end.mid_run { ", struck mid-run" } else { "" },
            if end.killed { ", killed" } else { "" },
            if clean { ", closed cleanly" } else { "" }
        );
        let (db, tables) = r.map_err(|p| format!("session {s} ({how}): {p}"))?;
        self.settled = shown.state.expect("the last recovery showed its state");
        Ok((db, tables))
    }

    /// The recoveries after session `s`: halted ones, a read-only open and read errors
    /// as the session's plan says, then the open the next session works on.
    fn recover(
        &mut self,
        s: usize,
        killed: bool,
        shown: &mut Shown,
    ) -> Result<(Db, Vec<Tbl>), String> {
        let cfg = self.cfg;
        let plan = cfg.sessions[s];
        let options = cfg.options(s + 1);
        let parts = match &cfg.layout {
            Layout::Plain { .. } => 1,
            Layout::Partitioned(p) => p.log_managers as u64,
        };
        let sim = &self.sim;
        halted_recoveries(
            sim,
            &mut self.rng,
            killed,
            RECOVERY_OPS * parts,
            &mut self.res.halts_in_recovery,
            || open(sim, cfg, options.clone()),
            |db| shown.show(&db).map(drop),
        )?;
        self.note(|| format!("{} recoveries halted so far", self.res.halts_in_recovery));
        if let Some(pool) = plan.read_only {
            let mut ro = options.clone();
            ro.read_only = true;
            ro.pool_pages = pool;
            // Whatever the pool, a read-only open of a crashed database opens and shows
            // it: the pages its recovery changed that do not fit are spilled to a
            // scratch file (of the simulated disk), never refused.
            let db = open(sim, cfg, ro).map_err(|e| format!("a read-only open failed: {e}"))?;
            shown
                .show(&db)
                .map_err(|p| format!("read-only open: {p}"))?;
            self.res.read_only_opens += 1;
            self.res.coverage.push("read-only=opened".into());
            if db.victim_writes() > 0 {
                self.res.read_only_spilled += 1;
                self.res.coverage.push("read-only=spilled".into());
            }
            drop(db);
            if plan.power_loss_after_read_only {
                self.note(|| "the power goes after the read-only open".into());
                sim.crash();
            }
        }
        if plan.halt == Halt::ReadErrorsInRecovery {
            let refused =
                open_with_read_errors(sim, &mut self.rng, || open(sim, cfg, options.clone()))?;
            self.res.refused_opens += refused as u64;
        }
        let db = open(sim, cfg, options).map_err(|e| format!("recovery failed: {e}"))?;
        let tables = shown.show(&db)?;
        if cfg.archive {
            let listed = super::archive::check_live(sim, cfg, &db)?;
            self.res.archives_checked += 1;
            self.res.archived_segments += listed;
        }
        Ok((db, tables))
    }
}

/// The states recoveries showed after one session, and the oracle they are judged by.
struct Shown<'a> {
    /// The seed, when tracing.
    trace: Option<u64>,
    expected: Expected<'a>,
    /// The state the last completed recovery showed.
    state: Option<Rows>,
    /// The most acknowledged commits any recovery missed.
    lost: Lost,
    rechecked: u64,
}

impl Shown<'_> {
    /// Reads what `db` shows a client, judges it, checks its large values and its
    /// structure, and checks that it equals what the previous open showed. Any failure
    /// is a broken rule (a read-only database spills instead of refusing).
    fn show(&mut self, db: &Db) -> Result<Vec<Tbl>, String> {
        let read = db.tables().and_then(|tables| {
            let rows = read_rows(db, &tables)?;
            Ok((tables, rows))
        });
        let (tables, rows) = match read {
            Ok(x) => x,
            Err(e) => return Err(format!("reading what the database shows failed: {e}")),
        };
        if let Some(seed) = self.trace {
            let db_kind = if db.read_only() {
                "read-only"
            } else {
                "read-write"
            };
            eprintln!("seed {seed}: a {db_kind} open shows {} rows", rows.len());
        }
        let (lost, r) = self.expected.judge(&rows);
        self.lost.kept = self.lost.kept.max(lost.kept);
        self.lost.allowed = self.lost.allowed.max(lost.allowed);
        r?;
        check_chunks(db, &tables, &rows)?;
        db.verify().map_err(|e| format!("verify failed: {e}"))?;
        if let Some(before) = &self.state {
            if before != &rows {
                return Err(diff_message(
                    "a state shown to a client by an earlier open was lost",
                    before,
                    &rows,
                ));
            }
            self.rechecked += 1;
        }
        self.state = Some(rows);
        Ok(tables)
    }
}
