//! `bench partition --log-managers K --inserts-per-txn N` and `measure-lmax`: vertical
//! log partitioning (Tandem §5, Tables 2–4), and the ceiling of one log manager.
//!
//! The database is a [`Partitioned`] one with `K` log managers; each partition holds one
//! table (a log generator), and each transaction inserts `N` rows, row `j` into table
//! `j mod K`, so every log gets an equal share. Each log directory sits behind its own
//! emulated device ([`DeviceModel`]: a write-bandwidth cap that one log manager
//! saturates); every file lies in memory (tmpfs, `/dev/shm`, where the machine has it),
//! so the devices are the model, not the host's disk. Client threads run the transactions in
//! a closed loop. Reported per run, in the paper's terms (§5): G_i (the log bytes
//! generator i writes per transaction — its share of the log without the commit
//! records), R (transactions per second), L_i (each log's rate), c (bytes of a commit
//! record as it lies in the coordinator's log: its 16-byte frame header and 8-byte
//! alignment included, as every record's bytes count in L_i, so that
//! L = R·(Σ G_i + c) holds exactly), L (the aggregate log rate), CPU per transaction and
//! the response time.
//!
//! With [`VerticalConfig::dir`] the database and its logs lie in a directory of the
//! caller's (a real log device) instead; `measure-lmax --dir` and `plan --measure`
//! measure the user's own device that way.

use crate::knobs::in_range;
use crate::metrics::{self, Latency};
use hdrhistogram::Histogram;
use serde::Serialize;
use sluice::{Options, Partitioned, PartitionedTable};
use sluice_storage::{DeviceModel, DeviceProfile, OsStorage, Storage};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct VerticalConfig {
    /// Log managers (partitions, one table each).
    pub log_managers: usize,
    /// Rows each transaction inserts.
    pub inserts_per_txn: usize,
    /// Value bytes per row.
    pub row_bytes: usize,
    /// Client threads.
    pub clients: usize,
    /// Unmeasured warm-up.
    pub warmup: Duration,
    /// Measured time.
    pub duration: Duration,
    /// Each log device's write bandwidth cap, bytes per second (`None`: no emulated
    /// device, the storage itself).
    pub device_bytes_per_sec: Option<u64>,
    /// Where the database and its logs go (a fresh temporary directory inside it, on the
    /// real disk); `None`: memory (tmpfs), each log behind its emulated device.
    pub dir: Option<std::path::PathBuf>,
}

impl Default for VerticalConfig {
    fn default() -> Self {
        VerticalConfig {
            log_managers: 1,
            inserts_per_txn: 100,
            row_bytes: 100,
            clients: 16,
            warmup: Duration::from_secs(3),
            duration: Duration::from_secs(4),
            device_bytes_per_sec: Some(4_000_000),
            dir: None,
        }
    }
}

/// What a run measured (one row of Tandem's Tables 2–4).
#[derive(Debug, Clone, Serialize)]
pub struct VerticalResult {
    /// Log managers.
    pub log_managers: usize,
    /// Rows inserted per transaction.
    pub inserts_per_txn: usize,
    /// Log generators (tables), one per partition.
    pub generators: usize,
    /// G_i: each generator's log bytes per transaction (its log's bytes, less the commit
    /// records in partition 0's, ÷ commits), frames included.
    pub log_bytes_per_txn_each: Vec<f64>,
    /// L / R: log bytes per transaction over all logs, commit records included.
    pub log_bytes_per_txn: f64,
    /// Client threads.
    pub clients: usize,
    /// R: committed transactions per second.
    pub tps: f64,
    /// L: the aggregate log rate, MB/s (10^6 bytes).
    pub log_mb_per_s: f64,
    /// L_i: each log's rate, MB/s.
    pub log_mb_per_s_each: Vec<f64>,
    /// c: mean bytes of a commit record as it lies in the coordinator's log, its frame
    /// (16-byte header, 8-byte alignment) included.
    pub commit_record_bytes: f64,
    /// Commits that went through the coordinator ÷ all commits.
    pub coordinated_share: f64,
    /// Process CPU time per committed transaction, µs (all threads).
    pub cpu_us_per_txn: f64,
    /// Response time (begin to acknowledged commit).
    #[serde(flatten)]
    pub latency: Latency,
    /// The device cap each log was under, MB/s (`None`: uncapped).
    pub device_mb_per_s: Option<f64>,
    /// Bytes the logs zero-filled (new segment files) ÷ bytes they wrote, while measured.
    pub zero_filled_share: f64,
    /// Segment files the logs reused instead of zero-filling new ones (whole run).
    pub segments_recycled: u64,
    /// Where each log starts at the end of the run, MiB (how far it was truncated).
    pub log_start_mib: Vec<f64>,
}

