//! The main job's output, read by someone who has not read the code (issue 24, item 8):
//! its first line says what runs; a legend follows the results table, one line for every
//! column; and when stderr is not a terminal (a pipe, CI) progress comes as plain lines
//! in units that mean something (percent and seconds), not an invisible bar or "/1000".

mod common;

use common::sluice;

#[test]
fn a_tpcb_run_says_what_runs_explains_its_columns_and_shows_progress_in_a_pipe() {
    let dir = tempfile::tempdir_in(".").unwrap();
    let out = sluice(&[
        "bench",
        "tpcb",
        "--scale",
        "1",
        "--clients",
        "2",
        "--commit",
        "classic",
        "--seconds",
        "0.3",
        "--warmup",
        "0",
        "--dir",
        dir.path().join("db").to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}\n--- stderr\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let first = stdout.lines().next().unwrap();
    for says in [
        "TPC-B at scale 1",
        "2 client(s)",
        "classic",
        "0.3 s measured",
    ] {
        assert!(
            first.contains(says),
            "the first line lacks {says:?}: {first}"
        );
    }
    let header = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("workload"))
        .expect("a results table");
    let legend: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != "columns:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    for column in [
        "workload",
        "commit",
        "tps",
        "p99 µs",
        "(vol)",
        "log B/txn",
        "consistent",
    ] {
        assert!(header.contains(column), "{header}");
        let line = legend
            .iter()
            .find(|l| l.trim_start().starts_with(column))
            .unwrap_or_else(|| panic!("no legend for {column:?}: {legend:?}"));
        assert!(
            line.trim_start().len() > column.len() + 10,
            "the legend of {column:?} says nothing: {line:?}"
        );
    }
    // Progress on stderr, which is a pipe here: plain lines.
    assert!(stderr.contains("loading TPC-B SF 1: started"), "{stderr}");
    assert!(stderr.contains("loading TPC-B SF 1: done in"), "{stderr}");
    assert!(stderr.contains("tpcb classic: done in"), "{stderr}");
    assert!(!stderr.contains("/1000"), "{stderr}");
}
