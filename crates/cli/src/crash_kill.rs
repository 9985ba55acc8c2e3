//! `sluice crash-test kill` (docs RELIABILITY.md, test 2): the real binary under TPC-B on
//! the real disk, SIGKILLed at random moments, reopened and checked.
//!
//! The parent loads a TPC-B database, then for each run re-executes itself as a child
//! (`sluice kill-child`, hidden) that opens the database — running restart recovery
//! after the previous kill — and runs TPC-B from several client threads. The child
//! prints `ready` once the database is open, then one line per acknowledged commit:
//! `ack <history id> <account> <delta>`, written only after the commit returned. A
//! history id is `run tag << 40 | sequence` with the run tag the run's number, so every
//! transaction of every run has its own history key. The parent SIGKILLs the child at a
//! random moment (a quarter of the runs within the first 50 ms, while it starts and
//! recovers), reopens the database itself (timing the open: restart recovery), checks
//! the TPC-B identities, and looks up every acknowledged history key: the row must be
//! there with the account and delta the child printed.

use crate::progress;
use crate::Failure;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use sluice::experiment::{AgentOptions, Agents, Outcome};
use sluice::{CommitProtocol, Database, Options, Partitioned, Strategy};
use sluice_bench::knobs::in_range;
use sluice_bench::output::{json_line, thousands, Table};
use sluice_bench::workloads::driver::DriverConfig;
use sluice_bench::workloads::setup::{self, Setup};
use sluice_bench::workloads::tpcb::{self, TpcbGenerator, TpcbShape, TpcbTables};
use sluice_bench::workloads::tpcb_partitioned::Parted;
use sluice_wal::FlushPath;
use sluice_wal::InsertVariant;
use std::io::{BufRead, BufReader, Read, Write};
use std::ops::Bound::{Excluded, Included};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Flags of `sluice crash-test kill`.
#[derive(clap::Args, Debug)]
pub struct KillArgs {
    /// Kill-and-recover runs.
    #[arg(long)]
    runs: u64,
    /// How long a run may last before its kill (each kill lands at a random moment in
    /// it; a quarter of the runs are killed within their first 50 ms).
    #[arg(long, default_value_t = 2.0)]
    seconds_per_run: f64,
    /// The child's commit protocol. Under `async` acknowledged commits may be lost by
    /// design: the loss is reported but is not a failure.
    #[arg(long, default_value_t = CommitProtocol::ElrPipelined)]
    commit: CommitProtocol,
    /// How pages reach the data file (a propagation strategy: checkpoint-sweep,
    /// page-oldest[:heap], page-coldest[:heap], page-hottest[:heap], page-none,
    /// page-clustered:N, page-mixed or log).
    #[arg(long, default_value_t = Strategy::CheckpointSweep)]
    propagation: Strategy,
    /// 0: an ordinary database, TPC-B through an agent pool. K from 1 to 3: a
    /// partitioned database with K log managers (branch, teller, account and history in
    /// partitions 0, 1, 2, 3 modulo K, so a transaction spans them), TPC-B in direct
    /// transactions committed by the coordinator.
    #[arg(long, default_value_t = 0)]
    log_managers: usize,
    /// How the child's log reaches the disk: daemon (a flush thread, the default) or
    /// io-uring (the committing threads submit and reap; no flush thread on the commit
    /// path).
    #[arg(long, default_value_t = FlushPath::default())]
    flush: FlushPath,
    /// TPC-B scale factor (branches).
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Accounts per branch (100,000 by TPC-B's definition; fewer load faster).
    #[arg(long, default_value_t = tpcb::ACCOUNTS_PER_BRANCH)]
    accounts_per_branch: u32,
    /// Client threads in the child.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Where the database's temporary directory is made (default: the current one).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Seed of the kill times (default: random; the report prints it).
    #[arg(long)]
    seed: Option<u64>,
    /// Print one JSON object at the end of stdout.
    #[arg(long)]
    json: bool,
}

/// Flags of `sluice kill-child` (hidden): the kill test's child process.
#[derive(clap::Args, Debug)]
pub struct ChildArgs {
    /// The loaded database's directory.
    #[arg(long)]
    dir: PathBuf,
    #[arg(long)]
    commit: CommitProtocol,
    #[arg(long, default_value_t = Strategy::CheckpointSweep)]
    propagation: Strategy,
    #[arg(long, default_value_t = 0)]
    log_managers: usize,
    #[arg(long, default_value_t = FlushPath::default())]
    flush: FlushPath,
    #[arg(long)]
    scale: u32,
    #[arg(long)]
    accounts_per_branch: u32,
    #[arg(long)]
    clients: usize,
    /// Distinct per run: the high bits of this run's history ids.
    #[arg(long)]
    run_tag: u64,
}

/// A checkpoint every 16 MiB of log: the child checkpoints while it runs (kills land in
/// checkpoints too) and recovery has a bounded log to replay.
const CHECKPOINT_LOG_BYTES: u64 = 16 << 20;

/// The database's options (the benchmarks' setup, with the run's protocol and
/// propagation strategy).
fn db_options(
    scale: u32,
    commit: CommitProtocol,
    propagation: Strategy,
    flush: FlushPath,
) -> Options {
    Options {
        commit,
        propagation,
        ..setup::options(&Setup {
            dir: None,
            log_latency: None,
            log_buffer: InsertVariant::for_this_machine(),
            pool_pages: scale as usize * 2_500 + 4_096,
            checkpoint_log_bytes: CHECKPOINT_LOG_BYTES,
            adaptive_group_commit: true,
            flush,
            preallocate: Default::default(),
        })
    }
}

/// What the kill test runs on: the same flags in the parent and in every child.
#[derive(Debug, Clone, Copy)]
struct Layout {
    scale: u32,
    commit: CommitProtocol,
    propagation: Strategy,
    log_managers: usize,
    flush: FlushPath,
}

/// The database under test, open.
enum Target {
    Plain { db: Database, tables: TpcbTables },
    Parted(Parted),
}

impl Layout {
    fn options(&self) -> Options {
        db_options(self.scale, self.commit, self.propagation, self.flush)
    }

