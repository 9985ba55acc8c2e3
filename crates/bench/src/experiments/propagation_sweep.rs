//! Propagation sweeps: the runs behind the propagation paper's Figs. 3 and 4.
//!
//! - [`SweepFigure::Bandwidth`] (Fig. 3): at full speed, the page cleaner with oldest-,
//!   coldest- and hottest-first at candidate heaps of 0.1 %, 1 % and 10 % of the pool,
//!   no policy, clustered (≥ 8 and ≥ 32 pages), mixed, and log-based propagation; the
//!   figure is each strategy's mean write bandwidth on a log axis, with the device's
//!   sequential bandwidth as a reference line.
//! - [`SweepFigure::Backlog`] (Fig. 4): oldest-first (10 % heap), clustered ≥ 8, mixed
//!   and log-based, each at low and at high throughput; four panels — dirty pages and
//!   REDO length over time, low throughput above and high below — one line per strategy.
//!
//! Every run is [`super::propagation::run`] in a fresh temporary database; the device is
//! measured once, before the first run. A run that fails (or panics: a strategy not built
//! yet) becomes a row that says why, and the others still run; the files are written
//! whatever happened.

mod output;

use super::propagation::{self, DeviceBandwidth, PropagationConfig, PropagationResult, Throughput};
use crate::knobs::named_values;
use crate::output::thousands;
use serde::Serialize;
use sluice::experiment::{PageCleaner, Policy};
use sluice::{CommitProtocol, Strategy};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which of the propagation paper's figures a sweep draws; its name (`--figure`) is the
/// stem of its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum SweepFigure {
    /// Fig. 3: mean write bandwidth per strategy.
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
}

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

const HEAPS_PCT: [f64; 3] = [0.1, 1.0, 10.0];

fn page(policy: Policy, heap: usize) -> Strategy {
    Strategy::Page(PageCleaner { policy, heap })
}

impl SweepConfig {
    /// The defaults: 10 s per run at SF 2 with 64 clients, a 256 MiB device measurement.
    pub fn new(figure: SweepFigure) -> SweepConfig {
        SweepConfig {
            figure,
            seconds: Duration::from_secs(10),
            rate: propagation::DEFAULT_LOW_RATE,
            scale: 2,
            clients: 64,
            probe_bytes: propagation::DEFAULT_PROBE_BYTES,
            dir: None,
        }
    }

    /// The sweep of `figure` whose runs take the knobs of `run` (its seconds, low rate,
    /// scale, clients, device measurement and directory; the plan sets the rest).
    pub fn with_knobs(figure: SweepFigure, run: &PropagationConfig) -> SweepConfig {
        SweepConfig {
            figure,
            seconds: run.seconds,
            rate: run.rate,
            scale: run.scale,
            clients: run.clients,
            probe_bytes: run.probe_bytes,
            dir: run.dir.clone(),
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
        c.validate()
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
                    for pct in HEAPS_PCT {
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
    /// One per run, in plan order.
    pub rows: Vec<SweepRow>,
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

    /// The runs that failed (no result), as `label (strategy)`.
    pub fn failed(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter(|r| r.result.is_none())
            .map(|r| format!("{} {} ({})", r.label, r.throughput, r.strategy))
            .collect()
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
    let total = plan.len();
    let mut notes = vec![
        "every variant ran in this one invocation on a shared machine, one after another: compare them with each other, not with other runs or machines".to_string(),
        format!(
            "TPC-B SF {}, {} clients, elr-pipelined, {} s per run, a checkpoint every second, buffer pool {} pages (the data fits with room to spare)",
            cfg.scale,
            cfg.clients,
            cfg.seconds.as_secs_f64(),
            cfg.pool_pages()
        ),
    ];
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
    let mut rows = Vec::with_capacity(total);
    for (i, p) in plan.iter().enumerate() {
        let rc = cfg.run_config(p, device.map(|d| d.mb_per_s));
        let what = format!("{} {}", p.label, p.throughput);
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
                "{} {} ({}) failed: {e}",
                p.label, p.throughput, p.strategy
            ));
        }
        rows.push(SweepRow {
            figure: cfg.figure,
            label: p.label.clone(),
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
}
