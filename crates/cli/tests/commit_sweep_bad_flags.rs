//! `sluice bench commit-sweep` rejects bad flags with one line on stderr and exit code 2,
//! before it loads anything or writes a file.

use std::process::Command;

fn assert_usage_error(args: &[&str], mentions: &str) {
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out");
    let mut all = vec!["bench", "commit-sweep", "--out", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(&all)
        .output()
        .expect("the binary runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err:?}"
    );
    assert!(
        err.contains(mentions),
        "{args:?}: {err:?} lacks {mentions:?}"
    );
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}: printed to stdout");
    assert!(!out.exists(), "{args:?}: created --out before failing");
}

#[test]
fn bad_commit_sweep_flags_print_one_line_and_exit_2() {
    assert_usage_error(&[], "--figure is required");
    assert_usage_error(&["--figure", "fig3"], "fig3");
    assert_usage_error(&["--figure", "ctx", "--scale", "0"], "scale");
    assert_usage_error(&["--figure", "ctx", "--clients", "0"], "clients");
    assert_usage_error(&["--figure", "ctx", "--clients", "four"], "four");
    assert_usage_error(
        &["--figure", "elr-skew", "--clients", "1,2"],
        "one client count",
    );
    assert_usage_error(&["--figure", "elr-skew", "--skews", "nan"], "skew");
    assert_usage_error(&["--figure", "elr-skew", "--skews=0.5,-1"], "skew must be");
    assert_usage_error(
        &["--figure", "elr-skew", "--log-latencies", "fast"],
        "--log-latencies",
    );
    assert_usage_error(
        &["--figure", "elr-skew", "--log-latencies", "1h"],
        "--log-latencies",
    );
    assert_usage_error(&["--figure", "ctx", "--seconds", "0"], "--seconds");
    assert_usage_error(&["--figure", "ctx", "--warmup=-1"], "--warmup");
    assert_usage_error(
        &["--figure", "clients", "--skews", "0.5"],
        "--skews applies only",
    );
    assert_usage_error(
        &["--figure", "clients", "--subscribers", "10"],
        "--subscribers applies only",
    );
    assert_usage_error(
        &["--figure", "tatp-components", "--scale", "3"],
        "--scale applies only",
    );
    assert_usage_error(
        &["--figure", "tatp-components", "--subscribers", "0"],
        "subscribers",
    );
    assert_usage_error(
        &["--figure", "tatp-components", "--log-buffer", "mutex"],
        "scalable",
    );
    assert_usage_error(
        &["--figure", "tatp-components", "--log-buffer", "nope"],
        "nope",
    );
    assert_usage_error(
        &["--figure", "ctx", "--dir", "/nonexistent/sluice"],
        "--dir",
    );
}

#[test]
fn a_missing_out_is_a_usage_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["bench", "commit-sweep", "--figure", "ctx"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    assert!(err.contains("--out"), "{err}");
}

#[test]
fn an_out_path_that_is_a_file_is_a_usage_error() {
    let f = tempfile::NamedTempFile::new().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["bench", "commit-sweep", "--figure", "ctx", "--out"])
        .arg(f.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    assert!(err.contains("not a directory"), "{err}");
}
