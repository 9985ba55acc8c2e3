//! `sluice compare` with the peers built: SQLite and RocksDB run TPC-B and TATP, every
//! row is consistent and durable by the settings read back. Only with `--features peers`.
#![cfg(feature = "peers")]

use crate::common;
use common::sluice;

fn rows(args: &[&str]) -> Vec<serde_json::Value> {
    let data = tempfile::tempdir_in(".").unwrap();
    let mut all = args.to_vec();
    all.extend([
        "--clients",
        "4",
        "--seconds",
        "0.4",
        "--warmup",
        "0",
        "--json",
        "--dir",
        data.path().to_str().unwrap(),
    ]);
    let o = sluice(&all);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn assert_all_ran(rows: &[serde_json::Value], engines: &[&str]) {
    assert_eq!(rows.len(), engines.len(), "{rows:?}");
    for (r, e) in rows.iter().zip(engines) {
        assert_eq!(r["engine"], *e);
        assert_eq!(r["available"], true, "{r}");
        assert_eq!(r["consistent"], true, "{r}");
        assert_eq!(r["durable"], true, "{r}");
        assert!(r["tps"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["ratio_to_sluice"].as_f64().is_some(), "{r}");
    }
}

#[test]
fn tpcb_runs_on_sqlite_and_rocksdb() {
    let r = rows(&[
        "compare",
        "tpcb",
        "--engines",
        "sluice,sqlite,rocksdb",
        "--scale",
        "1",
    ]);
    assert_all_ran(&r, &["sluice", "sqlite", "rocksdb"]);
}

#[test]
fn tatp_runs_on_sqlite_and_rocksdb() {
    let r = rows(&[
        "compare",
        "tatp",
        "--engines",
        "rocksdb,sluice,sqlite",
        "--subscribers",
        "5000",
    ]);
    assert_all_ran(&r, &["rocksdb", "sluice", "sqlite"]);
}
