//! `sluice plan`: the Tandem paper's log-partitioning model on a profile file
//! ([`sluice_plan`]).

use crate::Failure;
use sluice_bench::experiments::partition::gamma::{self, GammaConfig};
use sluice_bench::experiments::partition::vertical::VerticalConfig;
use sluice_bench::output::{json_line, thousands, Table};
use sluice_plan::{plan, Case, Plan, Profile};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Flags of `sluice plan`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The workload profile (JSON: commit_record_bytes, lmax_bytes_per_s, gamma,
    /// transactions, generators; see docs/plan.md).
    #[arg(long, value_name = "FILE")]
    profile: PathBuf,
    /// Measure Lmax (at two transaction sizes, so that it follows the profile's log
    /// bytes per transaction), γ and c on the device of DIR (about half a minute, in a
    /// temporary directory inside DIR) and plan with those instead of the profile's
    /// (which may then leave them out).
    #[arg(long, value_name = "DIR")]
    measure: Option<PathBuf>,
    /// Print the plan as one JSON object instead of the tables.
    #[arg(long)]
    json: bool,
}

/// What `--measure` found on the user's device.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Measured {
    /// The directory measured.
    pub dir: PathBuf,
    /// Lmax(b) through the plateaus: B, bytes/s.
    pub lmax_bytes_per_s: f64,
    /// Lmax(b): t₀, seconds.
    pub lmax_txn_overhead_s: f64,
    /// γ with the log and the archive on that device.
    pub gamma: f64,
    /// c: bytes of a commit record in the log, frame included.
    pub commit_record_bytes: f64,
    /// The plateaus the curve went through: (log bytes per transaction, Lmax bytes/s).
    pub plateaus: Vec<(f64, f64)>,
}

/// Transaction sizes (rows of 100 bytes) `--measure` finds Lmax at: a small and a large
/// one, as the paper's T1 and T3, so the curve's two parameters are both pinned.
const MEASURE_SIZES: [usize; 2] = [10, 200];
/// Most generators `--measure` tries (doubling from 1): 5 steps a size.
const MEASURE_MAX_GENERATORS: usize = 16;
/// Seconds per step of the Lmax search, and of the γ run.
const MEASURE_STEP_S: f64 = 1.0;
const MEASURE_GAMMA_S: f64 = 3.0;

/// Measures Lmax(b), γ and c on the device of `dir` (bounded: at most
/// 2 sizes × 5 steps × 1.5 s and 3 s of γ after its warm-up).
fn measure(dir: &Path, quiet: bool) -> Result<Measured, Failure> {
    if !dir.is_dir() {
        return Err(Failure::Usage(format!(
            "--measure {}: not a directory",
            dir.display()
        )));
    }
    let base = VerticalConfig {
        warmup: Duration::from_millis(500),
        duration: Duration::from_secs_f64(MEASURE_STEP_S),
        device_bytes_per_sec: None,
        dir: Some(dir.to_path_buf()),
        ..VerticalConfig::default()
    };
    let m = crate::bench_partition::measure(
        &base,
        &MEASURE_SIZES,
        MEASURE_MAX_GENERATORS,
        0.05,
        quiet,
    )?;
    let curve = m
        .curve
        .ok_or_else(|| Failure::Runtime(format!("no log rate measured on {}", dir.display())))?;
    let c = m
        .runs
        .iter()
        .map(|(_, r)| r.commit_record_bytes)
        .fold(0.0, f64::max);
    let pb = crate::progress::bar(1000, "measuring γ (rollover with the archiver)", quiet);
    let g = gamma::run(
        &GammaConfig {
            horizontal_dirs: 1,
            duration: Duration::from_secs_f64(MEASURE_GAMMA_S),
            dir: Some(dir.to_path_buf()),
            ..GammaConfig::default()
        },
        |f| pb.set_position((f * 1000.0) as u64),
    )
    .map_err(|e| Failure::Runtime(format!("measuring γ on {}: {e}", dir.display())))?;
    pb.finish_and_clear();
    // γ must lie strictly inside (0, 1) for the model; a device on which the archiver
    // costs nothing measurable (or noise above 1) is planned as just below 1.
    let gamma = g.gamma.clamp(0.01, 0.99);
    Ok(Measured {
        dir: dir.to_path_buf(),
        lmax_bytes_per_s: curve.ceiling_bytes_per_s,
        lmax_txn_overhead_s: curve.txn_overhead_s,
        gamma,
        commit_record_bytes: c,
        plateaus: m
            .runs
            .iter()
            .map(|(_, r)| (r.log_bytes_per_txn, r.lmax_mb_per_s * 1e6))
            .collect(),
    })
}

