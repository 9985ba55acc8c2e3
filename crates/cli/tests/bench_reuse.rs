//! `sluice bench tpcb|tatp --dir D` on an existing database: reused when it holds the
//! same workload at the same scale (the load skipped), refused naming the difference
//! otherwise (exit 2); `--check-only` runs only the consistency check (exit 0 when
//! consistent, 1 when not); a database another process holds is one clear line (exit 1).

use crate::common;

use common::{assert_usage_error, bench_args, sluice};
use std::path::Path;

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

/// Runs `sluice args`, asserting no panic; returns (exit code, stdout, stderr).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = sluice(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("$ sluice {}\n{stdout}{stderr}", args.join(" "));
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    (out.status.code(), stdout, stderr)
}

/// A short TPC-B run on `dir` at `scale`, plus `extra` flags.
fn tpcb(dir: &Path, scale: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut more = vec!["--scale", scale];
    more.extend_from_slice(extra);
    run(&bench_args("tpcb", s(dir), &more))
}

#[test]
fn a_tpcb_directory_is_loaded_once_then_reused_checked_and_guarded() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");

    let (code, out, err) = tpcb(&dir, "1", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("loaded") && !out.contains("reusing"), "{out}");

    // The second run loads nothing: it says it reuses the database, and its history
    // adds to the first run's (the check after the run counts both).
    let (code, out, err) = tpcb(&dir, "1", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("reusing") && !out.contains("loaded"), "{out}");
    assert!(out.contains("TPC-B at scale 1"), "{out}");
    let rows: u64 = out
        .split(", ")
        .find(|p| p.ends_with("history rows"))
        .and_then(|p| p.split(' ').next()?.parse().ok())
        .expect("the reuse line counts the history");
    assert!(rows > 0, "the first run committed nothing: {out}");

    // --check-only, with and without the scale.
    for extra in [&["--check-only"][..], &["--check-only", "--scale", "1"][..]] {
        let mut args = vec!["bench", "tpcb", "--dir", s(&dir)];
        args.extend_from_slice(extra);
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(0), "{err}");
        assert!(
            out.contains("consistent") && !out.contains("INCONSISTENT"),
            "{out}"
        );
        assert!(
            !out.contains("tps"),
            "--check-only ran the benchmark: {out}"
        );
    }
    let (code, out, _) = run(&["bench", "tpcb", "--dir", s(&dir), "--check-only", "--json"]);
    assert_eq!(code, Some(0));
    let j: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(j["consistent"], true);
    assert_eq!(j["workload"], "tpcb");

    // Another scale, another workload: refused, naming what the directory holds.
    assert_usage_error(
        &["bench", "tpcb", "--dir", s(&dir), "--scale", "2"],
        "--scale 1",
    );
    assert_usage_error(
        &[
            "bench",
            "tpcb",
            "--dir",
            s(&dir),
            "--scale",
            "2",
            "--check-only",
        ],
        "TPC-B at scale 1",
    );
    assert_usage_error(
        &["bench", "tatp", "--dir", s(&dir), "--subscribers", "100"],
        "TPC-B at scale 1",
    );
    assert_usage_error(
        &["bench", "tatp", "--dir", s(&dir), "--check-only"],
        "TPC-B at scale 1",
    );
    // The log of a reused database stays where it is.
    assert_usage_error(
        &[
            "bench",
            "tpcb",
            "--dir",
            s(&dir),
            "--scale",
            "1",
            "--log-latency",
            "1ms",
        ],
        "--log-latency",
    );

    // A teller's balance changed behind the workload's back: the check says so, exit 1,
    // and a benchmark refuses to run on it.
    {
        let db = common::open_in_process(&dir);
        let teller = db.table("teller").unwrap();
        let mut tx = db.begin();
        tx.put(
            &teller,
            3u32.to_be_bytes(),
            sluice_bench::workloads::tpcb::encode_row(0, 12345),
        )
        .unwrap();
        tx.commit().unwrap();
        drop(teller);
        db.close().unwrap();
    }
    let (code, out, err) = run(&["bench", "tpcb", "--dir", s(&dir), "--check-only"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("INCONSISTENT"), "{out}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    let (code, _, err) = tpcb(&dir, "1", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("inconsistent as found"), "{err}");
}

#[test]
fn a_tpcb_database_loaded_without_a_load_record_is_recognised_by_its_rows() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        // As the loader left databases before it recorded its loads.
        let db = common::open_in_process(&dir);
        sluice_bench::workloads::tpcb::load(
            &db,
            &sluice_bench::workloads::tpcb::TpcbShape::standard(1),
            |_| {},
        )
        .unwrap();
        db.close().unwrap();
    }
    let (code, out, err) = run(&["bench", "tpcb", "--dir", s(&dir), "--check-only"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("TPC-B at scale 1") && out.contains("consistent"),
        "{out}"
    );
    let (code, out, err) = tpcb(&dir, "1", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("reusing"), "{out}");
    assert_usage_error(
        &["bench", "tpcb", "--dir", s(&dir), "--scale", "3"],
        "--scale 1",
    );
}

