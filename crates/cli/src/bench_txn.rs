//! `sluice bench tpcb` and `sluice bench tatp`.

use crate::progress;
use crate::Failure;
use sluice::CommitProtocol;
use sluice_bench::knobs::{self, in_range};
use sluice_bench::output::{json_line, Table};
use sluice_bench::workloads::session::{Row, RunSpec, TatpSession, TpcbSession};
use sluice_bench::workloads::setup::{self, BenchDb, Setup};
use sluice_bench::workloads::stored::{self, Stored};
use sluice_bench::workloads::tatp::TatpKind;
use sluice_bench::workloads::tpcb::{self, TpcbShape};
use sluice_storage::DeviceProfile;
use sluice_wal::{FlushPath, InsertVariant, Preallocate};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Flags both workloads share.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// Logical clients (transactions in the system at once).
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Agent threads (default: one per client for classic/elr, one per core otherwise).
    #[arg(long)]
    agents: Option<usize>,
    /// Commit protocols to run, comma-separated: classic, elr, pipelined,
    /// elr-pipelined, async. Each runs on the same loaded database.
    #[arg(long, default_value = "elr-pipelined,classic", value_delimiter = ',')]
    commit: Vec<CommitProtocol>,
    /// Log-buffer insertion algorithm (default: the machine's, by the rule of
    /// `InsertVariant::for_cores`: mutex up to 4 hardware threads, delegated above).
    #[arg(long, default_value_t = InsertVariant::for_this_machine())]
    log_buffer: InsertVariant,
    /// A checkpoint every this many MiB of log (default 1024: none inside a run; smaller
    /// ones truncate the log as it runs, and its segments are recycled — the JSON's
    /// `zero_fill_bytes_per_txn` and `segments_recycled` show it).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    checkpoint_mib: u64,
    /// Group commit's gather: tuned at run time (adaptive, the library's default) or a
    /// fixed budget of 8 yields (fixed); the JSON's `gather_budget` is where it ended.
    #[arg(long, value_enum, default_value_t = GroupCommitArg::Adaptive)]
    group_commit: GroupCommitArg,
    /// How the log makes new segment space: allocate (reserve the blocks, write
    /// nothing) or zeros (write zeros first, so every log byte is written twice); the
    /// JSON's `zero_fill_bytes_per_txn` shows what it wrote.
    #[arg(long, default_value_t = Preallocate::default())]
    preallocate: Preallocate,
    /// How the log's rounds reach the disk: daemon (a flush thread writes and syncs;
    /// the default, the faster on a small machine) or io-uring (the committing threads
    /// submit writes and syncs to an io_uring and reap them between transactions; no
    /// flush thread on the commit path). Where the kernel refuses io_uring the log takes
    /// the daemon and says so once; the JSON's `flush` is the path taken.
    #[arg(long, default_value_t = FlushPath::default())]
    flush: FlushPath,
    /// Zipf skew of key choice (0 = uniform; TPC-B: accounts, tellers, branches).
    #[arg(long, default_value_t = 0.0)]
    skew: f64,
    /// Emulated log-device latency: 0, 100us, 1ms, 10ms, … (absent: the real disk).
    #[arg(long)]
    log_latency: Option<String>,
    /// Measured seconds per run.
    #[arg(long, default_value_t = 4.0)]
    seconds: f64,
    /// Unmeasured warm-up seconds per run.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Data directory (default: a fresh temporary directory in the current directory).
    /// A directory that already holds this workload at the same scale is reused, the
    /// load skipped; one holding anything else is refused.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Run only the workload's consistency check on the database in --dir (TPC-B: the
    /// balance identities and row counts; TATP: the population rules); exit 0 when it
    /// is consistent, 1 when not.
    #[arg(long)]
    check_only: bool,
    /// Print one JSON object per result row at the end of stdout.
    #[arg(long)]
    json: bool,
    /// Print every column of the results table (default: throughput, latency, aborts
    /// and the consistency check; the JSON always has every field).
    #[arg(long)]
    wide: bool,
}

