//! `sluice bench propagation` and `propagation-sweep` from the outside: a short run prints
//! one JSON object with the summary fields and the time series scripts rely on; every bad
//! argument is one line on stderr and exit code 2.

use crate::common;

use common::{assert_usage_error, sluice};

#[test]
fn a_short_run_prints_the_summary_and_the_time_series_as_json() {
    let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    let out = sluice(&[
        "bench",
        "propagation",
        "--strategy",
        "page-oldest",
        "--seconds",
        "1",
        "--json",
        // Lighter than the defaults (SF 2, 256 MiB measured), same code path.
        "--scale",
        "1",
        "--probe-mib",
        "8",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let last = stdout.lines().last().expect("output");
    let v: serde_json::Value = serde_json::from_str(last).expect("the last line is JSON");
    let s = &v["summary"];
    for key in [
        "strategy",
        "write_mb_per_s",
        "device_seq_write_mb_per_s",
        "dirty_pages_mean",
        "redo_bytes_max",
        "redo_bytes_final",
        "redo_first_third_max",
        "redo_last_third_max",
        "tps",
        "restart_ms",
        "redo_records",
        "eviction_writes",
        "throughput",
    ] {
        assert!(s.get(key).is_some(), "summary lacks {key}: {s}");
    }
    assert_eq!(s["strategy"], "page-oldest");
    assert_eq!(s["throughput"], "high");
    assert_eq!(s["consistent"], true, "{s}");
    assert!(s["tps"].as_f64().unwrap() > 0.0);
    assert!(s["device_seq_write_mb_per_s"].as_f64().unwrap() > 0.0);
    let series = v["series"].as_array().expect("a time series");
    assert_eq!(series.len(), 1, "one sample per second: {series:?}");
    for key in ["t_s", "tps", "dirty_pages", "redo_bytes", "write_mb_per_s"] {
        assert!(series[0].get(key).is_some(), "sample lacks {key}");
    }
    // The run's temporary database and the device probe's file are gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    let run = |extra: &[&'static str]| {
        let mut v = vec!["bench", "propagation"];
        v.extend_from_slice(extra);
        v
    };
    assert_usage_error(
        &run(&["--strategy", "page-sideways", "--seconds", "1"]),
        "propagation strategy",
    );
    assert_usage_error(&run(&["--strategy", "page-oldest:0"]), "strategy");
    assert_usage_error(&run(&["--strategy", "page-clustered"]), "strategy");
    assert_usage_error(&run(&[]), "--strategy is required");
    assert_usage_error(&run(&["--strategy", "log", "--seconds", "0"]), "--seconds");
    assert_usage_error(
        &run(&["--strategy", "log", "--seconds", "nan"]),
        "--seconds",
    );
    assert_usage_error(
        &run(&["--strategy", "log", "--throughput", "medium"]),
        "--throughput",
    );
    assert_usage_error(&run(&["--strategy", "log", "--rate", "500"]), "--rate");
    assert_usage_error(
        &run(&["--strategy", "log", "--throughput", "low", "--rate", "0"]),
        "--rate",
    );
    assert_usage_error(&run(&["--strategy", "log", "--scale", "0"]), "scale");
    assert_usage_error(&run(&["--strategy", "log", "--clients", "0"]), "clients");
    assert_usage_error(
        &run(&["--strategy", "log", "--dir", "/nonexistent/sluice"]),
        "--dir",
    );
    let sweep = |extra: &[&'static str]| {
        let mut v = vec!["bench", "propagation-sweep"];
        v.extend_from_slice(extra);
        v
    };
    assert_usage_error(&sweep(&["--out", "x"]), "--figure is required");
    assert_usage_error(&sweep(&["--figure", "fig3", "--out", "x"]), "--figure");
    assert_usage_error(&sweep(&["--figure", "bandwidth"]), "--out");
    assert_usage_error(
        &sweep(&["--figure", "backlog", "--out", "x", "--seconds", "0"]),
        "--seconds",
    );
    assert_usage_error(
        &sweep(&["--figure", "bandwidth", "--out", "x", "--rate", "100"]),
        "--rate",
    );
    assert_usage_error(
        &sweep(&["--figure", "bandwidth", "--out", "x", "--repeat", "0"]),
        "--repeat",
    );
    assert_usage_error(
        &sweep(&["--figure", "bandwidth", "--out", "x", "--repeat", "101"]),
        "--repeat",
    );
}
