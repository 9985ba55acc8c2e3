//! Propagation sweeps: the runs behind the propagation paper's Figs. 3 and 4.
//!
//! - [`SweepFigure::Bandwidth`] (Fig. 3): at full speed, the page cleaner with oldest-,
//!   coldest- and hottest-first at candidate heaps of 0.1 %, 1 % and 10 % of the pool,
//!   no policy, clustered (≥ 8 and ≥ 32 pages), mixed, and log-based propagation; the
//!   figure is each strategy's write bandwidth *while it propagates* — bytes written ÷
//!   the time the strategy spent propagating (reading, replaying, writing, syncing),
//!   [`Summary::busy_write_mb_per_s`](super::propagation::Summary::busy_write_mb_per_s) —
//!   on a log axis, the median of the repeats with their min–max as error bars, and the
//!   device's sequential bandwidth as a reference line. That is the paper's measure: its
//!   cleaners run flat out ("maximize pressure on the system"), so the bandwidth they
//!   sustain is what they write per second of work, and its log-based strategy reaches
//!   half the device *because* half of its time goes to reads — time that counts.
//! - [`SweepFigure::Backlog`] (Fig. 4): oldest-first (10 % heap), clustered ≥ 8, mixed
//!   and log-based, each at low and at high throughput; four panels — dirty pages and
//!   REDO length over time, low throughput above and high below — one line per strategy.
//!
//! Every run is [`super::propagation::run`] in a fresh temporary database, a copy of one
//! loaded once for the sweep; the device is measured once, before the first run. Each variant runs [`SweepConfig::repeat`] times,
//! in rounds that each run every variant once (every other round in reverse order), so
//! the drift of a shared machine falls on all of them alike. A run that fails (or panics: a strategy not built
//! yet) becomes a row that says why, and the others still run; the files are written
//! whatever happened.

mod output;

use super::propagation::{self, DeviceBandwidth, PropagationConfig, PropagationResult, Throughput};
use crate::knobs::named_values;
use crate::output::thousands;
use serde::Serialize;
use sluice::experiment::{PageCleaner, Policy};
use sluice::{CommitProtocol, Strategy};
use std::ops::Bound::{Excluded, Included};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which of the propagation paper's figures a sweep draws; its name (`--figure`) is the
/// stem of its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum SweepFigure {
    /// Fig. 3: write bandwidth per strategy while it propagates.
    Bandwidth,
    /// Fig. 4: dirty pages and REDO length over time, low and high throughput.
    Backlog,
}

named_values!(SweepFigure, "figure", serialize);

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// The figure.
    pub figure: SweepFigure,
    /// Measured time per run.
    pub seconds: Duration,
    /// The low-throughput rate (backlog).
    pub rate: f64,
    /// TPC-B scale factor.
    pub scale: u32,
    /// Logical clients.
    pub clients: usize,
    /// Bytes the device measurement writes before the first run (0: skip it).
    pub probe_bytes: u64,
    /// Where the temporary databases go (`None`: the current directory).
    pub dir: Option<PathBuf>,
    /// Runs of each variant, in interleaved rounds (at least 1).
    pub repeat: usize,
    /// Bandwidth's candidate heaps, as shares of the pool in percent: each page policy
    /// runs once per heap (the paper's three: [`HEAPS_PCT`]).
    pub heaps_pct: Vec<f64>,
    /// Only the variants of these labels ("oldest 1%", "log", …; empty: all of the
    /// figure's).
    pub only: Vec<String>,
}

/// The default TPC-B scale of the sweeps. SF 2's 2,500 account pages are all dirtied
/// within a fraction of a second at full speed, so every page policy writes the same
/// pages and none can be told apart; at SF 10 the run dirties a share of the pool at a
/// time and the policies' choices differ (measured: docs/bench.md).
pub const DEFAULT_SCALE: u32 = 10;

/// The default measured seconds per run of a sweep: Fig. 3 needs the strategies' rates,
/// which settle within seconds (log-based propagation starts after its first sorted
/// run, about a second in); Fig. 4's time series needs the backlog's course.
pub fn default_seconds(figure: SweepFigure) -> u64 {
    match figure {
        SweepFigure::Bandwidth => 5,
        SweepFigure::Backlog => 10,
    }
}

