//! `sluice bench partition`: the log-partitioning experiments of the Tandem paper. So far
//! the horizontal one (`--horizontal D`: γ, the throughput right after a rollover while
//! the archiver copies the old segment ÷ the steady throughput); vertical partitioning
//! flags are to come beside it.

use crate::progress;
use crate::Failure;
use sluice_bench::partition_gamma::{self, GammaConfig};
use sluice_bench::report::{json_line, Table};
use std::time::Duration;

/// Flags of `sluice bench partition`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Log directories (emulated devices) the segments go round-robin to; a comma list
    /// (`1,2`) runs each in turn.
    #[arg(long, value_delimiter = ',', required = true)]
    horizontal: Vec<usize>,
    /// Seconds to measure per run (after a short warm-up).
    #[arg(long, default_value_t = 4.0)]
    seconds: f64,
    /// Each log device's write and read bandwidth, MB/s (the writers saturate it).
    #[arg(long, default_value_t = 16.0)]
    device_mb_per_s: f64,
    /// Segment size, KiB (small, so rollovers come often).
    #[arg(long, default_value_t = 1024)]
    segment_kib: u64,
    /// Print one JSON object per run at the end of stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<(), Failure> {
    if let Some(&d) = a
        .horizontal
        .iter()
        .find(|&&d| d == 0 || d > sluice_wal::dirs::MAX_LOG_DIRS)
    {
        return Err(Failure::Usage(format!(
            "--horizontal must be between 1 and {} directories, got {d}",
            sluice_wal::dirs::MAX_LOG_DIRS
        )));
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0 && a.seconds <= 86_400.0) {
        return Err(Failure::Usage(format!(
            "--seconds must be a positive number of seconds (at most a day), got {}",
            a.seconds
        )));
    }
    if !(a.device_mb_per_s.is_finite() && a.device_mb_per_s >= 0.1 && a.device_mb_per_s <= 1e5) {
        return Err(Failure::Usage(format!(
            "--device-mb-per-s must be between 0.1 and 100000, got {}",
            a.device_mb_per_s
        )));
    }
    let segment_bytes = a.segment_kib.saturating_mul(1024);
    if !(64 << 10..=64 << 20).contains(&segment_bytes) {
        return Err(Failure::Usage(format!(
            "--segment-kib must be between 64 and 65536, got {}",
            a.segment_kib
        )));
    }
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
            duration: Duration::from_secs_f64(a.seconds),
            device_bytes_per_sec: (a.device_mb_per_s * 1e6) as u64,
            segment_bytes,
            ..GammaConfig::default()
        };
        let pb = progress::bar(1000, &format!("bench partition --horizontal {d}"), a.json);
        let r = partition_gamma::run(&cfg, |f| pb.set_position((f * 1000.0) as u64))?;
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