/// Flags of `sluice bench tpcb`.
#[derive(clap::Args, Debug)]
pub struct TpcbArgs {
    #[command(flatten)]
    common: Common,
    /// Scale factor: branches (100,000 accounts each) [default: 10; with --check-only,
    /// the scale the database holds].
    #[arg(long)]
    scale: Option<u32>,
    /// Accounts only from the teller's own branch (the original experiments).
    #[arg(long)]
    local_only: bool,
}

/// Flags of `sluice bench tatp`.
#[derive(clap::Args, Debug)]
pub struct TatpArgs {
    #[command(flatten)]
    common: Common,
    /// Subscribers [default: 100000; with --check-only, the number the database holds].
    #[arg(long)]
    subscribers: Option<u32>,
    /// Run only one transaction type (e.g. update-location).
    #[arg(long, value_enum)]
    only: Option<TatpKind>,
    /// Uniform subscriber choice instead of NURand.
    #[arg(long)]
    uniform: bool,
}

struct Checked {
    specs: Vec<RunSpec>,
    latency: Option<Duration>,
}

fn check(c: &Common) -> Result<Checked, Failure> {
    in_range("--clients", c.clients, 1..=100_000).map_err(Failure::Usage)?;
    if let Some(a) = c.agents {
        in_range("--agents", a, 1..=4096).map_err(Failure::Usage)?;
    }
    in_range("--skew", c.skew, 0.0..=10.0).map_err(Failure::Usage)?;
    if c.commit.is_empty() {
        return Err(Failure::Usage(
            "--commit needs at least one protocol".into(),
        ));
    }
    let latency = match &c.log_latency {
        None => None,
        Some(s) => Some(
            DeviceProfile::parse_latency(s)
                .map_err(|e| Failure::Usage(format!("--log-latency: {e}")))?,
        ),
    };
    let seconds = knobs::seconds("--seconds", c.seconds, 0.1..=86_400.0).map_err(Failure::Usage)?;
    let warmup = knobs::seconds("--warmup", c.warmup, 0.0..=86_400.0).map_err(Failure::Usage)?;
    let specs = c
        .commit
        .iter()
        .map(|&protocol| RunSpec {
            protocol,
            clients: c.clients,
            agents: c.agents,
            skew: c.skew,
            log_latency: latency,
            warmup,
            seconds,
            time_breakdown: false,
        })
        .collect();
    Ok(Checked { specs, latency })
}

fn setup(c: &Common, latency: Option<Duration>, pool_pages: usize) -> Setup {
    Setup {
        dir: c.dir.clone(),
        log_latency: latency,
        log_buffer: c.log_buffer,
        pool_pages,
        checkpoint_log_bytes: c.checkpoint_mib << 20,
        adaptive_group_commit: c.group_commit == GroupCommitArg::Adaptive,
        preallocate: c.preallocate,
        flush: c.flush,
    }
}

/// The columns of the results table without `--wide`: what a first reading needs.
const NARROW: [&str; 9] = [
    "workload",
    "commit",
    "clients",
    "tps",
    "MQTh",
    "p50 µs",
    "p99 µs",
    "aborted",
    "consistent",
];

