//! Runs a comparison: loads each engine once, then runs its turns in rounds, each round
//! in the opposite order of the one before (A B C, C B A, …), so that drift of a shared
//! machine (other processes, page cache, thermal state) falls on all turns alike. A
//! turn is sluice at its client count, or a peer at one of the client counts it sweeps:
//! peers are often best at another count than sluice, and the comparison is with each
//! peer's best ([`super::best`]).

use super::best::{rank, PeerBest};
use super::cleanup;
use super::engine::{median, CompareRow, CompareWorkload, Engine, BUILD_PEERS};
use super::postgres::{self, Cluster};
use crate::knobs::in_range;
use crate::metrics::Latency;
use crate::workloads::session::{RunSpec, TatpSession, TpcbSession};
use crate::workloads::setup::Setup;
use crate::workloads::tpcb::TpcbShape;
use serde::Serialize;
use sluice::CommitProtocol;
use sluice_wal::InsertVariant;
use std::path::PathBuf;
use std::time::Duration;

/// What to compare.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The workload.
    pub workload: CompareWorkload,
    /// Engines, in the order of the first round.
    pub engines: Vec<Engine>,
    /// sluice's clients (transactions in the system at once).
    pub clients: usize,
    /// The client counts each peer runs at: each (peer, count) is a turn of its own in
    /// every round.
    pub peer_clients: Vec<usize>,
    /// TPC-B scale factor (branches).
    pub scale: u32,
    /// TATP subscribers.
    pub subscribers: u32,
    /// Measured seconds per turn (an engine at one client count), split evenly over the
    /// rounds.
    pub seconds: Duration,
    /// Unmeasured warm-up before each turn in each round.
    pub warmup: Duration,
    /// Rounds.
    pub rounds: usize,
    /// Where the data directories go (a temporary directory inside it); the current
    /// directory if `None` (not `/tmp`, which may be a RAM disk).
    pub dir: Option<PathBuf>,
}

impl CompareConfig {
    /// Checks the numbers; the message names the flag.
    pub fn validate(&self) -> Result<(), String> {
        if self.engines.is_empty() {
            return Err("--engines needs at least one engine".into());
        }
        for (i, e) in self.engines.iter().enumerate() {
            if self.engines[..i].contains(e) {
                return Err(format!("--engines names {e} twice"));
            }
        }
        in_range("--clients", self.clients, 1..=1_000)?;
        if self.peer_clients.is_empty() {
            return Err("--peer-clients needs at least one client count".into());
        }
        for (i, &c) in self.peer_clients.iter().enumerate() {
            in_range("--peer-clients", c, 1..=1_000)
                .map_err(|e| format!("{e} (peers use a thread and a connection per client)"))?;
            if self.peer_clients[..i].contains(&c) {
                return Err(format!("--peer-clients names {c} twice"));
            }
        }
        in_range("--scale", self.scale, 1..=10_000)?;
        in_range("--subscribers", self.subscribers, 1..=100_000_000)?;
        in_range("--rounds", self.rounds, 1..=100)?;
        let round = self.seconds.as_secs_f64() / self.rounds as f64;
        in_range("--seconds per round", round, 0.1..)?;
        Ok(())
    }

    fn round_seconds(&self) -> Duration {
        self.seconds / self.rounds as u32
    }

    /// Turns per round: sluice's one and one per peer (PostgreSQL: per variant) and
    /// client count, for the engines asked for, whether or not they turn out to run.
    pub fn turns(&self) -> usize {
        self.engines
            .iter()
            .map(|e| match e {
                Engine::Sluice => 1,
                Engine::Postgres if self.workload == CompareWorkload::Tatp => 0,
                Engine::Postgres => postgres::VARIANTS.len() * self.peer_clients.len(),
                Engine::Sqlite | Engine::Rocksdb => self.peer_clients.len(),
            })
            .sum()
    }
}

/// What a comparison measured: one row per turn (one for an engine that ran at no
/// count), with each peer's best marked, and each peer's best with sluice ÷ it.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The rows, in the order of the first round.
    pub rows: Vec<CompareRow>,
    /// One entry per peer (PostgreSQL: per variant), in the order of the rows.
    pub summary: Vec<PeerBest>,
}

