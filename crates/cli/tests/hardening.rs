//! CLI hardening (issue 13): a bad value for any subcommand is one line on stderr and
//! exit 2, before any work; an output directory that cannot be made is refused up
//! front; the inspection commands on a damaged directory exit 1 with one line naming
//! the damaged file and the LSN or page, never a panic.

use crate::common;

use common::{assert_usage_error, sluice};
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The tests of this file run one at a time. A test that opens a database in this
/// process and closes it can still find it locked from the binary it runs next: a child
/// another test thread is spawning at that moment inherits the lock's descriptor between
/// its fork and its exec (close-on-exec closes it only at the exec).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_subcommand_family_refuses_bad_values_with_exit_2() {
    let _serial = serial();
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "tpcb", "--scale", "0"], "--scale"),
        (&["bench", "tpcb", "--scale", "10001"], "--scale"),
        (&["bench", "tpcb", "--clients", "0"], "--clients"),
        (&["bench", "tpcb", "--skew", "nan"], "--skew"),
        (&["bench", "tpcb", "--warmup=-1"], "--warmup"),
        (
            &["bench", "tpcb", "--checkpoint-mib", "0"],
            "--checkpoint-mib",
        ),
        (&["bench", "tatp", "--subscribers", "0"], "--subscribers"),
        (&["bench", "tatp", "--agents", "0"], "--agents"),
        (&["bench", "tatp", "--log-latency", "soon"], "--log-latency"),
        (
            &[
                "bench",
                "log-insert",
                "--variant",
                "mutex",
                "--threads",
                "0",
                "--record-size",
                "64",
            ],
            "--threads",
        ),
        (&["bench", "partition", "--horizontal", "0"], "--horizontal"),
        (
            &[
                "bench",
                "propagation",
                "--strategy",
                "log",
                "--seconds",
                "inf",
            ],
            "--seconds",
        ),
        (&["bench", "commit-sweep", "--figure", "nope"], "nope"),
        (&["compare", "tpcb", "--seconds", "0"], "--seconds"),
        (&["compare", "tatp", "--engines", "nope"], "nope"),
        (
            &["plan", "--profile", "/nonexistent/profile.json"],
            "/nonexistent",
        ),
        (&["crash-test", "engine", "--seeds", "0"], "--seeds"),
        (&["crash-test", "sim", "--seeds", "99999999999"], "--seeds"),
        (
            &["crash-test", "kill", "--runs", "1", "--scale", "0"],
            "--scale",
        ),
        (&["log", "dump", "/nonexistent/db"], "/nonexistent/db"),
        (&["stats", "/nonexistent/db"], "/nonexistent/db"),
        (&["get", "/nonexistent/db", "t", "zz", "--hex"], "not hex"),
        (
            &["scan", "/nonexistent/db", "t", "--prefix", "abc", "--hex"],
            "not hex",
        ),
        (
            &[
                "kill-child",
                "--dir",
                "/nonexistent/db",
                "--commit",
                "classic",
                "--scale",
                "1",
                "--accounts-per-branch",
                "10",
                "--clients",
                "0",
                "--run-tag",
                "1",
            ],
            "--clients",
        ),
    ];
    for (args, mentions) in cases {
        assert_usage_error(args, mentions);
    }
}

#[test]
fn the_kill_child_never_creates_a_database() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    assert_usage_error(
        &[
            "kill-child",
            "--dir",
            s(&dir),
            "--commit",
            "classic",
            "--scale",
            "1",
            "--accounts-per-branch",
            "10",
            "--clients",
            "1",
            "--run-tag",
            "1",
        ],
        "CONTROL",
    );
    assert!(!dir.exists());
}

