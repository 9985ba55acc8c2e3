//! `sluice bench partition`: the log-partitioning experiments of the Tandem paper —
//! horizontal (`--horizontal D`: γ, the throughput right after a rollover while the
//! archiver copies the old segment ÷ the steady throughput), vertical (`--log-managers
//! K --inserts-per-txn N`: the columns of Tables 2–4, in `--repeat` rounds, and with
//! `--out DIR` Fig. 6), and the cost of the partitioned engine with one log manager
//! (`--tpcb-overhead`); and `sluice measure-lmax`.

use crate::progress;
use crate::sweep;
use crate::Failure;
use sluice_bench::experiments::noise::DEFAULT_REPEAT;
use sluice_bench::experiments::partition::vertical_sweep::{
    self, SweepConfig, FIGURE_SECONDS, TABLE_INSERTS_PER_TXN,
};
use sluice_bench::experiments::partition::{self, gamma::GammaConfig, vertical::VerticalConfig};
use sluice_bench::knobs::{in_range, seconds as seconds_in_range};
use sluice_bench::output::{json_line, Table};
use std::ops::Bound::{Excluded, Included};
use std::path::PathBuf;
use std::time::Duration;

/// Measured seconds per run in every mode but the figure (which takes [`FIGURE_SECONDS`]).
const DEFAULT_SECONDS: f64 = 4.0;

/// Flags of `sluice bench partition`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Log directories (emulated devices) the segments go round-robin to; a comma list
    /// (`1,2`) runs each in turn.
    #[arg(long, value_delimiter = ',')]
    horizontal: Vec<usize>,
    /// Log managers (vertical partitioning), each on its own emulated device; a comma
    /// list (`1,2`) runs each in turn, for every --inserts-per-txn.
    #[arg(long, value_delimiter = ',')]
    log_managers: Vec<usize>,
    /// Rows each transaction inserts (vertical runs); a comma list runs each
    /// [default: 10,100,200, the paper's T1–T3; with --out 10,20,50,100,200].
    #[arg(long, value_delimiter = ',')]
    inserts_per_txn: Option<Vec<usize>>,
    /// Rounds of the vertical runs: every point runs once per round, the rounds one after
    /// another; the table and the figure show each point's median and min–max
    /// [default: 1; with --out 3].
    #[arg(long)]
    repeat: Option<usize>,
    /// Draw Tandem Fig. 6 from the vertical runs: write tandem-fig6.csv and .json (every
    /// run), tandem-fig6-summary.csv and the figure (PNG and SVG) to this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Client threads (vertical runs and --tpcb-overhead).
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// TPC-B on an ordinary database and on a partitioned one with one log manager, in
    /// alternating rounds: what partitioning costs when it is not used.
    #[arg(long)]
    tpcb_overhead: bool,
    /// TPC-B scale for --tpcb-overhead.
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Rounds per engine for --tpcb-overhead.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Where --tpcb-overhead puts its two databases (a fresh temporary directory inside
    /// it; default: the current directory). `/dev/shm` takes the disk's sync latency out
    /// and leaves the engines' own costs.
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// Seconds to measure per run (after a short warm-up) [default: 4; with --out 2].
    #[arg(long)]
    seconds: Option<f64>,
    /// Unmeasured seconds before each vertical run's measurement (the logs reach their
    /// steady state: segments recycled, checkpoints truncating) [default: 3].
    #[arg(long)]
    warmup: Option<f64>,
    /// Each log device's write and read bandwidth, MB/s (the writers saturate it;
    /// default 16 for --horizontal, 4 for --log-managers).
    #[arg(long)]
    device_mb_per_s: Option<f64>,
    /// Segment size, KiB (small, so rollovers come often).
    #[arg(long, default_value_t = 1024)]
    segment_kib: u64,
    /// Print one JSON object per run at the end of stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<(), Failure> {
    let modes = usize::from(!a.horizontal.is_empty())
        + usize::from(!a.log_managers.is_empty())
        + usize::from(a.tpcb_overhead);
    // Before the modes: `--out DIR` alone is a figure asked for without its runs.
    if a.log_managers.is_empty() && (a.out.is_some() || a.repeat.is_some() || a.warmup.is_some()) {
        return Err(Failure::Usage(
            "--out, --repeat and --warmup apply to the vertical runs: give --log-managers K[,K…] too"
                .into(),
        ));
    }
    if modes != 1 {
        return Err(Failure::Usage(
            "give exactly one of --horizontal D[,D…], --log-managers K[,K…] and --tpcb-overhead"
                .into(),
        ));
    }
    let seconds = a.seconds.unwrap_or(if a.out.is_some() {
        FIGURE_SECONDS
    } else {
        DEFAULT_SECONDS
    });
    let seconds = in_range("--seconds", seconds, (Excluded(0.0), Included(86_400.0)))
        .map_err(Failure::Usage)?;
    let device = a
        .device_mb_per_s
        .unwrap_or(if a.horizontal.is_empty() { 4.0 } else { 16.0 });
    in_range("--device-mb-per-s", device, 0.1..=1e5).map_err(Failure::Usage)?;
    if a.tpcb_overhead {
        overhead(&a, seconds)
    } else if a.horizontal.is_empty() {
        vertical(&a, device, seconds)
    } else {
        horizontal(&a, device, seconds)
    }
}