/// Progress of a comparison, for a progress bar.
pub trait CompareProgress {
    /// A phase starts ("loading sqlite", "round 1/2 rocksdb").
    fn begin(&mut self, label: &str);
    /// The fraction of the phase done.
    fn tick(&mut self, fraction: f64);
    /// The phase ended.
    fn end(&mut self);
}

/// A loaded engine (or PostgreSQL variant) whose turns take part in the rounds.
enum Contestant {
    Sluice(Box<TpcbSession>),
    SluiceTatp(Box<TatpSession>),
    #[cfg(feature = "peers")]
    Sqlite(super::sqlite::SqliteTpcb),
    #[cfg(feature = "peers")]
    Rocksdb(super::rocksdb::RocksTpcb),
    #[cfg(feature = "peers")]
    SqliteTatp(super::sqlite::SqliteTatp),
    #[cfg(feature = "peers")]
    RocksdbTatp(super::rocksdb::RocksTatp),
    Postgres(usize),
}

/// A loaded database and what its turns have done to it.
struct Loaded {
    contestant: Contestant,
    /// Transactions committed on it by all its runs, warm-ups included: the history
    /// rows the TPC-B check expects.
    committed_total: u64,
    /// False once a run on it failed: what that run committed is unknown, so later
    /// checks of its turns leave out the history's row count.
    counted: bool,
    /// Runs on it so far: each run's history ids carry a tag of their own.
    runs: u64,
}

impl Loaded {
    fn new(contestant: Contestant) -> Loaded {
        Loaded {
            contestant,
            committed_total: 0,
            counted: true,
            runs: 0,
        }
    }
}

/// One turn: an engine at one client count, and what it measured per round.
struct Tracker {
    row: CompareRow,
    /// Index into the loaded databases; `None` when the turn does not run (the engine
    /// could not load, or the turn failed in a round).
    loaded: Option<usize>,
    clients: usize,
    p50: Vec<u64>,
    p99: Vec<u64>,
}

/// One round's measurement.
struct Round {
    committed: u64,
    seconds: f64,
    retries: u64,
    latency: Latency,
    violations: Vec<String>,
}

fn sluice_spec(cfg: &CompareConfig) -> RunSpec {
    RunSpec {
        protocol: CommitProtocol::default(),
        clients: cfg.clients,
        agents: None,
        skew: 0.0,
        log_latency: None,
        warmup: cfg.warmup,
        seconds: cfg.round_seconds(),
        time_breakdown: false,
    }
}

/// pgbench's threads (`-j`) for `clients`: one per core, at most one per client.
fn pgbench_threads(clients: usize) -> usize {
    clients.min(crate::metrics::cores()).max(1)
}

/// The order of round `round` (0-based) over `turns` turns: forwards in even rounds,
/// backwards in odd ones.
fn turn_order(turns: usize, round: usize) -> Vec<usize> {
    if round.is_multiple_of(2) {
        (0..turns).collect()
    } else {
        (0..turns).rev().collect()
    }
}