/// Prints the rows as a table (every column with `wide`, else those of [`NARROW`]) with
/// its legend, and JSON lines with `--json`.
fn print_rows(rows: &[Row], json: bool, wide: bool) {
    let tatp = rows.iter().all(|r| r.workload == "tatp");
    let mut all = vec!["workload"];
    all.extend(Row::columns(tatp));
    let shown: Vec<usize> = (0..all.len())
        .filter(|&i| wide || NARROW.contains(&all[i]))
        .collect();
    let header: Vec<&str> = shown.iter().map(|&i| all[i]).collect();
    let mut t = Table::new(header.clone());
    for r in rows {
        let mut cells = vec![r.workload.to_string()];
        cells.extend(r.cells());
        t.row(shown.iter().map(|&i| cells[i].clone()));
    }
    println!("{}", t.render());
    println!("{}", legend(&header));
    if !wide {
        let more: Vec<&str> = all
            .iter()
            .copied()
            .filter(|c| !header.contains(c))
            .collect();
        println!("more columns with --wide: {}", more.join(", "));
    }
    for r in rows {
        for v in &r.violations {
            println!("INCONSISTENT ({} {}): {v}", r.workload, r.commit);
        }
    }
    if rows.len() >= 2 {
        let base = rows[rows.len() - 1]
            .tps
            .or(rows[rows.len() - 1].mqth)
            .unwrap_or(0.0);
        for r in &rows[..rows.len() - 1] {
            let v = r.throughput();
            if base > 0.0 {
                println!(
                    "{} / {}: {:.2}× (same run, same data: compare ratios, not absolutes)",
                    r.commit,
                    rows[rows.len() - 1].commit,
                    v / base
                );
            }
        }
    }
    if json {
        for r in rows {
            println!("{}", json_line(r));
        }
    }
}

/// What each column of the results table means, printed under it.
const LEGEND: [(&str, &str); 17] = [
    ("workload", "the benchmark"),
    ("commit", "commit protocol: classic (each commit waits for its log sync), elr (early lock release), pipelined (the sync is waited for off the agent thread), elr-pipelined (both), async (no wait: not durable)"),
    ("log buffer", "how records are inserted into the log buffer"),
    ("clients", "transactions in the system at once"),
    ("agents", "threads that run them"),
    ("skew", "Zipf skew of the key choice (0 = uniform)"),
    ("log", "the log device: the real disk, or an emulated latency"),
    ("tps", "committed transactions per second"),
    ("MQTh", "committed transactions per second (TATP's name for it)"),
    ("p50 µs", "median transaction latency, microseconds"),
    ("p99 µs", "99th-percentile transaction latency, microseconds"),
    ("ctx sw/txn", "context switches per committed transaction"),
    ("(vol)", "of those, voluntary ones (a thread waited)"),
    ("cpu", "CPU used by the process over the run (100 % = one core)"),
    ("log B/txn", "log bytes per committed transaction"),
    ("aborted", "transactions aborted (deadlock victims, lock timeouts), then retried"),
    ("consistent", "the workload's consistency check after the run passed"),
];

/// The legend of the columns of a results table, one `  name  meaning` line each.
fn legend(columns: &[&str]) -> String {
    let w = columns.iter().map(|c| c.chars().count()).max().unwrap_or(0);
    let mut out = String::from("columns:");
    for c in columns {
        let meaning = LEGEND
            .iter()
            .find(|(name, _)| name == c)
            .map_or("", |(_, m)| m);
        let pad = w - c.chars().count();
        out.push_str(&format!("\n  {c}{:pad$}  {meaning}", ""));
    }
    out
}

/// The first line of a run: what runs, on what, for how long.
fn config_line(c: &Common, ck: &Checked, workload: &str) -> String {
    let protocols: Vec<String> = c.commit.iter().map(|p| p.to_string()).collect();
    let agents = c
        .agents
        .map_or("agents per protocol's default".to_string(), |a| {
            format!("{a} agents")
        });
    let log = match &c.log_latency {
        Some(l) => format!("log latency {l} (emulated)"),
        None => "log on the real disk".to_string(),
    };
    let dir = c
        .dir
        .as_ref()
        .map_or("a temporary directory".to_string(), |d| {
            d.display().to_string()
        });
    let seconds = ck.specs.first().map_or(0.0, |s| s.seconds.as_secs_f64());
    let warmup = ck.specs.first().map_or(0.0, |s| s.warmup.as_secs_f64());
    format!(
        "running {workload}: {} client(s), {agents}; commit {} ({seconds} s measured after {warmup} s warm-up, each); {log}; data in {dir}",
        c.clients,
        protocols.join(", then "),
    )
}