    /// Opens (recovering) the database in `dir`.
    fn open(&self, dir: &Path) -> Result<Target, Failure> {
        if self.log_managers == 0 {
            let db = Database::builder(dir).options(self.options()).open()?;
            let tables = TpcbTables::open(&db)?;
            return Ok(Target::Plain { db, tables });
        }
        Ok(Target::Parted(Parted::open(self.partitioned(dir)?)?))
    }

    /// Creates the database in `dir` and loads TPC-B.
    fn load(&self, dir: &Path, shape: &TpcbShape) -> Result<Target, Failure> {
        if self.log_managers == 0 {
            let db = Database::builder(dir).options(self.options()).open()?;
            let tables = tpcb::load(&db, shape, |_| {})?;
            return Ok(Target::Plain { db, tables });
        }
        Ok(Target::Parted(Parted::load(self.partitioned(dir)?, shape)?))
    }

    fn partitioned(&self, dir: &Path) -> Result<Partitioned, Failure> {
        let k = self.log_managers;
        let mut b = Partitioned::builder(dir)
            .log_managers(k)
            .options(self.options());
        for (i, name) in ["branch", "teller", "account", "history"]
            .iter()
            .enumerate()
        {
            b = b.assign(name, i % k);
        }
        Ok(b.open()?)
    }
}

impl Target {
    /// The TPC-B identities.
    fn consistency(&self) -> Result<tpcb::Consistency, Failure> {
        match self {
            Target::Plain { db, tables } => Ok(tpcb::check(db, tables, None)?),
            Target::Parted(p) => p.consistency(None).map_err(Failure::Runtime),
        }
    }

    /// The history row of `history_id`.
    fn history_row(&self, history_id: u64) -> Result<Option<Vec<u8>>, Failure> {
        let key = history_id.to_be_bytes();
        Ok(match self {
            Target::Plain { db, tables } => {
                let mut tx = db.begin();
                let row = tx.get(&tables.history, key)?;
                tx.commit()?;
                row
            }
            Target::Parted(p) => p.history_row(history_id)?,
        })
    }