/// Runs the comparison. Engines that are not built or cannot start get an unavailable
/// row (not an error), as does a peer's turn that fails in a round; a failure of sluice
/// itself is an error.
pub fn compare(
    cfg: &CompareConfig,
    progress: &mut dyn CompareProgress,
) -> Result<Comparison, String> {
    cfg.validate()?;
    let w = cfg.workload;
    let parent = match &cfg.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().map_err(|e| e.to_string())?,
    };
    let root = tempfile::Builder::new()
        .prefix("sluice-compare-")
        .tempdir_in(&parent)
        .map_err(|e| format!("{}: {e}", parent.display()))?;
    cleanup::register_dir(root.path());
    // Searchable by others: PostgreSQL's server runs as an unprivileged user under it.
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755));
    }
    let shape = TpcbShape::standard(cfg.scale);
    let mut cluster: Option<Cluster> = None;
    let mut loaded: Vec<Loaded> = Vec::new();
    let mut trackers: Vec<Tracker> = Vec::new();
    let blank = |engine: Engine, variant: &str, clients: usize| CompareRow {
        available: true,
        unavailable: None,
        consistent: true,
        ..CompareRow::unavailable(w, engine, variant, Some(clients), String::new())
    };
    // A loaded database's turns: one per peer client count.
    let sweep = |trackers: &mut Vec<Tracker>, row: &CompareRow, at: usize| {
        for &clients in &cfg.peer_clients {
            let row = CompareRow {
                clients: Some(clients),
                // The embedded peers: a thread per client; pgbench: `-j`.
                threads: if row.engine == Engine::Postgres {
                    pgbench_threads(clients)
                } else {
                    clients
                },
                ..row.clone()
            };
            trackers.push(Tracker::new(row, at, clients));
        }
    };
    for &engine in &cfg.engines {
        let sub = root.path().join(engine.to_string());
        let mut load_tick = |label: &str| {
            progress.begin(label);
        };
        match engine {
            Engine::Sluice => {
                load_tick(&format!("loading {w} for sluice"));
                std::fs::create_dir_all(&sub).map_err(|e| e.to_string())?;
                let spec = sluice_spec(cfg);
                let variant = format!("{}, real disk", spec.protocol);
                let c = match cfg.workload {
                    CompareWorkload::Tpcb => {
                        let setup = Setup {
                            dir: Some(sub),
                            log_latency: None,
                            log_buffer: InsertVariant::default(),
                            pool_pages: TpcbSession::pool_pages(cfg.scale),
                            checkpoint_log_bytes: Setup::CHECKPOINT_LOG_BYTES,
                            adaptive_group_commit: true,
                            flush: Default::default(),
                            preallocate: Default::default(),
                        };
                        let s = TpcbSession::load(&setup, shape, |f| progress.tick(f))
                            .map_err(|e| format!("sluice: {e}"))?;
                        Contestant::Sluice(Box::new(s))
                    }
                    CompareWorkload::Tatp => {
                        let setup = Setup {
                            dir: Some(sub),
                            log_latency: None,
                            log_buffer: InsertVariant::default(),
                            pool_pages: TatpSession::pool_pages(cfg.subscribers),
                            checkpoint_log_bytes: Setup::CHECKPOINT_LOG_BYTES,
                            adaptive_group_commit: true,
                            flush: Default::default(),
                            preallocate: Default::default(),
                        };
                        let s = TatpSession::load(&setup, cfg.subscribers, |f| progress.tick(f))
                            .map_err(|e| format!("sluice: {e}"))?;
                        Contestant::SluiceTatp(Box::new(s))
                    }
                };
                progress.end();
                let mut row = blank(engine, &variant, cfg.clients);
                row.durable = spec.protocol != CommitProtocol::Async;
                row.durability = format!(
                    "commit={}: acknowledged once the commit record is synced",
                    spec.protocol
                );
                loaded.push(Loaded::new(c));
                trackers.push(Tracker::new(row, loaded.len() - 1, cfg.clients));
            }
            Engine::Postgres if cfg.workload == CompareWorkload::Tatp => {
                trackers.push(Tracker::gone(CompareRow::unavailable(
                    w,
                    engine,
                    "",
                    None,
                    "pgbench has no TATP; PostgreSQL runs TPC-B only".into(),
                )));
            }
            Engine::Sqlite | Engine::Rocksdb if !engine.built() => {
                trackers.push(Tracker::gone(CompareRow::unavailable(
                    w,
                    engine,
                    "",
                    None,
                    format!("not built; build with: {BUILD_PEERS}"),
                )));
            }
            Engine::Sqlite | Engine::Rocksdb => {
                load_tick(&format!("loading {w} for {engine}"));
                let r = load_peer(engine, cfg, &sub, &shape, progress);
                progress.end();
                match r {
                    Ok((c, (durable, how), variant)) => {
                        let mut row = blank(engine, &variant, 0);
                        row.durable = durable;
                        row.durability = how;
                        loaded.push(Loaded::new(c));
                        sweep(&mut trackers, &row, loaded.len() - 1);
                    }
                    Err(e) => trackers.push(Tracker::gone(
                        CompareRow::unavailable(w, engine, "", None, e).into_failed(),
                    )),
                }
            }
            Engine::Postgres => {
                load_tick(&format!("starting postgres, pgbench -i -s {}", cfg.scale));
                progress.tick(0.0);
                let most = cfg.peer_clients.iter().copied().max().unwrap_or(1);
                let r = Cluster::start(root.path(), most, cfg.scale)
                    .and_then(|c| c.durability().map(|d| (c, d)));
                progress.end();
                match r {
                    Ok((c, (durable, how))) => {
                        for (v, name) in postgres::VARIANTS.iter().enumerate() {
                            let mut row = blank(engine, name, 0);
                            row.durable = durable;
                            row.durability = how.clone();
                            loaded.push(Loaded::new(Contestant::Postgres(v)));
                            sweep(&mut trackers, &row, loaded.len() - 1);
                        }
                        cluster = Some(c);
                    }
                    Err(e) => trackers.push(Tracker::gone(
                        CompareRow::unavailable(w, engine, "", None, e).into_failed(),
                    )),
                }
            }
        }
    }
    for round in 0..cfg.rounds {
        for i in turn_order(trackers.len(), round) {
            let t = &mut trackers[i];
            let Some(at) = t.loaded else {
                continue;
            };
            let (engine, clients) = (t.row.engine, t.clients);
            progress.begin(&format!(
                "round {}/{} {engine} {}, {clients} clients",
                round + 1,
                cfg.rounds,
                t.row.variant
            ));
            let r = run_round(
                cfg,
                &mut loaded[at],
                clients,
                round,
                &shape,
                cluster.as_ref(),
                &mut t.row,
                progress,
            );
            progress.end();
            match r {
                Ok(m) => t.add(m),
                Err(e) if engine == Engine::Sluice => return Err(format!("sluice: {e}")),
                Err(e) => {
                    loaded[at].counted = false;
                    t.loaded = None;
                    t.row = CompareRow::unavailable(
                        w,
                        engine,
                        &t.row.variant,
                        Some(clients),
                        format!("failed in round {}: {e}", round + 1),
                    )
                    .into_failed();
                }
            }
        }
    }
    // Stop the server and remove the data before reporting.
    drop(loaded);
    drop(cluster);
    let mut rows: Vec<CompareRow> = trackers.into_iter().map(Tracker::finish).collect();
    let summary = rank(&mut rows);
    cleanup::unregister_dir(root.path());
    drop(root);
    Ok(Comparison { rows, summary })
}

