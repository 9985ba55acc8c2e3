//! `sluice bench propagation` and `sluice bench propagation-sweep`: the update-propagation
//! experiment (the propagation paper §5). The runs, files and figures live in
//! `sluice_bench::experiments::propagation` and `propagation_sweep`; this module parses
//! flags, shows progress and prints.

use crate::progress;
use crate::sweep;
use crate::Failure;
use sluice::Strategy;
use sluice_bench::experiments::propagation::{
    self, PropagationConfig, PropagationResult, Throughput,
};
use sluice_bench::experiments::propagation_sweep::{self, SweepConfig, SweepFigure};
use sluice_bench::knobs::{self, in_range};
use sluice_bench::output::{json_line, thousands, Table};
use std::ops::Bound::{Excluded, Included};
use std::path::PathBuf;

/// Flags of `sluice bench propagation`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The propagation strategy: page-oldest[:heap], page-coldest[:heap],
    /// page-hottest[:heap], page-none, page-clustered:N, page-mixed, log or
    /// checkpoint-sweep. Required.
    // Optional to clap and checked here, so a missing or bad one is one line (exit 2).
    #[arg(long)]
    strategy: Option<String>,
    /// high: clients at full speed; low: the same clients paced to --rate.
    #[arg(long, value_enum, default_value_t = Throughput::High)]
    throughput: Throughput,
    #[command(flatten)]
    workload: Workload,
    /// Print one JSON object (summary and time series) at the end of stdout.
    #[arg(long)]
    json: bool,
}

/// Flags of `sluice bench propagation-sweep`.
#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// bandwidth (the paper's Fig. 3: MB/s each strategy writes while it propagates) or
    /// backlog (Fig. 4: dirty pages and REDO length over time, low and high throughput).
    /// Required.
    #[arg(long, value_enum)]
    figure: Option<SweepFigure>,
    /// Directory for <figure>.csv, <figure>.json, <figure>.png and <figure>.svg. Required.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    workload: Workload,
    /// Runs of each variant, in rounds that run every variant once (every other round
    /// reversed); the figure draws the median, the CSV and JSON keep every run.
    #[arg(long, default_value_t = propagation_sweep::DEFAULT_REPEAT)]
    repeat: usize,
    /// Print one JSON object per run at the end of stdout (and hide the progress bar).
    #[arg(long)]
    json: bool,
}

/// The flags of the TPC-B workload a run (or each run of a sweep) measures.
#[derive(clap::Args, Debug)]
struct Workload {
    /// Measured seconds per run (one sample per second) [default: 10; a sweep: 5 for
    /// bandwidth, 10 for backlog].
    #[arg(long)]
    seconds: Option<f64>,
    /// The low-throughput rate (--throughput low, or the backlog figure), transactions per
    /// second [default: 2000, a tenth of full speed on a 2-core machine, the paper's
    /// ratio].
    #[arg(long)]
    rate: Option<f64>,
    /// TPC-B scale factor: branches of 100,000 accounts [default: 2 for one run, 10 for
    /// a sweep, where the page policies must be told apart].
    #[arg(long)]
    scale: Option<u32>,
    /// Logical clients.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// MiB the device measurement writes, once before the runs (0: skip it).
    #[arg(long, default_value_t = 256)]
    probe_mib: u64,
    /// Where the temporary databases go (default: the current directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

impl Workload {
    /// A run of `strategy` at `throughput` with these flags, checked; `what` names it in
    /// the message of a knob the library refuses.
    fn config(
        &self,
        strategy: Strategy,
        throughput: Throughput,
        what: &str,
        default_scale: u32,
        default_seconds: f64,
    ) -> Result<PropagationConfig, Failure> {
        sweep::databases_dir(self.dir.as_deref())?;
        let mut cfg = PropagationConfig::new(strategy);
        // One sample per second, so at least one.
        cfg.seconds = knobs::seconds(
            "--seconds",
            self.seconds.unwrap_or(default_seconds),
            1.0..=86_400.0,
        )
        .map_err(Failure::Usage)?;
        cfg.throughput = throughput;
        let rate = self.rate.unwrap_or(propagation::DEFAULT_LOW_RATE);
        cfg.rate = in_range("--rate", rate, (Excluded(0.0), Included(10_000_000.0)))
            .map_err(Failure::Usage)?;
        cfg.scale = self.scale.unwrap_or(default_scale);
        cfg.clients = self.clients;
        cfg.probe_bytes = in_range("--probe-mib", self.probe_mib, ..=65_536)
            .map(|m| m << 20)
            .map_err(Failure::Usage)?;
        cfg.dir = self.dir.clone();
        cfg.validate()
            .map_err(|e| Failure::Usage(format!("invalid {what}: {e}")))?;
        Ok(cfg)
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1u64 << 20) as f64)
}

