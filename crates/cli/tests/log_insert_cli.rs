//! `sluice bench log-insert` and `log-insert-sweep` from the outside: every bad argument
//! is one line on stderr and exit code 2; a good run prints the table and a JSON object
//! with the fields scripts rely on.

use crate::common;

use common::sluice;

fn assert_usage_error(args: &[&str]) {
    common::assert_usage_error(args, "");
}

#[test]
fn bad_log_insert_arguments_exit_2_with_one_line() {
    let base = [
        "bench",
        "log-insert",
        "--variant",
        "hybrid",
        "--threads",
        "2",
    ];
    let with = |extra: &[&'static str]| {
        let mut v = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    assert_usage_error(&with(&["--record-size", "120", "--outlier", "4096"]));
    assert_usage_error(&with(&[]));
    assert_usage_error(&with(&["--record-size", "0"]));
    assert_usage_error(&with(&["--record-size", "100000000"]));
    assert_usage_error(&with(&["--outlier", "100000000"]));
    assert_usage_error(&with(&["--record-size", "120", "--slots", "0"]));
    assert_usage_error(&with(&["--record-size", "120", "--seconds", "-1"]));
    assert_usage_error(&with(&["--record-size", "120", "--seconds", "nan"]));
    assert_usage_error(&[
        "bench",
        "log-insert",
        "--variant",
        "hybrid",
        "--threads",
        "0",
        "--record-size",
        "120",
    ]);
    assert_usage_error(&[
        "bench",
        "log-insert",
        "--variant",
        "nope",
        "--threads",
        "2",
        "--record-size",
        "120",
    ]);
    assert_usage_error(&[
        "bench",
        "log-insert",
        "--threads",
        "2",
        "--record-size",
        "120",
    ]);
}

#[test]
fn bad_sweep_arguments_exit_2_with_one_line() {
    assert_usage_error(&[
        "bench",
        "log-insert-sweep",
        "--figure",
        "colour",
        "--out",
        "/tmp/x",
    ]);
    assert_usage_error(&["bench", "log-insert-sweep", "--figure", "threads"]);
    assert_usage_error(&[
        "bench",
        "log-insert-sweep",
        "--figure",
        "size",
        "--out",
        "/tmp/x",
        "--seconds",
        "0",
    ]);
}

#[test]
fn a_run_prints_the_table_and_json() {
    let out = sluice(&[
        "bench",
        "log-insert",
        "--variant",
        "delegated",
        "--threads",
        "3",
        "--outlier",
        "2048",
        "--seconds",
        "0.05",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("% of limit"), "{stdout}");
    let json: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    for field in [
        "variant",
        "threads",
        "record_bytes",
        "inserts_per_sec",
        "bytes_per_sec",
        "limit_bytes_per_sec",
        "ratio_to_limit",
    ] {
        assert!(json.get(field).is_some(), "missing {field}: {json}");
    }
    assert_eq!(json["variant"], "delegated");
    assert_eq!(json["mix"], "outlier");
    assert_eq!(json["record_bytes"], 2048);
    assert!(json["inserts_per_sec"].as_f64().unwrap() > 0.0);
}
