//! `sluice bench replicated`: write batches from C clients against a cluster of node
//! processes on 127.0.0.1 (started and stopped by the command, in a temporary directory
//! unless `--dir` is given); throughput and latency at the leader; then every
//! acknowledged write is checked on every node.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;
use sluice_raft::{Batch, Client, Consistency, NodeId};

use crate::cluster::{runtime, thread_args, Procs};
use crate::Failure;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Nodes in the cluster (1 to 9).
    #[arg(long, default_value_t = 3)]
    nodes: u64,
    /// Concurrent clients, each with one write in flight at a time.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Seconds of load.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Puts per batch.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Bytes per value.
    #[arg(long, default_value_t = 100)]
    value_bytes: usize,
    /// Plain TCP without authentication (loopback experiments only).
    #[arg(long)]
    insecure: bool,
    /// Keep the cluster's directory here (default: a temporary one, removed).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// One JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Runtime threads of each node process (`cluster node --threads`; its default if
    /// not given).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    node_threads: Option<u16>,
}

/// What a run measured and checked.
#[derive(Debug, Serialize)]
pub struct Report {
    pub nodes: u64,
    pub clients: usize,
    pub batch: usize,
    pub seconds: f64,
    pub acknowledged: u64,
    pub tps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub failed: u64,
    pub unknown: u64,
    pub missing: u64,
    pub diverged: u64,
    pub security: &'static str,
}

pub fn run(a: Args) -> Result<(), Failure> {
    if a.clients == 0 || a.clients > 4096 {
        return Err(Failure::Usage(format!(
            "--clients {}: must be 1 to 4096",
            a.clients
        )));
    }
    if !(a.seconds > 0.0 && a.seconds <= 3600.0) {
        return Err(Failure::Usage(format!(
            "--seconds {}: must be more than 0 and at most 3600",
            a.seconds
        )));
    }
    if a.batch == 0 || a.batch > 1000 {
        return Err(Failure::Usage(format!(
            "--batch {}: must be 1 to 1000",
            a.batch
        )));
    }
    if a.value_bytes > 64 << 10 {
        return Err(Failure::Usage(format!(
            "--value-bytes {}: at most 65536",
            a.value_bytes
        )));
    }
    let tmp;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let report = measure(&a, &dir)?;
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "replicated writes: {} nodes ({}), {} clients, {} put(s) of {} B per batch, {:.1} s",
            report.nodes,
            report.security,
            report.clients,
            report.batch,
            a.value_bytes,
            report.seconds
        );
        println!(
            "{:>12}  {:>10}  {:>8}  {:>8}",
            "acknowledged", "tps", "p50 ms", "p99 ms"
        );
        println!(
            "{:>12}  {:>10.0}  {:>8.2}  {:>8.2}",
            report.acknowledged, report.tps, report.p50_ms, report.p99_ms
        );
        println!(
            "checked on every node: {} missing, {} diverged; {} writes failed, {} of unknown outcome",
            report.missing, report.diverged, report.failed, report.unknown
        );
    }
    if report.missing > 0 || report.diverged > 0 {
        return Err(Failure::Runtime(format!(
            "{} acknowledged write(s) missing, {} node(s) diverged",
            report.missing, report.diverged
        )));
    }
    Ok(())
}

/// One client's record: the keys it wrote, acknowledged, with their values' seed.
struct Acks {
    keys: Vec<(Vec<u8>, u64)>,
    last_index: u64,
    hist: Histogram<u64>,
    failed: u64,
    unknown: u64,
}

pub fn value(seed: u64, len: usize) -> Vec<u8> {
    let mut v = seed.to_le_bytes().repeat(len / 8 + 1);
    v.truncate(len);
    v
}