type LoadedPeer = (Contestant, (bool, String), String);

#[cfg(feature = "peers")]
fn load_peer(
    engine: Engine,
    cfg: &CompareConfig,
    dir: &std::path::Path,
    shape: &TpcbShape,
    progress: &mut dyn CompareProgress,
) -> Result<LoadedPeer, String> {
    use super::peer::{TatpPeer, TpcbPeer};
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let n = cfg.subscribers;
    Ok(match (engine, cfg.workload) {
        (Engine::Sqlite, CompareWorkload::Tatp) => {
            let p = super::sqlite::SqliteTatp::load(dir, n, |f| progress.tick(f))?;
            let d = p.durability()?;
            (Contestant::SqliteTatp(p), d, "WAL, key-value tables".into())
        }
        (_, CompareWorkload::Tatp) => {
            let p = super::rocksdb::RocksTatp::load(dir, n, |f| progress.tick(f))?;
            let d = p.durability()?;
            (
                Contestant::RocksdbTatp(p),
                d,
                "TransactionDB, thread per client".into(),
            )
        }
        (Engine::Sqlite, CompareWorkload::Tpcb) => {
            let p = super::sqlite::SqliteTpcb::load(dir, shape, |f| progress.tick(f))?;
            let d = p.durability()?;
            (
                Contestant::Sqlite(p),
                d,
                "WAL, connection per client".into(),
            )
        }
        (_, CompareWorkload::Tpcb) => {
            let p = super::rocksdb::RocksTpcb::load(dir, shape, |f| progress.tick(f))?;
            let d = p.durability()?;
            (
                Contestant::Rocksdb(p),
                d,
                "TransactionDB, thread per client".into(),
            )
        }
    })
}

#[cfg(not(feature = "peers"))]
fn load_peer(
    engine: Engine,
    _: &CompareConfig,
    _: &std::path::Path,
    _: &TpcbShape,
    _: &mut dyn CompareProgress,
) -> Result<LoadedPeer, String> {
    Err(format!("{engine} is not built; build with: {BUILD_PEERS}"))
}

/// How a peer runs one turn: `clients` threads, the round's warm-up and measured time,
/// and the seeds sluice's session gives its runs (1, 2, …), so that every engine draws
/// the same input streams in a round. `loaded`'s run count tags the history ids.
#[cfg(feature = "peers")]
fn peer_run_config(
    cfg: &CompareConfig,
    runs: &mut u64,
    clients: usize,
    round: usize,
) -> super::peer::PeerRunConfig {
    *runs += 1;
    super::peer::PeerRunConfig {
        clients,
        warmup: cfg.warmup,
        measure: cfg.round_seconds(),
        seed: round as u64 + 1,
        run_tag: *runs,
    }
}