fn overhead(a: &Args, seconds: f64) -> Result<(), Failure> {
    in_range("--scale", a.scale, 1..=1000).map_err(Failure::Usage)?;
    in_range("--rounds", a.rounds, 1..=100).map_err(Failure::Usage)?;
    in_range("--clients", a.clients, 1..=4096).map_err(Failure::Usage)?;
    let parent = a.dir.clone().unwrap_or_else(|| ".".into());
    if !parent.is_dir() {
        return Err(Failure::Usage(format!(
            "--dir {}: not a directory",
            parent.display()
        )));
    }
    let dir = tempfile::tempdir_in(&parent).map_err(|e| {
        Failure::Runtime(format!("temporary directory in {}: {e}", parent.display()))
    })?;
    let cfg = sluice_bench::experiments::partition::overhead::OverheadConfig {
        scale: a.scale,
        clients: a.clients,
        rounds: a.rounds,
        seconds,
    };
    let pb = progress::bar(1000, "bench partition --tpcb-overhead", a.json);
    let r = sluice_bench::experiments::partition::overhead::run(dir.path(), &cfg, |f| {
        pb.set_position((f * 1000.0) as u64)
    })
    .map_err(Failure::Runtime)?;
    pb.finish_and_clear();
    let mut t = Table::new(["round", "ordinary tps", "partitioned (1 log manager) tps"]);
    for (i, (p, q)) in r.plain_tps.iter().zip(&r.partitioned_tps).enumerate() {
        t.row([(i + 1).to_string(), format!("{p:.0}"), format!("{q:.0}")]);
    }
    println!("{}", t.render());
    println!(
        "partitioned ÷ ordinary (medians): {:.3}; both consistent; alternating rounds in one process on this machine",
        r.ratio
    );
    if a.json {
        println!("{}", json_line(&r));
    }
    Ok(())
}

fn vertical(a: &Args, device: f64, seconds: f64) -> Result<(), Failure> {
    let figure = a.out.is_some();
    let warmup = match a.warmup {
        Some(w) => seconds_in_range("--warmup", w, 0.0..=3_600.0).map_err(Failure::Usage)?,
        None => VerticalConfig::default().warmup,
    };
    let cfg = SweepConfig {
        log_managers: a.log_managers.clone(),
        inserts_per_txn: a.inserts_per_txn.clone().unwrap_or_else(|| {
            if figure {
                SweepConfig::figure().inserts_per_txn
            } else {
                TABLE_INSERTS_PER_TXN.to_vec()
            }
        }),
        repeat: a.repeat.unwrap_or(if figure { DEFAULT_REPEAT } else { 1 }),
        run: VerticalConfig {
            clients: a.clients,
            warmup,
            duration: Duration::from_secs_f64(seconds),
            device_bytes_per_sec: Some((device * 1e6) as u64),
            ..VerticalConfig::default()
        },
    };
    // The library's messages name the knob; say it as the flag.
    cfg.validate()
        .map_err(|e| Failure::Usage(format!("--{e}")))?;
    if let Some(out) = &a.out {
        // Fail before the runs, not after, when the output cannot be written.
        crate::out_dir(out)?;
    }
    let runs = cfg.plan().len();
    let rows = progress::fraction(
        &format!("bench partition --log-managers ({runs} runs)"),
        a.json,
        |done| vertical_sweep::run(&cfg, done),
    )
    .map_err(Failure::Runtime)?;
    println!("{}", vertical_sweep::table(&rows).render());
    println!(
        "G_i: log bytes generator (table) i writes per transaction, commit records left out; c: bytes of a commit record as it lies in the log, its 16-byte frame header and 8-byte alignment included, as every record's bytes are in L_i; so L = R·(Σ G_i + c)"
    );
    let Some(out) = &a.out else {
        println!(
            "each log on an emulated device capped at {device} MB/s; {} clients; all runs in one process on this machine: compare them with each other",
            a.clients
        );
        if a.json {
            for r in &rows {
                println!("{}", json_line(r));
            }
        }
        return Ok(());
    };
    let files = vertical_sweep::write_outputs(out, &cfg, &rows).map_err(Failure::Runtime)?;
    sweep::finish(
        &vertical_sweep::notes(&cfg, &rows),
        &files,
        &rows,
        a.json,
        true,
    )
}

