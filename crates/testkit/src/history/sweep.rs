//! Seeds run one after another: each draws its configuration, runs the workload and
//! checks its history.

use super::check::check;
use super::config::{Config, Fixed};
use super::report::{Anomaly, Class};
use super::workload;
use std::time::{Duration, Instant};

/// What one seed found.
#[derive(Debug, Clone)]
pub struct SeedReport {
    /// Its configuration.
    pub config: Config,
    /// Transactions run.
    pub transactions: u64,
    /// Of which committed.
    pub committed: u64,
    /// Reads checked.
    pub reads_checked: u64,
    /// Every anomaly, each with the smallest history that shows it, rendered.
    pub anomalies: Vec<(Anomaly, String)>,
}

/// Runs and checks one seed. Errors of the run other than contention are anomalies of
/// class [`Class::EngineError`].
pub fn run_seed(seed: u64, fixed: Fixed) -> SeedReport {
    let config = Config::draw(seed, fixed);
    let run = workload::run(&config);
    let c = check(&run.history);
    let mut anomalies: Vec<(Anomaly, String)> = c
        .anomalies
        .into_iter()
        .map(|a| {
            let text = a.render(&run.history);
            (a, text)
        })
        .collect();
    for e in run.errors {
        let a = Anomaly::new(Class::EngineError, Vec::new(), e);
        anomalies.push((a.clone(), a.line()));
    }
    SeedReport {
        config,
        transactions: c.transactions,
        committed: c.committed,
        reads_checked: c.reads_checked,
        anomalies,
    }
}

/// When a sweep stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// Stop starting seeds after this long (at least one runs).
    pub time: Option<Duration>,
    /// Stop after this many seeds.
    pub seeds: Option<u64>,
}

/// Totals of a sweep.
#[derive(Debug, Clone, Default)]
pub struct SweepReport {
    /// Seeds run.
    pub seeds: u64,
    /// Transactions run.
    pub transactions: u64,
    /// Of which committed.
    pub committed: u64,
    /// Reads checked.
    pub reads_checked: u64,
    /// The seeds with anomalies.
    pub failing: Vec<SeedReport>,
    /// Anomalies in all.
    pub anomalies: u64,
}

/// Runs seeds from `first_seed` on until `limit`; `progress` gets each seed's report.
pub fn sweep(
    first_seed: u64,
    fixed: Fixed,
    limit: Limit,
    mut progress: impl FnMut(&SeedReport, Duration),
) -> SweepReport {
    let start = Instant::now();
    let mut r = SweepReport::default();
    let mut seed = first_seed;
    loop {
        let s = run_seed(seed, fixed);
        r.seeds += 1;
        r.transactions += s.transactions;
        r.committed += s.committed;
        r.reads_checked += s.reads_checked;
        r.anomalies += s.anomalies.len() as u64;
        progress(&s, start.elapsed());
        if !s.anomalies.is_empty() {
            r.failing.push(s);
        }
        let out_of_time = limit.time.is_some_and(|t| start.elapsed() >= t);
        let out_of_seeds = limit.seeds.is_some_and(|n| r.seeds >= n);
        match seed.checked_add(1) {
            Some(next) if !out_of_time && !out_of_seeds => seed = next,
            _ => return r,
        }
    }
}