pub fn measure(a: &Args, dir: &std::path::Path) -> Result<Report, Failure> {
    let rt = runtime()?;
    let mut procs = Procs::launch_with(dir, a.nodes, a.insecure, thread_args(a.node_threads))?;
    let client = Arc::new(procs.client()?);
    procs
        .wait_leader(&rt, &client, Duration::from_secs(30))
        .ok_or_else(|| Failure::Runtime("no leader was elected within 30 s".into()))?;
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let quiet = a.json;
    let seconds = a.seconds;
    let results = crate::progress::fraction("replicated writes", quiet, |tick| {
        rt.block_on(async {
            let mut tasks = Vec::new();
            for c in 0..a.clients {
                let (client, stop) = (client.clone(), stop.clone());
                let (batch, value_bytes) = (a.batch, a.value_bytes);
                tasks.push(tokio::spawn(async move {
                    let mut acks = Acks {
                        keys: Vec::new(),
                        last_index: 0,
                        hist: Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"),
                        failed: 0,
                        unknown: 0,
                    };
                    let mut seq = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let mut b = Batch::new();
                        let mut keys = Vec::with_capacity(batch);
                        for _ in 0..batch {
                            let k = format!("c{c:04}-{seq:010}").into_bytes();
                            let s = (c as u64) << 40 | seq;
                            b = b.put(k.clone(), value(s, value_bytes));
                            keys.push((k, s));
                            seq += 1;
                        }
                        let t = Instant::now();
                        match client.write(b).await {
                            Ok(w) => {
                                let _ = acks.hist.record(t.elapsed().as_micros().max(1) as u64);
                                acks.last_index = acks.last_index.max(w.log_id.index());
                                acks.keys.extend(keys);
                            }
                            Err(sluice_raft::ClientError::Unknown(_)) => acks.unknown += 1,
                            Err(_) => acks.failed += 1,
                        }
                    }
                    acks
                }));
            }
            while started.elapsed().as_secs_f64() < seconds {
                tick(started.elapsed().as_secs_f64() / seconds);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            stop.store(true, Ordering::Relaxed);
            let mut all = Vec::new();
            for t in tasks {
                all.push(t.await.map_err(|e| Failure::Runtime(e.to_string()))?);
            }
            Ok::<_, Failure>(all)
        })
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("valid bounds");
    let (mut acked, mut failed, mut unknown, mut last) = (0u64, 0u64, 0u64, 0u64);
    let mut expected: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for r in &results {
        hist.add(&r.hist).expect("same bounds");
        acked += r.hist.len();
        failed += r.failed;
        unknown += r.unknown;
        last = last.max(r.last_index);
        for (k, s) in &r.keys {
            expected.insert(k.clone(), *s);
        }
    }
    let Checked {
        missing,
        diverged,
        report,
    } = check(&rt, &procs, &client, &expected, a.value_bytes, last)?;
    for line in &report {
        eprintln!("{line}");
    }
    procs.stop();
    Ok(Report {
        nodes: a.nodes,
        clients: a.clients,
        batch: a.batch,
        seconds: elapsed,
        acknowledged: acked,
        tps: acked as f64 / elapsed,
        p50_ms: hist.value_at_quantile(0.5) as f64 / 1000.0,
        p99_ms: hist.value_at_quantile(0.99) as f64 / 1000.0,
        failed,
        unknown,
        missing,
        diverged,
        security: if a.insecure {
            "plain TCP"
        } else {
            "mutual TLS"
        },
    })
}

/// What [`check`] found.
pub struct Checked {
    /// Acknowledged writes missing (or with another value) on at least one node.
    pub missing: u64,
    /// Nodes whose data differs from the first node's.
    pub diverged: u64,
    /// One line per node that lacks a write or differs: its id, applied index, key
    /// count and the first missing keys.
    pub report: Vec<String>,
}

/// Waits until every running node has applied up to `last`, then checks that each holds
/// every acknowledged write with its value, and that all hold the same data.
pub fn check(
    rt: &tokio::runtime::Runtime,
    procs: &Procs,
    client: &Client,
    expected: &BTreeMap<Vec<u8>, u64>,
    value_bytes: usize,
    last: u64,
) -> Result<Checked, Failure> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let running: Vec<(NodeId, String)> = procs
        .file
        .nodes
        .iter()
        .filter(|(id, _)| procs.children.contains_key(id))
        .map(|(i, a)| (*i, a.clone()))
        .collect();
    for (id, addr) in &running {
        loop {
            let applied = rt
                .block_on(client.status_at(addr))
                .ok()
                .and_then(|s| s.applied_index);
            if applied.is_some_and(|i| i >= last) {
                break;
            }
            if Instant::now() > deadline {
                return Err(Failure::Runtime(format!(
                    "node {id} did not apply up to index {last} within 60 s"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut missing_keys = std::collections::BTreeSet::new();
    let mut diverged = 0u64;
    let mut report = Vec::new();
    let mut first: Option<Vec<(Vec<u8>, Vec<u8>)>> = None;
    for (id, addr) in &running {
        let dump = rt
            .block_on(client.dump_at(addr, Consistency::Local))
            .map_err(|e| Failure::Runtime(format!("node {id}: {e}")))?;
        let have: BTreeMap<&[u8], &[u8]> = dump
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
            .collect();
        let mut missing_here = Vec::new();
        for (k, s) in expected {
            if have.get(k.as_slice()) != Some(&value(*s, value_bytes).as_slice()) {
                missing_keys.insert(k.clone());
                missing_here.push(String::from_utf8_lossy(k).into_owned());
            }
        }
        let differs = match &first {
            None => {
                first = Some(dump.clone());
                false
            }
            Some(f) => *f != dump,
        };
        if differs {
            diverged += 1;
        }
        if differs || !missing_here.is_empty() {
            let status = rt.block_on(client.status_at(addr)).ok();
            report.push(format!(
                "node {id}: applied {:?}, last log {:?}, {} keys, {} acknowledged writes missing{}{}",
                status.as_ref().and_then(|s| s.applied_index),
                status.as_ref().and_then(|s| s.last_log_index),
                dump.len(),
                missing_here.len(),
                if missing_here.is_empty() { "" } else { ": " },
                missing_here.iter().take(8).cloned().collect::<Vec<_>>().join(", "),
            ));
        }
    }
    Ok(Checked {
        missing: missing_keys.len() as u64,
        diverged,
        report,
    })
}
