//! The main job's output, read by someone who has not read the code (issue 24, item 8):
//! its first line says what runs; a legend follows the results table, one line for every
//! column; and when stderr is not a terminal (a pipe, CI) progress comes as plain lines
//! in units that mean something (percent and seconds), not an invisible bar or "/1000".
//! By default the table has the columns a first reading needs; `--wide` shows them all.

use crate::common;

use common::{bench_args, run, sluice};

#[test]
fn a_tpcb_run_says_what_runs_explains_its_columns_and_shows_progress_in_a_pipe() {
    let dir = tempfile::tempdir_in(".").unwrap();
    let db = dir.path().join("db");
    let out = sluice(&bench_args(
        "tpcb",
        db.to_str().unwrap(),
        &["--scale", "1", "--wide"],
    ));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}\n--- stderr\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let first = stdout.lines().next().unwrap();
    for says in [
        "TPC-B at scale 1",
        "2 client(s)",
        "classic",
        "0.2 s measured",
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

/// The columns of the table, and the legend lines under it.
fn table_and_legend(stdout: &str) -> (Vec<String>, Vec<String>) {
    let header = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("workload"))
        .expect("a results table");
    let legend = stdout
        .lines()
        .skip_while(|l| *l != "columns:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().to_string())
        .collect();
    // Column names hold single spaces ("p50 µs"); columns are apart by two or more.
    let columns = header
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect();
    (columns, legend)
}

fn bench_tpcb(extra: &[&str]) -> String {
    let dir = tempfile::tempdir_in(".").unwrap();
    let db = dir.path().join("db");
    let mut args = vec!["--scale", "1"];
    args.extend(extra);
    let (code, stdout, stderr) = run(&bench_args("tpcb", db.to_str().unwrap(), &args));
    assert_eq!(code, Some(0), "{stderr}");
    stdout
}

/// Without `--wide`: throughput, latency percentiles, aborts and the check, each with its
/// legend line, and a line naming the columns `--wide` adds; with it, every column and
/// every legend line.
#[test]
fn the_default_table_has_the_columns_a_newcomer_needs_and_wide_has_all() {
    let narrow = bench_tpcb(&[]);
    let (columns, legend) = table_and_legend(&narrow);
    assert_eq!(
        columns,
        [
            "workload",
            "commit",
            "clients",
            "tps",
            "p50 µs",
            "p99 µs",
            "aborted",
            "consistent"
        ],
        "{narrow}"
    );
    assert_eq!(legend.len(), columns.len(), "{legend:?}");
    for (c, l) in columns.iter().zip(&legend) {
        assert!(
            l.starts_with(c.as_str()),
            "{l:?} is not the legend of {c:?}"
        );
    }
    let more = narrow
        .lines()
        .find(|l| l.starts_with("more columns with --wide: "))
        .expect("a line naming the columns --wide adds");
    for c in ["agents", "log", "ctx sw/txn", "(vol)", "cpu", "log B/txn"] {
        assert!(more.contains(c), "{more}");
    }
    let wide = bench_tpcb(&["--wide"]);
    let (all, legend) = table_and_legend(&wide);
    assert_eq!(all.len(), 16, "{all:?}");
    for c in &columns {
        assert!(all.contains(c), "--wide lacks {c:?}: {all:?}");
    }
    assert_eq!(legend.len(), all.len(), "{legend:?}");
    assert!(!wide.contains("more columns with --wide"), "{wide}");
}
