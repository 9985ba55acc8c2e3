//! `sluice compare tpcb|tatp`: sluice beside SQLite, RocksDB and PostgreSQL in one run.

use crate::progress;
use crate::Failure;
use indicatif::ProgressBar;
use sluice_bench::compare::{
    cleanup, compare, CompareConfig, CompareProgress, CompareRow, CompareWorkload, Engine,
};
use sluice_bench::knobs::seconds;
use sluice_bench::output::{json_line, Bar, BarChart, Table};
use std::path::{Path, PathBuf};

/// Flags of `sluice compare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The workload: `tpcb` and `tatp` against the embedded and client-server peers;
    /// `replicated`, a three-node sluice cluster against a three-member etcd cluster.
    #[arg(value_enum)]
    workload: Workload,
    /// Clients for every engine (peers: one thread and connection each).
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Measured seconds per engine, split evenly over the rounds.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Unmeasured warm-up seconds before each engine's turn in each round.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Rounds; each runs every engine once, in the opposite order of the round before.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Engines, comma-separated.
    #[arg(
        long,
        default_value = "sluice,sqlite,rocksdb,postgres",
        value_delimiter = ',',
        value_enum
    )]
    engines: Vec<Engine>,
    /// TPC-B scale factor (branches; 100,000 accounts each).
    #[arg(long, default_value_t = 10)]
    scale: u32,
    /// TATP subscribers.
    #[arg(long, default_value_t = 100_000)]
    subscribers: u32,
    /// Where the engines' data go (a temporary directory inside; default: the current
    /// directory, which should be on the disk to measure).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Write the table, JSON, CSV and a bar chart (PNG, SVG) to this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print one JSON object per row at the end of stdout.
    #[arg(long)]
    json: bool,
}

struct Bars {
    quiet: bool,
    bar: Option<ProgressBar>,
}

impl CompareProgress for Bars {
    fn begin(&mut self, label: &str) {
        self.bar = Some(progress::bar(1000, label, self.quiet));
    }
    fn tick(&mut self, fraction: f64) {
        if let Some(b) = &self.bar {
            b.set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
        }
    }
    fn end(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

fn heading(cfg: &CompareConfig) -> String {
    let size = match cfg.workload {
        CompareWorkload::Tpcb => format!("SF {}", cfg.scale),
        CompareWorkload::Tatp => format!("{} subscribers", cfg.subscribers),
    };
    format!(
        "sluice compare {} ({size}, {} clients, {} round(s) of {:.1} s per engine in alternating order, {} cores)",
        cfg.workload,
        cfg.clients,
        cfg.rounds,
        cfg.seconds.as_secs_f64() / cfg.rounds as f64,
        sluice_bench::metrics::cores()
    )
}

fn table(rows: &[CompareRow]) -> String {
    let mut t = Table::new(CompareRow::COLUMNS);
    for r in rows {
        t.row(r.cells());
    }
    t.render()
}

fn notes(rows: &[CompareRow]) -> Vec<String> {
    let mut out = Vec::new();
    for r in rows {
        let what = match &r.unavailable {
            Some(why) if r.failed => format!("FAILED: {why}"),
            Some(why) => format!("unavailable: {why}"),
            None => format!("durability: {}", r.durability),
        };
        let name = if r.variant.is_empty() {
            r.engine.to_string()
        } else {
            format!("{} ({})", r.engine, r.variant)
        };
        out.push(format!("{name}: {what}"));
    }
    for r in rows {
        for v in &r.violations {
            out.push(format!("INCONSISTENT ({} {}): {v}", r.engine, r.variant));
        }
    }
    out.push("Compare ratios from one run; the machine is shared and throughput is noisy.".into());
    out
}

fn write_out(
    dir: &Path,
    cfg: &CompareConfig,
    rows: &[CompareRow],
    text: &str,
) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::Runtime(format!("{}: {e}", dir.display())))?;
    let stem = format!("compare-{}", cfg.workload);
    let write = |ext: &str, body: String| {
        let p = dir.join(format!("{stem}.{ext}"));
        std::fs::write(&p, body).map_err(|e| Failure::Runtime(format!("{}: {e}", p.display())))
    };
    write("txt", format!("{text}\n"))?;
    write(
        "json",
        serde_json::to_string_pretty(rows).expect("rows serialise") + "\n",
    )?;
    write("csv", CompareRow::csv(rows))?;
    let chart = BarChart {
        title: heading(cfg).replace("sluice compare ", ""),
        y_label: if cfg.workload == CompareWorkload::Tpcb {
            "committed tps".into()
        } else {
            "completed tps (MQTh)".into()
        },
        bars: rows
            .iter()
            .map(|r| Bar {
                label: if r.variant.is_empty()
                    || r.engine != sluice_bench::compare::Engine::Postgres
                {
                    r.engine.to_string()
                } else {
                    format!("postgres ({})", r.variant)
                },
                value: r.tps,
                note: match (r.available, r.ratio_to_sluice) {
                    (false, _) if r.failed => "failed".into(),
                    (false, _) => "unavailable".into(),
                    (true, Some(x)) => {
                        format!("{} ({x:.3}×)", sluice_bench::output::thousands(r.tps))
                    }
                    (true, None) => sluice_bench::output::thousands(r.tps),
                },
                spread: None,
            })
            .collect(),
        log_y: false,
        reference: None,
    };
    chart.write(dir, &stem).map_err(Failure::Runtime)
}