/// The default repeats of each variant (every sweep's).
pub use crate::experiments::noise::DEFAULT_REPEAT;

pub use crate::output::Spread;

/// One planned run.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The name on the figure ("oldest 0.1 %", "clustered ≥8", "log", …).
    pub label: String,
    /// The strategy.
    pub strategy: Strategy,
    /// The candidate heap as a share of the pool, when it was set as one.
    pub heap_pct: Option<f64>,
    /// Full speed or paced.
    pub throughput: Throughput,
}

/// The paper's candidate heaps, as shares of the working set: 0.1%, 1%, 10%.
pub const HEAPS_PCT: [f64; 3] = [0.1, 1.0, 10.0];

fn page(policy: Policy, heap: usize) -> Strategy {
    Strategy::Page(PageCleaner { policy, heap })
}

impl SweepConfig {
    /// The defaults: [`default_seconds`] per run at SF [`DEFAULT_SCALE`] with 64
    /// clients, [`DEFAULT_REPEAT`] repeats, a 256 MiB device measurement.
    pub fn new(figure: SweepFigure) -> SweepConfig {
        SweepConfig {
            figure,
            seconds: Duration::from_secs(default_seconds(figure)),
            rate: propagation::DEFAULT_LOW_RATE,
            scale: DEFAULT_SCALE,
            clients: 64,
            probe_bytes: propagation::DEFAULT_PROBE_BYTES,
            dir: None,
            repeat: DEFAULT_REPEAT,
            heaps_pct: HEAPS_PCT.to_vec(),
            only: Vec::new(),
        }
    }

    /// The sweep of `figure` whose runs take the knobs of `run` (its seconds, low rate,
    /// scale, clients, device measurement and directory; the plan sets the rest), each
    /// variant `repeat` times.
    pub fn with_knobs(figure: SweepFigure, run: &PropagationConfig, repeat: usize) -> SweepConfig {
        SweepConfig {
            figure,
            seconds: run.seconds,
            rate: run.rate,
            scale: run.scale,
            clients: run.clients,
            probe_bytes: run.probe_bytes,
            dir: run.dir.clone(),
            repeat,
            heaps_pct: HEAPS_PCT.to_vec(),
            only: Vec::new(),
        }
    }

    fn run_config(&self, p: &Planned, device: Option<f64>) -> PropagationConfig {
        PropagationConfig {
            strategy: p.strategy,
            seconds: self.seconds,
            throughput: p.throughput,
            rate: self.rate,
            scale: self.scale,
            clients: self.clients,
            protocol: CommitProtocol::ElrPipelined,
            dir: self.dir.clone(),
            probe_bytes: 0,
            device_mb_per_s: device,
            template: None,
        }
    }

    /// Checks the knobs; the message names the offending one.
    pub fn validate(&self) -> Result<(), String> {
        let mut c = PropagationConfig::new(Strategy::Log);
        c.seconds = self.seconds;
        c.rate = self.rate;
        c.scale = self.scale;
        c.clients = self.clients;
        c.probe_bytes = self.probe_bytes;
        c.dir = self.dir.clone();
        c.validate()?;
        crate::experiments::noise::check_repeat(self.repeat)?;
        if self.figure == SweepFigure::Bandwidth && self.heaps_pct.is_empty() {
            return Err("bandwidth needs at least one candidate heap".into());
        }
        if self.plan().is_empty() {
            return Err(format!("no variant is labelled {}", self.only.join(" or ")));
        }
        for &h in &self.heaps_pct {
            crate::knobs::in_range("heap percent", h, (Excluded(0.0), Included(100.0)))?;
        }
        Ok(())
    }

    /// The runs in the order they happen: `repeat` rounds of the plan, every other one
    /// reversed, as (round from 1, index into [`SweepConfig::plan`]).
    pub fn schedule(&self) -> Vec<(usize, usize)> {
        let n = self.plan().len();
        (0..self.repeat)
            .flat_map(|r| {
                let order: Vec<usize> = if r % 2 == 0 {
                    (0..n).collect()
                } else {
                    (0..n).rev().collect()
                };
                order.into_iter().map(move |i| (r + 1, i))
            })
            .collect()
    }

    /// The buffer pool each run gets (the heaps are shares of it).
    pub fn pool_pages(&self) -> usize {
        propagation::pool_pages(self.scale, self.seconds)
    }

