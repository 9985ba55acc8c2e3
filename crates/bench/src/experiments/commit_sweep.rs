//! Commit-protocol sweeps: the runs behind Aether's figures on the commit path.
//!
//! - [`Figure::ElrSkew`] (Aether Fig. 3): TPC-B, classic vs ELR with one blocking agent
//!   per client, over Zipf skew, one series per emulated log latency; the figure is the
//!   speedup ELR tps ÷ classic tps.
//! - [`Figure::Ctx`] (Fig. 4): TPC-B, classic, elr and elr-pipelined over client counts;
//!   context switches per transaction and CPU (user + system, and system alone), each
//!   technique in its own panels: ELR (classic → elr), flush pipelining (elr →
//!   elr-pipelined).
//! - [`Figure::Clients`] (Fig. 5): TPC-B, tps vs clients, the same two panels, async as
//!   the bound of the pipelining panel.
//! - [`Figure::TatpComponents`] (Fig. 9): TATP UPDATE_LOCATION as the components are
//!   switched on in turn: classic → +ELR → +flush pipelining → +a scalable log buffer;
//!   each step in its own panel, plus the speedup of each step.
//! - [`Figure::Breakdown`] (Fig. 7): TATP UPDATE_LOCATION, elr-pipelined with the mutex
//!   log buffer, over client counts: where the agents' time goes (the engine's own
//!   clocks, `AgentOptions::time_breakdown`), as stacked shares.
//! - [`Figure::Cpu`] (Fig. 2): TPC-B at one client count under Fig. 9's steps (classic,
//!   +elr, +pipelining, +a scalable log buffer): the machine's CPU time and idle beside
//!   where the agents' time goes, as stacked bars (`breakdown.rs` draws both).
//!
//! Figs. 2, 4, 5, 7 and 9 put the log on the emulated device of [`SweepConfig::log_latency`]
//! (the one `bench tpcb --log-latency` uses) or, with `None`, on the real disk.
//!
//! A sweep is a plan of runs ([`SweepConfig::plan`]) in rounds: round r runs every point
//! of the figure once, so a drift in the machine's state (another process, the disk's
//! mood) hits every variant alike, and each point is drawn as the median of its rounds
//! with the min–max spread as an error bar. The runs execute on one loaded session per
//! log-buffer variant (a log option fixed when the database opens; Fig. 9 keeps a second
//! session open for its last step). Each run's row carries the session's consistency
//! check; [`run`] writes `<figure>.csv`, `<figure>.json` (every repeat),
//! `<figure>-summary.csv` (median, min, max per point) and the figure(s) whatever the
//! check says, so an inconsistent sweep can still be inspected — the caller decides what
//! an inconsistent row means.

mod breakdown;
mod notes;
mod output;
mod rounds;

pub use breakdown::time_table;
pub use output::{rows_table, summary_table, SpeedupTable};
pub use rounds::{interleave, share_spread, PointKey};

use super::noise::{check_repeat, DEFAULT_REPEAT};
use crate::knobs::{in_range, named_values};
use crate::workloads::session::{Row, RunSpec, TatpSession, TpcbSession};
use crate::workloads::setup::Setup;
use crate::workloads::tatp::TatpKind;
use crate::workloads::tpcb::TpcbShape;
use serde::Serialize;
use sluice::CommitProtocol;
use sluice_wal::InsertVariant;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which of Aether's figures a sweep draws; its name (`--figure`) is the stem of its
/// files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Figure {
    /// Fig. 3: ELR speedup over classic vs skew, per log latency (TPC-B).
    ElrSkew,
    /// Fig. 4: context switches per transaction and CPU vs clients: ELR and flush
    /// pipelining each alone.
    Ctx,
    /// Fig. 5: tps vs clients for classic, elr, elr-pipelined and async.
    Clients,
    /// Fig. 9: TATP UPDATE_LOCATION as ELR, pipelining and a scalable buffer switch on.
    TatpComponents,
    /// Fig. 7: where the time goes vs clients (TATP UPDATE_LOCATION, elr-pipelined, the
    /// mutex log buffer).
    Breakdown,
    /// Fig. 2: CPU, idle and where the time goes under classic, elr, elr-pipelined and a
    /// scalable log buffer (TPC-B at one client count).
    Cpu,
}