fn finish(rows: Vec<Row>, json: bool, wide: bool) -> Result<(), Failure> {
    print_rows(&rows, json, wide);
    let mut paths: Vec<&str> = rows.iter().map(|r| r.flush.as_str()).collect();
    paths.dedup();
    if !json && !paths.is_empty() {
        println!("log flush path: {}", paths.join(", "));
    }
    if rows.iter().any(|r| !r.consistent) {
        return Err(Failure::Runtime("a consistency check failed".into()));
    }
    Ok(())
}

/// The database `--dir` names, if it holds one (a `CONTROL` file); a `--dir` that is
/// not a directory, or a directory of other files, is refused.
fn existing(c: &Common) -> Result<Option<PathBuf>, Failure> {
    let Some(d) = &c.dir else {
        if c.check_only {
            return Err(Failure::Usage(
                "--check-only needs --dir naming a benchmark database".into(),
            ));
        }
        return Ok(None);
    };
    if !d.exists() {
        if c.check_only {
            return Err(Failure::Usage(format!(
                "--check-only: {} does not exist",
                d.display()
            )));
        }
        return Ok(None);
    }
    if !d.is_dir() {
        return Err(Failure::Usage(format!(
            "--dir {} is not a directory",
            d.display()
        )));
    }
    if d.join("CONTROL").exists() {
        if c.log_latency.is_some() && !c.check_only {
            return Err(Failure::Usage(format!(
                "--dir {} holds a database, and --log-latency would put its log on a fresh RAM disk; drop --log-latency to reuse it",
                d.display()
            )));
        }
        return Ok(Some(d.clone()));
    }
    let empty = std::fs::read_dir(d)
        .map_err(|e| Failure::Usage(format!("--dir {}: {e}", d.display())))?
        .next()
        .is_none();
    if c.check_only || !empty {
        return Err(Failure::Usage(format!(
            "--dir {} is not a sluice database: it has no CONTROL file",
            d.display()
        )));
    }
    Ok(None)
}

/// Opens the benchmark database; a database another process holds is one clear line.
fn open(s: &Setup) -> Result<BenchDb, Failure> {
    setup::open(s).map_err(|e| match (&e, &s.dir) {
        (sluice::Error::Locked(_), Some(d)) => Failure::Runtime(format!(
            "{} is in use by another process (its directory lock is held)",
            d.display()
        )),
        (_, Some(d)) => Failure::Runtime(format!("opening {}: {e}", d.display())),
        _ => Failure::Runtime(e.to_string()),
    })
}

/// The workload a command wants the database to hold, and whether its size flag
/// (`--scale`, `--subscribers`) was given.
struct Want {
    stored: Stored,
    size_given: bool,
}

impl Want {
    /// Whether a database holding `found` serves: this workload at this size, or, with
    /// `--check-only` and no size flag, this workload at whatever size it holds.
    fn accepts(&self, found: &Stored, check_only: bool) -> bool {
        *found == self.stored
            || (check_only
                && !self.size_given
                && std::mem::discriminant(found) == std::mem::discriminant(&self.stored))
    }