fn horizontal(a: &Args, device: f64, seconds: f64) -> Result<(), Failure> {
    for &d in &a.horizontal {
        in_range("--horizontal", d, 1..=sluice_wal::dirs::MAX_LOG_DIRS).map_err(Failure::Usage)?;
    }
    let segment_bytes =
        in_range("--segment-kib", a.segment_kib, 64..=65_536).map_err(Failure::Usage)? * 1024;
    let mut t = Table::new([
        "dirs",
        "γ",
        "log MB/s",
        "contended MB/s",
        "steady MB/s",
        "rollovers",
        "archived",
    ]);
    let mut results = Vec::new();
    for &d in &a.horizontal {
        let cfg = GammaConfig {
            horizontal_dirs: d,
            duration: Duration::from_secs_f64(seconds),
            device_bytes_per_sec: (device * 1e6) as u64,
            segment_bytes,
            ..GammaConfig::default()
        };
        let pb = progress::bar(1000, &format!("bench partition --horizontal {d}"), a.json);
        let r = partition::gamma::run(&cfg, |f| pb.set_position((f * 1000.0) as u64))?;
        pb.finish_and_clear();
        t.row([
            d.to_string(),
            format!("{:.2}", r.gamma),
            format!("{:.1}", r.log_mb_per_s),
            format!("{:.1}", r.contended_mb_per_s),
            format!("{:.1}", r.steady_mb_per_s),
            r.rollovers.to_string(),
            r.segments_archived.to_string(),
        ]);
        results.push(r);
    }
    println!("{}", t.render());
    if a.json {
        for r in &results {
            println!("{}", json_line(r));
        }
    }
    Ok(())
}

/// Flags of `sluice measure-lmax`.
#[derive(clap::Args, Debug)]
pub struct LmaxArgs {
    /// Rows (of 100 bytes) each transaction inserts; a comma list measures Lmax at each
    /// size and fits how Lmax grows with the log bytes per transaction.
    #[arg(long, value_delimiter = ',', default_value = "100")]
    inserts_per_txn: Vec<usize>,
    /// The log device's write bandwidth, MB/s (absent: uncapped, the log manager's own
    /// ceiling on this machine, or with --dir the real device's).
    #[arg(long)]
    device_mb_per_s: Option<f64>,
    /// Measure a real log device: the database and its log go in a fresh temporary
    /// directory inside DIR (default: memory, /dev/shm, where only --device-mb-per-s
    /// limits).
    #[arg(long, value_name = "DIR")]
    dir: Option<std::path::PathBuf>,
    /// Seconds to measure per step.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Most generators tried (they double from 1).
    #[arg(long, default_value_t = 64)]
    max_generators: usize,
    /// The rate has stopped rising when a doubling adds less than this fraction.
    #[arg(long, default_value_t = 0.05)]
    min_gain: f64,
    /// Print one JSON object at the end of stdout.
    #[arg(long)]
    json: bool,
}

