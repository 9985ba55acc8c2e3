//! The machine a report ran on: what the operating system says of it, and the sync
//! latency of the disk the experiments' databases went to, measured.

use crate::experiments::wal::{run, WalBenchConfig};
use crate::metrics::cores;
use serde::Serialize;
use sluice_wal::InsertVariant;
use std::path::Path;
use std::time::Duration;

/// The machine.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Logical CPUs available to the process.
    pub cores: usize,
    /// The processor, as /proc/cpuinfo names it.
    pub cpu: Option<String>,
    /// Memory, GiB, as /proc/meminfo says.
    pub memory_gib: Option<f64>,
    /// The kernel release.
    pub kernel: Option<String>,
    /// One writer appending a record and waiting for it to be durable, in a loop, for a
    /// second on the report's disk: the median append-to-durable latency, µs (one sync
    /// each, since nobody shares it).
    pub sync_p50_us: Option<u64>,
    /// The same run's 99th percentile, µs.
    pub sync_p99_us: Option<u64>,
    /// Why the sync latency is missing, when it is.
    pub sync_error: Option<String>,
}

impl Machine {
    /// Describes this machine, measuring the sync latency of the disk under `dir` (the
    /// current directory when `None`) for about a second.
    pub fn describe(dir: Option<&Path>) -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        });
        let memory_gib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<f64>().ok())
                .map(|kib| kib / (1024.0 * 1024.0))
        });
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|s| s.trim().to_string());
        let (sync_p50_us, sync_p99_us, sync_error) = match measure_sync(dir) {
            Ok((p50, p99)) => (Some(p50), Some(p99), None),
            Err(e) => (None, None, Some(e)),
        };
        Machine {
            cores: cores(),
            cpu,
            memory_gib,
            kernel,
            sync_p50_us,
            sync_p99_us,
            sync_error,
        }
    }
}

/// One writer's append-to-durable latency on the disk under `dir`, p50 and p99 in µs.
fn measure_sync(dir: Option<&Path>) -> Result<(u64, u64), String> {
    let parent = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(|e| e.to_string())?,
    };
    let tmp = tempfile::Builder::new()
        .prefix("sluice-report-sync-")
        .tempdir_in(&parent)
        .map_err(|e| format!("{}: {e}", parent.display()))?;
    let cfg = WalBenchConfig {
        threads: 1,
        record_bytes: 120,
        duration: Duration::from_secs(1),
        dir: Some(tmp.path().join("log")),
        variant: InsertVariant::Mutex,
    };
    let r = run(&cfg, |_| {}).map_err(|e| e.to_string())?;
    Ok((r.latency.p50_us, r.latency.p99_us))
}