    /// The refusal of a database holding `found`, with the size flag that would take it
    /// when it holds this workload at another size.
    fn refuse(&self, dir: &Path, found: &Stored) -> Failure {
        if let (
            Stored::Tpcb {
                accounts_per_branch: found_apb,
                ..
            },
            Stored::Tpcb {
                accounts_per_branch: want_apb,
                ..
            },
        ) = (found, &self.stored)
        {
            if found_apb != want_apb {
                // No load of this command makes that: a load killed before it recorded
                // itself, recognised by its row counts (`stored::identify`). Saying "holds
                // TPC-B at scale 1, not TPC-B at scale 1; use --scale 1" contradicts itself.
                return Failure::Usage(format!(
                    "{} holds a TPC-B load that did not finish ({found}; a load has {want_apb}): remove the directory (rm -r {}) to load it again, or use another --dir",
                    dir.display(),
                    dir.display()
                ));
            }
        }
        let hint = match found {
            _ if std::mem::discriminant(found) != std::mem::discriminant(&self.stored) => {
                String::new()
            }
            Stored::Tpcb { scale, .. } => format!(" or --scale {scale}"),
            Stored::Tatp { subscribers } => format!(" or --subscribers {subscribers}"),
            _ => String::new(),
        };
        Failure::Usage(format!(
            "{} holds {found}, not {}; use another --dir{hint}",
            dir.display(),
            self.stored
        ))
    }
}

/// The database a run goes on, as [`start`] found it.
enum Start {
    /// `--check-only` checked it: nothing is left to do.
    Checked,
    /// It holds no tables: load the workload.
    Empty(BenchDb),
    /// It holds the workload wanted, in `dir`.
    Holds {
        bench: BenchDb,
        dir: PathBuf,
        found: Stored,
    },
}

/// What both workloads do before they differ: the database `--dir` names is checked
/// (`--check-only`: its consistency, and that is all), or opened and found empty or
/// holding the workload wanted.
fn start(
    c: &Common,
    latency: Option<Duration>,
    want: &Want,
    pool_pages: usize,
) -> Result<Start, Failure> {
    let existing = existing(c)?;
    if c.check_only {
        let dir = existing.expect("existing() requires a database with --check-only");
        check_only(c, &setup(c, None, pool_pages), &dir, want)?;
        return Ok(Start::Checked);
    }
    let bench = open(&setup(c, latency, pool_pages))?;
    Ok(match stored::identify(&bench.db)? {
        Stored::Empty => Start::Empty(bench),
        found => {
            let dir = existing.unwrap_or_else(|| bench.dir.clone());
            if !want.accepts(&found, false) {
                return Err(want.refuse(&dir, &found));
            }
            Start::Holds { bench, dir, found }
        }
    })
}

/// `--check-only`: the consistency check of what the database holds, which must be
/// what `want` accepts.
fn check_only(c: &Common, s: &Setup, dir: &Path, want: &Want) -> Result<(), Failure> {
    let b = open(s)?;
    let found = stored::identify(&b.db)?;
    if !want.accepts(&found, true) {
        return Err(want.refuse(dir, &found));
    }
    let r = stored::check(&b.db, &found)?;
    b.close()?;
    println!("{}", r.summary);
    for v in &r.violations {
        println!("INCONSISTENT: {v}");
    }
    if r.ok() {
        println!("consistent");
    }
    if c.json {
        println!(
            "{}",
            serde_json::json!({
                "dir": dir.display().to_string(),
                "workload": r.workload,
                "summary": r.summary,
                "consistent": r.ok(),
                "violations": r.violations,
            })
        );
    }
    if !r.ok() {
        return Err(Failure::Runtime(format!(
            "{}: the consistency check failed ({} violation(s))",
            dir.display(),
            r.violations.len()
        )));
    }
    Ok(())
}

/// Loads the workload under a progress bar and says where, when `--dir` named it.
fn load<S>(
    c: &Common,
    want: &Want,
    what: &str,
    load: impl FnOnce(&dyn Fn(f64)) -> Result<S, sluice::Error>,
) -> Result<S, Failure> {
    let session = progress::fraction(&format!("loading {what}"), c.json, load)?;
    if let Some(d) = &c.dir {
        println!("loaded {}: {}", d.display(), want.stored);
    }
    Ok(session)
}

