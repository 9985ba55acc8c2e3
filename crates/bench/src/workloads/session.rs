//! Benchmark sessions: load a TPC-B or TATP database once, then run it under several
//! protocols, client counts, skews and log latencies, checking consistency after each
//! run. Comparisons within one session share the data, the machine state and the load,
//! so their ratios are what to read.

use super::driver::{self, DriverConfig, DriverResult};
use super::setup::{self, BenchDb, Setup};
use super::stored::{self, Stored};
use super::tatp::{self, TatpGenerator, TatpKeys, TatpKind, TatpTables, TatpWorkload};
use super::tpcb::{self, TpcbShape, TpcbTables, TpcbWorkload};
use crate::metrics::{CpuCost, Latency};
use rand::SeedableRng;
use serde::Serialize;
use sluice::experiment::TimeBreakdown;
use sluice::{CommitProtocol, Error};
use std::sync::Arc;
use std::time::Duration;

/// One run's knobs.
#[derive(Debug, Clone, Copy)]
pub struct RunSpec {
    /// Commit protocol.
    pub protocol: CommitProtocol,
    /// Logical clients.
    pub clients: usize,
    /// Agents (`None`: the protocol's default shape).
    pub agents: Option<usize>,
    /// Zipf exponent for key choice (TPC-B: accounts, tellers, branches; TATP: replaces
    /// NURand when > 0).
    pub skew: f64,
    /// Emulated log latency for this run (sessions opened with one only).
    pub log_latency: Option<Duration>,
    /// Unmeasured warm-up.
    pub warmup: Duration,
    /// Measured time.
    pub seconds: Duration,
    /// Record where the agents' time goes ([`Row::agent_time`]; `AgentOptions::
    /// time_breakdown`, which costs a clock read per switch of activity).
    pub time_breakdown: bool,
}

/// One result row (one JSON object).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// "tpcb" or "tatp".
    pub workload: &'static str,
    /// Protocol name.
    pub commit: String,
    /// Log-buffer variant.
    pub log_buffer: String,
    /// Clients.
    pub clients: usize,
    /// Agents.
    pub agents: usize,
    /// Skew.
    pub skew: f64,
    /// Log latency ("disk" for the real disk).
    pub log_latency: String,
    /// TPC-B: committed transactions per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tps: Option<f64>,
    /// TATP: completed transactions per second, "not found" included (MQTh).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mqth: Option<f64>,
    /// Committed in the measured window.
    pub committed: u64,
    /// Failed (deadlock victims / lock timeouts) in the window.
    pub aborted: u64,
    /// Rolled back by decision (TATP failed updates) in the window.
    pub rolled_back: u64,
    /// Latency from submission to acknowledgement.
    #[serde(flatten)]
    pub latency: Latency,
    /// Context switches and CPU of the process per transaction.
    #[serde(flatten)]
    pub cpu: CpuCost,
    /// Log bytes written per committed (TPC-B) or completed (TATP) transaction in the
    /// measured window, framing, page images and checkpoints included.
    pub log_bytes_per_txn: f64,
    /// Bytes the log zero-filled for new segment files, per transaction counted as for
    /// `log_bytes_per_txn` (recycled segments need none).
    pub zero_fill_bytes_per_txn: f64,
    /// Truncated segment files reused in the measured window.
    pub segments_recycled: u64,
    /// Times an agent parked for lack of work, per transaction.
    pub agent_parks_per_txn: f64,
    /// Where the agents' time went in the measured window, summed over the agents
    /// (nanoseconds per activity; the sum is about agents × seconds); only for a run
    /// with [`RunSpec::time_breakdown`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_time: Option<TimeBreakdown>,
    /// The log's group-commit gather: `adaptive` or `fixed`.
    pub group_commit: &'static str,
    /// The log's flush rounds per transaction (the inverse of a group's size).
    pub flushes_per_txn: f64,
    /// The flush path the log took (`io-uring` or `daemon`; `sluice_wal::FlushPath`).
    pub flush: String,
    /// The flush daemon's gather budget at the end of the run (scheduler yields).
    pub gather_budget: u64,
    /// The workload's consistency checks passed after the run.
    pub consistent: bool,
    /// What failed, if anything.
    pub violations: Vec<String>,
    /// Per transaction type (TATP).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<driver::KindStats>,
    /// Seconds measured.
    pub seconds: f64,
}