#[cfg(feature = "peers")]
fn peer_round<P: super::peer::TpcbPeer>(
    p: &P,
    run_cfg: &super::peer::PeerRunConfig,
    shape: &TpcbShape,
    count: &mut dyn FnMut(u64) -> Option<u64>,
    progress: &mut dyn CompareProgress,
) -> Result<Round, String> {
    let never = std::sync::atomic::AtomicBool::new(false);
    let r = super::peer::run(p, *shape, run_cfg, &|_| {}, &never, |f| progress.tick(f))?;
    let c = p.check(count(r.committed_total))?;
    Ok(Round {
        committed: r.committed,
        seconds: r.seconds,
        retries: r.retries,
        latency: r.latency,
        violations: c.violations,
    })
}

#[cfg(feature = "peers")]
fn peer_tatp_round<P: super::peer::TatpPeer>(
    p: &P,
    cfg: &CompareConfig,
    run_cfg: &super::peer::PeerRunConfig,
    progress: &mut dyn CompareProgress,
) -> Result<Round, String> {
    use crate::workloads::tatp::{self, TatpGenerator, TatpKeys};
    let gen = TatpGenerator::new(cfg.subscribers, TatpKeys::NuRand, None)?;
    let r = super::peer::run_tatp(p, &gen, run_cfg, |f| progress.tick(f))?;
    Ok(Round {
        committed: r.committed,
        seconds: r.seconds,
        retries: r.retries,
        latency: r.latency,
        // The same check as sluice's TATP: success rates that match the population.
        violations: tatp::check_success_rates(&r.kinds),
    })
}

/// Runs one turn in one round: `loaded`'s engine at `clients` (sluice: at its own
/// `--clients`, which `clients` is).
#[allow(clippy::too_many_arguments)]
fn run_round(
    cfg: &CompareConfig,
    loaded: &mut Loaded,
    clients: usize,
    round: usize,
    shape: &TpcbShape,
    cluster: Option<&Cluster>,
    row: &mut CompareRow,
    progress: &mut dyn CompareProgress,
) -> Result<Round, String> {
    let Loaded {
        contestant,
        committed_total,
        counted,
        runs,
    } = loaded;
    // Adds a run's commits (warm-up included) to the database's total; returns the
    // history rows the check then expects, when known.
    let mut count = |committed: u64| {
        *committed_total += committed;
        counted.then_some(*committed_total)
    };
    #[cfg(feature = "peers")]
    let mut next_run = || peer_run_config(cfg, runs, clients, round);
    #[cfg(not(feature = "peers"))]
    let _ = (round, shape, runs);
    match contestant {
        Contestant::Sluice(s) => {
            let r = s
                .run(&sluice_spec(cfg), |f| progress.tick(f))
                .map_err(|e| e.to_string())?;
            row.threads = r.agents;
            Ok(Round {
                committed: r.committed,
                seconds: r.seconds,
                retries: r.aborted,
                latency: r.latency,
                violations: r.violations,
            })
        }
        Contestant::SluiceTatp(s) => {
            let r = s
                .run(&sluice_spec(cfg), None, false, |f| progress.tick(f))
                .map_err(|e| e.to_string())?;
            row.threads = r.agents;
            // TATP counts completed transactions ("not found" included) as throughput.
            Ok(Round {
                committed: r.committed + r.rolled_back,
                seconds: r.seconds,
                retries: r.aborted,
                latency: r.latency,
                violations: r.violations,
            })
        }
        #[cfg(feature = "peers")]
        Contestant::Sqlite(p) => peer_round(p, &next_run(), shape, &mut count, progress),
        #[cfg(feature = "peers")]
        Contestant::Rocksdb(p) => peer_round(p, &next_run(), shape, &mut count, progress),
        #[cfg(feature = "peers")]
        Contestant::SqliteTatp(p) => peer_tatp_round(p, cfg, &next_run(), progress),
        #[cfg(feature = "peers")]
        Contestant::RocksdbTatp(p) => peer_tatp_round(p, cfg, &next_run(), progress),
        Contestant::Postgres(v) => {
            let v = *v;
            let threads = pgbench_threads(clients);
            let cl = cluster.ok_or("no cluster")?;
            let warm = cfg.warmup.as_secs_f64().round() as u64;
            if warm > 0 {
                progress.tick(0.0);
                count(cl.pgbench(v, clients, threads, warm, false)?.committed);
            }
            let secs = cfg.round_seconds().as_secs_f64().round().max(1.0) as u64;
            progress.tick(warm as f64 / (warm + secs) as f64);
            let r = cl.pgbench(v, clients, threads, secs, true)?;
            let c = cl.check(v, count(r.committed))?;
            Ok(Round {
                committed: r.committed,
                seconds: r.seconds,
                retries: 0,
                latency: r.latency,
                violations: c.violations,
            })
        }
    }
}