named_values!(Figure, "figure", serialize);

impl Figure {
    /// Runs TATP (the others run TPC-B).
    pub fn tatp(self) -> bool {
        matches!(self, Figure::TatpComponents | Figure::Breakdown)
    }

    /// Its runs are Fig. 9's component steps (`SweepRow::step`).
    pub fn steps(self) -> bool {
        matches!(self, Figure::TatpComponents | Figure::Cpu)
    }

    /// Draws where the agents' time goes (its runs keep the agents' clocks).
    pub fn times(self) -> bool {
        matches!(self, Figure::Breakdown | Figure::Cpu)
    }

    /// Runs at one client count: elr-skew (its x axis is the skew) and cpu (its bars are
    /// the steps).
    fn one_client_count(self) -> bool {
        matches!(self, Figure::ElrSkew | Figure::Cpu)
    }
}

/// The log-buffer variant the last step of Figs. 9 and 2 uses when none is asked for: the paper's
/// hybrid (consolidation array + decoupled fill), else the atomic variant, else none
/// (a build with only the mutex buffer leaves the step out).
pub fn default_scalable_buffer() -> Option<InsertVariant> {
    ["hybrid", "atomic"].iter().find_map(|n| n.parse().ok())
}

/// Limits on a sweep's knobs: a typo must not start a day-long run or a million threads.
const MAX_CLIENTS: usize = 100_000;
const MAX_POINTS: usize = 64;
const MAX_SECONDS: f64 = 3_600.0;
const MAX_LATENCY_SECONDS: f64 = 10.0;

/// The emulated log latency Figs. 2, 4, 5, 7 and 9 use by default. Chosen by measuring on a
/// 2-core machine under load (docs/bench.md): with the log on the real disk, fsync swung
/// from 0.1 to 4 ms and neighbouring points jumped 10×; a steady device of this latency,
/// one of Fig. 3's, makes a commit wait long enough for ELR and flush pipelining to matter
/// and is the same for every variant and every round.
pub const DEFAULT_LOG_LATENCY: Duration = Duration::from_millis(1);

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// The figure.
    pub figure: Figure,
    /// TPC-B scale factor (branches) for the TPC-B figures.
    pub scale: u32,
    /// TATP subscribers for the TATP figures.
    pub subscribers: u32,
    /// Client counts: the x axis, or (for [`Figure::ElrSkew`] and [`Figure::Cpu`]) the
    /// one count used.
    pub clients: Vec<usize>,
    /// Zipf skews ([`Figure::ElrSkew`]'s x axis).
    pub skews: Vec<f64>,
    /// Emulated log latencies ([`Figure::ElrSkew`]'s series).
    pub latencies: Vec<Duration>,
    /// The log device of the other figures: an emulated one of this latency, or `None`
    /// for the real disk under [`SweepConfig::dir`].
    pub log_latency: Option<Duration>,
    /// Rounds: each point runs once per round (at least 1).
    pub repeat: usize,
    /// The scalable log buffer of the last step of Figs. 9 and 2 (`None`: leave the step
    /// out).
    pub scalable_buffer: Option<InsertVariant>,
    /// Unmeasured warm-up per run.
    pub warmup: Duration,
    /// Measured time per run.
    pub seconds: Duration,
    /// Where the databases go (a fresh temporary directory under it per session);
    /// `None`: the current directory. With the log on the real disk, the figures
    /// measure this disk.
    pub dir: Option<PathBuf>,
}

/// One planned run.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The component step of Figs. 9 and 2 ("baseline", "+elr", …); `None` for the
    /// other figures.
    pub step: Option<&'static str>,
    /// The round (0-based): every point runs once per round.
    pub repeat: usize,
    /// The log-buffer variant the session must be opened with.
    pub log_buffer: InsertVariant,
    /// The run.
    pub spec: RunSpec,
}

