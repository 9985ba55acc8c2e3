//! `sluice crash-test swarm`: the swarm sweep (`sluice_testkit::swarm`), every seed
//! drawing its own configuration over every option that changes a code path.

use crate::crash_report;
use crate::progress;
use crate::Failure;
use serde::Serialize;
use sluice_bench::knobs::in_range;
use sluice_bench::output::thousands;
use sluice_testkit::swarm::swarm;
use std::collections::BTreeMap;

/// The most jobs: far more threads than a machine has cores only slows the seeds down.
const MAX_JOBS: usize = 1024;

/// Flags of `sluice crash-test swarm`.
#[derive(clap::Args, Debug)]
pub struct SwarmArgs {
    /// Seeds to run (each: a configuration drawn from the seed, two or three sessions of
    /// work, halts, recoveries, read-only opens, checks).
    #[arg(long, default_value_t = 1000)]
    seeds: u64,
    /// The first seed (a failure prints its replay command: --first-seed S --seeds 1).
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Run seeds on this many threads (each seed's result is a function of the seed
    /// alone, as far as the engine's own threads allow).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Print one JSON object at the end of stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    seeds: u64,
    first_seed: u64,
    acknowledged: u64,
    lost: u64,
    lost_async: u64,
    violations: u64,
    halts_mid_run: u64,
    halts_in_recovery: u64,
    read_only_opens: u64,
    read_only_spilled: u64,
    refused_opens: u64,
    clean_closes: u64,
    states_rechecked: u64,
    audits: u64,
    tables_created: u64,
    tables_dropped: u64,
    tables_renamed: u64,
    compactions: u64,
    pages_returned: u64,
    archives_checked: u64,
    archived_segments: u64,
    archive_copies_compared: u64,
    archived_records_read: u64,
    archived_records_compared: u64,
    backups: u64,
    restores: u64,
    coverage: BTreeMap<String, u64>,
    failures: Vec<String>,
}

/// `sluice crash-test swarm`.
pub fn run(a: SwarmArgs) -> Result<(), Failure> {
    crash_report::seed_range(a.seeds, a.first_seed)?;
    in_range("--jobs", a.jobs, 1..=MAX_JOBS).map_err(Failure::Usage)?;
    let pb = progress::bar(a.seeds, "crash-test swarm", a.json);
    let r = swarm(a.seeds, a.first_seed, a.jobs, |done| pb.set_position(done));
    pb.finish_and_clear();
    crash_report::print_commit_totals(
        r.seeds,
        r.acknowledged,
        r.lost,
        &[
            ("lost (async)", thousands(r.lost_async as f64)),
            ("violations", r.violations.to_string()),
            ("halts mid-run", thousands(r.halts_mid_run as f64)),
            ("in recovery", thousands(r.halts_in_recovery as f64)),
            ("read-only opens", thousands(r.read_only_opens as f64)),
            ("clean closes", thousands(r.clean_closes as f64)),
            (
                "shown states rechecked",
                thousands(r.states_rechecked as f64),
            ),
            ("audits", thousands(r.audits as f64)),
            ("tables created", thousands(r.tables_created as f64)),
            ("dropped", thousands(r.tables_dropped as f64)),
            ("renamed", thousands(r.tables_renamed as f64)),
            ("compactions", thousands(r.compactions as f64)),
            ("pages returned", thousands(r.pages_returned as f64)),
            ("backups taken", thousands(r.backups as f64)),
            ("restores checked", thousands(r.restores as f64)),
            ("log archives checked", thousands(r.archives_checked as f64)),
            ("archived segments", thousands(r.archived_segments as f64)),
            (
                "copies compared at halts",
                thousands(r.archive_copies_compared as f64),
            ),
            (
                "archived records read",
                thousands(r.archived_records_read as f64),
            ),
            (
                "archived records compared",
                thousands(r.archived_records_compared as f64),
            ),
        ],
    );
    // The dimensions the seeds covered, one line per dimension.
    let mut by_dimension: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (c, n) in &r.coverage {
        if let Some((dim, value)) = c.split_once('=') {
            if dim != "switch" {
                by_dimension
                    .entry(dim)
                    .or_default()
                    .push(format!("{value} {n}"));
            }
        }
    }
    for (dim, values) in &by_dimension {
        println!("{dim}: {}", values.join(", "));
    }
    crash_report::show_failures(&r.failures);
    if crash_report::unshown(&r.failures) > 0 {
        println!(
            "... and {} more failures",
            crash_report::unshown(&r.failures)
        );
    }
    let (lost, violations) = (r.lost, r.violations);
    let report = Report {
        seeds: r.seeds,
        first_seed: a.first_seed,
        acknowledged: r.acknowledged,
        lost: r.lost,
        lost_async: r.lost_async,
        violations: r.violations,
        halts_mid_run: r.halts_mid_run,
        halts_in_recovery: r.halts_in_recovery,
        read_only_opens: r.read_only_opens,
        read_only_spilled: r.read_only_spilled,
        refused_opens: r.refused_opens,
        clean_closes: r.clean_closes,
        states_rechecked: r.states_rechecked,
        audits: r.audits,
        tables_created: r.tables_created,
        tables_dropped: r.tables_dropped,
        tables_renamed: r.tables_renamed,
        compactions: r.compactions,
        pages_returned: r.pages_returned,
        archives_checked: r.archives_checked,
        archived_segments: r.archived_segments,
        archive_copies_compared: r.archive_copies_compared,
        archived_records_read: r.archived_records_read,
        archived_records_compared: r.archived_records_compared,
        backups: r.backups,
        restores: r.restores,
        coverage: r.coverage,
        failures: r.failures,
    };
    crash_report::verdict(a.json, &report, lost, violations)
}
