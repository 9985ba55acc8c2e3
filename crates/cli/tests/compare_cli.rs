//! `sluice compare`: bad flags are one-line usage errors (exit 2), and a tiny run of
//! sluice alone (the default build has no peers) writes its table, JSON, CSV and
//! figure, with each missing peer reported as unavailable with how to build it and
//! without a best.

use crate::common;
use common::{assert_usage_error, json_lines, sluice};

#[test]
fn bad_flags_are_usage_errors() {
    assert_usage_error(&["compare", "tpcc"], "tpcc");
    assert_usage_error(&["compare", "tpcb", "--engines", "sluice,oracle"], "oracle");
    assert_usage_error(&["compare", "tpcb", "--engines", "sluice,sluice"], "twice");
    assert_usage_error(&["compare", "tpcb", "--clients", "0"], "--clients");
    assert_usage_error(
        &["compare", "tpcb", "--peer-clients", "0"],
        "--peer-clients",
    );
    assert_usage_error(
        &["compare", "tpcb", "--peer-clients", "1,0"],
        "--peer-clients",
    );
    assert_usage_error(&["compare", "tpcb", "--peer-clients", ""], "--peer-clients");
    assert_usage_error(
        &["compare", "tpcb", "--peer-clients", "1,,4"],
        "--peer-clients",
    );
    assert_usage_error(
        &["compare", "tpcb", "--peer-clients", "four"],
        "--peer-clients",
    );
    assert_usage_error(&["compare", "tpcb", "--peer-clients=-4"], "--peer-clients");
    assert_usage_error(&["compare", "tpcb", "--peer-clients", "4,4"], "twice");
    assert_usage_error(
        &["compare", "tatp", "--peer-clients", "2000"],
        "--peer-clients",
    );
    assert_usage_error(&["compare", "tpcb", "--rounds", "0"], "--rounds");
    assert_usage_error(&["compare", "tpcb", "--seconds=-1"], "--seconds");
    assert_usage_error(&["compare", "tpcb", "--seconds", "nan"], "--seconds");
    assert_usage_error(&["compare", "tpcb", "--scale", "0"], "--scale");
    assert_usage_error(
        &["compare", "tpcb", "--dir", "/nonexistent/sluice-compare"],
        "--dir",
    );
}

#[test]
fn a_small_run_writes_every_file_and_names_missing_peers() {
    let data = tempfile::tempdir_in(".").unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = sluice(&[
        "compare",
        "tpcb",
        "--engines",
        "sluice,sqlite",
        "--scale",
        "1",
        "--clients",
        "2",
        "--peer-clients",
        "2",
        "--seconds",
        "0.4",
        "--warmup",
        "0",
        "--dir",
        data.path().to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (rows, summary): (Vec<_>, Vec<_>) = json_lines(&stdout)
        .into_iter()
        .partition(|o| o.get("engine").is_some());
    assert_eq!(rows.len(), 2, "{stdout}");
    let sluice_row = &rows[0];
    assert_eq!(sluice_row["engine"], "sluice");
    for key in ["tps", "p50_us", "p99_us", "consistent", "durable"] {
        assert!(sluice_row.get(key).is_some(), "{key} missing: {sluice_row}");
    }
    assert_eq!(sluice_row["consistent"], true);
    assert_eq!(sluice_row["durable"], true);
    assert!(sluice_row["tps"].as_f64().unwrap() > 0.0);
    assert_eq!(sluice_row["rounds"], 2);
    assert_eq!(sluice_row["clients"], 2);
    assert_eq!(sluice_row["best"], false, "only a peer has a best");
    assert_eq!(sluice_row["sluice_over"], 1.0);
    assert_eq!(summary.len(), 1, "one summary object per peer: {stdout}");
    assert_eq!(summary[0]["peer"], "sqlite");
    if !cfg!(feature = "peers") {
        assert_eq!(rows[1]["available"], false);
        assert_eq!(rows[1]["clients"], serde_json::Value::Null);
        let why = rows[1]["unavailable"].as_str().unwrap();
        assert!(why.contains("--features peers"), "{why}");
        assert_eq!(summary[0]["best_clients"], serde_json::Value::Null);
        let no_best = summary[0]["no_best"].as_str().unwrap();
        assert!(no_best.starts_with("unavailable: not built"), "{no_best}");
        assert!(stdout.contains("sqlite: no best (unavailable"), "{stdout}");
    }
    // The JSON file holds the rows and the summary.
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("compare-tpcb.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(file["rows"].as_array().unwrap().len(), 2);
    assert_eq!(file["summary"].as_array().unwrap().len(), 1);
    for ext in ["txt", "json", "csv", "png", "svg"] {
        let p = out.path().join(format!("compare-tpcb.{ext}"));
        assert!(
            std::fs::metadata(&p).map(|m| m.len() > 0).unwrap_or(false),
            "{}",
            p.display()
        );
    }
    // Every data directory is gone afterwards.
    assert_eq!(std::fs::read_dir(data.path()).unwrap().count(), 0);
}

/// An engine that was asked for and failed (here a PostgreSQL whose programs are not
/// where `SLUICE_PG_BIN` says) gets a FAILED row; the whole table and the JSON are still
/// printed, and then the command exits 1 naming the engine.
#[test]
fn a_failed_engine_row_makes_the_command_exit_1_after_the_whole_table() {
    let data = tempfile::tempdir_in(".").unwrap();
    let no_pg = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "compare",
            "tpcb",
            "--engines",
            "sluice,postgres",
            "--scale",
            "1",
            "--clients",
            "2",
            "--seconds",
            "0.2",
            "--warmup",
            "0",
            "--rounds",
            "1",
            "--dir",
            data.path().to_str().unwrap(),
            "--json",
        ])
        .env("SLUICE_PG_BIN", no_pg.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("postgres"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let (rows, summary): (Vec<_>, Vec<_>) = json_lines(&stdout)
        .into_iter()
        .partition(|o| o.get("engine").is_some());
    assert_eq!(rows.len(), 2, "{stdout}");
    assert_eq!(rows[0]["engine"], "sluice");
    assert_eq!(rows[0]["failed"], false);
    assert!(rows[0]["tps"].as_f64().unwrap() > 0.0);
    assert_eq!(rows[1]["engine"], "postgres");
    assert_eq!(rows[1]["failed"], true);
    let why = rows[1]["unavailable"].as_str().unwrap();
    assert!(why.contains("SLUICE_PG_BIN"), "{why}");
    assert!(stdout.contains("FAILED"), "{stdout}");
    // It has no best, and the summary says why.
    assert_eq!(summary.len(), 1, "{stdout}");
    let no_best = summary[0]["no_best"].as_str().unwrap();
    assert!(
        no_best.starts_with("failed: ") && no_best.contains("SLUICE_PG_BIN"),
        "{no_best}"
    );
}