/// The steps of Figs. 9 and 2: each switches one more component on.
const TATP_STEPS: [(&str, CommitProtocol); 3] = [
    ("baseline", CommitProtocol::Classic),
    ("+elr", CommitProtocol::Elr),
    ("+pipelining", CommitProtocol::ElrPipelined),
];
/// The last step of Figs. 9 and 2, on a session with the scalable buffer.
const SCALABLE_STEP: &str = "+scalable-buffer";

impl SweepConfig {
    /// The defaults: small enough to finish in minutes on two cores (SF 2, SF 10 with
    /// 16 clients for Fig. 3 and with 60 for Fig. 2; 1 s per point after 0.5 s of
    /// warm-up, 3 rounds); flags scale them up.
    pub fn new(figure: Figure) -> SweepConfig {
        SweepConfig {
            figure,
            // Fig. 3 needs a low-skew phase where ELR gains little: with SF 2's two
            // branches every TPC-B transaction conflicts even at skew 0 (measured at 64
            // clients, 1 ms: 12× at skew 0, no rise with skew above the spread). SF 10
            // with 16 clients leaves skew 0 mostly conflict-free (measured, skew 0 →
            // 1.2: 2.4× → 7.8× at 1 ms, 2.1× → 11.7× at 10 ms, spreads apart).
            // Fig. 2: the paper's 100 tellers (SF 10), whose contention its baseline bar
            // shows as idle time.
            scale: if matches!(figure, Figure::ElrSkew | Figure::Cpu) {
                10
            } else {
                2
            },
            subscribers: 100_000,
            clients: match figure {
                Figure::ElrSkew => vec![16],
                // The paper's Fig. 2 ran 60 clients.
                Figure::Cpu => vec![60],
                _ => vec![1, 2, 4, 8, 16, 32, 64],
            },
            skews: vec![0.0, 0.5, 0.8, 1.0, 1.2],
            latencies: [0, 100, 1_000, 10_000]
                .into_iter()
                .map(Duration::from_micros)
                .collect(),
            log_latency: Some(DEFAULT_LOG_LATENCY),
            repeat: DEFAULT_REPEAT,
            scalable_buffer: default_scalable_buffer(),
            warmup: Duration::from_millis(500),
            seconds: Duration::from_secs(1),
            dir: None,
        }
    }

    /// Checks the knobs; the message names the offending one.
    pub fn validate(&self) -> Result<(), String> {
        in_range("scale", self.scale, 1..=10_000)?;
        in_range("subscribers", self.subscribers, 1..=100_000_000)?;
        in_range(
            "the number of client counts",
            self.clients.len(),
            1..=MAX_POINTS,
        )?;
        for &c in &self.clients {
            in_range("clients", c, 1..=MAX_CLIENTS)?;
        }
        if self.figure.one_client_count() && self.clients.len() != 1 {
            return Err(format!(
                "{} runs at one client count ({})",
                self.figure,
                if self.figure == Figure::ElrSkew {
                    "its x axis is the skew"
                } else {
                    "its bars are the commit protocols"
                }
            ));
        }
        in_range("the number of skews", self.skews.len(), 1..=MAX_POINTS)?;
        for &s in &self.skews {
            in_range("skew", s, 0.0..=10.0)?;
        }
        in_range(
            "the number of log latencies",
            self.latencies.len(),
            1..=MAX_POINTS,
        )?;
        for l in &self.latencies {
            in_range(
                "log latency in seconds",
                l.as_secs_f64(),
                ..=MAX_LATENCY_SECONDS,
            )?;
        }
        if let Some(l) = self.log_latency {
            in_range(
                "log latency in seconds",
                l.as_secs_f64(),
                ..=MAX_LATENCY_SECONDS,
            )?;
        }
        check_repeat(self.repeat)?;
        if self.scalable_buffer == Some(InsertVariant::Mutex) {
            return Err(format!(
                "the scalable-buffer step needs a log buffer other than the baseline '{}'",
                InsertVariant::Mutex
            ));
        }
        in_range("seconds", self.seconds.as_secs_f64(), 0.05..=MAX_SECONDS)?;
        in_range("warm-up seconds", self.warmup.as_secs_f64(), ..=MAX_SECONDS)?;
        Ok(())
    }

