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
    for repeat in ["0", "101", "-1", "two"] {
        let flag = format!("--repeat={repeat}");
        common::assert_usage_error(
            &[
                "bench",
                "log-insert-sweep",
                "--figure",
                "size",
                "--out",
                "/tmp/x",
                &flag,
            ],
            "repeat",
        );
    }
    let out = common::assert_usage_error(
        &[
            "bench",
            "log-insert-sweep",
            "--figure",
            "threads",
            "--out",
            "/tmp/x",
            "--repeat",
            "0",
        ],
        "--repeat must be between 1 and 100, got 0",
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_small_sweep_writes_every_round_and_the_figure() {
    let dir = tempfile::tempdir().unwrap();
    let out = sluice(&[
        "bench",
        "log-insert-sweep",
        "--figure",
        "threads",
        "--out",
        dir.path().to_str().unwrap(),
        "--seconds",
        "0.01",
        "--repeat",
        "2",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    // 7 thread counts (1 to 64) × 6 variants, each run in both rounds.
    let (points, rounds) = (7 * 6, 2);
    let csv = std::fs::read_to_string(dir.path().join("threads.csv")).unwrap();
    common::assert_every_point_once_per_round(&csv, &["variant", "threads"], points, rounds);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("threads.json")).unwrap())
            .unwrap();
    let json = json.as_array().unwrap();
    assert_eq!(json.len(), points * rounds);
    assert!(json.iter().all(|r| r["repeat"] == 0 || r["repeat"] == 1));
    assert!(json
        .iter()
        .all(|r| r["limit_bytes_per_sec"].as_f64() > Some(0.0)));
    // --json: one object per run at the end of stdout.
    let json_lines = stdout.lines().filter(|l| l.starts_with('{')).count();
    assert_eq!(json_lines, points * rounds, "{stdout}");
    let png = std::fs::read(dir.path().join("threads.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let svg = std::fs::read_to_string(dir.path().join("threads.svg")).unwrap();
    assert!(svg.contains("limit (private copies)"), "the limit is drawn");
    assert!(
        svg.contains("median of 2 interleaved rounds"),
        "the method note"
    );
    assert!(dir.path().join("threads-summary.csv").exists());
    // The table: one line per point, with its min–max over the two rounds.
    assert!(
        stdout.contains("% of limit") && stdout.contains('–'),
        "{stdout}"
    );
    // The machine note, drawn and printed, exactly when this machine has fewer
    // hardware threads than the sweep's 64.
    let small = std::thread::available_parallelism().map_or(1, |n| n.get()) < 64;
    for (what, text) in [("stdout", &stdout), ("svg", &svg)] {
        assert_eq!(
            text.contains("hardware threads here"),
            small,
            "{what}: the note iff fewer than 64 hardware threads"
        );
    }
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
