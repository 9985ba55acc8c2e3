//! Every bad argument gets one line on stderr and exit code 2, never a panic
//! (docs/RELIABILITY.md §8).

use crate::common;

use common::{assert_usage_error, sluice};

#[test]
fn bad_arguments_print_one_line_and_exit_2() {
    assert_usage_error(&["frobnicate"], "frobnicate");
    assert_usage_error(&["bench", "wal", "--threads", "0"], "--threads");
    assert_usage_error(&["bench", "wal", "--threads", "-3"], "-3");
    assert_usage_error(&["bench", "wal", "--threads", "many"], "many");
    assert_usage_error(&["bench", "wal", "--record-size", "0"], "--record-size");
    assert_usage_error(
        &["bench", "wal", "--record-size", "99999999"],
        "--record-size",
    );
    assert_usage_error(&["bench", "wal", "--seconds", "0"], "--seconds");
    assert_usage_error(&["bench", "wal", "--seconds", "nan"], "--seconds");
    assert_usage_error(&["bench", "wal", "--log-buffer", "nope"], "nope");
    assert_usage_error(&["bench", "wal", "--bogus"], "--bogus");
}

#[test]
fn a_missing_subcommand_is_a_usage_error() {
    let out = sluice(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn help_succeeds() {
    let out = sluice(&["bench", "wal", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--record-size"));
}

#[test]
fn bench_wal_runs_and_ends_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("log");
    let out = sluice(&[
        "bench",
        "wal",
        "--threads",
        "2",
        "--seconds",
        "0.3",
        "--json",
        "--dir",
        d.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = stdout.trim_end().lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    for k in [
        "threads",
        "record_bytes",
        "appends_per_sec",
        "syncs_per_sec",
        "appends_per_sync",
        "p50_us",
        "p99_us",
    ] {
        assert!(v.get(k).is_some(), "JSON lacks {k}: {last}");
    }
    assert_eq!(v["threads"], 2);
    assert!(v["appends_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_log_directory_in_use_is_a_clear_runtime_error() {
    use sluice_storage::{OsStorage, Storage};
    let dir = tempfile::tempdir().unwrap();
    let storage: std::sync::Arc<dyn Storage> = std::sync::Arc::new(OsStorage);
    let _held = sluice_wal::Log::open(storage, dir.path(), Default::default()).unwrap();
    let out = sluice(&[
        "bench",
        "wal",
        "--seconds",
        "0.2",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("in use by another process"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn crash_test_engine_runs_and_reports_json() {
    let out = sluice(&["crash-test", "engine", "--seeds", "5", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(stdout.trim_end().lines().last().unwrap()).unwrap();
    assert_eq!(v["seeds"], 5);
    assert_eq!(v["lost"], 0);
    assert_eq!(v["violations"], 0);
    assert!(v["acknowledged"].as_u64().unwrap() > 0);
    assert!(
        v["process_kills"].is_u64(),
        "the report names its halt modes: {v}"
    );
}

#[test]
fn crash_test_bad_arguments_exit_2() {
    assert_usage_error(&["crash-test", "engine", "--seeds", "0"], "--seeds");
    assert_usage_error(&["crash-test", "nothing"], "nothing");
}