    /// The runs, in order: [`SweepConfig::repeat`] rounds of one round's runs each
    /// ([`interleave`]). Within a round, runs that are compared (same x, different
    /// protocol) sit next to each other so that drift in the machine's state affects both
    /// alike.
    pub fn plan(&self) -> Vec<Planned> {
        interleave(&self.round(), self.repeat)
    }

    /// The log device of the figure's runs: Fig. 3's first latency (each run sets its
    /// own), else [`SweepConfig::log_latency`].
    fn session_latency(&self) -> Option<Duration> {
        match self.figure {
            Figure::ElrSkew => self.latencies.first().copied(),
            _ => self.log_latency,
        }
    }

    /// One round: every point of the figure once, all with `repeat` 0.
    fn round(&self) -> Vec<Planned> {
        let spec = |protocol, clients, agents, skew, log_latency| RunSpec {
            protocol,
            clients,
            agents,
            skew,
            log_latency,
            warmup: self.warmup,
            seconds: self.seconds,
            time_breakdown: self.figure.times(),
        };
        let mutex = InsertVariant::Mutex;
        let plain = |s: RunSpec| Planned {
            step: None,
            repeat: 0,
            log_buffer: mutex,
            spec: s,
        };
        let log = self.log_latency;
        let mut out = Vec::new();
        match self.figure {
            Figure::ElrSkew => {
                // Blocking agents, one per client: ELR's gain is the lock hold time it
                // removes, which only shows when each transaction has its own thread.
                let c = self.clients[0];
                for &l in &self.latencies {
                    for &skew in &self.skews {
                        for p in [CommitProtocol::Classic, CommitProtocol::Elr] {
                            out.push(plain(spec(p, c, Some(c), skew, Some(l))));
                        }
                    }
                }
            }
            Figure::Ctx | Figure::Clients => {
                // classic → elr is ELR alone, elr → elr-pipelined flush pipelining alone;
                // async (Fig. 5) is the bound: no commit waits for the log at all.
                let protocols: &[CommitProtocol] = if self.figure == Figure::Ctx {
                    &[
                        CommitProtocol::Classic,
                        CommitProtocol::Elr,
                        CommitProtocol::ElrPipelined,
                    ]
                } else {
                    &[
                        CommitProtocol::Classic,
                        CommitProtocol::Elr,
                        CommitProtocol::ElrPipelined,
                        CommitProtocol::Async,
                    ]
                };
                // Agents: the protocol's default shape (one per client when blocking,
                // one per core when not), which is what the figures compare.
                for &c in &self.clients {
                    for &p in protocols {
                        out.push(plain(spec(p, c, None, 0.0, log)));
                    }
                }
            }
            Figure::Breakdown => {
                // The paper's Fig. 7: ELR and flush pipelining on, the baseline buffer.
                for &c in &self.clients {
                    out.push(plain(spec(CommitProtocol::ElrPipelined, c, None, 0.0, log)));
                }
            }
            Figure::TatpComponents | Figure::Cpu => {
                // Steps side by side at each client count, as for the other figures.
                for &c in &self.clients {
                    for (step, p) in TATP_STEPS {
                        out.push(Planned {
                            step: Some(step),
                            ..plain(spec(p, c, None, 0.0, log))
                        });
                    }
                    if let Some(v) = self.scalable_buffer {
                        out.push(Planned {
                            step: Some(SCALABLE_STEP),
                            repeat: 0,
                            log_buffer: v,
                            spec: spec(CommitProtocol::ElrPipelined, c, None, 0.0, log),
                        });
                    }
                }
            }
        }
        out
    }

