//! `sluice report`: every experiment of the three papers run at one time budget, and one
//! static HTML page of what each paper claims, what this machine measured (with its
//! spread), and whether the measurement agrees.
//!
//! The page is the experiments' own output put side by side: each section runs the same
//! library sweep that its `sluice bench …` command runs (smaller, to fit the budget),
//! writes the same files under `OUT/SECTION/`, and embeds the figure's SVG. Each finding
//! compares two measured spreads ([`Verdict::of`]): the paper's effect is *shown* when
//! the spreads are apart in the paper's direction, *partly* when only the medians are, and
//! *not shown here* otherwise; the page says why, with the numbers. Nothing on the page is
//! typed in but the papers' own claims.
//!
//! The budget is shared out by weight as the report goes ([`Budget`]): a section that ran
//! long leaves less to those after it, so the whole stays near `--minutes` on any machine.

mod html;
mod machine;
mod sections;

pub use machine::Machine;

use crate::output::{create_dir, write_file, Spread};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The default budget, minutes.
pub const DEFAULT_MINUTES: f64 = 20.0;
/// The budget's bounds, minutes (a few seconds is enough to try one section).
pub const MINUTES: std::ops::RangeInclusive<f64> = 0.1..=600.0;

/// What to run.
#[derive(Debug, Clone)]
pub struct ReportConfig {
    /// Where the page and every section's files go.
    pub out: PathBuf,
    /// The time budget of the whole report.
    pub budget: Duration,
    /// Where the experiments' temporary databases go (`None`: the current directory).
    pub dir: Option<PathBuf>,
    /// Only these sections (ids; empty: all).
    pub only: Vec<String>,
}

impl ReportConfig {
    /// The defaults: [`DEFAULT_MINUTES`], databases in the current directory.
    pub fn new(out: PathBuf) -> ReportConfig {
        ReportConfig {
            out,
            budget: Duration::from_secs_f64(DEFAULT_MINUTES * 60.0),
            dir: None,
            only: Vec::new(),
        }
    }

    /// Checks the knobs; the message names the offending one.
    pub fn validate(&self) -> Result<(), String> {
        let m = self.budget.as_secs_f64() / 60.0;
        if !MINUTES.contains(&m) {
            return Err(format!(
                "--minutes {m} is not in {}..={}",
                MINUTES.start(),
                MINUTES.end()
            ));
        }
        let ids = section_ids();
        for o in &self.only {
            if !ids.contains(&o.as_str()) {
                return Err(format!(
                    "--only {o}: no such section (one of {})",
                    ids.join(", ")
                ));
            }
        }
        if let Some(d) = &self.dir {
            if !d.is_dir() {
                return Err(format!("--dir {} is not a directory", d.display()));
            }
        }
        Ok(())
    }

    fn sections(&self) -> Vec<&'static sections::Spec> {
        sections::ALL
            .iter()
            .filter(|s| self.only.is_empty() || self.only.iter().any(|o| o == s.id))
            .collect()
    }
}

/// The ids of every section, in the page's order.
pub fn section_ids() -> Vec<&'static str> {
    sections::ALL.iter().map(|s| s.id).collect()
}

/// Whether this machine showed a paper's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The spreads are apart, in the paper's direction.
    Shown,
    /// The medians are in the paper's direction, the spreads overlap.
    Partly,
    /// The medians are not in the paper's direction (or nothing was measured).
    NotShown,
}

impl Verdict {
    /// Whether `high` is above `low` as the paper says: [`Verdict::Shown`] when the
    /// spreads are apart, [`Verdict::Partly`] when only the medians are ordered.
    pub fn of(high: &Spread, low: &Spread) -> Verdict {
        if high.min > low.max {
            Verdict::Shown
        } else if high.median > low.median {
            Verdict::Partly
        } else {
            Verdict::NotShown
        }
    }

    /// The word the page shows.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Shown => "shown",
            Verdict::Partly => "partly",
            Verdict::NotShown => "not shown here",
        }
    }
}