    /// Closes it: cleanly, or as a crash at this moment would leave it.
    fn close(self, how: Close) -> Result<(), Failure> {
        match self {
            Target::Plain { db, tables } => {
                drop(tables);
                match how {
                    Close::Clean => db.close()?,
                    Close::AsCrashed => db.close_as_crashed()?,
                }
            }
            Target::Parted(p) => {
                let db = p.into_db();
                match how {
                    Close::Clean => db.close()?,
                    Close::AsCrashed => db.close_as_crashed()?,
                }
            }
        }
        Ok(())
    }
}

/// How [`Target::close`] leaves the database.
#[derive(Clone, Copy)]
enum Close {
    Clean,
    AsCrashed,
}

/// `--scale` and `--accounts-per-branch`, which the parent passes on to its children.
fn tpcb_size(scale: u32, accounts_per_branch: u32) -> Result<(), Failure> {
    in_range("--scale", scale, 1..=1_000).map_err(Failure::Usage)?;
    in_range(
        "--accounts-per-branch",
        accounts_per_branch,
        1..=tpcb::ACCOUNTS_PER_BRANCH,
    )
    .map_err(Failure::Usage)?;
    Ok(())
}

fn shape(scale: u32, accounts_per_branch: u32) -> TpcbShape {
    TpcbShape {
        accounts_per_branch,
        ..TpcbShape::standard(scale)
    }
}

/// The child: open (recovering), print `ready`, run TPC-B until killed, printing each
/// acknowledged commit.
pub fn child(a: ChildArgs) -> Result<(), Failure> {
    in_range("--clients", a.clients, 1..=256).map_err(Failure::Usage)?;
    tpcb_size(a.scale, a.accounts_per_branch)?;
    log_managers(a.log_managers)?;
    // The parent loaded it: a child never creates a database.
    let marker = if a.log_managers == 0 {
        "CONTROL"
    } else {
        sluice::testing::MANIFEST
    };
    if !a.dir.join(marker).is_file() {
        return Err(Failure::Usage(format!(
            "--dir {} is not a sluice database: it has no {marker} file",
            a.dir.display()
        )));
    }
    let layout = Layout {
        scale: a.scale,
        commit: a.commit,
        propagation: a.propagation,
        log_managers: a.log_managers,
        flush: a.flush,
    };
    let target = layout.open(&a.dir)?;
    let gen =
        TpcbGenerator::new(shape(a.scale, a.accounts_per_branch)).map_err(Failure::Runtime)?;
    // Every write is one whole line, so a kill never leaves half of one in the pipe.
    let say = |line: String| {
        let mut out = std::io::stdout().lock();
        if out
            .write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            // The parent is gone: nobody is checking any more.
            std::process::exit(0);
        }
    };
    let agents = match &target {
        Target::Plain { db, .. } => Some(Agents::start_with(
            db,
            AgentOptions {
                agents: DriverConfig::default_agents(a.commit, a.clients),
                protocol: Some(a.commit),
                on_commit_record: None,
                time_breakdown: false,
            },
        )),
        Target::Parted(_) => None,
    };
    say("ready\n".into());
    let seq = AtomicU64::new(0);
    std::thread::scope(|s| {
        for c in 0..a.clients as u64 {
            let (agents, target, gen, seq, say) = (&agents, &target, &gen, &seq, &say);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(a.run_tag << 16 ^ c);
                loop {
                    let id = a.run_tag << 40 | seq.fetch_add(1, Ordering::Relaxed);
                    let i = gen.next(&mut rng, id);
                    let r = match (target, agents) {
                        (Target::Plain { tables, .. }, Some(agents)) => {
                            let t = tables.clone();
                            agents
                                .execute(move |tx| {
                                    tpcb::run(tx, &t, &i)?;
                                    Ok(Outcome::Commit(()))
                                })
                                .wait()
                                .map(|f| f.committed)
                        }
                        (Target::Parted(p), _) => p.transact_once(&i).map(|()| true),
                        (Target::Plain { .. }, None) => unreachable!("agents run a plain database"),
                    };
                    match r {
                        Ok(true) => {
                            say(format!("ack {} {} {}\n", i.history_id, i.account, i.delta))
                        }
                        Ok(false) => {}
                        Err(e) if e.is_retryable() => {}
                        Err(e) => {
                            // The parent sees the child end by itself and reports this.
                            eprintln!("error: client {c}: {e}");
                            std::process::exit(1);
                        }
                    }
                }
            });
        }
    });
    Ok(())
}

#[derive(Serialize)]
struct Report {
    runs: u64,
    commit: String,
    propagation: String,
    /// The log's flush path (`daemon` or `io-uring`).
    flush: String,
    log_managers: usize,
    seed: u64,
    acknowledged: u64,
    lost: u64,
    inconsistent: u64,
    recovery_ms_p50: f64,
    recovery_ms_max: f64,
    kills_during_recovery: u64,
    failures: Vec<String>,
}

/// One acknowledged commit as the child printed it.
struct Ack {
    history_id: u64,
    account: u32,
    delta: i64,
}

/// What one run's child printed before it died.
struct Heard {
    ready: bool,
    acks: Vec<Ack>,
}

fn parse_output(lines: Vec<String>) -> Result<Heard, Failure> {
    let mut h = Heard {
        ready: false,
        acks: Vec::new(),
    };
    for l in lines {
        if l == "ready" {
            h.ready = true;
            continue;
        }
        let f: Vec<&str> = l.split(' ').collect();
        let parsed = match f.as_slice() {
            ["ack", id, account, delta] => (|| {
                Some(Ack {
                    history_id: id.parse().ok()?,
                    account: account.parse().ok()?,
                    delta: delta.parse().ok()?,
                })
            })(),
            _ => None,
        };
        match parsed {
            Some(a) => h.acks.push(a),
            None => return Err(Failure::Runtime(format!("the child printed {l:?}"))),
        }
    }
    Ok(h)
}

