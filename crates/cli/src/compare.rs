//! `sluice compare tpcb|tatp`: sluice beside SQLite, RocksDB and PostgreSQL in one run.

use crate::progress;
use crate::Failure;
use indicatif::ProgressBar;
use sluice_bench::compare::{
    cleanup, compare, CompareConfig, CompareProgress, CompareRow, CompareWorkload, Comparison,
    Engine, PeerBest,
};
use sluice_bench::knobs::seconds;
use sluice_bench::output::{json_line, thousands, Bar, BarChart, Table};
use std::path::{Path, PathBuf};

/// Flags of `sluice compare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The workload: `tpcb` and `tatp` against the embedded and client-server peers;
    /// `replicated`, a three-node sluice cluster against a three-member etcd cluster.
    #[arg(value_enum)]
    workload: Workload,
    /// sluice's clients (`compare replicated`: every engine's).
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Client counts each peer runs at, comma-separated (one thread and connection per
    /// client); sluice is compared with each peer at its best.
    #[arg(long, default_value = "1,4,16,64", value_delimiter = ',')]
    peer_clients: Vec<usize>,
    /// Measured seconds per engine and client count, split evenly over the rounds.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Unmeasured warm-up seconds before each turn (an engine at one client count) in
    /// each round.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Rounds; each runs every turn once, in the opposite order of the round before.
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

/// The workload's size: "SF 10", "100000 subscribers".
fn size(cfg: &CompareConfig) -> String {
    match cfg.workload {
        CompareWorkload::Tpcb => format!("SF {}", cfg.scale),
        CompareWorkload::Tatp => format!("{} subscribers", cfg.subscribers),
    }
}

/// The peers' client counts: "1, 4, 16, 64".
fn peer_counts(cfg: &CompareConfig) -> String {
    let counts: Vec<String> = cfg.peer_clients.iter().map(|c| c.to_string()).collect();
    counts.join(", ")
}

fn heading(cfg: &CompareConfig) -> String {
    format!(
        "sluice compare {} ({}; sluice at {} clients, peers at {}; {} turns × {} round(s) of {:.1} s in alternating order; {} cores)",
        cfg.workload,
        size(cfg),
        cfg.clients,
        peer_counts(cfg),
        cfg.turns(),
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

/// An engine and, where it has one, its variant: "postgres (1 round trip)".
fn name(engine: Engine, variant: &str) -> String {
    if variant.is_empty() {
        engine.to_string()
    } else {
        format!("{engine} ({variant})")
    }
}

fn notes(rows: &[CompareRow]) -> Vec<String> {
    let mut out = Vec::new();
    // The settings once per engine and variant (they hold at every client count).
    let mut said: Vec<(Engine, &str)> = Vec::new();
    for r in rows.iter().filter(|r| r.available) {
        if !said.contains(&(r.engine, &r.variant)) {
            said.push((r.engine, &r.variant));
            out.push(format!(
                "{}: durability: {}",
                name(r.engine, &r.variant),
                r.durability
            ));
        }
    }
    for r in rows.iter().filter(|r| !r.available) {
        let at = r
            .clients
            .map(|c| format!(" at {}", clients(c)))
            .unwrap_or_default();
        let why = r.unavailable.as_deref().unwrap_or("");
        let how = if r.failed { "FAILED" } else { "unavailable" };
        out.push(format!("{}{at}: {how}: {why}", name(r.engine, &r.variant)));
    }
    for r in rows {
        for v in &r.violations {
            let at = r
                .clients
                .map(|c| format!(", {}", clients(c)))
                .unwrap_or_default();
            out.push(format!(
                "INCONSISTENT ({}{at}): {v}",
                name(r.engine, &r.variant)
            ));
        }
    }
    out.push("Compare ratios from one run; the machine is shared and throughput is noisy.".into());
    out
}

/// One peer's line of the summary: its best count and sluice ÷ it, or why it has none.
fn best_line(p: &PeerBest) -> String {
    let who = name(p.peer, &p.variant);
    match (p.best_clients, p.best_tps, &p.no_best) {
        (Some(c), Some(tps), _) => {
            let ratio = p
                .sluice_over_best
                .map(|x| format!("sluice ÷ best = {x:.2}"))
                .unwrap_or_else(|| "no sluice row to divide".into());
            format!(
                "{who}: best at {}, {} tps; {ratio}",
                clients(c),
                thousands(tps)
            )
        }
        (_, _, Some(why)) => format!("{who}: no best ({why})"),
        _ => format!("{who}: no best"),
    }
}

fn summary(peers: &[PeerBest]) -> Vec<String> {
    if peers.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        "sluice ÷ each peer at its best client count (its highest tps among the counts that are consistent and durable):"
            .to_string(),
    ];
    out.extend(peers.iter().map(|p| format!("  {}", best_line(p))));
    out
}

/// "1 client", "4 clients".
fn clients(n: usize) -> String {
    if n == 1 {
        "1 client".into()
    } else {
        format!("{n} clients")
    }
}

/// The bar chart's bars: sluice, then each peer at its best client count (a peer
/// without a best: an empty bar that says so). A label is short enough to sit under its
/// bar beside its neighbours': the engine (PostgreSQL: "pg" and the variant, "pg
/// tpcb-like") and "@" the client count.
fn bars(c: &Comparison) -> Vec<Bar> {
    let at = |engine: Engine, variant: &str, clients: Option<usize>| {
        let who = match engine {
            Engine::Postgres if !variant.is_empty() => {
                format!("pg {}", variant.trim_start_matches("pgbench "))
            }
            _ => engine.to_string(),
        };
        match clients {
            Some(n) => format!("{who} @ {n}"),
            None => who,
        }
    };
    let mut bars: Vec<Bar> = c
        .rows
        .iter()
        .filter(|r| r.engine == Engine::Sluice)
        .map(|r| Bar {
            label: at(r.engine, "", r.clients),
            value: r.tps,
            note: if r.available {
                thousands(r.tps)
            } else {
                "failed".into()
            },
            spread: None,
        })
        .collect();
    bars.extend(c.summary.iter().map(|p| Bar {
        label: at(p.peer, &p.variant, p.best_clients),
        value: p.best_tps.unwrap_or(0.0),
        note: match (p.best_tps, p.sluice_over_best) {
            (Some(tps), Some(x)) => format!("{} (sluice ÷ {x:.2})", thousands(tps)),
            (Some(tps), None) => thousands(tps),
            (None, _) => "no best".into(),
        },
        spread: None,
    }));
    bars
}

fn write_out(dir: &Path, cfg: &CompareConfig, c: &Comparison, text: &str) -> Result<(), Failure> {
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
        serde_json::to_string_pretty(c).expect("a comparison serialises") + "\n",
    )?;
    write("csv", CompareRow::csv(&c.rows))?;
    let chart = BarChart {
        title: format!(
            "{} ({}): sluice and each peer at its best of {} clients (engine @ clients)",
            cfg.workload,
            size(cfg),
            peer_counts(cfg)
        ),
        y_label: if cfg.workload == CompareWorkload::Tpcb {
            "committed tps".into()
        } else {
            "completed tps (MQTh)".into()
        },
        bars: bars(c),
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
        peer_clients: a.peer_clients.clone(),
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
    let c = compare(&cfg, &mut bars).map_err(Failure::Runtime)?;
    bars.end();
    let rows = &c.rows;
    let mut text = format!("{}\n{}", heading(&cfg), table(rows));
    for n in summary(&c.summary).into_iter().chain(notes(rows)) {
        text.push('\n');
        text.push_str(&n);
    }
    println!("{text}");
    if let Some(dir) = &a.out {
        write_out(dir, &cfg, &c, &text)?;
        println!(
            "wrote {}/compare-{}.{{txt,json,csv,png,svg}}",
            dir.display(),
            cfg.workload
        );
    }
    if a.json {
        for r in rows {
            println!("{}", json_line(r));
        }
        for p in &c.summary {
            println!("{}", json_line(p));
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