/// Prints one run: the time series, the summary and the notes (and the JSON object).
fn print_run(r: &PropagationResult, json: bool) {
    let s = &r.summary;
    let mut t = Table::new(["t (s)", "tps", "dirty pages", "REDO MiB", "write MB/s"]);
    for x in &r.series {
        t.row([
            format!("{:.0}", x.t_s),
            thousands(x.tps),
            x.dirty_pages.to_string(),
            mib(x.redo_bytes),
            format!("{:.2}", x.write_mb_per_s),
        ]);
    }
    println!("{}\n", t.render());
    let mut t = Table::new(["", "value"]);
    let target = match s.target_tps {
        Some(r) => format!("{} (paced to {} tps)", s.throughput, thousands(r)),
        None => format!("{} (clients at full speed)", s.throughput),
    };
    let device = s
        .device_seq_write_mb_per_s
        .map_or("not measured".into(), |d| format!("{d:.1}"));
    let rows: Vec<(&str, String)> = vec![
        ("strategy", s.strategy.clone()),
        ("throughput", target),
        (
            "workload",
            format!("TPC-B SF {}, {} clients, {}", s.scale, s.clients, s.commit),
        ),
        ("tps", thousands(s.tps)),
        (
            "write MB/s (strategy, over the run)",
            format!("{:.2}", s.write_mb_per_s),
        ),
        (
            "write MB/s while propagating / in writes and syncs",
            format!(
                "{:.1} / {:.1} (busy {:.0} % of the run)",
                s.busy_write_mb_per_s,
                s.io_write_mb_per_s,
                s.busy_fraction * 100.0
            ),
        ),
        ("device sequential MB/s", device),
        (
            "writes (mean KiB)",
            format!(
                "{} ({:.1})",
                s.propagation_writes,
                s.bytes_per_write / 1024.0
            ),
        ),
        (
            "dirty pages mean / max",
            format!("{:.0} / {}", s.dirty_pages_mean, s.dirty_pages_max),
        ),
        (
            "REDO MiB max / final",
            format!("{} / {}", mib(s.redo_bytes_max), mib(s.redo_bytes_final)),
        ),
        (
            "REDO MiB max, first / last third",
            format!(
                "{} / {}",
                mib(s.redo_first_third_max),
                mib(s.redo_last_third_max)
            ),
        ),
        ("eviction writes", s.eviction_writes.to_string()),
        ("restart ms", format!("{:.0}", s.restart_ms)),
        (
            "records redone / read at restart",
            format!("{} / {}", s.redo_records, s.recovery_log_records),
        ),
        ("consistent", s.consistent.to_string()),
    ];
    for (k, v) in rows {
        t.row([k.to_string(), v]);
    }
    println!("{}", t.render());
    for v in &s.violations {
        println!("INCONSISTENT ({}): {v}", s.strategy);
    }
    for n in &r.notes {
        println!("note: {n}");
    }
    println!(
        "note: a checkpoint every second (checkpoint-sweep writes the pages dirty since before it; with a page cleaner a checkpoint writes none; log-based propagation replays up to it), so REDO length is what the strategy leaves behind"
    );
    if json {
        println!("{}", json_line(r));
    }
}

pub fn run(a: Args) -> Result<(), Failure> {
    let Some(name) = &a.strategy else {
        return Err(Failure::Usage(
            "--strategy is required: page-oldest[:heap], page-coldest[:heap], page-hottest[:heap], page-none, page-clustered:N, page-mixed, log or checkpoint-sweep".into(),
        ));
    };
    let strategy: Strategy = name
        .parse()
        .map_err(|e: sluice::Error| Failure::Usage(format!("--strategy: {e}")))?;
    if a.workload.rate.is_some() && a.throughput != Throughput::Low {
        return Err(Failure::Usage(
            "--rate applies only to --throughput low".into(),
        ));
    }
    let cfg = a.workload.config(strategy, a.throughput, "run", 2, 10.0)?;
    let pb = progress::bar(1000, &format!("propagation {strategy}"), a.json);
    let r = propagation::run(&cfg, |p| {
        pb.set_position((p.done * 1000.0) as u64);
        pb.set_message(p.what.to_string());
    });
    pb.finish_and_clear();
    let r = r?;
    print_run(&r, a.json);
    if !r.summary.consistent {
        return Err(Failure::Runtime("a consistency check failed".into()));
    }
    Ok(())
}

pub fn sweep(a: SweepArgs) -> Result<(), Failure> {
    let (figure, out) = sweep::figure_and_out(a.figure, &a.out)?;
    if a.workload.rate.is_some() && figure != SweepFigure::Backlog {
        return Err(Failure::Usage(
            "--rate applies only to --figure backlog (bandwidth runs at full speed)".into(),
        ));
    }
    let knobs = a.workload.config(
        Strategy::Log,
        Throughput::High,
        "sweep",
        propagation_sweep::DEFAULT_SCALE,
        propagation_sweep::default_seconds(figure) as f64,
    )?;
    in_range("--repeat", a.repeat, 1..=100).map_err(Failure::Usage)?;
    let cfg = SweepConfig::with_knobs(figure, &knobs, a.repeat);
    crate::out_dir(&out)?;
    let r = sweep::with_bar(cfg.schedule().len(), &figure, a.json, |progress| {
        propagation_sweep::run(&cfg, &out, progress)
    });
    let r = r.map_err(|e| Failure::Runtime(e.to_string()))?;
    println!("{}", r.table().render());
    sweep::finish(&r.notes, &r.files, &r.rows, a.json, r.consistent())?;
    let failed = r.failed();
    if !failed.is_empty() {
        return Err(Failure::Runtime(format!(
            "{} of {} runs failed: {} (the files are written without them; see the notes)",
            failed.len(),
            r.rows.len(),
            failed.join(", ")
        )));
    }
    Ok(())
}