    /// The runs, in order.
    pub fn plan(&self) -> Vec<Planned> {
        let pool = self.pool_pages();
        let heap = |pct: f64| ((pool as f64 * pct / 100.0).round() as usize).max(1);
        let plain = |label: &str, strategy, throughput| Planned {
            label: label.to_string(),
            strategy,
            heap_pct: None,
            throughput,
        };
        let mut out = Vec::new();
        match self.figure {
            SweepFigure::Bandwidth => {
                let high = Throughput::High;
                for (name, policy) in [
                    ("oldest", Policy::Oldest),
                    ("coldest", Policy::Coldest),
                    ("hottest", Policy::Hottest),
                ] {
                    for &pct in &self.heaps_pct {
                        out.push(Planned {
                            label: format!("{name} {pct}%"),
                            strategy: page(policy, heap(pct)),
                            heap_pct: Some(pct),
                            throughput: high,
                        });
                    }
                }
                out.push(plain("no policy", page(Policy::None, 0), high));
                for n in [8, 32] {
                    out.push(plain(
                        &format!("clustered ≥{n}"),
                        page(Policy::Clustered { min_pages: n }, 0),
                        high,
                    ));
                }
                out.push(plain("mixed", page(Policy::Mixed, 0), high));
                out.push(plain("log", Strategy::Log, high));
            }
            SweepFigure::Backlog => {
                for throughput in [Throughput::Low, Throughput::High] {
                    out.push(Planned {
                        label: "oldest 10%".into(),
                        strategy: page(Policy::Oldest, heap(10.0)),
                        heap_pct: Some(10.0),
                        throughput,
                    });
                    out.push(plain(
                        "clustered ≥8",
                        page(Policy::Clustered { min_pages: 8 }, 0),
                        throughput,
                    ));
                    out.push(plain("mixed", page(Policy::Mixed, 0), throughput));
                    out.push(plain("log", Strategy::Log, throughput));
                }
            }
        }
        if !self.only.is_empty() {
            out.retain(|p| self.only.contains(&p.label));
        }
        out
    }
}

/// One run of a sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    /// The figure.
    pub figure: SweepFigure,
    /// The name on the figure.
    pub label: String,
    /// Which repeat, from 1.
    pub round: usize,
    /// The strategy, as `--strategy` spells it.
    pub strategy: String,
    /// The candidate heap as a share of the pool (bandwidth's page policies).
    pub heap_pct: Option<f64>,
    /// `low` or `high`.
    pub throughput: Throughput,
    /// What the run measured (absent when it failed).
    #[serde(flatten)]
    pub result: Option<PropagationResult>,
    /// Why the run failed.
    pub error: Option<String>,
}

/// What a sweep measured and wrote.
#[derive(Debug, Clone)]
pub struct SweepResult {
    /// The figure.
    pub figure: SweepFigure,
    /// The device's sequential write bandwidth, measured before the runs.
    pub device: Option<DeviceBandwidth>,
    /// One per run, in the order they ran ([`SweepConfig::schedule`]).
    pub rows: Vec<SweepRow>,
    /// The variants, in plan order (the figure's order).
    pub plan: Vec<Planned>,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Things a reader should know.
    pub notes: Vec<String>,
}

impl SweepResult {
    /// Every run that finished passed its consistency checks.
    pub fn consistent(&self) -> bool {
        self.rows
            .iter()
            .filter_map(|r| r.result.as_ref())
            .all(|x| x.summary.consistent)
    }

    /// The runs that failed (no result), as `label throughput (strategy), round N`.
    pub fn failed(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter(|r| r.result.is_none())
            .map(|r| {
                format!(
                    "{} {} ({}), round {}",
                    r.label, r.throughput, r.strategy, r.round
                )
            })
            .collect()
    }

    /// The runs of variant `p` (every repeat that finished), in round order.
    pub fn runs_of(&self, p: &Planned) -> Vec<&PropagationResult> {
        let mut v: Vec<(&SweepRow, &PropagationResult)> = self
            .rows
            .iter()
            .filter(|r| r.label == p.label && r.throughput == p.throughput)
            .filter_map(|r| r.result.as_ref().map(|x| (r, x)))
            .collect();
        v.sort_by_key(|(r, _)| r.round);
        v.into_iter().map(|(_, x)| x).collect()
    }

