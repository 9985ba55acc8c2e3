//! `sluice bench restore` from the outside: a short run restores the same backup both
//! ways, prints one JSON object whose two restores replayed the same changes into
//! databases that are consistent and alike, and a ratio; bad arguments are one line on
//! stderr and exit code 2.

use crate::common;

use common::{assert_usage_error, sluice};

#[test]
fn a_short_run_restores_both_ways_and_prints_the_ratio() {
    let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    let out = sluice(&[
        "bench",
        "restore",
        // Lighter than the defaults (SF 10, 60 s, 3 rounds), the same code path; 3 s
        // (the backup after 0.75 s) fill some log segments after the backup, so the
        // archive holds some of the load.
        "--scale",
        "1",
        "--seconds",
        "3",
        "--repeat",
        "1",
        "--clients",
        "4",
        // Segments small enough that a slow machine's 2.25 s after the backup finish
        // some (with 2 MiB ones, a loaded CI run once archived none).
        "--segment-kib",
        "512",
        "--json",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("log order ÷ single pass"), "{stdout}");
    let last = stdout.lines().last().expect("output");
    let v: serde_json::Value = serde_json::from_str(last).expect("the last line is JSON");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{v}");
    let ways: Vec<&str> = runs.iter().map(|r| r["replay"].as_str().unwrap()).collect();
    assert!(
        ways.contains(&"log-order") && ways.contains(&"sorted-runs"),
        "{ways:?}"
    );
    // The same log replayed onto the same backup, either way.
    assert_eq!(runs[0]["replayed"], runs[1]["replayed"], "{v}");
    assert!(runs[0]["replayed"].as_u64().unwrap() > 0, "{v}");
    for r in runs {
        assert!(r["seconds"].as_f64().unwrap() > 0.0, "{r}");
        let sorted = r["replay"] == "sorted-runs";
        assert_eq!(r["sort_seconds"].is_f64(), sorted, "{r}");
        assert_eq!(r["apply_seconds"].is_f64(), sorted, "{r}");
    }
    assert!(v["ratio"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["log_bytes"].as_u64().unwrap() > 0, "{v}");
    let c = &v["consistency"];
    assert_eq!(c["violations"].as_array().map(Vec::len), Some(0), "{c}");
    assert!(c["history_rows"].as_u64().unwrap() > 0, "{c}");
}

#[test]
fn bad_arguments_are_one_line_and_exit_code_2() {
    for (args, mentions) in [
        (&["bench", "restore", "--scale", "0"][..], "--scale"),
        (&["bench", "restore", "--repeat", "0"][..], "--repeat"),
        (&["bench", "restore", "--seconds", "NaN"][..], "--seconds"),
        (&["bench", "restore", "--clients", "0"][..], "--clients"),
        (
            &["bench", "restore", "--dir", "/nonexistent/place"][..],
            "/nonexistent",
        ),
    ] {
        assert_usage_error(args, mentions);
    }
}
