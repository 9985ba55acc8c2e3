//! `sluice bench commit-sweep`: the commit-protocol sweeps that draw Aether's Figs. 2, 3,
//! 4, 5, 7 and 9. The runs and the files live in `sluice_bench::experiments::commit_sweep`; this module
//! parses flags, shows one progress bar over all points and prints the tables.

use crate::sweep;
use crate::Failure;
use sluice_bench::experiments::commit_sweep::{
    self, summary_table, time_table, Figure, SweepConfig, SweepError, DEFAULT_LOG_LATENCY,
};
use sluice_bench::knobs::seconds;
use sluice_storage::DeviceProfile;
use sluice_wal::InsertVariant;
use std::path::PathBuf;

/// Flags of `sluice bench commit-sweep`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The figure (one of Aether's Figs. 3, 4, 5 and 9; breakdown is Fig. 7, cpu Fig. 2).
    /// Required.
    // Optional to clap and checked here: clap's own "required arguments" error puts the
    // missing names on a second line, which the one-line error policy would cut off.
    #[arg(long, value_enum)]
    figure: Option<Figure>,
    /// Directory for <figure>.csv, <figure>.json and the figures (PNG and SVG). Required.
    #[arg(long)]
    out: Option<PathBuf>,
    /// TPC-B scale factor, branches of 100,000 accounts (TPC-B figures) [default: 10 for
    /// elr-skew and cpu, else 2].
    #[arg(long)]
    scale: Option<u32>,
    /// TATP subscribers (tatp-components, breakdown) [default: 100000].
    #[arg(long)]
    subscribers: Option<u32>,
    /// Client counts, comma-separated: the x axis, or the one count of elr-skew and cpu
    /// [default: 16 for elr-skew, 60 for cpu, else 1,2,4,8,16,32,64].
    #[arg(long, value_delimiter = ',')]
    clients: Option<Vec<usize>>,
    /// Zipf skews, comma-separated (elr-skew) [default: 0,0.5,0.8,1,1.2].
    #[arg(long, value_delimiter = ',')]
    skews: Option<Vec<f64>>,
    /// Emulated log latencies, comma-separated (elr-skew) [default: 0,100us,1ms,10ms].
    #[arg(long, value_delimiter = ',')]
    log_latencies: Option<Vec<String>>,
    /// The log device of every figure but elr-skew: an emulated latency (0, 100us, 1ms,
    /// …) or `disk` for the real disk under --dir [default: 1ms].
    #[arg(long)]
    log_latency: Option<String>,
    /// Rounds: every point runs once per round, the rounds one after another; each point
    /// is drawn as the median of its rounds with the min–max as an error bar.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Log buffer of the scalable-buffer step (tatp-components, cpu) [default: hybrid,
    /// when this build has it].
    #[arg(long)]
    log_buffer: Option<InsertVariant>,
    /// Measured seconds per point.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Unmeasured warm-up seconds per point.
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    /// Where the databases go (default: a temporary directory in the current directory;
    /// the real-disk figures measure this disk).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print one JSON object per row at the end of stdout (and hide the progress bar).
    #[arg(long)]
    json: bool,
}

/// Rejects a flag that the figure would ignore: a user who passes one expects it to
/// matter, and a silently ignored knob makes a wrong figure look right.
fn only_for(given: bool, flag: &str, figures: &[Figure], figure: Figure) -> Result<(), Failure> {
    if given && !figures.contains(&figure) {
        let names: Vec<_> = figures.iter().map(|f| f.to_string()).collect();
        return Err(Failure::Usage(format!(
            "--{flag} applies only to --figure {}, not {figure}",
            names.join(" or ")
        )));
    }
    Ok(())
}

