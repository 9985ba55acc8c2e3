//! `sluice crash-test kill` and `sluice crash-test sim` from the command line
//! (RELIABILITY.md tests 2 and 8): a short kill loop of the real binary loses nothing
//! and recovers consistent states; bad arguments are one-line usage errors.

use crate::common;

use common::{assert_usage_error, sluice};

fn last_json(out: &std::process::Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON in {stdout}"));
    serde_json::from_str(line).expect("valid JSON")
}

#[test]
fn a_short_kill_loop_loses_nothing_and_stays_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let out = sluice(&[
        "crash-test",
        "kill",
        "--runs",
        "5",
        "--seconds-per-run",
        "1",
        "--accounts-per-branch",
        "1000",
        "--json",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let j = last_json(&out);
    assert_eq!(j["runs"], 5, "{j}");
    assert_eq!(j["lost"], 0, "{j}");
    assert_eq!(j["inconsistent"], 0, "{j}");
    assert_eq!(j["commit"], "elr-pipelined", "{j}");
    assert!(j["acknowledged"].as_u64().is_some(), "{j}");
    assert!(j["recovery_ms_max"].as_f64().unwrap() >= j["recovery_ms_p50"].as_f64().unwrap());
    assert!(j["kills_during_recovery"].as_u64().unwrap() <= 5, "{j}");
    // The database's temporary directory is removed after a clean run.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn crash_test_bad_arguments_are_usage_errors() {
    assert_usage_error(&["crash-test", "kill"], "--runs");
    assert_usage_error(&["crash-test", "kill", "--runs", "0"], "--runs");
    assert_usage_error(&["crash-test", "kill", "--runs", "x"], "x");
    assert_usage_error(
        &["crash-test", "kill", "--runs", "1", "--commit", "nope"],
        "nope",
    );
    assert_usage_error(
        &[
            "crash-test",
            "kill",
            "--runs",
            "1",
            "--seconds-per-run",
            "0",
        ],
        "--seconds-per-run",
    );
    assert_usage_error(
        &[
            "crash-test",
            "kill",
            "--runs",
            "1",
            "--seconds-per-run",
            "nan",
        ],
        "--seconds-per-run",
    );
    assert_usage_error(
        &["crash-test", "kill", "--runs", "1", "--scale", "0"],
        "--scale",
    );
    assert_usage_error(
        &["crash-test", "kill", "--runs", "1", "--clients", "0"],
        "--clients",
    );
    assert_usage_error(
        &[
            "crash-test",
            "kill",
            "--runs",
            "1",
            "--dir",
            "/nonexistent/sluice",
        ],
        "--dir",
    );
    assert_usage_error(&["crash-test", "sim", "--seeds", "0"], "--seeds");
    assert_usage_error(
        &["crash-test", "sim", "--workload", "tpcb", "--seeds", "0"],
        "--seeds",
    );
    assert_usage_error(
        &[
            "crash-test",
            "sim",
            "--workload",
            "tpcb",
            "--first-seed",
            "18446744073709551615",
            "--seeds",
            "2",
        ],
        "overflows",
    );
    assert_usage_error(&["crash-test", "sim", "--workload", "nope"], "nope");
}

#[test]
fn every_commit_protocol_name_is_accepted() {
    for p in ["classic", "elr", "pipelined", "elr-pipelined", "async"] {
        let out = sluice(&["crash-test", "kill", "--runs", "1", "--commit", p, "--help"]);
        assert_eq!(out.status.code(), Some(0), "{p}");
    }
}

#[test]
fn crash_test_sim_kv_reports_json() {
    let out = sluice(&[
        "crash-test",
        "sim",
        "--seeds",
        "5",
        "--workload",
        "kv",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = last_json(&out);
    assert_eq!(j["seeds"], 5);
    assert_eq!(j["lost"], 0);
    assert_eq!(j["violations"], 0);
    assert!(j["acknowledged"].as_u64().is_some());
}

#[test]
fn crash_test_sim_tpcb_reports_json() {
    let out = sluice(&[
        "crash-test",
        "sim",
        "--workload",
        "tpcb",
        "--seeds",
        "12",
        "--first-seed",
        "5",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(v["workload"], "tpcb");
    assert_eq!(v["seeds"], 12);
    assert_eq!(v["first_seed"], 5);
    assert!(v["acknowledged"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["lost"], 0, "{v}");
    assert_eq!(v["violations"], 0, "{v}");
}

/// A kill loop whose children were all killed before any commit was acknowledged
/// checked nothing, and a check that checked nothing is not a pass (issue 24, item 7: it
/// exited 0 with "0 acknowledged").
#[test]
fn a_kill_loop_that_checked_no_acknowledged_commit_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = sluice(&[
        "crash-test",
        "kill",
        "--runs",
        "1",
        "--seconds-per-run",
        "0.000001",
        "--accounts-per-branch",
        "1000",
        "--seed",
        "1",
        "--json",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let j = last_json(&out);
    assert_eq!(
        j["acknowledged"], 0,
        "the child was killed within a microsecond: {j}"
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("checked nothing"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
