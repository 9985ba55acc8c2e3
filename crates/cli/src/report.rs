//! `sluice report`: every experiment of the three papers at one time budget, written as
//! one static HTML page. The runs, the verdicts and the page live in
//! `sluice_bench::report`; this module parses flags, shows progress and prints the
//! summary.

use crate::progress;
use crate::Failure;
use sluice_bench::output::json_line;
use sluice_bench::report::{self, section_ids, ReportConfig, DEFAULT_MINUTES};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// Flags of `sluice report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where index.html, report.json and each section's files (CSV, JSON, PNG, SVG) go.
    /// Required.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The time budget of the whole report, minutes (0.1 to 600); each section's runs
    /// are sized to its share of it.
    #[arg(long, default_value_t = DEFAULT_MINUTES)]
    minutes: f64,
    /// Only these sections, comma-separated (default: all; `--only help` lists them).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Where the experiments' temporary databases go (default: the current directory;
    /// the sync latency shown is this disk's).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print the report as one JSON object at the end of stdout (and hide the progress).
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<(), Failure> {
    if a.only.iter().any(|o| o == "help") {
        println!("{}", section_ids().join("\n"));
        return Ok(());
    }
    let Some(out) = a.out.clone() else {
        return Err(Failure::Usage(
            "--out DIR is required (where index.html and the figures go)".into(),
        ));
    };
    if !a.minutes.is_finite() || !report::MINUTES.contains(&a.minutes) {
        return Err(Failure::Usage(format!(
            "--minutes {} is not in {}..={}",
            a.minutes,
            report::MINUTES.start(),
            report::MINUTES.end()
        )));
    }
    let mut cfg = ReportConfig::new(out.clone());
    cfg.budget = Duration::from_secs_f64(a.minutes * 60.0);
    cfg.dir = a.dir.clone();
    cfg.only = a.only.clone();
    cfg.validate().map_err(Failure::Usage)?;
    crate::out_dir(&out)?;
    // A bar on a terminal; elsewhere a line as each section starts.
    let pb = progress::bar(1000, "report", a.json || !std::io::stderr().is_terminal());
    let mut last = String::new();
    let quiet = a.json;
    let r = report::run(&cfg, |p| {
        pb.set_position((p.done.min(1.0) * 1000.0) as u64);
        if p.what != last {
            last = p.what.to_string();
            pb.set_message(last.clone());
            if !quiet && !std::io::stderr().is_terminal() {
                eprintln!(
                    "report: {} ({:.0} % of the budget spent)",
                    last,
                    p.done * 100.0
                );
            }
        }
    });
    pb.finish_and_clear();
    let r = r.map_err(Failure::Runtime)?;
    // Each claim: its section and verdict, then what was measured, indented.
    for s in &r.sections {
        if let Some(e) = &s.error {
            println!("{:<18} did not finish: {e}", s.id);
        }
        for f in &s.findings {
            println!("{:<18} {:<15} {}", s.id, f.verdict.word(), f.claim);
            println!("{:<34} {}", "", f.measured);
        }
    }
    let (shown, partly, not) = r.tally();
    println!(
        "\n{shown} shown, {partly} partly, {not} not shown here; ran {:.1} of {:.1} minutes \
         on {} hardware threads",
        r.seconds / 60.0,
        r.budget_seconds / 60.0,
        r.machine.cores
    );
    println!("\nwrote:");
    for f in &r.files {
        println!("  {}", f.display());
    }
    if a.json {
        println!("{}", json_line(&r));
    }
    let failed: Vec<&str> = r
        .sections
        .iter()
        .filter(|s| s.error.is_some())
        .map(|s| s.id)
        .collect();
    if !failed.is_empty() {
        return Err(Failure::Runtime(format!(
            "sections did not finish: {} (the page says why)",
            failed.join(", ")
        )));
    }
    Ok(())
}