/// One claim of a paper and what this machine measured of it.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The claim, in the paper's terms.
    pub claim: &'static str,
    /// What the paper measured (its numbers, its machine).
    pub paper: &'static str,
    /// What this machine measured: the compared spreads, median (min–max).
    pub measured: String,
    /// Agrees, partly, or not shown.
    pub verdict: Verdict,
    /// Why, in the numbers' terms (and the machine's, where it cannot show the effect).
    pub why: String,
}

/// One section of the page: one paper figure or table.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    /// Short id (`aether-fig5`), also its folder under the output.
    pub id: &'static str,
    /// The figure's name in the paper ("Fig. 3"), or the table's.
    pub short: &'static str,
    /// The paper.
    pub paper: &'static str,
    /// The figure or table, as the paper names it, and what it shows.
    pub title: &'static str,
    /// The command that runs this experiment at full size.
    pub command: &'static str,
    /// What was run here (the knobs the budget chose).
    pub setup: String,
    /// The claims and their verdicts.
    pub findings: Vec<Finding>,
    /// The figures drawn (SVG), relative to the output directory.
    pub figures: Vec<PathBuf>,
    /// A text table of the measured points.
    pub table: Option<String>,
    /// What a reader should know (the experiment's own notes).
    pub notes: Vec<String>,
    /// Seconds the section was given.
    pub budget_seconds: f64,
    /// Seconds it took.
    pub seconds: f64,
    /// Why it did not finish, when it did not.
    pub error: Option<String>,
}

/// What the report measured and wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The machine.
    pub machine: Machine,
    /// The budget, seconds.
    pub budget_seconds: f64,
    /// The whole report's time, seconds.
    pub seconds: f64,
    /// The sections, in the page's order.
    pub sections: Vec<Section>,
    /// `index.html` and `report.json`.
    pub files: Vec<PathBuf>,
}

impl Report {
    /// The count of findings with each verdict: shown, partly, not shown.
    pub fn tally(&self) -> (usize, usize, usize) {
        let all = self.sections.iter().flat_map(|s| &s.findings);
        let n = |v: Verdict| all.clone().filter(|f| f.verdict == v).count();
        (n(Verdict::Shown), n(Verdict::Partly), n(Verdict::NotShown))
    }
}

/// The budget shared out as the report goes: each section gets the time left times its
/// weight's share of the weights left, so one that overran takes from the later ones.
#[derive(Debug)]
pub struct Budget {
    start: Instant,
    total: Duration,
    weights_left: f64,
}

impl Budget {
    /// A budget of `total` over sections of these weights.
    pub fn new(total: Duration, weights: impl IntoIterator<Item = f64>) -> Budget {
        Budget {
            start: Instant::now(),
            total,
            weights_left: weights.into_iter().sum(),
        }
    }

    /// The next section's share, seconds, for a section of `weight` (which leaves the
    /// weights left); at least a tenth of its even share of the whole, so a late section
    /// still measures something after an overrun.
    pub fn next(&mut self, weight: f64) -> f64 {
        let left = self
            .total
            .saturating_sub(self.start.elapsed())
            .as_secs_f64();
        let share = if self.weights_left > 0.0 {
            left * weight / self.weights_left
        } else {
            0.0
        };
        self.weights_left = (self.weights_left - weight).max(0.0);
        share.max(0.1 * self.total.as_secs_f64() * weight / TOTAL_WEIGHT)
    }
}

const TOTAL_WEIGHT: f64 = 100.0;

/// Where the report is, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Fraction of the budget spent (0..1; it can pass 1 on an overrun).
    pub done: f64,
    /// The section under way.
    pub what: &'a str,
}

/// What each section gets to run with.
pub(crate) struct Ctx<'a> {
    /// Its folder (the sweeps' `--out`).
    pub out: PathBuf,
    /// Where the databases go.
    pub dir: Option<PathBuf>,
    /// Its share of the budget, seconds.
    pub seconds: f64,
    /// Reports a fraction (0..1) of the section done.
    pub tick: &'a mut dyn FnMut(f64),
}

