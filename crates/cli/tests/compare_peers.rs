//! `sluice compare` with the peers built: SQLite and RocksDB run TPC-B and TATP at each
//! of two client counts, every row is consistent and durable by the settings read back,
//! and each peer has exactly one best. Only with `--features peers`.
#![cfg(feature = "peers")]

use crate::common;
use common::sluice;

fn rows(args: &[&str]) -> Vec<serde_json::Value> {
    let data = tempfile::tempdir_in(".").unwrap();
    let mut all = args.to_vec();
    all.extend([
        "--clients",
        "4",
        "--peer-clients",
        "2,4",
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
    common::json_lines(&stdout)
}

/// Every row ran, in the order of `engines` (sluice once, each peer at 2 then 4
/// clients), and each peer's summary names one of its rows as its best.
fn assert_all_ran(objects: &[serde_json::Value], engines: &[&str]) {
    let (rows, summary): (Vec<_>, Vec<_>) = objects.iter().partition(|o| o.get("engine").is_some());
    let want: Vec<(&str, u64)> = engines
        .iter()
        .flat_map(|&e| match e {
            "sluice" => vec![(e, 4)],
            _ => vec![(e, 2), (e, 4)],
        })
        .collect();
    let got: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["engine"].as_str().unwrap(),
                r["clients"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want, "{rows:?}");
    for r in &rows {
        assert_eq!(r["available"], true, "{r}");
        assert_eq!(r["consistent"], true, "{r}");
        assert_eq!(r["durable"], true, "{r}");
        assert!(r["tps"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["sluice_over"].as_f64().is_some(), "{r}");
    }
    assert_eq!(summary.len(), engines.len() - 1, "{summary:?}");
    for s in summary {
        let best: Vec<&&serde_json::Value> = rows
            .iter()
            .filter(|r| r["engine"] == s["peer"] && r["best"] == true)
            .collect();
        assert_eq!(best.len(), 1, "{s} {rows:?}");
        assert_eq!(s["best_clients"], best[0]["clients"], "{s}");
        assert!(s["sluice_over_best"].as_f64().is_some(), "{s}");
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