/// `--log-managers`: 0 is an ordinary database, 1 to 3 a partitioned one.
fn log_managers(k: usize) -> Result<(), Failure> {
    in_range("--log-managers", k, 0..=3)
        .map(drop)
        .map_err(|e| Failure::Usage(format!("{e} (0: an ordinary database)")))
}

fn validate(a: &KillArgs) -> Result<(), Failure> {
    let usage = |m: String| Err(Failure::Usage(m));
    in_range("--runs", a.runs, 1..=1_000_000).map_err(Failure::Usage)?;
    in_range(
        "--seconds-per-run",
        a.seconds_per_run,
        (Excluded(0.0), Included(3600.0)),
    )
    .map_err(Failure::Usage)?;
    tpcb_size(a.scale, a.accounts_per_branch)?;
    in_range("--clients", a.clients, 1..=256).map_err(Failure::Usage)?;
    log_managers(a.log_managers)?;
    if let Some(d) = &a.dir {
        if !d.is_dir() {
            return usage(format!("--dir {} is not a directory", d.display()));
        }
    }
    Ok(())
}

/// Runs the child once, kills it `kill_after` after its start, and returns what it
/// printed.
fn run_child(
    a: &KillArgs,
    dir: &Path,
    run_tag: u64,
    kill_after: Duration,
) -> Result<Heard, Failure> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .arg("kill-child")
        .arg("--dir")
        .arg(dir)
        .args([
            "--commit",
            a.commit.name(),
            "--propagation",
            &a.propagation.to_string(),
            "--log-managers",
            &a.log_managers.to_string(),
            "--flush",
            a.flush.name(),
            "--scale",
            &a.scale.to_string(),
            "--accounts-per-branch",
            &a.accounts_per_branch.to_string(),
            "--clients",
            &a.clients.to_string(),
            "--run-tag",
            &run_tag.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let t0 = Instant::now();
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out_reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut exited = None;
    loop {
        if let Some(st) = child.try_wait()? {
            exited = Some(st);
            break;
        }
        let left = kill_after.saturating_sub(t0.elapsed());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(5)));
    }
    if exited.is_none() {
        child.kill()?; // SIGKILL on Unix
        child.wait()?;
    }
    let lines = out_reader.join().expect("the reader does not panic");
    let err = err_reader.join().expect("the reader does not panic");
    if let Some(st) = exited {
        return Err(Failure::Runtime(format!(
            "the child exited by itself ({st}) in run {run_tag}: {}",
            err.trim()
        )));
    }
    parse_output(lines)
}

/// What the parent found after one kill.
struct Checked {
    recovery: Duration,
    lost: Vec<u64>,
    violations: Vec<String>,
}

fn check_after_kill(layout: &Layout, dir: &Path, acks: &[Ack]) -> Result<Checked, Failure> {
    let t0 = Instant::now();
    let target = layout.open(dir)?;
    let recovery = t0.elapsed();
    let c = target.consistency()?;
    let mut lost = Vec::new();
    let mut violations = c.violations;
    for a in acks {
        match target.history_row(a.history_id)? {
            None => lost.push(a.history_id),
            Some(v) => {
                let account = v
                    .get(..4)
                    .map(|s| u32::from_le_bytes(s.try_into().unwrap()));
                let delta = v
                    .get(12..20)
                    .map(|s| i64::from_le_bytes(s.try_into().unwrap()));
                if account != Some(a.account) || delta != Some(a.delta) {
                    violations.push(format!(
                        "history row {} holds account {account:?} delta {delta:?}, acknowledged as account {} delta {}",
                        a.history_id, a.account, a.delta
                    ));
                }
            }
        }
    }
    // Closed as a crash would leave it: the next child recovers the same log again.
    target.close(Close::AsCrashed)?;
    Ok(Checked {
        recovery,
        lost,
        violations,
    })
}

fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    (sorted[i].as_secs_f64() * 1e6).round() / 1e3
}

