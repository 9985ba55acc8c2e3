//! Runs a comparison: loads each engine once, then runs them in rounds, each round in
//! the opposite order of the one before (A B C, C B A, …), so that drift of a shared
//! machine (other processes, page cache, thermal state) falls on all engines alike.

use super::cleanup;
use super::engine::{median, CompareRow, CompareWorkload, Engine, BUILD_PEERS};
use super::postgres::{self, Cluster};
use crate::knobs::in_range;
use crate::metrics::Latency;
use crate::workloads::session::{RunSpec, TatpSession, TpcbSession};
use crate::workloads::setup::Setup;
use crate::workloads::tpcb::TpcbShape;
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
    /// Clients (transactions in the system at once) for every engine.
    pub clients: usize,
    /// TPC-B scale factor (branches).
    pub scale: u32,
    /// TATP subscribers.
    pub subscribers: u32,
    /// Measured seconds per engine, split evenly over the rounds.
    pub seconds: Duration,
    /// Unmeasured warm-up before each round of each engine.
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
        in_range("--clients", self.clients, 1..=1_000)
            .map_err(|e| format!("{e} (peers use a thread and a connection per client)"))?;
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

/// A loaded engine (or PostgreSQL variant) taking part in the rounds.
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

/// What one contestant measured per round.
struct Tracker {
    row: CompareRow,
    contestant: Option<Contestant>,
    committed_total: u64,
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

fn threads(cfg: &CompareConfig) -> usize {
    cfg.clients.min(crate::metrics::cores()).max(1)
}

/// Runs the comparison. Engines that are not built or cannot start get an unavailable
/// row (not an error); a failure of sluice itself is an error.
pub fn compare(
    cfg: &CompareConfig,
    progress: &mut dyn CompareProgress,
) -> Result<Vec<CompareRow>, String> {
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
    let mut trackers: Vec<Tracker> = Vec::new();
    let blank = |engine: Engine, variant: &str| CompareRow {
        available: true,
        unavailable: None,
        consistent: true,
        ..CompareRow::unavailable(w, engine, variant, cfg.clients, String::new())
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
                let mut row = blank(engine, &variant);
                row.durable = spec.protocol != CommitProtocol::Async;
                row.durability = format!(
                    "commit={}: acknowledged once the commit record is synced",
                    spec.protocol
                );
                trackers.push(Tracker::new(row, c));
            }
            Engine::Postgres if cfg.workload == CompareWorkload::Tatp => {
                trackers.push(Tracker::gone(CompareRow::unavailable(
                    w,
                    engine,
                    "",
                    cfg.clients,
                    "pgbench has no TATP; PostgreSQL runs TPC-B only".into(),
                )));
            }
            Engine::Sqlite | Engine::Rocksdb if !engine.built() => {
                trackers.push(Tracker::gone(CompareRow::unavailable(
                    w,
                    engine,
                    "",
                    cfg.clients,
                    format!("not built; build with: {BUILD_PEERS}"),
                )));
            }
            Engine::Sqlite | Engine::Rocksdb => {
                load_tick(&format!("loading {w} for {engine}"));
                let r = load_peer(engine, cfg, &sub, &shape, progress);
                progress.end();
                match r {
                    Ok((c, (durable, how), variant)) => {
                        let mut row = blank(engine, &variant);
                        row.durable = durable;
                        row.durability = how;
                        trackers.push(Tracker::new(row, c));
                    }
                    Err(e) => trackers.push(Tracker::gone(
                        CompareRow::unavailable(w, engine, "", cfg.clients, e).into_failed(),
                    )),
                }
            }
            Engine::Postgres => {
                load_tick(&format!("starting postgres, pgbench -i -s {}", cfg.scale));
                progress.tick(0.0);
                let r = Cluster::start(root.path(), cfg.clients, cfg.scale)
                    .and_then(|c| c.durability().map(|d| (c, d)));
                progress.end();
                match r {
                    Ok((c, (durable, how))) => {
                        for (v, name) in postgres::VARIANTS.iter().enumerate() {
                            let mut row = blank(engine, name);
                            row.durable = durable;
                            row.durability = how.clone();
                            row.threads = threads(cfg);
                            trackers.push(Tracker::new(row, Contestant::Postgres(v)));
                        }
                        cluster = Some(c);
                    }
                    Err(e) => trackers.push(Tracker::gone(
                        CompareRow::unavailable(w, engine, "", cfg.clients, e).into_failed(),
                    )),
                }
            }
        }
    }
    let n = trackers.len();
    for round in 0..cfg.rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for i in order {
            let t = &mut trackers[i];
            let Some(c) = t.contestant.as_mut() else {
                continue;
            };
            progress.begin(&format!(
                "round {}/{} {} {}",
                round + 1,
                cfg.rounds,
                t.row.engine,
                t.row.variant
            ));
            let r = run_round(
                cfg,
                c,
                round,
                &shape,
                cluster.as_mut(),
                &mut t.committed_total,
                &mut t.row,
                progress,
            );
            progress.end();
            match r {
                Ok(m) => t.add(m),
                Err(e) if t.row.engine == Engine::Sluice => return Err(format!("sluice: {e}")),
                Err(e) => {
                    t.contestant = None;
                    t.row = CompareRow::unavailable(
                        w,
                        t.row.engine,
                        &t.row.variant,
                        cfg.clients,
                        format!("failed in round {}: {e}", round + 1),
                    )
                    .into_failed();
                }
            }
        }
    }
    // Stop the server and remove the data before reporting.
    drop(
        trackers
            .iter_mut()
            .map(|t| t.contestant.take())
            .collect::<Vec<_>>(),
    );
    drop(cluster);
    let mut rows: Vec<CompareRow> = trackers.into_iter().map(Tracker::finish).collect();
    let base = rows
        .iter()
        .find(|r| r.engine == Engine::Sluice && r.available)
        .map(|r| r.tps);
    if let Some(b) = base.filter(|&b| b > 0.0) {
        for r in rows.iter_mut().filter(|r| r.available) {
            r.ratio_to_sluice = Some(r.tps / b);
        }
    }
    cleanup::unregister_dir(root.path());
    drop(root);
    Ok(rows)
}