/// `sluice compare`'s workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// TPC-B on every engine.
    Tpcb,
    /// TATP on sluice, SQLite and RocksDB (pgbench has no TATP).
    Tatp,
    /// Replicated writes: a three-node sluice cluster against a three-member etcd cluster.
    Replicated,
}

pub fn run(a: Args) -> Result<(), Failure> {
    let workload = match a.workload {
        Workload::Tpcb => CompareWorkload::Tpcb,
        Workload::Tatp => CompareWorkload::Tatp,
        Workload::Replicated => {
            if a.dir.is_some() || a.out.is_some() {
                return Err(Failure::Usage(
                    "compare replicated takes no --dir or --out (its clusters live in a temporary directory)".into(),
                ));
            }
            return crate::compare_replicated::run(crate::compare_replicated::Settings {
                clients: a.clients,
                seconds: seconds("--seconds", a.seconds, 0.1..=86_400.0)
                    .map_err(Failure::Usage)?
                    .as_secs_f64(),
                warmup: seconds("--warmup", a.warmup, 0.0..=86_400.0)
                    .map_err(Failure::Usage)?
                    .as_secs_f64(),
                rounds: a.rounds,
                json: a.json,
            });
        }
    };
    let cfg = CompareConfig {
        workload,
        engines: a.engines.clone(),
        clients: a.clients,
        scale: a.scale,
        subscribers: a.subscribers,
        seconds: seconds("--seconds", a.seconds, 0.1..=86_400.0).map_err(Failure::Usage)?,
        warmup: seconds("--warmup", a.warmup, 0.0..=86_400.0).map_err(Failure::Usage)?,
        rounds: a.rounds,
        dir: a.dir.clone(),
    };
    cfg.validate().map_err(Failure::Usage)?;
    if let Some(d) = &cfg.dir {
        if !d.is_dir() {
            return Err(Failure::Usage(format!(
                "--dir {}: not a directory",
                d.display()
            )));
        }
    }
    // Fail before the rounds, not after, when the output cannot be written.
    if let Some(out) = &a.out {
        crate::out_dir(out)?;
    }
    for e in &cfg.engines {
        if !e.built() && !a.json {
            eprintln!(
                "note: {} is not in this build; build it with: {}",
                e,
                sluice_bench::compare::BUILD_PEERS
            );
        }
    }
    cleanup::install();
    let mut bars = Bars {
        quiet: a.json,
        bar: None,
    };
    let rows = compare(&cfg, &mut bars).map_err(Failure::Runtime)?;
    bars.end();
    let mut text = format!("{}\n{}", heading(&cfg), table(&rows));
    for n in notes(&rows) {
        text.push('\n');
        text.push_str(&n);
    }
    println!("{text}");
    if let Some(dir) = &a.out {
        write_out(dir, &cfg, &rows, &text)?;
        println!(
            "wrote {}/compare-{}.{{txt,json,csv,png,svg}}",
            dir.display(),
            cfg.workload
        );
    }
    if a.json {
        for r in &rows {
            println!("{}", json_line(r));
        }
    }
    if rows.iter().any(|r| r.available && !r.consistent) {
        return Err(Failure::Runtime("a consistency check failed".into()));
    }
    let mut failed: Vec<String> = rows
        .iter()
        .filter(|r| r.failed)
        .map(|r| r.engine.to_string())
        .collect();
    failed.dedup();
    if !failed.is_empty() {
        return Err(Failure::Runtime(format!(
            "an engine failed: {} (its row says why)",
            failed.join(", ")
        )));
    }
    Ok(())
}
