//! `sluice bench log-insert` and `sluice bench log-insert-sweep`.

use crate::progress;
use crate::sweep;
use crate::Failure;
use sluice_bench::experiments::log_insert::{self, LogInsertConfig, RecordMix};
use sluice_bench::experiments::log_insert_sweep::{self, Figure, SweepConfig};
use sluice_bench::experiments::noise::DEFAULT_REPEAT;
use sluice_bench::knobs::seconds;
use sluice_bench::output::json_line;
use sluice_wal::InsertVariant;
use std::ops::Bound::{Excluded, Included};
use std::path::PathBuf;
use std::time::Duration;

/// Flags of `sluice bench log-insert`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Insertion algorithm: mutex, consolidated, decoupled, hybrid, delegated or atomic.
    #[arg(long)]
    variant: InsertVariant,
    /// Inserting threads.
    #[arg(long)]
    threads: usize,
    /// Payload bytes of every record.
    #[arg(long)]
    record_size: Option<usize>,
    /// The bimodal mix instead: 60 records of 48 bytes, then one of this many bytes.
    #[arg(long)]
    outlier: Option<usize>,
    /// Consolidation-array slots (consolidated, hybrid, delegated).
    #[arg(long, default_value_t = 4)]
    slots: usize,
    /// Seconds of inserting (the limit is then measured as long).
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Print one JSON object at the end of stdout.
    #[arg(long)]
    json: bool,
}

/// Flags of `sluice bench log-insert-sweep`.
#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// Which figure.
    #[arg(long, value_enum)]
    figure: Figure,
    /// Directory for the CSV, JSON, PNG and SVG files.
    #[arg(long)]
    out: PathBuf,
    /// Seconds per point.
    #[arg(long, default_value_t = 0.5)]
    seconds: f64,
    /// Rounds: every point runs once per round, the rounds one after another; each point
    /// is drawn as the median of its rounds with the min–max as an error bar.
    #[arg(long, default_value_t = DEFAULT_REPEAT)]
    repeat: usize,
    /// Print one JSON object per run (every round) at the end of stdout.
    #[arg(long)]
    json: bool,
}

fn duration(v: f64) -> Result<Duration, Failure> {
    seconds("--seconds", v, (Excluded(0.0), Included(86_400.0))).map_err(Failure::Usage)
}

pub fn run(a: Args) -> Result<(), Failure> {
    let mix = match (a.record_size, a.outlier) {
        (Some(b), None) => RecordMix::Fixed(b),
        (None, Some(b)) => RecordMix::Outlier(b),
        (Some(_), Some(_)) => {
            return Err(Failure::Usage(
                "give either --record-size or --outlier, not both".into(),
            ))
        }
        (None, None) => {
            return Err(Failure::Usage(
                "give --record-size B (fixed records) or --outlier B (the bimodal mix)".into(),
            ))
        }
    };
    let mut cfg = LogInsertConfig::new(a.variant, a.threads, mix);
    cfg.slots = a.slots;
    cfg.duration = duration(a.seconds)?;
    // The library's messages name the knob; say it as the flag.
    cfg.validate().map_err(|e| {
        let flag = if e.starts_with("threads") {
            "--threads: "
        } else if e.starts_with("slots") {
            "--slots: "
        } else if a.outlier.is_some() {
            "--outlier: "
        } else {
            "--record-size: "
        };
        Failure::Usage(format!("{flag}{e}"))
    })?;
    let pb = progress::bar(1000, "bench log-insert", a.json);
    let r = log_insert::run(&cfg, |f| pb.set_position((f * 1000.0) as u64))?;
    pb.finish_and_clear();
    println!(
        "{}",
        log_insert_sweep::table(std::slice::from_ref(&r)).render()
    );
    if a.json {
        println!("{}", json_line(&r));
    }
    Ok(())
}

pub fn sweep(a: SweepArgs) -> Result<(), Failure> {
    let mut cfg = SweepConfig::new(a.figure);
    cfg.per_point = duration(a.seconds)?;
    cfg.repeat = a.repeat;
    // The library's messages name the knob; say it as the flag.
    cfg.validate()
        .map_err(|e| Failure::Usage(format!("--{e}")))?;
    // Fail before the runs, not after, when the output cannot be written.
    crate::out_dir(&a.out)?;
    let pb = progress::bar(cfg.runs() as u64, &format!("sweep {}", cfg.figure), a.json);
    let rows = log_insert_sweep::run(&cfg, |done, all| {
        pb.set_length(all as u64);
        pb.set_position(done as u64);
    })?;
    pb.finish_and_clear();
    // One line per point (median and min–max over the rounds); every round is in the
    // CSV and the JSON.
    println!("{}", log_insert_sweep::summary_table(&rows).render());
    let files = log_insert_sweep::write_outputs(&a.out, &cfg, &rows).map_err(Failure::Runtime)?;
    sweep::finish(&log_insert_sweep::notes(&cfg), &files, &rows, a.json, true)
}