impl Tracker {
    fn new(row: CompareRow, loaded: usize, clients: usize) -> Tracker {
        Tracker {
            row,
            loaded: Some(loaded),
            clients,
            p50: Vec::new(),
            p99: Vec::new(),
        }
    }

    fn gone(row: CompareRow) -> Tracker {
        Tracker {
            row,
            loaded: None,
            clients: 0,
            p50: Vec::new(),
            p99: Vec::new(),
        }
    }
    fn add(&mut self, m: Round) {
        let r = &mut self.row;
        r.rounds += 1;
        r.committed += m.committed;
        r.seconds += m.seconds;
        r.retries += m.retries;
        if !m.violations.is_empty() {
            r.consistent = false;
            r.violations.extend(m.violations);
        }
        self.p50.push(m.latency.p50_us);
        self.p99.push(m.latency.p99_us);
    }

    fn finish(self) -> CompareRow {
        let mut r = self.row;
        if r.available {
            r.tps = if r.seconds > 0.0 {
                r.committed as f64 / r.seconds
            } else {
                0.0
            };
            r.latency = Latency {
                p50_us: median(self.p50),
                p99_us: median(self.p99),
            };
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(peer_clients: &[usize]) -> CompareConfig {
        CompareConfig {
            workload: CompareWorkload::Tpcb,
            engines: vec![
                Engine::Sluice,
                Engine::Sqlite,
                Engine::Rocksdb,
                Engine::Postgres,
            ],
            clients: 64,
            peer_clients: peer_clients.to_vec(),
            scale: 10,
            subscribers: 100_000,
            seconds: Duration::from_secs(10),
            warmup: Duration::from_secs(1),
            rounds: 2,
            dir: None,
        }
    }

    #[test]
    fn peer_client_counts_are_one_to_a_thousand_each_named_once() {
        assert_eq!(config(&[1, 4, 16, 64]).validate(), Ok(()));
        let err = |counts: &[usize]| config(counts).validate().unwrap_err();
        assert!(err(&[]).contains("--peer-clients"), "{}", err(&[]));
        assert!(err(&[1, 0]).contains("--peer-clients"), "{}", err(&[1, 0]));
        assert!(
            err(&[1_001]).contains("--peer-clients"),
            "{}",
            err(&[1_001])
        );
        assert_eq!(err(&[4, 1, 4]), "--peer-clients names 4 twice");
    }

    #[test]
    fn every_peer_and_postgres_variant_gets_a_turn_per_count_and_sluice_one() {
        // sluice 1 + SQLite 4 + RocksDB 4 + PostgreSQL 2 variants × 4.
        assert_eq!(config(&[1, 4, 16, 64]).turns(), 17);
        assert_eq!(config(&[8]).turns(), 5);
        let tatp = CompareConfig {
            workload: CompareWorkload::Tatp,
            ..config(&[1, 2])
        };
        assert_eq!(tatp.turns(), 5, "pgbench has no TATP");
    }

    #[test]
    fn rounds_alternate_over_all_turns() {
        assert_eq!(turn_order(4, 0), [0, 1, 2, 3]);
        assert_eq!(turn_order(4, 1), [3, 2, 1, 0]);
        assert_eq!(turn_order(4, 2), [0, 1, 2, 3]);
        // Over two rounds every turn's mean position is the same: drift falls evenly.
        let mut sum = [0; 5];
        for round in 0..2 {
            for (pos, turn) in turn_order(5, round).into_iter().enumerate() {
                sum[turn] += pos;
            }
        }
        assert!(sum.iter().all(|&s| s == 4), "{sum:?}");
    }
}
