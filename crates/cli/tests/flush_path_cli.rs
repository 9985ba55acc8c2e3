//! `--flush` (issue 28): the table says which flush path the log took (the daemon by
//! default); with io_uring asked for and refused (here by the operator's switch, `SLUICE_IO_URING=off`, as a kernel or a
//! seccomp filter would) the log takes the daemon and says why once, however many
//! databases the run opens; a bad value is one line and exit code 2.

use crate::common;

use common::{bench_args, json_lines, sluice};
use std::process::Command;

#[test]
fn io_uring_refused_falls_back_to_the_daemon_and_says_so_once() {
    let dir = tempfile::tempdir_in(".").unwrap();
    let db = dir.path().join("db");
    let mut args = bench_args(
        "tpcb",
        db.to_str().unwrap(),
        &["--scale", "1", "--flush", "io-uring"],
    );
    // Two protocols: two runs, each opening the database.
    args[7] = "classic,elr-pipelined";
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(&args)
        .env(sluice_storage::IO_URING_SWITCH, "off")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let said = stderr
        .lines()
        .filter(|l| l.contains("the log flushes with a daemon thread"))
        .collect::<Vec<_>>();
    assert_eq!(said.len(), 1, "said once: {stderr}");
    assert!(said[0].contains("SLUICE_IO_URING=off"), "{}", said[0]);
    assert!(
        stdout.contains("log flush path: daemon"),
        "the table says the path taken: {stdout}"
    );
}

#[test]
fn the_default_path_is_the_daemon_io_uring_is_asked_for_and_json_says_which() {
    let dir = tempfile::tempdir_in(".").unwrap();
    let db = dir.path().join("db");
    let out = sluice(&bench_args(
        "tpcb",
        db.to_str().unwrap(),
        &["--scale", "1", "--json"],
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let rows = json_lines(&String::from_utf8_lossy(&out.stdout));
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r["flush"], "daemon", "{r}");
        assert!(r["flushes_per_txn"].as_f64().unwrap() > 0.0, "{r}");
    }
    let ring = sluice(&bench_args(
        "tpcb",
        db.to_str().unwrap(),
        &["--scale", "1", "--json", "--flush", "io-uring"],
    ));
    let stderr = String::from_utf8_lossy(&ring.stderr);
    assert_eq!(ring.status.code(), Some(0), "{stderr}");
    // Where the kernel refuses io_uring the run says so and takes the daemon.
    let refused = stderr.contains("the log flushes with a daemon thread");
    let want = if refused { "daemon" } else { "io-uring" };
    for r in json_lines(&String::from_utf8_lossy(&ring.stdout)) {
        assert_eq!(r["flush"], want, "{r}");
        assert!(r["flushes_per_txn"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn a_bad_flush_path_is_one_line_and_exit_code_2() {
    let out = sluice(&["bench", "tpcb", "--flush", "uring"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("io-uring or daemon"), "{stderr}");
}
