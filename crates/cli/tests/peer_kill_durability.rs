//! Peer durability is verified, not assumed (issue 10, item 7): a SQLite and a RocksDB
//! TPC-B child process (the real `sluice` binary, `peer-child`) prints each commit its
//! engine acknowledged; it is SIGKILLed mid-run, the database is reopened, and every
//! acknowledged commit must be there and the TPC-B identities must hold.
//!
//! A process kill leaves the page cache alone, so this shows that acknowledged commits
//! are in the engine's log when it says so; that they are on the platter (power loss) is
//! the settings' job (`synchronous=FULL`, `WriteOptions::set_sync`), which `sluice
//! compare` reads back and reports.
//!
//! Only with `--features peers` (RocksDB's C++ takes minutes to build).
#![cfg(feature = "peers")]

use sluice_bench::compare::rocksdb::RocksTpcb;
use sluice_bench::compare::sqlite::SqliteTpcb;
use sluice_bench::compare::TpcbPeer;
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs the child on `dir` until it has acknowledged at least `acks` commits, kills it,
/// and returns every id it acknowledged (also those printed just before the kill).
fn run_and_kill(engine: &str, dir: &Path, acks: usize) -> Vec<u64> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["peer-child", "--engine", engine, "--clients", "4", "--dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the binary runs");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut ids = Vec::new();
    let t0 = Instant::now();
    while ids.len() < acks {
        let left = Duration::from_secs(120).saturating_sub(t0.elapsed());
        match rx.recv_timeout(left) {
            Ok(l) => {
                if let Some(id) = l.strip_prefix("ack ") {
                    ids.push(id.parse::<u64>().expect("an id"));
                }
            }
            Err(e) => {
                let _ = child.kill();
                panic!("{engine}: {} acks after {:?}: {e}", ids.len(), t0.elapsed());
            }
        }
    }
    child.kill().expect("SIGKILL"); // std's kill is SIGKILL on Unix
    child.wait().unwrap();
    reader.join().unwrap();
    // Lines the child wrote before it died are acknowledged commits too.
    ids.extend(
        rx.try_iter()
            .filter_map(|l| l.strip_prefix("ack ").map(|s| s.parse::<u64>().unwrap())),
    );
    ids
}

fn assert_survived(
    engine: &str,
    acked: &[u64],
    stored: Vec<u64>,
    c: sluice_bench::workloads::tpcb::Consistency,
) {
    let stored: HashSet<u64> = stored.into_iter().collect();
    let lost: Vec<&u64> = acked.iter().filter(|id| !stored.contains(id)).collect();
    assert!(
        lost.is_empty(),
        "{engine}: {} of {} acknowledged commits lost, e.g. {:?}",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(5)]
    );
    assert!(
        c.ok(),
        "{engine}: inconsistent after the kill: {:?}",
        c.violations
    );
    // Unacknowledged commits may or may not have survived, but nothing is invented.
    assert!(stored.len() >= acked.len());
}

#[test]
fn sqlite_keeps_every_acknowledged_commit_across_sigkill() {
    let dir = tempfile::tempdir_in(".").unwrap();
    for round in 0..2 {
        let acked = run_and_kill("sqlite", dir.path(), 200 + 100 * round);
        let db = SqliteTpcb::open(dir.path()).unwrap();
        let c = db.check(None).unwrap();
        assert_survived("sqlite", &acked, db.history_ids().unwrap(), c);
    }
}

#[test]
fn rocksdb_keeps_every_acknowledged_commit_across_sigkill() {
    let dir = tempfile::tempdir_in(".").unwrap();
    for round in 0..2 {
        let acked = run_and_kill("rocksdb", dir.path(), 200 + 100 * round);
        let db = RocksTpcb::open(dir.path()).unwrap();
        let c = db.check(None).unwrap();
        assert_survived("rocksdb", &acked, db.history_ids().unwrap(), c);
    }
}
