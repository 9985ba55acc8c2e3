//! The operator tools on small real databases: `verify` names the damage (a flipped
//! byte in a data page, a truncated log segment, a bad control file) and exits 1, never
//! panicking, and passes a clean database; `log dump` shows the records of a committed
//! write; `stats`, `tables`, `get` and `scan` read a database read-only.

use crate::common;

use common::sluice;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A closed database in a temp dir with table `users` holding `ada` and `alan`.
fn database() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    let users = db.table_or_create("users").unwrap();
    let mut tx = db.begin();
    tx.put(&users, b"ada", b"lovelace").unwrap();
    tx.put(&users, b"alan", b"turing").unwrap();
    tx.commit().unwrap();
    drop(users);
    db.close().unwrap();
    (tmp, dir)
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out: Output = sluice(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("$ sluice {}\n{stdout}{stderr}", args.join(" "));
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    (out.status.code(), stdout, stderr)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts `sluice verify dir` (read-write and read-only) exits 1 with one line on
/// stderr containing every one of `mentions`.
fn assert_verify_fails(dir: &Path, mentions: &[&str]) {
    for ro in [true, false] {
        let mut args = vec!["verify", s(dir)];
        if ro {
            args.push("--read-only");
        }
        let (code, _, err) = run(&args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
        for m in mentions {
            assert!(err.contains(m), "{args:?}: {err:?} lacks {m:?}");
        }
    }
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

#[test]
fn verify_passes_a_clean_database() {
    let (_tmp, dir) = database();
    let (code, out, err) = run(&["verify", s(&dir), "--read-only"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("users"), "{out}");
    assert!(out.starts_with("recovery") && out.contains("ok: 1 table(s), 2 entries"));
    let (code, out, err) = run(&["verify", s(&dir), "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["tables"][0]["name"], "users");
    assert_eq!(v["tables"][0]["entries"], 2);
}

#[test]
fn verify_names_a_flipped_byte_in_a_data_page() {
    let (_tmp, dir) = database();
    // Page 2 is the first table's root leaf (0 is the meta page, 1 the catalog).
    let page = 8192;
    flip_byte(&dir.join("data"), 2 * page + 100);
    assert_verify_fails(&dir, &["data", "page 2", "checksum"]);
}

/// The first log segment of the database in `dir`.
fn first_segment(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir.join("log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            sluice_wal::segment::parse_segment_name(name).is_some()
        })
        .min()
        .expect("a log segment")
}

#[test]
fn verify_names_a_log_segment_truncated_inside_its_records() {
    let (_tmp, dir) = database();
    // The segment's 4 KiB header block, then the records up to the middle of the
    // transaction: the checkpoint the control file names is gone.
    let f = OpenOptions::new()
        .write(true)
        .open(first_segment(&dir))
        .unwrap();
    f.set_len(4096 + 530).unwrap();
    f.sync_all().unwrap();
    assert_verify_fails(&dir, &["log", "LSN"]);
}

#[test]
fn verify_names_a_truncated_log_segment() {
    let (_tmp, dir) = database();
    let seg = first_segment(&dir);
    let f = OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(100).unwrap();
    f.sync_all().unwrap();
    let name = seg.file_name().unwrap().to_str().unwrap();
    assert_verify_fails(&dir, &["log", "LSN 0", name]);
}

#[test]
fn verify_names_a_bad_control_file() {
    let (_tmp, dir) = database();
    flip_byte(&dir.join("CONTROL"), 20);
    assert_verify_fails(&dir, &["CONTROL"]);
}

#[test]
fn log_dump_shows_the_update_and_the_commit() {
    let (_tmp, dir) = database();
    let (code, out, err) = run(&["log", "dump", s(&dir)]);
    assert_eq!(code, Some(0), "{err}");
    let update = out
        .lines()
        .find(|l| l.contains(" update ") && l.contains("key \"ada\""))
        .expect("an update of ada");
    let txn = update.split_whitespace().nth(5).unwrap().to_string();
    assert!(
        out.lines()
            .any(|l| l.contains(" commit ") && l.split_whitespace().nth(5) == Some(&txn)),
        "no commit of txn {txn}"
    );
    let (code, out, _) = run(&["log", "dump", s(&dir), "--json", "--limit", "3"]);
    assert_eq!(code, Some(0));
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let second = lines[1]["lsn"].as_u64().unwrap().to_string();
    let (code, out, _) = run(&["log", "dump", s(&dir), "--json", "--from", &second]);
    assert_eq!(code, Some(0));
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first, lines[1]);
    // An LSN inside a record, unaligned, or past the end is a usage error.
    let inside = (lines[1]["lsn"].as_u64().unwrap() + 8).to_string();
    for bad in [inside.as_str(), "3", "99999999"] {
        common::assert_usage_error(&["log", "dump", s(&dir), "--from", bad], "LSN");
    }
}

#[test]
fn stats_tables_get_and_scan_read_the_database() {
    let (_tmp, dir) = database();
    let (code, out, err) = run(&["stats", s(&dir)]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out
        .lines()
        .any(|l| l.contains("users") && l.contains("2 entries")));
    assert!(out.contains("page size    8192 B"), "{out}");
    let (code, out, _) = run(&["stats", s(&dir), "--json"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["tables"][0]["entries"], 2);
    assert!(v["checkpoint_lsn"].as_u64().is_some());
    assert!(v["log_bytes"].as_u64().unwrap() > 0);

    assert_eq!(run(&["tables", s(&dir)]).1, "users\n");
    assert_eq!(run(&["get", s(&dir), "users", "ada"]).1, "lovelace\n");
    assert_eq!(
        run(&["get", s(&dir), "users", "616461", "--hex"]).1,
        "6c6f76656c616365\n"
    );
    let (code, _, err) = run(&["get", s(&dir), "users", "bob"]);
    assert_eq!((code, err.lines().count()), (Some(1), 1));
    assert_eq!(
        run(&["scan", s(&dir), "users"]).1,
        "ada\tlovelace\nalan\tturing\n"
    );
    assert_eq!(
        run(&["scan", s(&dir), "users", "--prefix", "al"]).1,
        "alan\tturing\n"
    );
    assert_eq!(
        run(&["scan", s(&dir), "users", "--limit", "1"]).1,
        "ada\tlovelace\n"
    );
}

#[test]
fn every_tool_refuses_a_missing_or_foreign_directory_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let foreign = tmp.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "hello").unwrap();
    for d in [&missing, &foreign] {
        for args in [
            vec!["verify", s(d)],
            vec!["verify", s(d), "--read-only"],
            vec!["log", "dump", s(d)],
            vec!["stats", s(d)],
            vec!["tables", s(d)],
            vec!["get", s(d), "t", "k"],
            vec!["scan", s(d), "t"],
        ] {
            common::assert_usage_error(&args, s(d));
        }
    }
    // Nothing was created where the path was mistyped.
    assert!(!missing.exists());
    assert_eq!(std::fs::read_dir(&foreign).unwrap().count(), 1);
}

#[test]
fn every_tool_refuses_a_database_held_by_another_handle_with_exit_1() {
    let (_tmp, dir) = database();
    let db = common::open_in_process(&dir);
    for args in [
        vec!["verify", s(&dir)],
        vec!["verify", s(&dir), "--read-only"],
        vec!["log", "dump", s(&dir)],
        vec!["stats", s(&dir)],
        vec!["scan", s(&dir), "users"],
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
        assert!(err.contains("in use"), "{args:?}: {err}");
    }
    drop(db);
}

#[test]
fn verify_read_only_changes_nothing_and_verify_recovers_a_crashed_database() {
    let (_tmp, dir) = database();
    let db = common::open_in_process(&dir);
    let users = db.table("users").unwrap();
    let mut tx = db.begin();
    tx.put(&users, b"grace", b"hopper").unwrap();
    tx.commit().unwrap();
    drop(users);
    db.close_as_crashed().unwrap();
    let files = |d: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        v.sort();
        v
    };
    let before = (files(&dir), files(&dir.join("log")));
    let (code, out, err) = run(&["verify", s(&dir), "--read-only", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["tables"][0]["entries"], 3);
    assert!(v["recovery"]["redone"].as_u64().unwrap() > 0, "{v}");
    assert!(
        before == (files(&dir), files(&dir.join("log"))),
        "a read-only verify changed a file"
    );
    // Read-write: recovered and checkpointed, so the next open has nothing to redo.
    assert_eq!(run(&["verify", s(&dir)]).0, Some(0));
    let (code, out, _) = run(&["verify", s(&dir), "--read-only", "--json"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["recovery"]["redone"], 0, "{v}");
    assert_eq!(run(&["get", s(&dir), "users", "grace"]).1, "hopper\n");
}