pub fn kill(a: KillArgs) -> Result<(), Failure> {
    validate(&a)?;
    let seed = a.seed.unwrap_or_else(rand::random);
    let mut rng = SmallRng::seed_from_u64(seed);
    let parent = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let temp = tempfile::Builder::new()
        .prefix("sluice-kill-")
        .tempdir_in(&parent)
        .map_err(|e| {
            Failure::Runtime(format!(
                "cannot make the database's directory in {}: {e}",
                parent.display()
            ))
        })?;
    let dir = temp.path().to_path_buf();
    let layout = Layout {
        scale: a.scale,
        commit: a.commit,
        propagation: a.propagation,
        log_managers: a.log_managers,
        flush: a.flush,
    };
    layout
        .load(&dir, &shape(a.scale, a.accounts_per_branch))?
        .close(Close::Clean)?;
    let pb = progress::bar(
        a.runs,
        &format!(
            "crash-test kill {} {}{}",
            a.commit,
            a.propagation,
            match a.log_managers {
                0 => String::new(),
                k => format!(" {k} log managers"),
            }
        ),
        a.json,
    );
    let (mut acknowledged, mut lost, mut inconsistent, mut early) = (0u64, 0u64, 0u64, 0u64);
    let mut recoveries = Vec::new();
    let mut failures = Vec::new();
    let mut runs = 0;
    for run in 1..=a.runs {
        let kill_after = if rng.gen_ratio(1, 4) {
            Duration::from_micros(rng.gen_range(0..50_000))
        } else {
            Duration::from_secs_f64(rng.gen_range(0.0..a.seconds_per_run))
        };
        let heard = run_child(&a, &dir, run, kill_after)?;
        if !heard.ready {
            early += 1;
        }
        acknowledged += heard.acks.len() as u64;
        let c = check_after_kill(&layout, &dir, &heard.acks)?;
        runs += 1;
        recoveries.push(c.recovery);
        lost += c.lost.len() as u64;
        // Under async a loss is by design: counted, not a failure.
        if !c.lost.is_empty() && a.commit.durable() {
            failures.push(format!(
                "run {run} (killed after {kill_after:?}): {} of {} acknowledged commits lost, e.g. history id {}",
                c.lost.len(),
                heard.acks.len(),
                c.lost[0]
            ));
        }
        if !c.violations.is_empty() {
            inconsistent += 1;
            failures.push(format!(
                "run {run} (killed after {kill_after:?}): {}",
                c.violations.join("; ")
            ));
        }
        pb.set_position(run);
    }
    pb.finish_and_clear();
    recoveries.sort();
    let report = Report {
        runs,
        commit: a.commit.name().to_string(),
        propagation: a.propagation.to_string(),
        flush: a.flush.name().to_string(),
        log_managers: a.log_managers,
        seed,
        acknowledged,
        lost,
        inconsistent,
        recovery_ms_p50: percentile_ms(&recoveries, 0.5),
        recovery_ms_max: percentile_ms(&recoveries, 1.0),
        kills_during_recovery: early,
        failures,
    };
    let mut t = Table::new([
        "commit",
        "propagation",
        "flush",
        "log managers",
        "runs",
        "acknowledged",
        "lost",
        "inconsistent",
        "recovery ms p50",
        "recovery ms max",
        "kills before ready",
    ]);
    t.row([
        report.commit.clone(),
        report.propagation.clone(),
        report.flush.clone(),
        report.log_managers.to_string(),
        report.runs.to_string(),
        thousands(report.acknowledged as f64),
        report.lost.to_string(),
        report.inconsistent.to_string(),
        format!("{:.1}", report.recovery_ms_p50),
        format!("{:.1}", report.recovery_ms_max),
        report.kills_during_recovery.to_string(),
    ]);
    println!("{}", t.render());
    println!("seed {seed}");
    if !a.commit.durable() && lost > 0 {
        println!("{lost} acknowledged commits lost: expected under async, which acknowledges before the log is durable");
    }
    for f in report.failures.iter().take(20) {
        println!("FAILURE {f}");
    }
    if a.json {
        println!("{}", json_line(&report));
    }
    if acknowledged == 0 {
        // A check that checked nothing is not a pass: no run lived long enough to have
        // a commit acknowledged, so no recovery was asked to keep one.
        return Err(Failure::Runtime(format!(
            "checked nothing: none of the {runs} run(s) had a commit acknowledged before its kill (seed {seed}); give --seconds-per-run more time or --runs more runs"
        )));
    }
    let lost_counts = a.commit.durable() && lost > 0;
    if lost_counts || inconsistent > 0 {
        // Keep the database for a look.
        let kept = temp.keep();
        return Err(Failure::Runtime(format!(
            "{} lost commits and {inconsistent} inconsistent recoveries (seed {seed}; database kept in {})",
            if lost_counts { lost } else { 0 },
            kept.display()
        )));
    }
    Ok(())
}