/// `sluice measure-lmax`: Lmax, the log rate at which one log manager stops rising as
/// generators are added, at each transaction size; with two or more sizes, the curve
/// Lmax(b) the planner takes.
pub fn lmax(a: LmaxArgs) -> Result<(), Failure> {
    if a.inserts_per_txn.is_empty() {
        return Err(Failure::Usage("--inserts-per-txn needs a value".into()));
    }
    for &n in &a.inserts_per_txn {
        in_range("--inserts-per-txn", n, 1..=10_000).map_err(Failure::Usage)?;
    }
    in_range("--seconds", a.seconds, 0.1..=3600.0).map_err(Failure::Usage)?;
    in_range("--max-generators", a.max_generators, 1..=1024).map_err(Failure::Usage)?;
    in_range("--min-gain", a.min_gain, 0.0..=1.0).map_err(Failure::Usage)?;
    let device = match a.device_mb_per_s {
        None => None,
        Some(m) => Some(
            (in_range("--device-mb-per-s", m, 0.1..=1e5).map_err(Failure::Usage)? * 1e6) as u64,
        ),
    };
    if let Some(d) = &a.dir {
        crate::sweep::databases_dir(Some(d))?;
    }
    let base = VerticalConfig {
        duration: Duration::from_secs_f64(a.seconds),
        device_bytes_per_sec: device.or(if a.dir.is_some() {
            None
        } else {
            // Memory with no cap at all: the log manager's own ceiling.
            Some(u64::MAX / 4)
        }),
        dir: a.dir.clone(),
        ..VerticalConfig::default()
    };
    let measured = measure(
        &base,
        &a.inserts_per_txn,
        a.max_generators,
        a.min_gain,
        a.json,
    )?;
    let mut t = Table::new(["inserts/txn", "generators", "log MB/s", "tps", "L/R B/txn"]);
    for (n, r) in &measured.runs {
        for s in &r.steps {
            t.row([
                n.to_string(),
                s.generators.to_string(),
                format!("{:.2}", s.log_mb_per_s),
                format!("{:.0}", s.tps),
                format!("{:.0}", s.log_bytes_per_txn),
            ]);
        }
    }
    println!("{}", t.render());
    for (n, r) in &measured.runs {
        match r.saturated_at {
            Some(g) => println!(
                "{n} inserts/txn ({:.0} B/txn): Lmax ≈ {:.2} MB/s (the rate stopped rising at {g} generators)",
                r.log_bytes_per_txn, r.lmax_mb_per_s
            ),
            None => println!(
                "{n} inserts/txn ({:.0} B/txn): the rate was still rising at {} generators: Lmax ≥ {:.2} MB/s",
                r.log_bytes_per_txn, a.max_generators, r.lmax_mb_per_s
            ),
        }
    }
    // One size pins one point of the curve, not its shape: print it from two.
    if let Some(c) = measured.curve.as_ref().filter(|_| measured.runs.len() > 1) {
        println!(
            "Lmax(b) = b / (t0 + b/B) with B = {:.0} B/s and t0 = {:.6} s: a profile's \"lmax_bytes_per_s\": {:.0}, \"lmax_txn_overhead_s\": {:.6}",
            c.ceiling_bytes_per_s, c.txn_overhead_s, c.ceiling_bytes_per_s, c.txn_overhead_s
        );
    }
    println!(
        "measured on {}",
        match (&a.dir, a.device_mb_per_s) {
            (Some(d), None) => format!("the device of {}", d.display()),
            (Some(d), Some(m)) => format!("{} capped at {m} MB/s", d.display()),
            (None, Some(m)) => format!("memory behind an emulated device of {m} MB/s"),
            (None, None) => "memory, uncapped (the log manager's own ceiling)".into(),
        }
    );
    if a.json {
        println!("{}", json_line(&measured));
    }
    Ok(())
}

/// What `measure-lmax` found at each transaction size, and the curve through them.
#[derive(Debug, serde::Serialize)]
pub struct LmaxMeasured {
    /// (inserts per transaction, the run), in the order given.
    pub runs: Vec<(usize, partition::vertical::LmaxResult)>,
    /// Lmax(b) through the plateaus (absent when none was positive).
    pub curve: Option<sluice_plan::LmaxCurve>,
}

/// Runs `measure_lmax` at each size in `sizes`, with a progress bar over all steps.
pub fn measure(
    base: &VerticalConfig,
    sizes: &[usize],
    max_generators: usize,
    min_gain: f64,
    quiet: bool,
) -> Result<LmaxMeasured, Failure> {
    let steps_each = (max_generators as f64).log2().floor() as u64 + 1;
    let pb = progress::bar(steps_each * sizes.len() as u64, "measure-lmax", quiet);
    let mut runs = Vec::new();
    for (k, &n) in sizes.iter().enumerate() {
        let cfg = VerticalConfig {
            inserts_per_txn: n,
            ..base.clone()
        };
        pb.set_message(format!("measure-lmax · {n} inserts/txn"));
        let r = partition::vertical::measure_lmax(&cfg, max_generators, min_gain, |_| pb.inc(1))
            .map_err(Failure::Runtime)?;
        // The next size starts at its own share of the bar, however early this stopped.
        pb.set_position(steps_each * (k as u64 + 1));
        runs.push((n, r));
    }
    pb.finish_and_clear();
    let points: Vec<(f64, f64)> = runs
        .iter()
        .map(|(_, r)| (r.log_bytes_per_txn, r.lmax_mb_per_s * 1e6))
        .collect();
    Ok(LmaxMeasured {
        curve: sluice_plan::LmaxCurve::fit(&points),
        runs,
    })
}
