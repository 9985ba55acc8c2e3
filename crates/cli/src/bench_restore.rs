//! `sluice bench restore`: restore time after a stretch of TPC-B load, the log replayed
//! in time order against the single-pass restore from sorted runs, in one run
//! (`sluice_bench::experiments::restore`); this module parses flags, shows progress and
//! prints.

use crate::progress;
use crate::sweep;
use crate::Failure;
use sluice_bench::experiments::restore::{self, RestoreConfig, RestoreResult};
use sluice_bench::output::{json_line, thousands, Table};
use std::path::PathBuf;

/// Flags of `sluice bench restore`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// TPC-B scale factor: branches of 100,000 accounts (SF 10: about 150 MiB of data,
    /// more than the restore's buffer pool).
    #[arg(long, default_value_t = 10)]
    scale: u32,
    /// Seconds of TPC-B load between the backup and the restore.
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// Logical clients of the load.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Buffer-pool pages (8 KiB) of the loaded database.
    #[arg(long, default_value_t = 16_384)]
    pool_pages: usize,
    /// Rounds of the two restores (the order alternating between rounds).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Log segment size of the loaded database, in KiB: all but the segment still being
    /// written when the load stops reach the archive and are replayed.
    #[arg(long, default_value_t = 2048)]
    segment_kib: u64,
    /// Seed of the clients' random streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the temporary directory goes (default: the current directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print one JSON object at the end of stdout (and hide the progress bar).
    #[arg(long)]
    json: bool,
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1u64 << 20) as f64)
}

fn secs(s: Option<f64>) -> String {
    s.map_or("-".into(), |s| format!("{s:.2}"))
}

fn print(r: &RestoreResult) {
    let mut t = Table::new([
        "round",
        "replay",
        "restore (s)",
        "scan (s)",
        "copy (s)",
        "sort (s)",
        "apply (s)",
        "recovery (s)",
        "changes replayed",
        "rolled back",
    ]);
    for x in &r.runs {
        t.row([
            x.round.to_string(),
            x.replay.to_string(),
            format!("{:.2}", x.seconds),
            format!("{:.2}", x.scan_seconds),
            format!("{:.2}", x.copy_seconds),
            secs(x.sort_seconds),
            secs(x.apply_seconds),
            format!("{:.2}", x.recovery_seconds),
            thousands(x.replayed as f64),
            x.rolled_back.to_string(),
        ]);
    }
    println!("{}\n", t.render());
    let mut t = Table::new(["", "value"]);
    for (k, v) in [
        (
            "workload",
            format!(
                "TPC-B SF {}, {:.0} s of load, {} committed",
                r.scale,
                r.load_seconds,
                thousands(r.committed as f64)
            ),
        ),
        ("data (MiB)", mib(r.data_bytes)),
        ("log replayed (MiB)", mib(r.log_bytes)),
        ("restore's buffer pool (MiB)", mib(r.restore_pool_bytes)),
        (
            "log order, median (s)",
            format!("{:.2}", r.log_order_median),
        ),
        (
            "single pass from sorted runs, median (s)",
            format!("{:.2}", r.sorted_runs_median),
        ),
        ("log order ÷ single pass", format!("{:.2}×", r.ratio)),
        (
            "restored databases",
            format!(
                "consistent, the same ({} history rows)",
                thousands(r.consistency.history_rows as f64)
            ),
        ),
    ] {
        t.row([k.to_string(), v]);
    }
    println!("{}", t.render());
    for n in &r.notes {
        println!("note: {n}");
    }
}

pub fn run(a: Args) -> Result<(), Failure> {
    sweep::databases_dir(a.dir.as_deref())?;
    let cfg = RestoreConfig {
        scale: a.scale,
        seconds: a.seconds,
        clients: a.clients,
        pool_pages: a.pool_pages,
        repeat: a.repeat,
        segment_kib: a.segment_kib,
        dir: a.dir.clone(),
        seed: a.seed,
    };
    cfg.validate().map_err(Failure::Usage)?;
    let pb = progress::bar(1000, "restore", a.json);
    let r = restore::run(&cfg, |p| {
        pb.set_position((p.done * 1000.0) as u64);
        pb.set_message(p.what.to_string());
    });
    pb.finish_and_clear();
    let r = r.map_err(|e| Failure::Runtime(e.to_string()))?;
    print(&r);
    if a.json {
        println!("{}", json_line(&r));
    }
    Ok(())
}