impl Row {
    /// Names of [`Row::cells`]' columns (TPC-B throughput is tps; TATP's is MQTh).
    pub const COLUMNS: [&'static str; 15] = [
        "commit",
        "log buffer",
        "clients",
        "agents",
        "skew",
        "log",
        "tps",
        "p50 µs",
        "p99 µs",
        "ctx sw/txn",
        "(vol)",
        "cpu",
        "log B/txn",
        "aborted",
        "consistent",
    ];

    /// [`Row::COLUMNS`], with the throughput column named for the workload.
    pub fn columns(tatp: bool) -> Vec<&'static str> {
        Row::COLUMNS
            .iter()
            .map(|&c| if tatp && c == "tps" { "MQTh" } else { c })
            .collect()
    }

    /// Committed tps (TPC-B) or MQTh (TATP).
    pub fn throughput(&self) -> f64 {
        self.tps.or(self.mqth).unwrap_or(0.0)
    }

    /// The row as table cells, in [`Row::COLUMNS`] order.
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.commit.clone(),
            self.log_buffer.clone(),
            self.clients.to_string(),
            self.agents.to_string(),
            self.skew.to_string(),
            self.log_latency.clone(),
            crate::output::thousands(self.throughput()),
            self.latency.p50_us.to_string(),
            self.latency.p99_us.to_string(),
            format!("{:.3}", self.cpu.ctx_switches_per_txn),
            format!("{:.3}", self.cpu.voluntary_ctx_per_txn),
            format!("{:.0} %", self.cpu.cpu_util * 100.0),
            format!("{:.0}", self.log_bytes_per_txn),
            self.aborted.to_string(),
            self.consistent.to_string(),
        ]
    }
}

fn latency_name(l: Option<Duration>) -> String {
    match l {
        None => "disk".into(),
        Some(d) if d.is_zero() => "0".into(),
        Some(d) if d.as_micros() < 1000 => format!("{}us", d.as_micros()),
        Some(d) => format!("{}ms", d.as_millis()),
    }
}

fn row(workload: &'static str, b: &BenchDb, spec: &RunSpec, agents: usize, r: DriverResult) -> Row {
    Row {
        workload,
        commit: spec.protocol.to_string(),
        log_buffer: b.db.options().log.variant.to_string(),
        clients: spec.clients,
        agents,
        skew: spec.skew,
        log_latency: latency_name(spec.log_latency),
        tps: None,
        mqth: None,
        committed: r.committed,
        aborted: r.aborted,
        rolled_back: r.rolled_back,
        latency: r.latency,
        cpu: r.cpu,
        log_bytes_per_txn: r.log_bytes_per_txn,
        zero_fill_bytes_per_txn: r.zero_filled_bytes as f64
            / (r.committed + r.rolled_back).max(1) as f64,
        segments_recycled: r.segments_recycled,
        agent_parks_per_txn: r.agent_parks_per_txn,
        agent_time: r.agent_time,
        group_commit: if b.db.options().log.group_commit.adaptive {
            "adaptive"
        } else {
            "fixed"
        },
        gather_budget: r.gather_budget,
        flushes_per_txn: r.flushes_per_txn,
        flush: b.db.log().flush_path().path.to_string(),
        consistent: true,
        violations: Vec::new(),
        kinds: Vec::new(),
        seconds: r.seconds,
    }
}