fn key(client: usize, txn: u64, j: usize) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&(client as u32).to_be_bytes());
    k[4..12].copy_from_slice(&txn.to_be_bytes());
    k[12..].copy_from_slice(&(j as u32).to_be_bytes());
    k
}

/// Runs one configuration. `tick` gets the fraction of time elapsed.
pub fn run(cfg: &VerticalConfig, mut tick: impl FnMut(f64)) -> Result<VerticalResult, String> {
    in_range("log managers", cfg.log_managers, 1..)?;
    in_range("inserts per transaction", cfg.inserts_per_txn, 1..)?;
    in_range("clients", cfg.clients, 1..)?;
    // Memory-backed files (tmpfs where there is one): the devices are the model. Or the
    // caller's directory: its device is what is measured.
    let tmp = match (&cfg.dir, std::path::Path::new("/dev/shm").is_dir()) {
        (Some(d), _) => tempfile::Builder::new()
            .prefix("sluice-lmax-")
            .tempdir_in(d),
        (None, true) => tempfile::tempdir_in("/dev/shm"),
        (None, false) => tempfile::tempdir(),
    }
    .map_err(|e| format!("temporary directory: {e}"))?;
    let disk = OsStorage::new();
    let device = cfg.device_bytes_per_sec.map(|b| DeviceProfile {
        // The emulated device's sync costs something; the real disk's costs what it costs.
        sync_latency: if cfg.dir.is_some() {
            Duration::ZERO
        } else {
            Duration::from_micros(50)
        },
        bandwidth_bytes_per_sec: Some(b),
        ..DeviceProfile::none()
    });
    // Room for every row a run inserts: the measurement is of the logs, not of
    // eviction. Small segments and frequent checkpoints, so that the log is truncated
    // and new segments can be recycled files rather than zero-filled ones (zero-filling
    // loads each log device too; `zero_filled_share` reports how much of it there was).
    let mut o = Options {
        pool_pages: 32 << 10,
        checkpoint_log_bytes: 2 << 20,
        ..Options::default()
    };
    o.log.segment_bytes = 1 << 20;
    let mut b = Partitioned::builder(tmp.path().join("db"))
        .log_managers(cfg.log_managers)
        .options(o)
        .storage(Arc::new(disk.clone()));
    for i in 0..cfg.log_managers {
        b = b
            .log_dir(i, tmp.path().join(format!("dev{i}")))
            .log_storage(
                i,
                match device {
                    Some(d) => Arc::new(DeviceModel::new(disk.clone(), d)) as Arc<dyn Storage>,
                    None => Arc::new(disk.clone()) as Arc<dyn Storage>,
                },
            )
            .assign(&format!("g{i}"), i);
    }
    let db = b.open().map_err(|e| e.to_string())?;
    let tables: Vec<PartitionedTable> = (0..cfg.log_managers)
        .map(|i| db.create_table(&format!("g{i}")))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let measuring = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let committed = AtomicU64::new(0);
    let hist = Mutex::new(Histogram::<u64>::new(3).expect("histogram"));
    let error = Mutex::new(None::<String>);
    let value = vec![0x5au8; cfg.row_bytes];
    let mut before = None;
    let mut zero0 = (0, 0);
    std::thread::scope(|s| {
        for c in 0..cfg.clients {
            let (db, tables, value) = (&db, &tables, &value);
            let (measuring, stop, committed, hist, error) =
                (&measuring, &stop, &committed, &hist, &error);
            s.spawn(move || {
                let mut mine = Histogram::<u64>::new(3).expect("histogram");
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    let mut tx = db.begin();
                    let r = (0..cfg.inserts_per_txn)
                        .try_for_each(|j| {
                            tx.put(&tables[j % tables.len()], key(c, n, j), value)
                                .map(drop)
                        })
                        .and_then(|()| tx.commit());
                    n += 1;
                    if let Err(e) = r {
                        error.lock().unwrap().get_or_insert(e.to_string());
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    if measuring.load(Ordering::Relaxed) {
                        committed.fetch_add(1, Ordering::Relaxed);
                        let _ = mine.record(t0.elapsed().as_micros() as u64);
                    }
                }
                let _ = hist.lock().unwrap().add(&mine);
            });
        }
        std::thread::sleep(cfg.warmup);
        let lsns: Vec<u64> = (0..cfg.log_managers)
            .map(|i| db.partition(i).log().durable_lsn().0)
            .collect();
        zero0 = zero_and_written(&db);
        before = Some((Instant::now(), metrics::Usage::now(), lsns, db.stats()));
        measuring.store(true, Ordering::Relaxed);
        let start = Instant::now();
        while start.elapsed() < cfg.duration && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            tick(start.elapsed().as_secs_f64() / cfg.duration.as_secs_f64());
        }
        measuring.store(false, Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
    });
    if let Some(e) = error.into_inner().unwrap() {
        return Err(format!("a transaction failed: {e}"));
    }
    let (t0, u0, lsn0, s0) = before.expect("measured");
    let secs = t0.elapsed().as_secs_f64();
    let cpu = metrics::Usage::now().since(&u0).cpu;
    let s1 = db.stats();
    let bytes: Vec<u64> = (0..cfg.log_managers)
        .map(|i| db.partition(i).log().durable_lsn().0 - lsn0[i])
        .collect();
    let each: Vec<f64> = bytes.iter().map(|&b| b as f64 / secs / 1e6).collect();
    let txns = committed.load(Ordering::Relaxed);
    let commits =
        (s1.coordinated_commits + s1.local_commits) - (s0.coordinated_commits + s0.local_commits);
    let commit_bytes = s1.commit_record_bytes - s0.commit_record_bytes;
    let g_each = generator_bytes_per_txn(&bytes, commit_bytes, commits);
    let h = hist.into_inner().unwrap();
    let zero1 = zero_and_written(&db);
    let r = VerticalResult {
        log_managers: cfg.log_managers,
        inserts_per_txn: cfg.inserts_per_txn,
        generators: cfg.log_managers,
        log_bytes_per_txn: bytes.iter().sum::<u64>() as f64 / commits.max(1) as f64,
        log_bytes_per_txn_each: g_each,
        clients: cfg.clients,
        tps: txns as f64 / secs,
        log_mb_per_s: each.iter().sum(),
        log_mb_per_s_each: each,
        commit_record_bytes: commit_bytes as f64 / commits.max(1) as f64,
        coordinated_share: (s1.coordinated_commits - s0.coordinated_commits) as f64
            / commits.max(1) as f64,
        cpu_us_per_txn: cpu.as_secs_f64() * 1e6 / txns.max(1) as f64,
        latency: Latency::of(&h),
        device_mb_per_s: cfg.device_bytes_per_sec.map(|b| b as f64 / 1e6),
        zero_filled_share: (zero1.0 - zero0.0) as f64 / (zero1.1 - zero0.1).max(1) as f64,
        segments_recycled: (0..cfg.log_managers)
            .map(|i| db.partition(i).log().stats().segments_recycled)
            .sum(),
        log_start_mib: (0..cfg.log_managers)
            .map(|i| db.partition(i).log().start_lsn().0 as f64 / (1 << 20) as f64)
            .collect(),
    };
    db.close().map_err(|e| e.to_string())?;
    Ok(r)
}

