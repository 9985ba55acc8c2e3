//! `sluice compare replicated`: a three-node sluice cluster against a three-member etcd
//! cluster (the Raft-replicated store people already run), both on 127.0.0.1, both
//! started and stopped by this command (throwaway directories; killed on Ctrl-C too),
//! with the same write workload — C clients, each with one put of a fresh key in flight
//! — and the same durability: etcd fsyncs its WAL before it acknowledges, and a sluice
//! write is acknowledged once it is durable on a majority and applied. Both run on plain
//! TCP (etcd's default), in alternating rounds: the order flips every round so the
//! machine's drift hits both. Prints tps and p50/p99 for each and their ratio.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::bench_replicated::value;
use crate::cluster::{runtime, Procs};
use crate::Failure;

/// What one engine did over every round.
struct Row {
    name: &'static str,
    done: u64,
    seconds: f64,
    hist: Histogram<u64>,
    note: Option<String>,
}

impl Row {
    fn new(name: &'static str) -> Row {
        Row {
            name,
            done: 0,
            seconds: 0.0,
            hist: Histogram::new_with_bounds(1, 60_000_000, 3).expect("bounds"),
            note: None,
        }
    }
    fn tps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.done as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// The settings `sluice compare replicated` takes from `sluice compare`'s flags.
pub struct Settings {
    pub clients: usize,
    pub seconds: f64,
    pub warmup: f64,
    pub rounds: usize,
    pub json: bool,
}

type WriteFn = Arc<
    dyn Fn(usize, u64) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>
        + Send
        + Sync,
>;

/// Runs `clients` writers of `write` for `seconds`; returns (writes done, elapsed, latencies).
async fn drive(
    clients: usize,
    seconds: f64,
    write: WriteFn,
    seq0: u64,
) -> (u64, f64, Histogram<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (stop, write) = (stop.clone(), write.clone());
        tasks.push(tokio::spawn(async move {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
            let mut seq = seq0;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                if write(c, seq).await {
                    let _ = h.record(t.elapsed().as_micros().max(1) as u64);
                }
                seq += 1;
            }
            h
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
    for t in tasks {
        if let Ok(h) = t.await {
            all.add(&h).expect("same bounds");
        }
    }
    (all.len(), t0.elapsed().as_secs_f64(), all)
}

pub fn run(s: Settings) -> Result<(), Failure> {
    if s.clients == 0 || s.clients > 4096 {
        return Err(Failure::Usage(format!(
            "--clients {}: must be 1 to 4096",
            s.clients
        )));
    }
    if s.rounds == 0 {
        return Err(Failure::Usage("--rounds: at least 1".into()));
    }
    let rt = runtime()?;
    let tmp = tempfile::tempdir()?;
    sluice_bench::compare::cleanup::install();
    sluice_bench::compare::cleanup::register_dir(tmp.path());
    let procs = Procs::launch(&tmp.path().join("sluice"), 3, true)?;
    let client = Arc::new(procs.client()?);
    procs
        .wait_leader(&rt, &client, Duration::from_secs(30))
        .ok_or_else(|| {
            Failure::Runtime("the sluice cluster elected no leader within 30 s".into())
        })?;
    let sluice_write: WriteFn = {
        let client = client.clone();
        Arc::new(move |c, seq| {
            let client = client.clone();
            Box::pin(async move {
                let k = format!("c{c:04}-{seq:010}");
                client
                    .write(sluice_raft::Batch::new().put(k, value(seq, 100)))
                    .await
                    .is_ok()
            })
        })
    };
    let etcd = etcd::start(&rt, &tmp.path().join("etcd"));
    let (etcd_write, _etcd_cluster, etcd_note) = match etcd {
        Ok((w, cluster)) => (Some(w), Some(cluster), None),
        Err(note) => (None, None, Some(note)),
    };
    let mut rows = [Row::new("sluice (3 nodes)"), Row::new("etcd (3 members)")];
    rows[1].note = etcd_note;
    let per_round = s.seconds / s.rounds as f64;
    let pb = crate::progress::bar((s.rounds * 2) as u64, "replicated rounds", s.json);
    let mut seq0 = 0u64;
    for round in 0..s.rounds {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let w = match i {
                0 => Some(sluice_write.clone()),
                _ => etcd_write.clone(),
            };
            if let Some(w) = w {
                if s.warmup > 0.0 {
                    rt.block_on(drive(s.clients, s.warmup, w.clone(), seq0));
                    seq0 += 1 << 32;
                }
                let (n, secs, h) = rt.block_on(drive(s.clients, per_round, w, seq0));
                seq0 += 1 << 32;
                rows[i].done += n;
                rows[i].seconds += secs;
                rows[i].hist.add(&h).expect("same bounds");
            }
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    drop(procs);
    drop(_etcd_cluster);
    let ratio = if rows[1].tps() > 0.0 {
        Some(rows[0].tps() / rows[1].tps())
    } else {
        None
    };
    if s.json {
        for r in &rows {
            println!(
                "{}",
                serde_json::json!({
                    "engine": r.name, "writes": r.done, "seconds": r.seconds, "tps": r.tps(),
                    "p50_ms": r.hist.value_at_quantile(0.5) as f64 / 1000.0,
                    "p99_ms": r.hist.value_at_quantile(0.99) as f64 / 1000.0,
                    "note": r.note,
                })
            );
        }
        println!("{}", serde_json::json!({ "sluice_over_etcd": ratio }));
        return Ok(());
    }
    println!(
        "replicated writes, {} clients, {} round(s) of {:.1} s each per engine, plain TCP on 127.0.0.1, every write durable on a majority",
        s.clients, s.rounds, per_round
    );
    println!(
        "{:<18}  {:>10}  {:>10}  {:>8}  {:>8}",
        "engine", "writes", "tps", "p50 ms", "p99 ms"
    );
    for r in &rows {
        match &r.note {
            Some(n) => println!("{:<18}  {n}", r.name),
            None => println!(
                "{:<18}  {:>10}  {:>10.0}  {:>8.2}  {:>8.2}",
                r.name,
                r.done,
                r.tps(),
                r.hist.value_at_quantile(0.5) as f64 / 1000.0,
                r.hist.value_at_quantile(0.99) as f64 / 1000.0
            ),
        }
    }
    if let Some(x) = ratio {
        println!("sluice ÷ etcd throughput: {x:.2}×");
    }
    Ok(())
}

/// etcd's member processes, killed when dropped.
pub struct EtcdCluster {
    children: Vec<Child>,
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            sluice_bench::compare::cleanup::unregister_pid(c.id());
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts three etcd members in `dir`; returns their client endpoints.
fn launch_etcd(dir: &Path) -> Result<(EtcdCluster, Vec<String>), String> {
    if Command::new("etcd")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        return Err("etcd is not installed (Debian: apt-get install etcd-server)".into());
    }
    let p: Vec<u16> = crate::cluster::free_addrs(6)
        .map_err(|e| format!("{e:?}"))?
        .iter()
        .filter_map(|a| a.rsplit_once(':').and_then(|(_, p)| p.parse().ok()))
        .collect();
    let peer = |i: usize| format!("http://127.0.0.1:{}", p[3 + i]);
    let initial: String = (0..3)
        .map(|i| format!("e{i}={}", peer(i)))
        .collect::<Vec<_>>()
        .join(",");
    let mut cluster = EtcdCluster {
        children: Vec::new(),
    };
    let mut endpoints = Vec::new();
    for (i, client_port) in p[..3].iter().enumerate() {
        let client_url = format!("http://127.0.0.1:{client_port}");
        let log =
            std::fs::File::create(dir.join(format!("e{i}.log"))).map_err(|e| e.to_string())?;
        let child = Command::new("etcd")
            .args(["--name", &format!("e{i}")])
            .arg("--data-dir")
            .arg(dir.join(format!("e{i}")))
            .args([
                "--listen-client-urls",
                &client_url,
                "--advertise-client-urls",
                &client_url,
            ])
            .args([
                "--listen-peer-urls",
                &peer(i),
                "--initial-advertise-peer-urls",
                &peer(i),
            ])
            .args([
                "--initial-cluster",
                &initial,
                "--initial-cluster-state",
                "new",
            ])
            .args(["--initial-cluster-token", "sluice-compare"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting etcd: {e}"))?;
        sluice_bench::compare::cleanup::register_pid(child.id());
        cluster.children.push(child);
        endpoints.push(client_url);
    }
    Ok((cluster, endpoints))
}

#[cfg(feature = "peers")]
mod etcd {
    use super::*;

    /// Starts the etcd cluster and returns its write function; `Err`: the row's note.
    pub fn start(
        rt: &tokio::runtime::Runtime,
        dir: &Path,
    ) -> Result<(WriteFn, EtcdCluster), String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let (cluster, endpoints) = launch_etcd(dir)?;
        let client = rt.block_on(async {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                match etcd_client::Client::connect(&endpoints, None).await {
                    Ok(mut c) => {
                        if c.put("sluice-compare-ready", "1", None).await.is_ok() {
                            return Ok(c);
                        }
                    }
                    Err(e) if Instant::now() > deadline => {
                        return Err(format!("etcd did not come up within 30 s: {e}"))
                    }
                    Err(_) => {}
                }
                if Instant::now() > deadline {
                    return Err("etcd did not accept a write within 30 s".to_string());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })?;
        let w: WriteFn = Arc::new(move |c, seq| {
            let mut kv = client.kv_client();
            Box::pin(async move {
                let k = format!("c{c:04}-{seq:010}");
                kv.put(k, value(seq, 100), None).await.is_ok()
            })
        });
        Ok((w, cluster))
    }
}

#[cfg(not(feature = "peers"))]
mod etcd {
    use super::*;

    /// Without the `peers` feature there is no etcd client in this build.
    pub fn start(
        _rt: &tokio::runtime::Runtime,
        _dir: &Path,
    ) -> Result<(WriteFn, EtcdCluster), String> {
        let _ = launch_etcd;
        Err(format!(
            "not in this build; build it with: {}",
            sluice_bench::compare::BUILD_PEERS
        ))
    }
}
