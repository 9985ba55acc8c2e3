//! `sluice crash-test history`: the serializability checker (`sluice_testkit::history`):
//! seeds of random concurrent transactions, each on a configuration drawn from its seed,
//! their histories checked for dependency cycles and against the commit-order model.

use crate::crash_report;
use crate::progress;
use crate::Failure;
use serde::Serialize;
use sluice::{CommitProtocol, Strategy};
use sluice_bench::knobs::in_range;
use sluice_bench::output::{json_line, thousands};
use sluice_testkit::history::{sweep, Fixed, Limit, SeedReport};
use std::ops::Bound::{Excluded, Included};
use std::time::Duration;

/// Flags of `sluice crash-test history`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run seeds for this long, in seconds (a seed started runs to its end).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Stop after this many seeds, even with time left (a failure's replay runs one).
    #[arg(long)]
    seeds: Option<u64>,
    /// The first seed; each seed draws its configuration (protocol, agents or direct
    /// transactions, propagation strategy, page size, pool, checkpoint interval,
    /// clients, keys) and its transactions.
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Run every seed under this commit protocol instead of the one it draws.
    #[arg(long)]
    protocol: Option<CommitProtocol>,
    /// Run every seed with this propagation strategy instead of the one it draws
    /// (`checkpoint-sweep`, `log`, `page-oldest`, ... as `bench propagation` names them).
    #[arg(long, value_parser = parse_strategy)]
    strategy: Option<Strategy>,
    /// Print one JSON object at the end of stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct FailureJson {
    seed: u64,
    found_after_s: f64,
    config: String,
    anomalies: usize,
    classes: Vec<&'static str>,
    first: String,
    replay: String,
}

#[derive(Serialize)]
struct Report {
    seeds: u64,
    first_seed: u64,
    protocol: Option<&'static str>,
    strategy: Option<String>,
    transactions: u64,
    committed: u64,
    reads_checked: u64,
    anomalies: u64,
    failures: Vec<FailureJson>,
}

fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse().map_err(|e: sluice::Error| e.to_string())
}

/// The command that runs `seed` again (the same configuration and choices; the threads'
/// interleaving is the scheduler's).
fn replay(seed: u64, a: &Args) -> String {
    let p = a
        .protocol
        .map_or(String::new(), |p| format!(" --protocol {p}"));
    let s = a
        .strategy
        .map_or(String::new(), |s| format!(" --strategy {s}"));
    format!("sluice crash-test history --first-seed {seed} --seeds 1{p}{s}")
}

/// Failing seeds whose first anomaly is printed with its smallest history; the rest are
/// one line each.
const SHOWN: usize = 10;

pub fn run(a: Args) -> Result<(), Failure> {
    // Up to a week.
    in_range(
        "--seconds",
        a.seconds,
        (Excluded(0.0), Included(7.0 * 86_400.0)),
    )
    .map_err(Failure::Usage)?;
    if let Some(n) = a.seeds {
        in_range("--seeds", n, 1..).map_err(Failure::Usage)?;
    }
    if a.first_seed.checked_add(a.seeds.unwrap_or(1)).is_none() {
        return Err(Failure::Usage("--first-seed + --seeds overflows".into()));
    }
    let fixed = Fixed {
        protocol: a.protocol,
        strategy: a.strategy,
        ..Fixed::default()
    };
    let limit = Limit {
        time: Some(Duration::from_secs_f64(a.seconds)),
        seeds: a.seeds,
    };
    // The bar counts seeds when their number is given, tenths of a second otherwise.
    let (len, by_seed) = match a.seeds {
        Some(n) => (n, true),
        None => ((a.seconds * 10.0).ceil() as u64, false),
    };
    let pb = progress::bar(len, "crash-test history", a.json);
    let mut done = 0;
    // When each failing seed ended: how long the sweep took to find it.
    let mut found_after = std::collections::HashMap::new();
    let r = sweep(a.first_seed, fixed, limit, |s: &SeedReport, elapsed| {
        done += 1;
        let pos = if by_seed {
            done
        } else {
            (elapsed.as_secs_f64() * 10.0) as u64
        };
        pb.set_position(pos.min(len));
        if !s.anomalies.is_empty() {
            found_after.insert(s.config.seed, elapsed.as_secs_f64());
            pb.println(format!(
                "seed {}: {} anomalies",
                s.config.seed,
                s.anomalies.len()
            ));
        }
    });
    pb.finish_and_clear();
    crash_report::print_totals(&[
        ("seeds", thousands(r.seeds as f64)),
        ("transactions", thousands(r.transactions as f64)),
        ("committed", thousands(r.committed as f64)),
        ("reads checked", thousands(r.reads_checked as f64)),
        ("anomalies", r.anomalies.to_string()),
        ("failing seeds", r.failing.len().to_string()),
    ]);
    let mut failures = Vec::new();
    let mut shown = 0;
    for s in &r.failing {
        let seed = s.config.seed;
        let mut classes: Vec<&'static str> =
            s.anomalies.iter().map(|(a, _)| a.class.name()).collect();
        classes.sort_unstable();
        classes.dedup();
        let first = s
            .anomalies
            .first()
            .map(|(a, _)| a.line())
            .unwrap_or_default();
        let cmd = replay(seed, &a);
        let after = found_after.get(&seed).copied().unwrap_or(0.0);
        println!(
            "FAILURE {} (after {after:.1} s): {} anomalies ({}), first {first}; replay: {cmd}",
            s.config,
            s.anomalies.len(),
            classes.join(", ")
        );
        if let Some((_, text)) = s.anomalies.first().filter(|_| shown < SHOWN) {
            println!("{text}");
            shown += 1;
        }
        failures.push(FailureJson {
            seed,
            found_after_s: after,
            config: s.config.to_string(),
            anomalies: s.anomalies.len(),
            classes,
            first,
            replay: cmd,
        });
    }
    if a.json {
        println!(
            "{}",
            json_line(&Report {
                seeds: r.seeds,
                first_seed: a.first_seed,
                protocol: a.protocol.map(CommitProtocol::name),
                strategy: a.strategy.map(|s| s.to_string()),
                transactions: r.transactions,
                committed: r.committed,
                reads_checked: r.reads_checked,
                anomalies: r.anomalies,
                failures,
            })
        );
    }
    if r.anomalies > 0 {
        let first = r.failing.first().map_or(0, |s| s.config.seed);
        return Err(Failure::Runtime(format!(
            "{} anomalies in {} of {} seeds (first: {})",
            r.anomalies,
            r.failing.len(),
            r.seeds,
            replay(first, &a)
        )));
    }
    Ok(())
}