fn driver_config(spec: &RunSpec, agents: usize, seed: u64) -> DriverConfig {
    DriverConfig {
        clients: spec.clients,
        agents,
        protocol: spec.protocol,
        warmup: spec.warmup,
        measure: spec.seconds,
        seed,
        rate: None,
        time_breakdown: spec.time_breakdown,
    }
}

fn check_spec(b: &BenchDb, spec: &RunSpec) -> Result<usize, Error> {
    if spec.clients == 0 {
        return Err(Error::InvalidArgument(
            "at least one client is needed".into(),
        ));
    }
    match (spec.log_latency, &b.log_device) {
        (Some(l), Some(_)) => b.set_log_latency(l),
        (Some(_), None) => {
            return Err(Error::InvalidArgument(
                "this session's log is on the real disk; open it with a log latency".into(),
            ))
        }
        (None, Some(_)) => {
            return Err(Error::InvalidArgument(
                "this session's log is emulated; give each run a log latency".into(),
            ))
        }
        (None, None) => {}
    }
    Ok(spec
        .agents
        .unwrap_or_else(|| DriverConfig::default_agents(spec.protocol, spec.clients))
        .max(1))
}

/// A loaded TPC-B database.
pub struct TpcbSession {
    /// The database.
    pub bench: BenchDb,
    tables: TpcbTables,
    shape: TpcbShape,
    committed: u64,
    runs: u64,
}

impl TpcbSession {
    /// Opens a database as `setup` says and loads TPC-B at `shape.scale`.
    pub fn load(
        setup: &Setup,
        shape: TpcbShape,
        progress: impl FnMut(f64),
    ) -> Result<TpcbSession, Error> {
        TpcbSession::load_into(setup::open(setup)?, shape, progress)
    }

    /// Loads TPC-B at `shape.scale` into an open database that holds no tables, and
    /// records the load ([`stored::record`]) once it committed.
    pub fn load_into(
        bench: BenchDb,
        shape: TpcbShape,
        progress: impl FnMut(f64),
    ) -> Result<TpcbSession, Error> {
        let tables = tpcb::load(&bench.db, &shape, progress)?;
        stored::record(
            &bench.db,
            &Stored::Tpcb {
                scale: shape.scale,
                accounts_per_branch: shape.accounts_per_branch,
            },
        )?;
        Ok(TpcbSession {
            bench,
            tables,
            shape,
            committed: 0,
            runs: 0,
        })
    }

    /// A session on a database that already holds TPC-B at `shape`'s scale (the caller
    /// checked with [`stored::identify`]): nothing is loaded. The history it holds
    /// counts towards the row check after each run, and this session's history ids
    /// (`run << 40 | sequence`) start above every id already there. Returns the session
    /// and the consistency check of the database as found.
    pub fn reuse(
        bench: BenchDb,
        shape: TpcbShape,
    ) -> Result<(TpcbSession, tpcb::Consistency), Error> {
        let tables = TpcbTables::open(&bench.db)?;
        let found = tpcb::check(&bench.db, &tables, None)?;
        let mut last_run = 0u64;
        {
            let mut tx = bench.db.begin();
            for r in tx.scan_all(&tables.history) {
                let (k, _) = r?;
                let id = k
                    .get(..8)
                    .map_or(0, |b| u64::from_be_bytes(b.try_into().expect("8 bytes")));
                last_run = last_run.max(id >> 40);
            }
            tx.commit()?;
        }
        Ok((
            TpcbSession {
                bench,
                tables,
                shape,
                committed: found.history_rows,
                runs: last_run,
            },
            found,
        ))
    }

    /// Buffer-pool pages a TPC-B database of `scale` branches fits in, with room for the
    /// history a long run appends.
    pub fn pool_pages(scale: u32) -> usize {
        scale as usize * 2_500 + 16_384
    }

