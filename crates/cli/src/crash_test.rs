//! `sluice crash-test engine` and `sluice crash-test sim`.

use crate::crash_report;
use crate::progress;
use crate::Failure;
use serde::Serialize;
use sluice_bench::experiments::tpcb_crash::crash_test_tpcb;
use sluice_bench::output::thousands;
use sluice_testkit::crash::{crash_test, crash_test_large_values};

/// Flags of `sluice crash-test engine`.
#[derive(clap::Args, Debug)]
pub struct EngineArgs {
    /// Seeds to run (each: a workload, a crash, recoveries, checks).
    #[arg(long, default_value_t = 1000)]
    seeds: u64,
    /// The first seed (a failure prints its seed; rerun it with --first-seed S --seeds 1).
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Print one JSON object at the end of stdout.
    #[arg(long)]
    json: bool,
    /// The workload also writes large values (up to 1 MiB, stored apart from their
    /// leaves).
    #[arg(long)]
    large_values: bool,
}

/// The simulated-disk sweep's workload.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimWorkload {
    /// Random multi-key transactions checked against a model (`crash-test engine`).
    Kv,
    /// TPC-B (2 branches, 1,000 accounts) from four client threads, checked for its
    /// identities, every acknowledged transaction and a commit-order prefix.
    Tpcb,
}

/// Flags of `sluice crash-test sim`.
#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// Seeds to run (each: a workload, a crash, recoveries, checks).
    #[arg(long, default_value_t = 1000)]
    seeds: u64,
    /// The first seed (a failure prints its seed; rerun it with --first-seed S --seeds 1).
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// The workload.
    #[arg(long, value_enum, default_value_t = SimWorkload::Kv)]
    workload: SimWorkload,
    /// Print one JSON object at the end of stdout.
    #[arg(long)]
    json: bool,
}

/// `sluice crash-test sim`: `--workload kv` is `crash-test engine`; `--workload tpcb`
/// is TPC-B under the same halts (`sluice_bench::experiments::tpcb_crash`).
pub fn sim(a: SimArgs) -> Result<(), Failure> {
    engine_with(
        EngineArgs {
            seeds: a.seeds,
            first_seed: a.first_seed,
            json: a.json,
            large_values: false,
        },
        a.workload,
    )
}

#[derive(Serialize)]
struct Report {
    workload: &'static str,
    seeds: u64,
    first_seed: u64,
    acknowledged: u64,
    lost: u64,
    violations: u64,
    crashes_mid_run: u64,
    crashes_in_recovery: u64,
    process_kills: u64,
    failed_syncs: u64,
    refused_opens: u64,
    states_rechecked: u64,
    failures: Vec<String>,
}

pub fn engine(a: EngineArgs) -> Result<(), Failure> {
    engine_with(a, SimWorkload::Kv)
}

fn engine_with(a: EngineArgs, workload: SimWorkload) -> Result<(), Failure> {
    crash_report::seed_range(a.seeds, a.first_seed)?;
    let name = match workload {
        SimWorkload::Kv => "crash-test engine",
        SimWorkload::Tpcb => "crash-test sim tpcb",
    };
    let pb = progress::bar(a.seeds, name, a.json);
    // `progress` gets the seed just finished; the bar counts seeds done.
    let tick = |seed: u64| pb.set_position(seed - a.first_seed + 1);
    let r = match workload {
        SimWorkload::Tpcb => crash_test_tpcb(a.seeds, a.first_seed, tick),
        SimWorkload::Kv if a.large_values => crash_test_large_values(a.seeds, a.first_seed, tick),
        SimWorkload::Kv => crash_test(a.seeds, a.first_seed, tick),
    };
    pb.finish_and_clear();
    crash_report::print_commit_totals(
        r.seeds,
        r.acknowledged,
        r.lost,
        &[
            ("violations", r.violations.to_string()),
            ("crashes mid-run", thousands(r.crashes_mid_run as f64)),
            (
                "crashes in recovery",
                thousands(r.crashes_in_recovery as f64),
            ),
            ("kills", thousands(r.process_kills as f64)),
            ("failed fsyncs", thousands(r.failed_syncs as f64)),
            ("opens refused", thousands(r.refused_opens as f64)),
            (
                "shown states rechecked",
                thousands(r.states_rechecked as f64),
            ),
        ],
    );
    crash_report::show_failures(&r.failures);
    let (lost, violations) = (r.lost, r.violations);
    let report = Report {
        workload: match workload {
            SimWorkload::Kv => "kv",
            SimWorkload::Tpcb => "tpcb",
        },
        seeds: r.seeds,
        first_seed: a.first_seed,
        acknowledged: r.acknowledged,
        lost: r.lost,
        violations: r.violations,
        crashes_mid_run: r.crashes_mid_run,
        crashes_in_recovery: r.crashes_in_recovery,
        process_kills: r.process_kills,
        failed_syncs: r.failed_syncs,
        refused_opens: r.refused_opens,
        states_rechecked: r.states_rechecked,
        failures: r.failures,
    };
    crash_report::verdict(a.json, &report, lost, violations)
}