/// Runs every protocol of `--commit`, each under its own progress bar, and prints the rows.
fn run_all(
    c: &Common,
    ck: &Checked,
    workload: &str,
    mut run: impl FnMut(&RunSpec, &dyn Fn(f64)) -> Result<Row, sluice::Error>,
) -> Result<(), Failure> {
    let mut rows = Vec::new();
    for spec in &ck.specs {
        let name = format!("{workload} {}", spec.protocol);
        rows.push(progress::fraction(&name, c.json, |tick| run(spec, tick))?);
    }
    finish(rows, c.json, c.wide)
}

pub fn tpcb(a: TpcbArgs) -> Result<(), Failure> {
    let ck = check(&a.common)?;
    if let Some(s) = a.scale {
        in_range("--scale", s, 1..=10_000).map_err(Failure::Usage)?;
    }
    let scale = a.scale.unwrap_or(10);
    let want = Want {
        stored: Stored::Tpcb {
            scale,
            accounts_per_branch: tpcb::ACCOUNTS_PER_BRANCH,
        },
        size_given: a.scale.is_some(),
    };
    let shape = TpcbShape {
        local_only: a.local_only,
        ..TpcbShape::standard(scale)
    };
    let pool_pages = TpcbSession::pool_pages(scale);
    let what = format!(
        "TPC-B at scale {scale} ({scale} branch(es), {} accounts)",
        scale as u64 * tpcb::ACCOUNTS_PER_BRANCH as u64
    );
    let started = start(&a.common, ck.latency, &want, pool_pages)?;
    if !matches!(started, Start::Checked) {
        // After `start`: a refused --dir prints nothing on stdout.
        println!("{}", config_line(&a.common, &ck, &what));
    }
    let mut session = match started {
        Start::Checked => return Ok(()),
        Start::Empty(b) => load(&a.common, &want, &format!("TPC-B SF {scale}"), |tick| {
            TpcbSession::load_into(b, shape, tick)
        })?,
        Start::Holds { bench, dir, found } => {
            let (session, c) = TpcbSession::reuse(bench, shape)?;
            if !c.ok() {
                return Err(Failure::Runtime(format!(
                    "{} is inconsistent as found, not benchmarking it: {}",
                    dir.display(),
                    c.violations.join("; ")
                )));
            }
            println!(
                "reusing {}: {found}, {} history rows, consistent (no load)",
                dir.display(),
                c.history_rows
            );
            session
        }
    };
    run_all(&a.common, &ck, "tpcb", |spec, tick| session.run(spec, tick))
}

pub fn tatp(a: TatpArgs) -> Result<(), Failure> {
    let ck = check(&a.common)?;
    if let Some(n) = a.subscribers {
        in_range("--subscribers", n, 1..=100_000_000).map_err(Failure::Usage)?;
    }
    let subscribers = a.subscribers.unwrap_or(100_000);
    let want = Want {
        stored: Stored::Tatp { subscribers },
        size_given: a.subscribers.is_some(),
    };
    let pool_pages = TatpSession::pool_pages(subscribers);
    let what = format!("TATP with {subscribers} subscribers");
    let started = start(&a.common, ck.latency, &want, pool_pages)?;
    if !matches!(started, Start::Checked) {
        // After `start`: a refused --dir prints nothing on stdout.
        println!("{}", config_line(&a.common, &ck, &what));
    }
    let mut session = match started {
        Start::Checked => return Ok(()),
        Start::Empty(b) => load(&a.common, &want, &format!("TATP {subscribers}"), |tick| {
            TatpSession::load_into(b, subscribers, tick)
        })?,
        Start::Holds { bench, dir, found } => {
            let session = TatpSession::reuse(bench, subscribers)?;
            println!("reusing {}: {found} (no load)", dir.display());
            session
        }
    };
    run_all(&a.common, &ck, "tatp", |spec, tick| {
        session.run(spec, a.only, a.uniform, tick)
    })
}

/// `--group-commit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum GroupCommitArg {
    Adaptive,
    Fixed,
}
