//! `sluice plan`: the Tandem paper's log-partitioning model on a profile file
//! ([`sluice_plan`]).

use crate::Failure;
use sluice_bench::output::{json_line, thousands, Table};
use sluice_plan::{plan, Case, Plan, Profile};
use std::path::PathBuf;

/// Flags of `sluice plan`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The workload profile (JSON: commit_record_bytes, lmax_bytes_per_s, gamma,
    /// transactions, generators; see docs/plan.md).
    #[arg(long, value_name = "FILE")]
    profile: PathBuf,
    /// Print the plan as one JSON object instead of the tables.
    #[arg(long)]
    json: bool,
}

/// Generator names listed per manager in the text output before "… and N more".
const NAMES_SHOWN: usize = 32;

pub fn run(a: Args) -> Result<(), Failure> {
    let path = a.profile.display();
    let text = std::fs::read_to_string(&a.profile)
        .map_err(|e| Failure::Usage(format!("cannot read profile {path}: {e}")))?;
    let profile =
        Profile::from_json(&text).map_err(|e| Failure::Usage(format!("profile {path}: {e}")))?;
    let p = plan(&profile).map_err(|e| Failure::Usage(format!("profile {path}: {e}")))?;
    if a.json {
        println!("{}", json_line(&p));
    } else {
        print!("{}", render(&path.to_string(), &profile, &p));
    }
    Ok(())
}

/// The plan for people.
fn render(path: &str, profile: &Profile, p: &Plan) -> String {
    let mut out = format!("Profile {path}\n");
    if let Some(d) = &profile.description {
        for line in wrap(d, 88) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    let lis: Vec<f64> = p.generators.iter().map(|g| g.log_bytes_per_s).collect();
    let min = lis.iter().copied().fold(f64::INFINITY, f64::min);
    let max = lis.iter().copied().fold(0.0, f64::max);
    let mean = p.generator_log_bytes_per_s / lis.len() as f64;

    out.push_str("\nLog generation (paper §5)\n");
    let mut t = Table::new(["quantity", "value"]);
    t.row(["generators".to_string(), p.generators.len().to_string()]);
    t.row(["L_i min / mean / max (B/s)".to_string(), {
        format!(
            "{} / {} / {}",
            thousands(min),
            thousands(mean),
            thousands(max)
        )
    }]);
    t.row([
        "Σ L_i (B/s)".to_string(),
        thousands(p.generator_log_bytes_per_s),
    ]);
    t.row([
        "R (transactions/s)".to_string(),
        format!("{:.2}", p.transactions_per_s),
    ]);
    t.row([
        "c (bytes per commit record)".to_string(),
        format!("{}", p.commit_record_bytes),
    ]);
    t.row([
        "R·c, commit coordinator (B/s)".to_string(),
        thousands(p.commit_log_bytes_per_s),
    ]);
    t.row([
        "L = Σ L_i + R·c (B/s)".to_string(),
        thousands(p.log_bytes_per_s),
    ]);
    t.row([
        format!("γ·Lmax, γ = {} (B/s)", p.gamma),
        thousands(p.degraded_lmax_bytes_per_s),
    ]);
    t.row(["Lmax (B/s)".to_string(), thousands(p.lmax_bytes_per_s)]);
    t.row(["L / Lmax".to_string(), format!("{:.3}", p.utilization)]);
    out.push_str(&t.render());
    out.push('\n');
    if p.generators.len() <= 16 {
        let mut g = Table::new(["generator", "L_i (B/s)", "manager"]);
        for x in &p.generators {
            g.row([
                x.name.clone(),
                thousands(x.log_bytes_per_s),
                x.manager.to_string(),
            ]);
        }
        out.push('\n');
        out.push_str(&g.render());
        out.push('\n');
    }

    out.push_str(&format!(
        "\nCase {} ({}): {}\n",
        p.case.number(),
        p.case.condition(),
        p.partitioning
    ));
    out.push_str(match p.case {
        Case::NoPartitioning => {
            "  one log manager accepts L even right after a rollover, while the archiver copies the old file\n"
        }
        Case::Horizontal => {
            "  one log manager suffices, but right after a rollover it falls behind: rotate its log files over\n  several devices so the archiver copies a finished file off a device the manager no longer writes\n"
        }
        Case::Vertical => {
            "  one log manager cannot accept L: split the generators among several log managers\n"
        }
    });
    out.push_str(&format!(
        "Log managers: {} (⌈L / Lmax⌉ = {}); the commit coordinator's R·c goes to manager {}\n",
        p.manager_count, p.managers_by_formula, p.commit_coordinator_manager
    ));

    out.push_str("\nAssignment (largest L_i first, each to the least-loaded manager)\n");
    let mut m = Table::new([
        "manager",
        "generators",
        "load (B/s)",
        "load / Lmax",
        "commit coordinator",
        "after a rollover",
    ]);
    for x in &p.managers {
        m.row([
            x.manager.to_string(),
            x.generators.len().to_string(),
            thousands(x.load_bytes_per_s),
            format!("{:.1}%", 100.0 * x.utilization),
            if x.commit_coordinator { "yes" } else { "no" }.to_string(),
            if x.load_bytes_per_s >= p.lmax_bytes_per_s {
                "over Lmax"
            } else if x.needs_horizontal {
                "needs horizontal"
            } else {
                "keeps up"
            }
            .to_string(),
        ]);
    }
    out.push_str(&m.render());
    out.push('\n');
    if p.generators.len() > 16 {
        for x in &p.managers {
            let mut names = x
                .generators
                .iter()
                .take(NAMES_SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if x.generators.len() > NAMES_SHOWN {
                names.push_str(&format!(
                    ", … and {} more",
                    x.generators.len() - NAMES_SHOWN
                ));
            }
            let head = format!("  manager {}: ", x.manager);
            for (i, line) in wrap(&names, 88 - head.len()).iter().enumerate() {
                if i == 0 {
                    out.push_str(&head);
                } else {
                    out.push_str(&" ".repeat(head.len()));
                }
                out.push_str(line);
                out.push('\n');
            }
        }
    }

    if p.warnings.is_empty() {
        out.push_str("\nWarnings: none\n");
    } else {
        out.push_str("\nWarnings:\n");
        for w in &p.warnings {
            out.push_str(&format!("  - {}\n", w.message));
        }
    }
    out
}

/// Splits `text` into lines of at most `width` characters at spaces (a longer word gets
/// a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}