/// The profile's text with the measured fields put in (replacing what it had).
fn with_measured(text: &str, m: &Measured) -> Result<String, String> {
    let mut v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("malformed profile: {e}"))?;
    let o = v
        .as_object_mut()
        .ok_or("malformed profile: not a JSON object")?;
    o.insert("lmax_bytes_per_s".into(), m.lmax_bytes_per_s.into());
    o.insert("lmax_txn_overhead_s".into(), m.lmax_txn_overhead_s.into());
    o.insert("gamma".into(), m.gamma.into());
    o.insert("commit_record_bytes".into(), m.commit_record_bytes.into());
    Ok(v.to_string())
}

/// Generator names listed per manager in the text output before "… and N more".
const NAMES_SHOWN: usize = 32;

pub fn run(a: Args) -> Result<(), Failure> {
    let path = a.profile.display();
    let text = std::fs::read_to_string(&a.profile)
        .map_err(|e| Failure::Usage(format!("cannot read profile {path}: {e}")))?;
    let measured = match &a.measure {
        None => None,
        Some(dir) => {
            // A profile that cannot be read is refused before the half minute of
            // measuring: it is checked with placeholders in the measured fields.
            let placeholder = Measured {
                dir: dir.clone(),
                lmax_bytes_per_s: 1.0,
                lmax_txn_overhead_s: 0.0,
                gamma: 0.5,
                commit_record_bytes: 0.0,
                plateaus: Vec::new(),
            };
            let t = with_measured(&text, &placeholder)
                .map_err(|e| Failure::Usage(format!("profile {path}: {e}")))?;
            Profile::from_json(&t).map_err(|e| Failure::Usage(format!("profile {path}: {e}")))?;
            Some(measure(dir, a.json)?)
        }
    };
    let text = match &measured {
        Some(m) => {
            with_measured(&text, m).map_err(|e| Failure::Usage(format!("profile {path}: {e}")))?
        }
        None => text,
    };
    let profile =
        Profile::from_json(&text).map_err(|e| Failure::Usage(format!("profile {path}: {e}")))?;
    let p = plan(&profile).map_err(|e| Failure::Usage(format!("profile {path}: {e}")))?;
    if a.json {
        match &measured {
            Some(m) => println!(
                "{}",
                json_line(&serde_json::json!({"measured": m, "plan": p}))
            ),
            None => println!("{}", json_line(&p)),
        }
    } else {
        if let Some(m) = &measured {
            print!("{}", render_measured(m));
        }
        print!("{}", render(&path.to_string(), &profile, &p));
    }
    Ok(())
}

/// What `--measure` found, for people.
fn render_measured(m: &Measured) -> String {
    let mut out = format!(
        "Measured on the device of {} (replacing the profile's Lmax, γ and c)\n",
        m.dir.display()
    );
    let mut t = Table::new(["quantity", "value"]);
    for (b, l) in &m.plateaus {
        t.row([
            format!("Lmax at {} B/txn (B/s)", thousands(*b)),
            thousands(*l),
        ]);
    }
    t.row([
        "Lmax(b) = b / (t0 + b/B): B (B/s)".to_string(),
        thousands(m.lmax_bytes_per_s),
    ]);
    t.row([
        "t0 (ms per transaction)".to_string(),
        format!("{:.3}", m.lmax_txn_overhead_s * 1e3),
    ]);
    t.row([
        "γ (log and archive on this device)".to_string(),
        format!("{:.2}", m.gamma),
    ]);
    t.row([
        "c (bytes per commit record, frame included)".to_string(),
        format!("{:.0}", m.commit_record_bytes),
    ]);
    out.push_str(&t.render());
    out.push_str("\n\n");
    out
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
    t.row([
        "L / R (log bytes per transaction)".to_string(),
        thousands(p.log_bytes_per_txn),
    ]);
    if p.lmax_curve.txn_overhead_s > 0.0 {
        t.row([
            format!(
                "Lmax at L / R: b / (t0 + b/B), B = {}, t0 = {:.3} ms (B/s)",
                thousands(p.lmax_curve.ceiling_bytes_per_s),
                p.lmax_curve.txn_overhead_s * 1e3
            ),
            thousands(p.lmax_bytes_per_s),
        ]);
    } else {
        t.row(["Lmax (B/s)".to_string(), thousands(p.lmax_bytes_per_s)]);
    }
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