#[test]
fn an_output_directory_that_cannot_be_made_is_refused_before_the_runs() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    // A directory below a regular file cannot be made; without the check up front,
    // `compare` ran all its rounds and failed only when writing.
    let below = file.join("out");
    for args in [
        vec!["compare", "tpcb", "--out", s(&below)],
        vec![
            "bench",
            "log-insert-sweep",
            "--figure",
            "threads",
            "--out",
            s(&below),
        ],
        vec![
            "bench",
            "commit-sweep",
            "--figure",
            "ctx",
            "--out",
            s(&below),
        ],
        vec![
            "bench",
            "propagation-sweep",
            "--figure",
            "bandwidth",
            "--out",
            s(&below),
        ],
    ] {
        assert_usage_error(&args, "--out");
    }
    for args in [
        vec!["compare", "tpcb", "--out", s(&file)],
        vec![
            "bench",
            "log-insert-sweep",
            "--figure",
            "threads",
            "--out",
            s(&file),
        ],
    ] {
        assert_usage_error(&args, "not a directory");
    }
}

/// A closed database with table `users` holding a few rows (several log records, and a
/// checkpoint at close).
fn database() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    let users = db.table_or_create("users").unwrap();
    for i in 0..3u32 {
        let mut tx = db.begin();
        tx.put(&users, format!("user{i}").as_bytes(), b"someone")
            .unwrap();
        tx.commit().unwrap();
    }
    drop(users);
    db.close().unwrap();
    (tmp, dir)
}

fn flip_byte(path: &Path, at: u64) {
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8];
    f.seek(SeekFrom::Start(at)).unwrap();
    f.read_exact(&mut b).unwrap();
    f.seek(SeekFrom::Start(at)).unwrap();
    f.write_all(&[b[0] ^ 0x5a]).unwrap();
    f.sync_all().unwrap();
}

/// Asserts `sluice args` exits 1 with one line on stderr naming every one of
/// `mentions`, and no panic.
fn assert_damage_named(args: &[&str], mentions: &[&str]) {
    let out = sluice(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
    for m in mentions {
        assert!(err.contains(m), "{args:?}: {err:?} lacks {m:?}");
    }
}

fn log_segment(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir.join("log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wal"))
        .min()
        .expect("a log segment")
}

#[test]
fn inspection_commands_name_a_damaged_log_record_by_lsn() {
    let _serial = serial();
    let (_tmp, dir) = database();
    // The first record after the segment's 4 KiB header: later records prove the log
    // was written past it.
    flip_byte(&log_segment(&dir), 4096 + 20);
    let d = s(&dir);
    for args in [
        vec!["stats", d],
        vec!["tables", d],
        vec!["get", d, "users", "user1"],
        vec!["scan", d, "users"],
        vec!["log", "dump", d],
    ] {
        assert_damage_named(&args, &["log", "LSN"]);
    }
}

#[test]
fn inspection_commands_name_a_damaged_data_page() {
    let _serial = serial();
    let (_tmp, dir) = database();
    // Page 2 is the first table's root leaf (0 is the meta page, 1 the catalog).
    flip_byte(&dir.join("data"), 2 * 8192 + 100);
    let d = s(&dir);
    for args in [
        vec!["stats", d],
        vec!["get", d, "users", "user1"],
        vec!["scan", d, "users"],
    ] {
        assert_damage_named(&args, &["data", "page 2"]);
    }
}

#[test]
fn inspection_commands_name_a_damaged_control_file_and_a_short_data_file() {
    let _serial = serial();
    let (_tmp, dir) = database();
    let d = s(&dir);
    let data = dir.join("data");
    let len = std::fs::metadata(&data).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&data)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    for args in [
        vec!["stats", d],
        vec!["tables", d],
        vec!["get", d, "users", "user1"],
        vec!["scan", d, "users"],
    ] {
        assert_damage_named(&args, &["data file", "bytes"]);
    }
    flip_byte(&dir.join("CONTROL"), 20);
    for args in [
        vec!["stats", d],
        vec!["tables", d],
        vec!["get", d, "users", "user1"],
        vec!["scan", d, "users"],
        vec!["bench", "tpcb", "--dir", d, "--check-only"],
    ] {
        assert_damage_named(&args, &["CONTROL"]);
    }
}