/// G_i, the paper's log bytes per transaction of each generator: each log's bytes over
/// the commits, partition 0's less the commit records it holds (the paper counts those
/// apart, as R·c). Frames count as they lie in the log.
pub fn generator_bytes_per_txn(log_bytes: &[u64], commit_bytes: u64, commits: u64) -> Vec<f64> {
    let n = commits.max(1) as f64;
    log_bytes
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let own = if i == 0 {
                b.saturating_sub(commit_bytes)
            } else {
                b
            };
            own as f64 / n
        })
        .collect()
}

/// Bytes zero-filled and bytes written, over every log.
fn zero_and_written(db: &Partitioned) -> (u64, u64) {
    (0..db.log_managers())
        .map(|i| db.partition(i).log().stats())
        .fold((0, 0), |(z, w), s| {
            (z + s.bytes_zero_filled, w + s.bytes_written)
        })
}

/// One step of `measure-lmax`.
#[derive(Debug, Clone, Serialize)]
pub struct LmaxStep {
    /// Generators (client threads inserting), all into one log manager.
    pub generators: usize,
    /// The log rate, MB/s.
    pub log_mb_per_s: f64,
    /// Transactions per second.
    pub tps: f64,
    /// L / R: log bytes per transaction, commit records included.
    pub log_bytes_per_txn: f64,
    /// c: bytes of a commit record in the log (frame included).
    pub commit_record_bytes: f64,
}

