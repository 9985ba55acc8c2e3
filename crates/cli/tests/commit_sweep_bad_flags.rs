//! `sluice bench commit-sweep` rejects bad flags with one line on stderr and exit code 2,
//! before it loads anything or writes a file.

use crate::common;

fn assert_usage_error(args: &[&str], mentions: &str) {
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out");
    let mut all = vec!["bench", "commit-sweep", "--out", out.to_str().unwrap()];
    all.extend_from_slice(args);
    common::assert_usage_error(&all, mentions);
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
    assert_usage_error(&["--figure", "ctx", "--repeat", "0"], "repeat");
    assert_usage_error(&["--figure", "ctx", "--repeat", "-1"], "-1");
    assert_usage_error(
        &["--figure", "ctx", "--log-latency", "fast"],
        "--log-latency",
    );
    assert_usage_error(&["--figure", "clients", "--log-latency", "1h"], "latency");
    assert_usage_error(
        &["--figure", "elr-skew", "--log-latency", "1ms"],
        "--log-latency applies only",
    );
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
fn bad_flags_for_the_breakdown_figures_print_one_line_and_exit_2() {
    // Fig. 2 is bars at one client count; Fig. 7 one mutex-buffer line over clients.
    assert_usage_error(
        &["--figure", "cpu", "--clients", "8,60"],
        "one client count",
    );
    assert_usage_error(&["--figure", "cpu", "--clients", "0"], "clients");
    assert_usage_error(&["--figure", "cpu", "--log-buffer", "mutex"], "scalable");
    assert_usage_error(&["--figure", "cpu", "--scale", "0"], "scale");
    assert_usage_error(
        &["--figure", "cpu", "--subscribers", "10"],
        "--subscribers applies only",
    );
    assert_usage_error(&["--figure", "cpu", "--log-latency", "1h"], "latency");
    assert_usage_error(
        &["--figure", "breakdown", "--scale", "3"],
        "--scale applies only",
    );
    assert_usage_error(
        &["--figure", "breakdown", "--log-buffer", "hybrid"],
        "--log-buffer applies only",
    );
    assert_usage_error(
        &["--figure", "breakdown", "--skews", "0.5"],
        "--skews applies only",
    );
    assert_usage_error(
        &["--figure", "breakdown", "--subscribers", "0"],
        "subscribers",
    );
    assert_usage_error(
        &["--figure", "breakdown", "--log-latency", "fast"],
        "--log-latency",
    );
    assert_usage_error(&["--figure", "breakdown", "--repeat", "101"], "repeat");
}

#[test]
fn a_missing_out_is_a_usage_error() {
    common::assert_usage_error(&["bench", "commit-sweep", "--figure", "ctx"], "--out");
}

#[test]
fn an_out_path_that_is_a_file_is_a_usage_error() {
    let f = tempfile::NamedTempFile::new().unwrap();
    let path = f.path().to_str().unwrap();
    common::assert_usage_error(
        &["bench", "commit-sweep", "--figure", "ctx", "--out", path],
        "not a directory",
    );
}