    /// Sorts and deduplicates the axes, so lines are drawn left to right and no point
    /// runs twice.
    pub fn normalise(&mut self) {
        self.clients.sort_unstable();
        self.clients.dedup();
        self.skews.sort_by(f64::total_cmp);
        self.skews.dedup();
        let mut seen = Vec::new();
        self.latencies.retain(|l| {
            let fresh = !seen.contains(l);
            seen.push(*l);
            fresh
        });
    }
}

/// One row of a sweep: a run's [`Row`] and where it sits in the figure.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    /// The figure.
    pub figure: Figure,
    /// The round it ran in (0-based).
    pub repeat: usize,
    /// The component step of Figs. 9 and 2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<&'static str>,
    /// The run.
    #[serde(flatten)]
    pub row: Row,
}

impl SweepRow {
    /// Committed (TPC-B) or completed (TATP MQTh) transactions per second.
    pub fn throughput(&self) -> f64 {
        self.row.throughput()
    }
}

/// What a sweep measured and wrote.
#[derive(Debug, Clone)]
pub struct SweepResult {
    /// The figure.
    pub figure: Figure,
    /// One per run, in plan order (every repeat).
    pub rows: Vec<SweepRow>,
    /// Ratios the figure is about (Fig. 3's is the figure itself); `None` for Fig. 4.
    pub speedup: Option<SpeedupTable>,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Things a reader should know (a step left out, …).
    pub notes: Vec<String>,
}

impl SweepResult {
    /// Every row's consistency check passed.
    pub fn consistent(&self) -> bool {
        self.rows.iter().all(|r| r.row.consistent)
    }
}

/// Where a sweep is, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Runs finished, with a fraction for the one under way.
    pub done: f64,
    /// Runs planned.
    pub total: usize,
    /// What is happening now.
    pub what: &'a str,
}

/// Why a sweep did not finish.
#[derive(Debug)]
pub enum SweepError {
    /// The configuration is invalid (a usage error).
    Config(String),
    /// Loading or running failed.
    Engine(sluice::Error),
    /// Writing the output failed.
    Output(String),
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::Config(m) => f.write_str(m),
            SweepError::Engine(e) => write!(f, "{e}"),
            SweepError::Output(m) => write!(f, "writing the sweep's files: {m}"),
        }
    }
}

impl std::error::Error for SweepError {}

impl From<sluice::Error> for SweepError {
    fn from(e: sluice::Error) -> Self {
        SweepError::Engine(e)
    }
}

enum Loaded {
    Tpcb(TpcbSession),
    Tatp(TatpSession),
}

/// An open session and the directory it lives in (dropped after the session, which
/// must close its files first).
struct Session {
    loaded: Loaded,
    log_buffer: InsertVariant,
    _dir: Option<tempfile::TempDir>,
}

fn open(
    cfg: &SweepConfig,
    log_buffer: InsertVariant,
    progress: &mut dyn FnMut(f64),
) -> Result<Session, SweepError> {
    let dir = match &cfg.dir {
        Some(parent) => Some(
            tempfile::Builder::new()
                .prefix("sluice-sweep-")
                .tempdir_in(parent)
                .map_err(|e| SweepError::Engine(e.into()))?,
        ),
        None => None,
    };
    let setup = |pool_pages| Setup {
        dir: dir.as_ref().map(|d| d.path().to_path_buf()),
        // An emulated device (each run sets its latency: Fig. 3 varies it), or the real
        // disk when the other figures are asked for it.
        log_latency: cfg.session_latency(),
        log_buffer,
        pool_pages,
        checkpoint_log_bytes: Setup::CHECKPOINT_LOG_BYTES,
        adaptive_group_commit: true,
        flush: Default::default(),
        preallocate: Default::default(),
    };
    let loaded = if cfg.figure.tatp() {
        let s = setup(TatpSession::pool_pages(cfg.subscribers));
        Loaded::Tatp(TatpSession::load(&s, cfg.subscribers, progress)?)
    } else {
        let s = setup(TpcbSession::pool_pages(cfg.scale));
        Loaded::Tpcb(TpcbSession::load(
            &s,
            TpcbShape::standard(cfg.scale),
            progress,
        )?)
    };
    Ok(Session {
        loaded,
        log_buffer,
        _dir: dir,
    })
}