type Loaded = (Contestant, (bool, String), String);

#[cfg(feature = "peers")]
fn load_peer(
    engine: Engine,
    cfg: &CompareConfig,
    dir: &std::path::Path,
    shape: &TpcbShape,
    progress: &mut dyn CompareProgress,
) -> Result<Loaded, String> {
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
) -> Result<Loaded, String> {
    Err(format!("{engine} is not built; build with: {BUILD_PEERS}"))
}

#[cfg(feature = "peers")]
fn peer_round<P: super::peer::TpcbPeer>(
    p: &P,
    cfg: &CompareConfig,
    round: usize,
    shape: &TpcbShape,
    committed_total: &mut u64,
    progress: &mut dyn CompareProgress,
) -> Result<Round, String> {
    use super::peer::{self, PeerRunConfig};
    let run_cfg = PeerRunConfig {
        clients: cfg.clients,
        warmup: cfg.warmup,
        measure: cfg.round_seconds(),
        // The seeds sluice's session gives its runs (1, 2, …): the same input streams.
        seed: round as u64 + 1,
        run_tag: round as u64 + 1,
    };
    let never = std::sync::atomic::AtomicBool::new(false);
    let r = peer::run(p, *shape, &run_cfg, &|_| {}, &never, |f| progress.tick(f))?;
    *committed_total += r.committed_total;
    let c = p.check(Some(*committed_total))?;
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
    round: usize,
    progress: &mut dyn CompareProgress,
) -> Result<Round, String> {
    use crate::workloads::tatp::{self, TatpGenerator, TatpKeys};
    let gen = TatpGenerator::new(cfg.subscribers, TatpKeys::NuRand, None)?;
    let run_cfg = super::peer::PeerRunConfig {
        clients: cfg.clients,
        warmup: cfg.warmup,
        measure: cfg.round_seconds(),
        seed: round as u64 + 1,
        run_tag: round as u64 + 1,
    };
    let r = super::peer::run_tatp(p, &gen, &run_cfg, |f| progress.tick(f))?;
    Ok(Round {
        committed: r.committed,
        seconds: r.seconds,
        retries: r.retries,
        latency: r.latency,
        // The same check as sluice's TATP: success rates that match the population.
        violations: tatp::check_success_rates(&r.kinds),
    })
}

#[allow(clippy::too_many_arguments)]
fn run_round(
    cfg: &CompareConfig,
    c: &mut Contestant,
    round: usize,
    shape: &TpcbShape,
    cluster: Option<&mut Cluster>,
    committed_total: &mut u64,
    row: &mut CompareRow,
    progress: &mut dyn CompareProgress,
) -> Result<Round, String> {
    match c {
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
        Contestant::Sqlite(p) => {
            row.threads = cfg.clients;
            peer_round(p, cfg, round, shape, committed_total, progress)
        }
        #[cfg(feature = "peers")]
        Contestant::Rocksdb(p) => {
            row.threads = cfg.clients;
            peer_round(p, cfg, round, shape, committed_total, progress)
        }
        #[cfg(feature = "peers")]
        Contestant::SqliteTatp(p) => {
            row.threads = cfg.clients;
            peer_tatp_round(p, cfg, round, progress)
        }
        #[cfg(feature = "peers")]
        Contestant::RocksdbTatp(p) => {
            row.threads = cfg.clients;
            peer_tatp_round(p, cfg, round, progress)
        }
        Contestant::Postgres(v) => {
            let _ = (round, shape, committed_total);
            let cl = cluster.ok_or("no cluster")?;
            let warm = cfg.warmup.as_secs_f64().round() as u64;
            if warm > 0 {
                progress.tick(0.0);
                cl.pgbench(*v, cfg.clients, threads(cfg), warm, false)?;
            }
            let secs = cfg.round_seconds().as_secs_f64().round().max(1.0) as u64;
            progress.tick(warm as f64 / (warm + secs) as f64);
            let r = cl.pgbench(*v, cfg.clients, threads(cfg), secs, true)?;
            let c = cl.check(*v)?;
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
    fn new(row: CompareRow, c: Contestant) -> Tracker {
        Tracker {
            row,
            contestant: Some(c),
            committed_total: 0,
            p50: Vec::new(),
            p99: Vec::new(),
        }
    }

    fn gone(row: CompareRow) -> Tracker {
        Tracker {
            row,
            contestant: None,
            committed_total: 0,
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