#[test]
fn a_tatp_directory_is_reused_and_checked() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let tatp = |extra: &[&str]| {
        let mut more = vec!["--subscribers", "500"];
        more.extend_from_slice(extra);
        run(&bench_args("tatp", s(&dir), &more))
    };
    let (code, out, err) = tatp(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("loaded"), "{out}");
    let (code, out, err) = tatp(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("reusing") && out.contains("TATP with 500 subscribers"),
        "{out}"
    );
    let (code, out, err) = run(&["bench", "tatp", "--dir", s(&dir), "--check-only"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("consistent") && !out.contains("INCONSISTENT"),
        "{out}"
    );
    assert_usage_error(
        &["bench", "tatp", "--dir", s(&dir), "--subscribers", "501"],
        "--subscribers 500",
    );
    assert_usage_error(&["bench", "tpcb", "--dir", s(&dir)], "TATP with 500");

    // A subscriber gone: the population check names it.
    {
        let db = common::open_in_process(&dir);
        let t = db.table("subscriber").unwrap();
        let mut tx = db.begin();
        tx.delete(&t, 7u32.to_be_bytes()).unwrap();
        tx.commit().unwrap();
        drop(t);
        db.close().unwrap();
    }
    let (code, out, err) = run(&["bench", "tatp", "--dir", s(&dir), "--check-only"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("INCONSISTENT: subscriber"), "{out}{err}");
}

#[test]
fn check_only_needs_a_benchmark_database() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let missing = tmp.path().join("missing");
    assert_usage_error(&["bench", "tpcb", "--check-only"], "--dir");
    assert_usage_error(&["bench", "tatp", "--check-only"], "--dir");
    assert_usage_error(
        &["bench", "tpcb", "--check-only", "--dir", s(&missing)],
        "does not exist",
    );
    assert_usage_error(
        &["bench", "tpcb", "--check-only", "--dir", s(&empty)],
        "CONTROL",
    );
    assert_usage_error(&["bench", "tpcb", "--dir", s(&file)], "not a directory");
    // A directory of other files is not made a database.
    std::fs::write(empty.join("notes.txt"), "hello").unwrap();
    assert_usage_error(&["bench", "tatp", "--dir", s(&empty)], "CONTROL");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 1);
    assert!(!missing.exists());
    // A database with other tables is refused by both workloads.
    let other = tmp.path().join("other");
    {
        let db = sluice::Database::open(&other).unwrap();
        db.create_table("users").unwrap();
        db.close().unwrap();
    }
    assert_usage_error(
        &["bench", "tpcb", "--dir", s(&other), "--check-only"],
        "tables users",
    );
    assert_usage_error(&["bench", "tatp", "--dir", s(&other)], "tables users");
}

#[test]
fn a_benchmark_database_another_process_holds_is_one_clear_line() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    for extra in [&[][..], &["--check-only"][..]] {
        let (code, out, err) = tpcb(&dir, "1", extra);
        assert_eq!(code, Some(1), "{out}{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
        assert!(err.contains("in use by another process"), "{err}");
        assert!(err.contains(s(&dir)), "{err}");
    }
    drop(db);
}