fn describe(p: &Planned) -> String {
    let s = &p.spec;
    let mut d = match p.step {
        Some(step) => format!("{step} ({}, {})", s.protocol, p.log_buffer),
        None => s.protocol.to_string(),
    };
    d.push_str(&format!(", {} clients", s.clients));
    if s.skew > 0.0 {
        d.push_str(&format!(", skew {}", s.skew));
    }
    if let Some(l) = s.log_latency {
        d.push_str(&format!(", log {l:?}"));
    }
    d.push_str(&format!(", round {}", p.repeat + 1));
    d
}

/// Runs the sweep `cfg` describes and writes its files under `out`:
/// `<figure>.csv`, `<figure>.json` (an array, one row object per line), `<figure>-speedup.csv` when the
/// figure has a speedup table, and the figure(s) as PNG and SVG. Files are written even
/// when a row is inconsistent; check [`SweepResult::consistent`].
pub fn run(
    cfg: &SweepConfig,
    out: &Path,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<SweepResult, SweepError> {
    cfg.validate().map_err(SweepError::Config)?;
    let mut cfg = cfg.clone();
    cfg.normalise();
    let cfg = &cfg;
    let plan = cfg.plan();
    assert!(!plan.is_empty(), "a valid configuration plans some runs");
    let total = plan.len();
    let mut notes = Vec::new();
    if cfg.figure.steps() && cfg.scalable_buffer.is_none() {
        notes.push(
            "no scalable log-buffer variant in this build: the +scalable-buffer step is left out"
                .to_string(),
        );
    }
    notes.extend(notes::machine_notes(cfg));
    // One session per log-buffer variant, kept open across rounds: reloading each
    // round would cost more than the runs. Loading happens once, before that variant's
    // first run; the loaded databases then only compete for memory, not the disk.
    let mut sessions: Vec<Session> = Vec::new();
    let mut rows = Vec::with_capacity(total);
    for (i, p) in plan.iter().enumerate() {
        let done = i as f64;
        if !sessions.iter().any(|s| s.log_buffer == p.log_buffer) {
            let what = format!(
                "loading {} ({} log buffer)",
                if cfg.figure.tatp() {
                    format!("TATP {} subscribers", cfg.subscribers)
                } else {
                    format!("TPC-B SF {}", cfg.scale)
                },
                p.log_buffer
            );
            sessions.push(open(cfg, p.log_buffer, &mut |f| {
                progress(Progress {
                    done,
                    total,
                    what: &format!("{what} {:.0} %", f * 100.0),
                })
            })?);
        }
        let s = sessions
            .iter_mut()
            .find(|s| s.log_buffer == p.log_buffer)
            .expect("opened above");
        let what = describe(p);
        let mut tick = |f: f64| {
            progress(Progress {
                done: done + f.clamp(0.0, 1.0),
                total,
                what: &what,
            })
        };
        tick(0.0);
        let row = match &mut s.loaded {
            Loaded::Tpcb(t) => t.run(&p.spec, tick)?,
            Loaded::Tatp(t) => t.run(&p.spec, Some(TatpKind::UpdateLocation), false, tick)?,
        };
        rows.push(SweepRow {
            figure: cfg.figure,
            repeat: p.repeat,
            step: p.step,
            row,
        });
    }
    drop(sessions);
    progress(Progress {
        done: total as f64,
        total,
        what: "writing files",
    });
    let speedup = output::speedup(cfg.figure, &rows);
    let files = output::write(cfg, out, &rows, speedup.as_ref()).map_err(SweepError::Output)?;
    Ok(SweepResult {
        figure: cfg.figure,
        rows,
        speedup,
        files,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn figure_names_round_trip() {
        for &f in Figure::value_variants() {
            assert_eq!(f.to_string().parse::<Figure>(), Ok(f));
        }
        assert!("fig3".parse::<Figure>().unwrap_err().contains("elr-skew"));
    }

    #[test]
    fn defaults_are_valid_and_plan_pairs_of_comparable_runs() {
        for &f in Figure::value_variants() {
            let c = SweepConfig::new(f);
            c.validate().unwrap();
            let plan = c.plan();
            let per_round = match f {
                Figure::ElrSkew => 4 * 5 * 2,
                Figure::Ctx => 7 * 3,
                Figure::Clients => 7 * 4,
                Figure::TatpComponents => 7 * (3 + c.scalable_buffer.is_some() as usize),
                Figure::Breakdown => 7,
                Figure::Cpu => 3 + c.scalable_buffer.is_some() as usize,
            };
            assert_eq!(plan.len(), per_round * 3, "{f}: 3 rounds by default");
            if f != Figure::ElrSkew {
                // The emulated device by default, the same for every run.
                assert!(plan
                    .iter()
                    .all(|p| p.spec.log_latency == Some(DEFAULT_LOG_LATENCY)));
            }
        }
        let plan = SweepConfig::new(Figure::ElrSkew).plan();
        assert!(plan.iter().all(|p| p.spec.agents == Some(p.spec.clients)));
        assert_eq!(plan[0].spec.protocol, CommitProtocol::Classic);
        assert_eq!(plan[1].spec.protocol, CommitProtocol::Elr);
        assert_eq!(plan[0].spec.skew, plan[1].spec.skew);
    }

    #[test]
    fn each_technique_has_its_before_and_after_at_every_client_count() {
        // ELR alone is classic → elr, pipelining alone elr → elr-pipelined: both
        // figures run all three at every x, side by side.
        for f in [Figure::Ctx, Figure::Clients] {
            let c = SweepConfig::new(f);
            for &clients in &c.clients {
                let at: Vec<_> = c
                    .round()
                    .into_iter()
                    .filter(|p| p.spec.clients == clients)
                    .map(|p| p.spec.protocol)
                    .collect();
                assert_eq!(
                    &at[..3],
                    [
                        CommitProtocol::Classic,
                        CommitProtocol::Elr,
                        CommitProtocol::ElrPipelined
                    ],
                    "{f}"
                );
            }
        }
    }

    #[test]
    fn only_the_breakdown_figures_keep_the_agents_clocks() {
        for &f in Figure::value_variants() {
            let plan = SweepConfig::new(f).plan();
            assert!(
                plan.iter().all(|p| p.spec.time_breakdown == f.times()),
                "{f}"
            );
        }
    }

    #[test]
    fn fig7_runs_elr_pipelined_on_the_mutex_buffer_once_per_client_count_per_round() {
        let mut c = SweepConfig::new(Figure::Breakdown);
        c.clients = vec![1, 4, 16];
        c.repeat = 2;
        assert!(c.figure.tatp() && !c.figure.steps());
        let plan = c.plan();
        assert_eq!(plan.len(), 3 * 2);
        for (i, p) in plan.iter().enumerate() {
            assert_eq!(p.repeat, i / 3, "rounds one after another");
            assert_eq!(p.spec.clients, c.clients[i % 3], "the x axis in order");
            assert_eq!(p.spec.protocol, CommitProtocol::ElrPipelined);
            assert_eq!(p.log_buffer, InsertVariant::Mutex);
            assert_eq!(p.spec.log_latency, Some(DEFAULT_LOG_LATENCY));
            assert_eq!(
                p.spec.agents, None,
                "the protocol's own shape: one per core"
            );
            assert_eq!(p.step, None);
        }
    }

    #[test]
    fn fig2_runs_each_step_at_one_client_count_with_the_scalable_buffer_last() {
        let mut c = SweepConfig::new(Figure::Cpu);
        assert_eq!(c.clients, [60], "the paper's 60 clients");
        assert_eq!(c.scale, 10, "the paper's 100 tellers");
        c.scalable_buffer = InsertVariant::ALL
            .iter()
            .copied()
            .find(|v| v.name() != "mutex");
        c.repeat = 3;
        let plan = c.plan();
        let per_round = 3 + c.scalable_buffer.is_some() as usize;
        assert_eq!(plan.len(), per_round * 3);
        for round in plan.chunks(per_round) {
            let got: Vec<_> = round
                .iter()
                .map(|p| (p.step.unwrap(), p.spec.protocol, p.log_buffer))
                .collect();
            let mut want = vec![
                ("baseline", CommitProtocol::Classic, InsertVariant::Mutex),
                ("+elr", CommitProtocol::Elr, InsertVariant::Mutex),
                (
                    "+pipelining",
                    CommitProtocol::ElrPipelined,
                    InsertVariant::Mutex,
                ),
            ];
            if let Some(v) = c.scalable_buffer {
                want.push(("+scalable-buffer", CommitProtocol::ElrPipelined, v));
            }
            assert_eq!(got, want);
            assert!(round.iter().all(|p| p.spec.clients == 60));
        }
        c.clients = vec![8, 60];
        let e = c.validate().unwrap_err();
        assert!(e.contains("cpu runs at one client count"), "{e}");
    }

    #[test]
    fn the_real_disk_is_a_config_away() {
        let mut c = SweepConfig::new(Figure::Clients);
        c.log_latency = None;
        c.validate().unwrap();
        assert!(c.plan().iter().all(|p| p.spec.log_latency.is_none()));
        assert_eq!(c.session_latency(), None);
        let fig3 = SweepConfig::new(Figure::ElrSkew);
        assert_eq!(
            fig3.session_latency(),
            Some(Duration::ZERO),
            "its first latency"
        );
    }

    #[test]
    fn fig9_runs_both_log_buffers_in_every_round() {
        let mut c = SweepConfig::new(Figure::TatpComponents);
        c.scalable_buffer = InsertVariant::ALL
            .iter()
            .copied()
            .find(|v| v.name() != "mutex");
        c.repeat = 2;
        let plan = c.plan();
        for r in 0..2 {
            let variants: Vec<_> = plan
                .iter()
                .filter(|p| p.repeat == r)
                .map(|p| p.log_buffer)
                .collect();
            assert!(variants.contains(&InsertVariant::Mutex));
            if let Some(v) = c.scalable_buffer {
                assert!(variants.contains(&v), "round {r} runs the scalable step");
            }
        }
    }

    #[test]
    fn validation_names_the_bad_knob() {
        let bad = |edit: fn(&mut SweepConfig), mentions: &str| {
            let mut c = SweepConfig::new(Figure::ElrSkew);
            edit(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.contains(mentions), "{e:?} lacks {mentions:?}");
        };
        bad(|c| c.scale = 0, "scale");
        bad(|c| c.clients = vec![1, 2], "one client count");
        bad(|c| c.clients = vec![0], "clients");
        bad(|c| c.skews = vec![f64::NAN], "skew");
        bad(|c| c.skews.clear(), "skews");
        bad(|c| c.latencies = vec![Duration::from_secs(11)], "latency");
        bad(|c| c.seconds = Duration::ZERO, "seconds");
        bad(|c| c.repeat = 0, "repeat");
        bad(|c| c.log_latency = Some(Duration::from_secs(11)), "latency");
        bad(
            |c| c.scalable_buffer = Some(InsertVariant::Mutex),
            "scalable",
        );
    }

    #[test]
    fn normalise_sorts_and_dedups_axes() {
        let mut c = SweepConfig::new(Figure::Clients);
        c.clients = vec![8, 1, 8, 2];
        c.skews = vec![1.0, 0.0, 1.0];
        c.latencies = vec![Duration::ZERO, Duration::from_millis(1), Duration::ZERO];
        c.normalise();
        assert_eq!(c.clients, [1, 2, 8]);
        assert_eq!(c.skews, [0.0, 1.0]);
        assert_eq!(c.latencies, [Duration::ZERO, Duration::from_millis(1)]);
    }
}
