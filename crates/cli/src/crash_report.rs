//! What the crash-test sweeps (`engine`, `sim`, `swarm`, `history`) share: the seed range
//! they accept, the one-row table of totals they end with, the failures they show and
//! their verdict on lost commits and violating seeds.

use crate::Failure;
use serde::Serialize;
use sluice_bench::knobs::in_range;
use sluice_bench::output::{json_line, thousands, Table};

/// The failures shown (a sweep gone wrong fails many seeds the same way).
const SHOWN: usize = 20;

/// `--seeds` and `--first-seed`: at least one seed, and the last one a `u64`.
pub fn seed_range(seeds: u64, first_seed: u64) -> Result<(), Failure> {
    in_range("--seeds", seeds, 1..=10_000_000).map_err(Failure::Usage)?;
    if first_seed.checked_add(seeds).is_none() {
        return Err(Failure::Usage("--first-seed + --seeds overflows".into()));
    }
    Ok(())
}

/// Prints a one-row table: each column's name over its total.
pub fn print_totals(columns: &[(&str, String)]) {
    let mut t = Table::new(columns.iter().map(|(name, _)| *name));
    t.row(columns.iter().map(|(_, total)| total.clone()));
    println!("{}", t.render());
}

/// Prints the totals of a sweep that checks acknowledged commits: the seeds, the commits
/// acknowledged and lost, then `more`.
pub fn print_commit_totals(seeds: u64, acknowledged: u64, lost: u64, more: &[(&str, String)]) {
    let mut columns = vec![
        ("seeds", thousands(seeds as f64)),
        ("acknowledged", thousands(acknowledged as f64)),
        ("lost", lost.to_string()),
    ];
    columns.extend_from_slice(more);
    print_totals(&columns);
}

/// Prints the first failures, one line each.
pub fn show_failures(failures: &[String]) {
    for f in failures.iter().take(SHOWN) {
        println!("FAILURE {f}");
    }
}

/// The failures [`show_failures`] left out.
pub fn unshown(failures: &[String]) -> usize {
    failures.len().saturating_sub(SHOWN)
}

/// Prints `report` as one JSON line with `--json`; fails when a commit was lost or a
/// seed violated a check.
pub fn verdict(
    json: bool,
    report: &impl Serialize,
    lost: u64,
    violations: u64,
) -> Result<(), Failure> {
    if json {
        println!("{}", json_line(report));
    }
    if lost + violations > 0 {
        return Err(Failure::Runtime(format!(
            "{lost} lost commits and {violations} violating seeds"
        )));
    }
    Ok(())
}