/// What `measure-lmax` found.
#[derive(Debug, Clone, Serialize)]
pub struct LmaxResult {
    /// Each step, generators doubling.
    pub steps: Vec<LmaxStep>,
    /// Lmax: the highest log rate one log manager sustained, MB/s.
    pub lmax_mb_per_s: f64,
    /// Generators at which the rate stopped rising (by less than `min_gain`).
    pub saturated_at: Option<usize>,
    /// L / R at the step that reached Lmax: the bytes per transaction this Lmax is for
    /// (the paper: Lmax depends on it).
    pub log_bytes_per_txn: f64,
    /// c at that step, bytes.
    pub commit_record_bytes: f64,
}

/// Adds generators (doubling, up to `max_generators`) to one log manager until the log
/// rate rises by less than `min_gain` (e.g. 0.05) over the step before.
pub fn measure_lmax(
    base: &VerticalConfig,
    max_generators: usize,
    min_gain: f64,
    mut on_step: impl FnMut(&LmaxStep),
) -> Result<LmaxResult, String> {
    in_range("max generators", max_generators, 1..)?;
    let mut steps: Vec<LmaxStep> = Vec::new();
    let mut saturated_at = None;
    let mut g = 1;
    while g <= max_generators {
        let cfg = VerticalConfig {
            log_managers: 1,
            clients: g,
            ..base.clone()
        };
        let r = run(&cfg, |_| {})?;
        let step = LmaxStep {
            generators: g,
            log_mb_per_s: r.log_mb_per_s,
            tps: r.tps,
            log_bytes_per_txn: r.log_bytes_per_txn,
            commit_record_bytes: r.commit_record_bytes,
        };
        on_step(&step);
        let rising = steps
            .last()
            .is_none_or(|p| step.log_mb_per_s > p.log_mb_per_s * (1.0 + min_gain));
        steps.push(step);
        if !rising {
            saturated_at = Some(g);
            break;
        }
        g *= 2;
    }
    let best = steps
        .iter()
        .max_by(|a, b| a.log_mb_per_s.total_cmp(&b.log_mb_per_s))
        .expect("max_generators ≥ 1: at least one step")
        .clone();
    Ok(LmaxResult {
        steps,
        lmax_mb_per_s: best.log_mb_per_s,
        saturated_at,
        log_bytes_per_txn: best.log_bytes_per_txn,
        commit_record_bytes: best.commit_record_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_fills_every_column() {
        for k in [1, 2] {
            let r = run(
                &VerticalConfig {
                    log_managers: k,
                    inserts_per_txn: 10,
                    clients: 4,
                    warmup: Duration::from_millis(50),
                    duration: Duration::from_millis(300),
                    device_bytes_per_sec: Some(50_000_000),
                    ..VerticalConfig::default()
                },
                |_| {},
            )
            .unwrap();
            assert!(r.tps > 0.0, "{r:?}");
            assert_eq!(r.log_mb_per_s_each.len(), k);
            assert!(r.log_mb_per_s_each.iter().all(|&l| l > 0.0), "{r:?}");
            assert!(r.commit_record_bytes > 0.0, "{r:?}");
            // With two logs every transaction's rows span both: all through the
            // coordinator; with one, none.
            assert_eq!(r.coordinated_share, if k == 1 { 0.0 } else { 1.0 }, "{r:?}");
            assert!(r.latency.p50_us > 0 && r.cpu_us_per_txn > 0.0, "{r:?}");
            // The columns add up as the paper's model says: L/R = Σ G_i + c.
            let sum_g: f64 = r.log_bytes_per_txn_each.iter().sum();
            let per_txn = sum_g + r.commit_record_bytes;
            assert!(
                (per_txn - r.log_bytes_per_txn).abs() < 1e-6 * r.log_bytes_per_txn,
                "{r:?}"
            );
            // Ten 100-byte rows: each generator's share is about its rows' bytes.
            assert!(sum_g > 1000.0, "{r:?}");
        }
    }

    #[test]
    fn g_leaves_the_commit_records_out_of_the_coordinators_log() {
        // Two logs of 10,000 and 8,000 bytes over 10 commits whose records took 500.
        let g = generator_bytes_per_txn(&[10_000, 8_000], 500, 10);
        assert_eq!(g, vec![950.0, 800.0]);
        // No commits: no division by zero.
        assert_eq!(generator_bytes_per_txn(&[0], 0, 0), vec![0.0]);
    }
}
