//! The tools on odd input (issue 24, item 7), each with the right message and exit code:
//! a key printed by `scan` is taken back by `get`; `log dump --from` an LSN inside the
//! log that starts no record says so; a benchmark directory whose load was killed is
//! refused with a message that names what to do (not "holds TPC-B at scale 1, not TPC-B
//! at scale 1; use --scale 1"); and a benchmark piped into `head -1` ends quietly.

use crate::common;

use common::run;
use std::path::Path;
use std::process::{Command, Stdio};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn get_takes_back_a_key_in_the_escaped_form_scan_prints() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    let t = db.table_or_create("t").unwrap();
    let keys: [&[u8]; 4] = [b"tab\there", b"back\\slash", b"quote\"d", b"\xff\x00bin"];
    db.transaction(|tx| {
        for (i, k) in keys.iter().enumerate() {
            tx.put(&t, k, format!("v{i}"))?;
        }
        Ok::<_, sluice::Error>(())
    })
    .unwrap();
    drop(t);
    db.close().unwrap();
    let (code, out, err) = run(&["scan", s(&dir), "t"]);
    assert_eq!(code, Some(0), "{err}");
    let printed: Vec<(String, String)> = out
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    assert_eq!(printed.len(), keys.len());
    for (k, v) in &printed {
        let (code, out, err) = run(&["get", s(&dir), "t", k]);
        assert_eq!(code, Some(0), "get {k:?}: {err}");
        assert_eq!(out.trim_end(), v, "get {k:?}");
        // And as a scan prefix.
        let (code, out, err) = run(&["scan", s(&dir), "t", "--prefix", k]);
        assert_eq!(code, Some(0), "scan --prefix {k:?}: {err}");
        assert_eq!(out, format!("{k}\t{v}\n"));
    }
    // A backslash that starts no escape is a usage error naming it.
    common::assert_usage_error(&["get", s(&dir), "t", "a\\q"], "starts no escape");
}

#[test]
fn log_dump_from_an_lsn_inside_the_log_that_starts_no_record_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    let t = db.table_or_create("t").unwrap();
    db.transaction(|tx| tx.put(&t, b"k", b"v")).unwrap();
    drop(t);
    db.close().unwrap();
    let (code, out, _) = run(&["log", "dump", s(&dir), "--json", "--limit", "1"]);
    assert_eq!(code, Some(0));
    let first: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let inside = (first["lsn"].as_u64().unwrap() + 5).to_string();
    let out = common::assert_usage_error(
        &["log", "dump", s(&dir), "--from", &inside],
        "no record starts there",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("outside"), "{err}");
    common::assert_usage_error(
        &["log", "dump", s(&dir), "--from", "99999999"],
        "outside the log",
    );
}

#[test]
fn a_benchmark_directory_whose_load_was_killed_is_refused_naming_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    // What a TPC-B load killed part-way through the accounts leaves: the tables, one
    // branch, its tellers, some accounts, and no load record.
    let db = common::open_in_process(&dir);
    for (name, rows) in [
        ("branch", 1u32),
        ("teller", 10),
        ("account", 500),
        ("history", 0),
    ] {
        let t = db.table_or_create(name).unwrap();
        db.transaction(|tx| {
            for i in 0..rows {
                tx.put(&t, i.to_be_bytes(), [0u8; 8])?;
            }
            Ok::<_, sluice::Error>(())
        })
        .unwrap();
    }
    db.close().unwrap();
    let (code, _, err) = run(&[
        "bench",
        "tpcb",
        "--dir",
        s(&dir),
        "--scale",
        "1",
        "--seconds",
        "0.2",
        "--warmup",
        "0",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    assert!(err.contains("did not finish"), "{err}");
    assert!(err.contains(&format!("rm -r {}", dir.display())), "{err}");
    assert!(
        !err.contains("--scale 1"),
        "it already has --scale 1: {err}"
    );
}

#[test]
fn a_benchmark_piped_into_head_ends_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "bench",
            "tpcb",
            "--scale",
            "1",
            "--clients",
            "1",
            "--seconds",
            "0.3",
            "--warmup",
            "0",
            "--commit",
            "classic",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1` closes the pipe after one line; closed before the first one, the
    // benchmark's every line meets it closed (a reader that closes after the first line
    // races with the writer, which may have written everything into the pipe by then).
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    use std::os::unix::process::ExitStatusExt;
    assert!(
        out.status.code() == Some(0) || out.status.signal() == Some(libc_sigpipe()),
        "a closed stdout ends the process quietly (SIGPIPE), not {:?}: {err}",
        out.status
    );
}

/// SIGPIPE's number on Linux (the test crate does not depend on libc).
fn libc_sigpipe() -> i32 {
    13
}