fn config(a: &Args, f: Figure) -> Result<SweepConfig, Failure> {
    let tpcb = [Figure::ElrSkew, Figure::Ctx, Figure::Clients, Figure::Cpu];
    only_for(a.scale.is_some(), "scale", &tpcb, f)?;
    only_for(
        a.subscribers.is_some(),
        "subscribers",
        &[Figure::TatpComponents, Figure::Breakdown],
        f,
    )?;
    only_for(a.skews.is_some(), "skews", &[Figure::ElrSkew], f)?;
    only_for(
        a.log_latencies.is_some(),
        "log-latencies",
        &[Figure::ElrSkew],
        f,
    )?;
    only_for(
        a.log_latency.is_some(),
        "log-latency",
        &[
            Figure::Ctx,
            Figure::Clients,
            Figure::TatpComponents,
            Figure::Breakdown,
            Figure::Cpu,
        ],
        f,
    )?;
    only_for(
        a.log_buffer.is_some(),
        "log-buffer",
        &[Figure::TatpComponents, Figure::Cpu],
        f,
    )?;
    let mut c = SweepConfig::new(f);
    if let Some(s) = a.scale {
        c.scale = s;
    }
    if let Some(s) = a.subscribers {
        c.subscribers = s;
    }
    if let Some(cl) = &a.clients {
        c.clients = cl.clone();
    }
    if let Some(s) = &a.skews {
        c.skews = s.clone();
    }
    if let Some(ls) = &a.log_latencies {
        c.latencies = ls
            .iter()
            .map(|l| DeviceProfile::parse_latency(l))
            .collect::<Result<_, _>>()
            .map_err(|e| Failure::Usage(format!("--log-latencies: {e}")))?;
    }
    c.log_latency = match a.log_latency.as_deref() {
        None => Some(DEFAULT_LOG_LATENCY),
        Some("disk") => None,
        Some(l) => Some(
            DeviceProfile::parse_latency(l)
                .map_err(|e| Failure::Usage(format!("--log-latency: {e} (or 'disk')")))?,
        ),
    };
    c.repeat = a.repeat;
    if a.log_buffer.is_some() {
        c.scalable_buffer = a.log_buffer;
    }
    c.seconds = seconds("--seconds", a.seconds, 0.1..=3_600.0).map_err(Failure::Usage)?;
    c.warmup = seconds("--warmup", a.warmup, 0.0..=3_600.0).map_err(Failure::Usage)?;
    c.dir = a.dir.clone();
    c.normalise();
    // The library's messages name the knob; say it as the flag.
    c.validate()
        .map_err(|e| Failure::Usage(format!("invalid sweep: {e}")))?;
    sweep::databases_dir(a.dir.as_deref())?;
    Ok(c)
}

pub fn run(a: Args) -> Result<(), Failure> {
    let (figure, out) = sweep::figure_and_out(a.figure, &a.out)?;
    let cfg = config(&a, figure)?;
    // Fail before an hour of runs, not after, when the output cannot be written.
    crate::out_dir(&out)?;
    let result = sweep::with_bar(cfg.plan().len(), &figure, a.json, |progress| {
        commit_sweep::run(&cfg, &out, progress)
    });
    let r = result.map_err(|e| match e {
        SweepError::Config(m) => Failure::Usage(m),
        e => Failure::Runtime(e.to_string()),
    })?;
    // One line per point (median and min–max over the rounds); every repeat is in the
    // CSV and the JSON.
    println!("{}", summary_table(r.figure, &r.rows).render());
    if let Some(t) = time_table(r.figure, &r.rows) {
        println!("\nWhere the agents' time went (median % of their time over the rounds)");
        println!("{}", t.render());
    }
    for row in &r.rows {
        for v in &row.row.violations {
            println!(
                "INCONSISTENT ({} {} {} clients): {v}",
                row.row.workload, row.row.commit, row.row.clients
            );
        }
    }
    if let Some(sp) = &r.speedup {
        println!("\n{}", sp.title);
        println!("{}", sp.table().render());
    }
    sweep::finish(&r.notes, &r.files, &r.rows, a.json, r.consistent())
}