    /// Runs once and checks consistency afterwards.
    pub fn run(&mut self, spec: &RunSpec, tick: impl FnMut(f64)) -> Result<Row, Error> {
        let agents = check_spec(&self.bench, spec)?;
        self.runs += 1;
        let shape = TpcbShape {
            skew: spec.skew,
            ..self.shape
        };
        let w = TpcbWorkload::new(self.tables.clone(), shape, self.runs)
            .map_err(Error::InvalidArgument)?;
        let cfg = driver_config(spec, agents, self.runs);
        let r = driver::run(&self.bench.db, Arc::new(w), &cfg, tick)?;
        self.committed += r.committed_total;
        let mut out = row("tpcb", &self.bench, spec, agents, r.clone());
        out.tps = Some(r.committed_per_sec);
        let c = tpcb::check(&self.bench.db, &self.tables, Some(self.committed))?;
        out.consistent = c.ok();
        out.violations = c.violations;
        Ok(out)
    }
}

/// A loaded TATP database.
pub struct TatpSession {
    /// The database.
    pub bench: BenchDb,
    tables: TatpTables,
    subscribers: u32,
    runs: u64,
}

impl TatpSession {
    /// Opens a database as `setup` says and loads `subscribers` subscribers.
    pub fn load(
        setup: &Setup,
        subscribers: u32,
        progress: impl FnMut(f64),
    ) -> Result<TatpSession, Error> {
        TatpSession::load_into(setup::open(setup)?, subscribers, progress)
    }

    /// Loads `subscribers` subscribers into an open database that holds no tables, and
    /// records the load ([`stored::record`]) once it committed.
    pub fn load_into(
        bench: BenchDb,
        subscribers: u32,
        progress: impl FnMut(f64),
    ) -> Result<TatpSession, Error> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(subscribers as u64);
        let tables = tatp::load(&bench.db, subscribers, &mut rng, progress)?;
        stored::record(&bench.db, &Stored::Tatp { subscribers })?;
        Ok(TatpSession {
            bench,
            tables,
            subscribers,
            runs: 0,
        })
    }

    /// A session on a database that already holds TATP with `subscribers` subscribers
    /// (the caller checked with [`stored::identify`]): nothing is loaded.
    pub fn reuse(bench: BenchDb, subscribers: u32) -> Result<TatpSession, Error> {
        let tables = TatpTables::open(&bench.db)?;
        Ok(TatpSession {
            bench,
            tables,
            subscribers,
            runs: 0,
        })
    }

    /// Buffer-pool pages TATP with `subscribers` fits in.
    pub fn pool_pages(subscribers: u32) -> usize {
        subscribers as usize / 8 + 8_192
    }

    /// Runs once (`only`: a single transaction type) and checks the success rates.
    /// `uniform`: uniform subscriber choice instead of NURand (a `skew` > 0 overrides
    /// both with Zipf).
    pub fn run(
        &mut self,
        spec: &RunSpec,
        only: Option<TatpKind>,
        uniform: bool,
        tick: impl FnMut(f64),
    ) -> Result<Row, Error> {
        let agents = check_spec(&self.bench, spec)?;
        self.runs += 1;
        let keys = if spec.skew > 0.0 {
            TatpKeys::Zipf(spec.skew)
        } else if uniform {
            TatpKeys::Uniform
        } else {
            TatpKeys::NuRand
        };
        let gen =
            TatpGenerator::new(self.subscribers, keys, only).map_err(Error::InvalidArgument)?;
        let w = TatpWorkload::new(self.tables.clone(), gen);
        let cfg = driver_config(spec, agents, self.runs);
        let r = driver::run(&self.bench.db, Arc::new(w), &cfg, tick)?;
        let mut out = row("tatp", &self.bench, spec, agents, r.clone());
        out.mqth = Some(r.completed_per_sec);
        // The loader is right if the success rates match the population rules (checked
        // only for types with enough samples to judge).
        let counts: Vec<(u64, u64)> = r.kinds.iter().map(|k| (k.completed, k.succeeded)).collect();
        out.violations.extend(tatp::check_success_rates(&counts));
        out.consistent = out.violations.is_empty();
        out.kinds = r.kinds;
        Ok(out)
    }
}
