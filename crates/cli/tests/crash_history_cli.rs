//! `sluice crash-test history`: bad flags are one line and exit 2; a short run prints its
//! table and one JSON object whose counts agree with its exit code, each failure with a
//! one-line replay command.

use crate::common;

#[test]
fn bad_history_flags_print_one_line_and_exit_2() {
    let usage = |args: &[&str], mentions: &str| {
        let mut all = vec!["crash-test", "history"];
        all.extend_from_slice(args);
        common::assert_usage_error(&all, mentions);
    };
    usage(&["--seconds", "0"], "--seconds");
    usage(&["--seconds=-1"], "--seconds");
    usage(&["--seconds", "nan"], "--seconds");
    usage(&["--seconds", "inf"], "--seconds");
    usage(&["--seconds", "soon"], "soon");
    usage(&["--seeds", "0"], "--seeds");
    usage(
        &["--first-seed", "18446744073709551615", "--seeds", "2"],
        "overflows",
    );
    usage(&["--protocol", "nope"], "unknown commit protocol");
    usage(&["--strategy", "page"], "propagation strategy");
    usage(&["--bogus"], "--bogus");
}

#[test]
fn a_short_run_reports_its_counts_in_json() {
    let out = common::sluice(&[
        "crash-test",
        "history",
        "--seeds",
        "3",
        "--first-seed",
        "7",
        "--protocol",
        "elr",
        "--strategy",
        "page-oldest",
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains("reads checked"), "no table: {stdout}");
    let last = stdout.lines().last().expect("some output");
    let j: serde_json::Value = serde_json::from_str(last).expect("the last line is JSON");
    assert_eq!(j["seeds"], 3);
    assert_eq!(j["first_seed"], 7);
    assert_eq!(j["protocol"], "elr");
    assert_eq!(j["strategy"], "page-oldest");
    assert!(j["committed"].as_u64().unwrap() > 100, "{j}");
    assert!(j["reads_checked"].as_u64().unwrap() > 1_000, "{j}");
    let anomalies = j["anomalies"].as_u64().unwrap();
    let failures = j["failures"].as_array().unwrap();
    // Exit 1 exactly when something was found, and every failure says how to replay it.
    assert_eq!(
        out.status.code(),
        Some(if anomalies > 0 { 1 } else { 0 }),
        "{stderr}"
    );
    assert_eq!(failures.is_empty(), anomalies == 0, "{j}");
    for f in failures {
        let seed = f["seed"].as_u64().unwrap();
        assert!((7..10).contains(&seed), "{f}");
        assert_eq!(
            f["replay"],
            format!(
                "sluice crash-test history --first-seed {seed} --seeds 1 --protocol elr --strategy page-oldest"
            )
        );
        assert!(f["anomalies"].as_u64().unwrap() > 0, "{f}");
    }
    if anomalies > 0 {
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("anomalies in"), "{stderr}");
    }
}