/// Runs every section in turn at the budget, then writes `index.html` (the page) and
/// `report.json` (every section, finding and setup) under `cfg.out`.
pub fn run(cfg: &ReportConfig, mut progress: impl FnMut(Progress<'_>)) -> Result<Report, String> {
    cfg.validate()?;
    create_dir(&cfg.out)?;
    let started = Instant::now();
    let specs = cfg.sections();
    let mut budget = Budget::new(cfg.budget, specs.iter().map(|s| s.weight));
    let total = cfg.budget.as_secs_f64();
    let machine = Machine::describe(cfg.dir.as_deref());
    let mut sections = Vec::new();
    for spec in specs {
        let seconds = budget.next(spec.weight);
        let t0 = Instant::now();
        let what = format!("{} ({:.0} s)", spec.id, seconds);
        let mut tick = |f: f64| {
            let spent = started.elapsed().as_secs_f64() - t0.elapsed().as_secs_f64()
                + f.clamp(0.0, 1.0) * seconds;
            progress(Progress {
                done: spent / total,
                what: &what,
            })
        };
        tick(0.0);
        let mut ctx = Ctx {
            out: cfg.out.join(spec.id),
            dir: cfg.dir.clone(),
            seconds,
            tick: &mut tick,
        };
        let section = sections::run(spec, &mut ctx, t0);
        sections.push(section);
    }
    let mut report = Report {
        machine,
        budget_seconds: total,
        seconds: started.elapsed().as_secs_f64(),
        sections,
        files: Vec::new(),
    };
    let page = cfg.out.join("index.html");
    write_file(&page, &html::page(&report, &cfg.out))?;
    let json = cfg.out.join("report.json");
    write_file(
        &json,
        &serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?,
    )?;
    report.files = vec![page, json];
    Ok(report)
}

/// `path` relative to `base` (for the page's links), or as it is.
fn relative(path: &Path, base: &Path) -> PathBuf {
    path.strip_prefix(base).unwrap_or(path).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(median: f64, min: f64, max: f64) -> Spread {
        Spread {
            median,
            min,
            max,
            n: 3,
        }
    }

    #[test]
    fn a_verdict_needs_apart_spreads_to_be_shown() {
        assert_eq!(
            Verdict::of(&s(10.0, 9.0, 11.0), &s(5.0, 4.0, 6.0)),
            Verdict::Shown
        );
        assert_eq!(
            Verdict::of(&s(10.0, 5.0, 11.0), &s(6.0, 4.0, 7.0)),
            Verdict::Partly
        );
        assert_eq!(
            Verdict::of(&s(5.0, 4.0, 6.0), &s(10.0, 9.0, 11.0)),
            Verdict::NotShown
        );
        // Equal medians are not the paper's direction.
        assert_eq!(
            Verdict::of(&s(5.0, 4.0, 6.0), &s(5.0, 4.0, 6.0)),
            Verdict::NotShown
        );
    }

    #[test]
    fn the_budget_is_shared_by_weight_and_an_overrun_takes_from_later_sections() {
        let mut b = Budget::new(Duration::from_secs(100), [25.0, 25.0, 50.0]);
        let first = b.next(25.0);
        assert!((first - 25.0).abs() < 0.5, "{first}");
        // The first section overran: 60 s of the 100 are gone.
        b.start -= Duration::from_secs(60);
        let second = b.next(25.0);
        assert!((second - 40.0 / 3.0).abs() < 0.5, "{second}");
        let third = b.next(50.0);
        assert!(third < 40.0 && third > 39.0, "{third}");
        // Past the end, a section still gets its floor.
        b.start -= Duration::from_secs(1_000);
        let mut c = Budget::new(Duration::from_secs(100), [50.0]);
        c.start -= Duration::from_secs(1_000);
        assert!((c.next(50.0) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn the_config_names_a_bad_knob() {
        let mut c = ReportConfig::new(PathBuf::from("x"));
        c.budget = Duration::from_secs(5);
        assert!(c.validate().unwrap_err().contains("--minutes"));
        c.budget = Duration::from_secs(60);
        c.only = vec!["fig99".into()];
        let e = c.validate().unwrap_err();
        assert!(e.contains("fig99") && e.contains("aether-fig5"), "{e}");
    }
}