    /// The figure's measure of variant `p` over its repeats: bytes written ÷ time spent
    /// propagating, MB/s (`None` when every repeat failed).
    pub fn bandwidth_of(&self, p: &Planned) -> Option<Spread> {
        Spread::of(
            self.runs_of(p)
                .iter()
                .map(|x| x.summary.busy_write_mb_per_s),
        )
    }
}

/// A sweep's progress and failures, as the commit-protocol sweep reports them.
pub use super::commit_sweep::{Progress, SweepError};

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".to_string()
    }
}

/// Runs the sweep `cfg` describes and writes `<figure>.csv`, `<figure>.json`,
/// `<figure>.png` and `<figure>.svg` under `out`.
pub fn run(
    cfg: &SweepConfig,
    out: &Path,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<SweepResult, SweepError> {
    cfg.validate().map_err(SweepError::Config)?;
    let plan = cfg.plan();
    let schedule = cfg.schedule();
    let total = schedule.len();
    let mut notes = vec![
        "every variant ran in this one invocation on a shared machine, one after another: compare them with each other, not with other runs or machines".to_string(),
        format!(
            "TPC-B SF {}, {} clients, elr-pipelined, {} s per run, a checkpoint every second, buffer pool {} pages (the data fits with room to spare)",
            cfg.scale,
            cfg.clients,
            cfg.seconds.as_secs_f64(),
            cfg.pool_pages()
        ),
        format!(
            "each variant ran {} time(s), in rounds that run every variant once (every other round in reverse order); the CSV and JSON keep every run",
            cfg.repeat
        ),
    ];
    if cfg.figure == SweepFigure::Backlog && cfg.repeat > 1 {
        notes.push("the figure draws, of each variant's repeats, the run with the median mean dirty pages; the table has every run".to_string());
    }
    if cfg.figure == SweepFigure::Bandwidth {
        notes.push("bars: bytes the strategy wrote ÷ the time it spent propagating (reads, replay, writes and syncs), the paper's write bandwidth of a cleaner working flat out; median of the repeats, error bars min–max".to_string());
    }
    if cfg.figure == SweepFigure::Backlog {
        notes.push(format!(
            "low throughput: the clients paced to {} transactions per second; high: at full speed",
            thousands(cfg.rate)
        ));
    }
    progress(Progress {
        done: 0.0,
        total,
        what: "measuring the device",
    });
    let device = if cfg.probe_bytes > 0 {
        let parent = match &cfg.dir {
            Some(d) => d.clone(),
            None => std::env::current_dir().map_err(|e| SweepError::Engine(e.into()))?,
        };
        let d =
            propagation::measure_device(&parent, cfg.probe_bytes).map_err(SweepError::Engine)?;
        notes.push(format!(
            "device: {:.0} MB/s sequential ({} MiB in 1 MiB writes and an fsync, in the databases' directory, before the runs)",
            d.mb_per_s,
            d.bytes >> 20
        ));
        Some(d)
    } else {
        None
    };
    // One load for every run: each copies the loaded, cleanly closed database.
    let what = format!("loading TPC-B SF {} once for every run", cfg.scale);
    let template = propagation::load_template(&cfg.run_config(&plan[0], None), |f| {
        progress(Progress {
            done: f * 0.5,
            total,
            what: &what,
        })
    })
    .map_err(SweepError::Engine)?;
    let mut rows = Vec::with_capacity(total);
    for (i, &(round, k)) in schedule.iter().enumerate() {
        let p = &plan[k];
        let mut rc = cfg.run_config(p, device.map(|d| d.mb_per_s));
        rc.template = Some(template.path().to_path_buf());
        let what = format!("{} {}, round {round}/{}", p.label, p.throughput, cfg.repeat);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            propagation::run(&rc, |q| {
                progress(Progress {
                    done: i as f64 + q.done,
                    total,
                    what: &format!("{what}: {}", q.what),
                })
            })
        }));
        let (result, error) = match outcome {
            Ok(Ok(r)) => (Some(r), None),
            Ok(Err(e)) => (None, Some(e.to_string())),
            Err(panic) => (None, Some(format!("panicked: {}", panic_message(&*panic)))),
        };
        if let Some(e) = &error {
            notes.push(format!(
                "{} {} ({}), round {round}, failed: {e}",
                p.label, p.throughput, p.strategy
            ));
        }
        rows.push(SweepRow {
            figure: cfg.figure,
            label: p.label.clone(),
            round,
            strategy: p.strategy.to_string(),
            heap_pct: p.heap_pct,
            throughput: p.throughput,
            result,
            error,
        });
    }
    progress(Progress {
        done: total as f64,
        total,
        what: "writing files",
    });
    let mut r = SweepResult {
        figure: cfg.figure,
        device,
        rows,
        plan,
        files: Vec::new(),
        notes,
    };
    r.files = output::write(cfg, out, &r).map_err(SweepError::Output)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn figure_names_round_trip() {
        for &f in SweepFigure::value_variants() {
            assert_eq!(f.to_string().parse::<SweepFigure>(), Ok(f));
        }
        assert!("fig3".parse::<SweepFigure>().is_err());
    }

    #[test]
    fn spread_is_median_and_range() {
        let s = Spread::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = Spread::of([4.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (3.0, 1.0, 10.0));
        assert_eq!(Spread::of([f64::NAN, 5.0]).unwrap().median, 5.0);
        assert!(Spread::of([]).is_none());
    }

    #[test]
    fn rounds_interleave_the_variants_and_alternate_their_order() {
        let mut c = SweepConfig::new(SweepFigure::Backlog);
        c.repeat = 3;
        let n = c.plan().len();
        let s = c.schedule();
        assert_eq!(s.len(), 3 * n);
        // Round 1 forward, round 2 backward, round 3 forward; each variant once a round.
        assert_eq!(s[0], (1, 0));
        assert_eq!(s[n - 1], (1, n - 1));
        assert_eq!(s[n], (2, n - 1));
        assert_eq!(s[2 * n - 1], (2, 0));
        assert_eq!(s[2 * n], (3, 0));
        for r in 1..=3 {
            let mut seen: Vec<usize> = s.iter().filter(|x| x.0 == r).map(|x| x.1).collect();
            seen.sort();
            assert_eq!(seen, (0..n).collect::<Vec<_>>());
        }
        c.repeat = 0;
        assert!(c.validate().unwrap_err().contains("repeat"));
    }

    #[test]
    fn plans_have_the_papers_variants() {
        let c = SweepConfig::new(SweepFigure::Bandwidth);
        let plan = c.plan();
        assert_eq!(plan.len(), 9 + 4 + 1);
        let pool = c.pool_pages();
        assert_eq!(
            plan[0].strategy,
            page(Policy::Oldest, (pool as f64 / 1000.0).round() as usize)
        );
        assert_eq!(
            plan[2].strategy,
            page(Policy::Oldest, (pool as f64 / 10.0).round() as usize)
        );
        assert_eq!(plan.last().unwrap().strategy, Strategy::Log);
        assert!(plan.iter().all(|p| p.throughput == Throughput::High));
        let plan = SweepConfig::new(SweepFigure::Backlog).plan();
        assert_eq!(plan.len(), 8);
        assert_eq!(
            plan.iter()
                .filter(|p| p.throughput == Throughput::Low)
                .count(),
            4
        );
        // Every strategy spelled as --strategy parses back.
        for p in SweepConfig::new(SweepFigure::Bandwidth).plan() {
            assert_eq!(
                p.strategy.to_string().parse::<Strategy>().unwrap(),
                p.strategy
            );
        }
    }

    #[test]
    fn a_sweep_can_run_some_heaps_and_some_variants() {
        let mut c = SweepConfig::new(SweepFigure::Bandwidth);
        c.heaps_pct = vec![1.0];
        assert_eq!(c.plan().len(), 3 + 4 + 1);
        c.only = ["oldest 1%", "log"].map(String::from).to_vec();
        let labels: Vec<String> = c.plan().into_iter().map(|p| p.label).collect();
        assert_eq!(labels, ["oldest 1%", "log"]);
        assert!(c.validate().is_ok());
        c.only = vec!["oldest 0.1%".into()];
        assert!(c.validate().unwrap_err().contains("oldest 0.1%"));
        c.only.clear();
        c.heaps_pct = vec![];
        assert!(c.validate().unwrap_err().contains("heap"));
        c.heaps_pct = vec![0.0];
        assert!(c.validate().unwrap_err().contains("heap percent"));
    }
}
