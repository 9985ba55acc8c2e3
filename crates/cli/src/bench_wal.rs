//! `sluice bench wal`.

use crate::progress;
use crate::Failure;
use sluice_bench::experiments::wal::{self, WalBenchConfig};
use sluice_bench::knobs::{in_range, seconds};
use sluice_bench::output::{json_line, thousands, Table};
use sluice_wal::InsertVariant;
use std::ops::Bound::{Excluded, Included};
use std::path::PathBuf;

/// Flags of `sluice bench wal`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Appending threads.
    #[arg(long, default_value_t = 16)]
    threads: usize,
    /// Payload bytes per record.
    #[arg(long, default_value_t = 120)]
    record_size: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Log directory (default: a fresh temporary directory in the current directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Log-buffer insertion algorithm (default: the machine's, by the rule of
    /// `InsertVariant::for_cores`: mutex up to 4 hardware threads, delegated above).
    #[arg(long, default_value_t = InsertVariant::for_this_machine())]
    log_buffer: InsertVariant,
    /// Print one JSON object at the end of stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<(), Failure> {
    let threads = in_range("--threads", a.threads, 1..=4096).map_err(Failure::Usage)?;
    let record_bytes =
        in_range("--record-size", a.record_size, 1..=1 << 20).map_err(Failure::Usage)?;
    let duration = seconds("--seconds", a.seconds, (Excluded(0.0), Included(86_400.0)))
        .map_err(Failure::Usage)?;
    let cfg = WalBenchConfig {
        threads,
        record_bytes,
        duration,
        dir: a.dir,
        variant: a.log_buffer,
    };
    let pb = progress::bar(1000, "bench wal", a.json);
    let r = wal::run(&cfg, |f| pb.set_position((f * 1000.0) as u64))?;
    pb.finish_and_clear();
    let mut t = Table::new([
        "threads",
        "record B",
        "appends/s",
        "syncs/s",
        "appends/sync",
        "p50 µs",
        "p99 µs",
    ]);
    t.row([
        r.threads.to_string(),
        r.record_bytes.to_string(),
        thousands(r.appends_per_sec),
        thousands(r.syncs_per_sec),
        format!("{:.1}", r.appends_per_sync),
        r.latency.p50_us.to_string(),
        r.latency.p99_us.to_string(),
    ]);
    println!("{}", t.render());
    if a.json {
        println!("{}", json_line(&r));
    }
    Ok(())
}
