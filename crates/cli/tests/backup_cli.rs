//! `sluice backup`, `backup list`, `backup verify` and `sluice restore` (issue 26): a
//! backup, rolled forward from the log archive, restored to the end and to a time before
//! a later commit; bad input is one line and exit code 2, an interrupted backup is
//! refused by name.

use crate::common;

use common::{assert_usage_error, run};
use sluice::Database;
use std::path::Path;

fn put(db: &Database, k: &str, v: &str) {
    let t = db.table_or_create("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, k, v).unwrap();
    tx.commit().unwrap();
}

fn open_archived(dir: &Path, archive: &Path) -> Database {
    Database::builder(dir)
        .log_archive(archive)
        .log_segment_bytes(128 << 10)
        .open()
        .unwrap()
}

#[test]
fn backup_then_restore_to_the_end_and_to_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, archive, backups) = (
        tmp.path().join("db"),
        tmp.path().join("wal"),
        tmp.path().join("backups"),
    );
    std::fs::create_dir_all(&backups).unwrap();
    let db = open_archived(&dir, &archive);
    put(&db, "before", "the backup");
    db.close().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let base = backups.join("base-1");
    let (code, out, err) = run(&["backup", &s(&dir), &s(&base)]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("end LSN"), "{out}");

    // After the backup: a commit, a quiet moment (the target time), another commit, and
    // enough log that the segments holding both are finished and archived.
    let db = open_archived(&dir, &archive);
    put(&db, "after", "the backup");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let between = sluice::CommitTime::now().to_string();
    std::thread::sleep(std::time::Duration::from_millis(20));
    put(&db, "later", "than the target time");
    for i in 0..400 {
        put(&db, &format!("filler-{i:04}"), &"x".repeat(300));
    }
    db.close().unwrap();

    let (code, out, err) = run(&[
        "backup",
        "list",
        &s(&backups),
        "--archive",
        &s(&archive),
        "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let b = &j["backups"][0];
    assert!(
        b["restorable_to_lsn"].as_u64().unwrap() > b["restorable_from_lsn"].as_u64().unwrap(),
        "{j}"
    );
    assert!(b["archived_segments"].as_u64().unwrap() >= 1, "{j}");
    let (code, out, err) = run(&["backup", "verify", &s(&base), "--archive", &s(&archive)]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("verified 1 backup"), "{out}");

    let to_time = tmp.path().join("to-time");
    let (code, out, err) = run(&[
        "restore",
        "--from",
        &s(&base),
        "--archive",
        &s(&archive),
        "--to-time",
        &between,
        &s(&to_time),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("log cut at LSN"), "{out}");
    // Its progress, stderr not being a terminal: plain lines, each step as it starts and
    // ends, in the order they run.
    let mut at = 0;
    for step in [
        "check log",
        "copy",
        "sort log",
        "apply runs",
        "analysis",
        "undo",
        "checkpoint",
    ] {
        let (start, end) = (
            format!("restore: {step}: started"),
            format!("restore: {step} done in"),
        );
        let s = err[at..]
            .find(&start)
            .unwrap_or_else(|| panic!("no `{start}` in order: {err}"));
        let e = err[at + s..]
            .find(&end)
            .unwrap_or_else(|| panic!("no `{end}`: {err}"));
        at += s + e;
    }
    let get = |d: &Path, k: &str| run(&["get", &s(d), "t", k]);
    assert_eq!(get(&to_time, "after").1.trim(), "the backup");
    assert_eq!(
        get(&to_time, "later").0,
        Some(1),
        "a commit after the target time was restored"
    );

    let to_end = tmp.path().join("to-end");
    let (code, _, err) = run(&[
        "restore",
        "--from",
        &s(&base),
        "--archive",
        &s(&archive),
        "--to-end",
        &s(&to_end),
        "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("restore:"), "--json shows no progress: {err}");
    assert_eq!(get(&to_end, "later").1.trim(), "than the target time");
    let (code, out, err) = run(&["verify", &s(&to_end)]);
    assert_eq!(code, Some(0), "{out}{err}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    put(&db, "k", "v");
    db.close().unwrap();
    let base = tmp.path().join("base");
    assert_eq!(run(&["backup", &s(&dir), &s(&base)]).0, Some(0));
    let missing = tmp.path().join("nope");
    assert_usage_error(
        &["backup", &s(&missing), &s(&tmp.path().join("b2"))],
        "does not exist",
    );
    assert_usage_error(&["backup", &s(&dir), &s(&base)], "not an empty directory");
    assert_usage_error(&["backup", "list", &s(&dir)], "holds none");
    assert_usage_error(
        &["restore", "--from", &s(&base), &s(&tmp.path().join("r"))],
        "--to-",
    );
    assert_usage_error(
        &[
            "restore",
            "--from",
            &s(&base),
            "--to-time",
            "yesterday",
            &s(&tmp.path().join("r")),
        ],
        "yesterday",
    );
    assert_usage_error(
        &[
            "restore",
            "--from",
            &s(&missing),
            "--to-end",
            &s(&tmp.path().join("r")),
        ],
        "not a directory",
    );
    assert_usage_error(
        &[
            "restore",
            "--from",
            &s(&dir),
            "--to-end",
            &s(&tmp.path().join("r")),
        ],
        "not a backup",
    );
    assert_usage_error(
        &[
            "restore",
            "--from",
            &s(&base),
            "--to-lsn",
            "1",
            &s(&tmp.path().join("r")),
        ],
        "before the backup's end",
    );
    assert_usage_error(
        &[
            "restore",
            "--from",
            &s(&base),
            "--to-lsn",
            "999999999999",
            &s(&tmp.path().join("r")),
        ],
        "past the end",
    );
    // A backup directory is refused read-write, by name.
    let (code, _, err) = run(&["verify", &s(&base)]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is a backup"), "{err}");
    // An interrupted backup, by name.
    std::fs::write(base.join("BACKUP.partial"), b"").unwrap();
    assert_usage_error(
        &[
            "restore",
            "--from",
            &s(&base),
            "--to-end",
            &s(&tmp.path().join("r2")),
        ],
        "incomplete backup",
    );
}

/// `sluice backup --incremental` copies only the pages changed since its parent, `backup
/// list` and `verify` show and restore the chain, `sluice restore --from FULL --from INC`
/// restores it; a chain given without its full backup, out of order, or an incremental
/// backup opened on its own is refused, one line, exit 2.
#[test]
fn an_incremental_backup_restores_with_its_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (dir, backups) = (tmp.path().join("db"), tmp.path().join("backups"));
    std::fs::create_dir_all(&backups).unwrap();
    let db = common::open_in_process(&dir);
    for i in 0..600 {
        put(&db, &format!("k{i:04}"), &"v".repeat(200));
    }
    db.close().unwrap();
    let (full, inc) = (backups.join("1-full"), backups.join("2-inc"));
    let (code, _, err) = run(&["backup", &s(&dir), &s(&full)]);
    assert_eq!(code, Some(0), "{err}");
    let db = common::open_in_process(&dir);
    put(&db, "k0001", "changed");
    put(&db, "new", "after the full backup");
    db.close().unwrap();
    let (code, out, err) = run(&[
        "backup",
        &s(&dir),
        &s(&inc),
        "--incremental",
        &s(&full),
        "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let label: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(label["kind"], "incremental", "{label}");
    let whole = label["data_bytes"].as_u64().unwrap() / label["page_size"].as_u64().unwrap();
    let copied = label["pages_copied"].as_u64().unwrap();
    assert!(
        copied > 0 && copied < whole / 2,
        "{copied} of {whole} pages"
    );

    let (code, out, err) = run(&["backup", "list", &s(&backups)]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("incremental of LSN"), "{out}");
    let (code, out, err) = run(&["backup", "verify", &s(&backups)]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("verified 2 backup"), "{out}");
    // Verified alone, it names its missing chain.
    let (code, out, _) = run(&["backup", "verify", &s(&inc)]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("not among the backups listed"), "{out}");

    let restored = tmp.path().join("restored");
    let (code, out, err) = run(&[
        "restore",
        "--from",
        &s(&full),
        "--from",
        &s(&inc),
        "--to-end",
        &s(&restored),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(" + "), "{out}");
    let get = |k: &str| run(&["get", &s(&restored), "t", k]).1;
    assert_eq!(get("new").trim(), "after the full backup");
    assert_eq!(get("k0001").trim(), "changed");
    assert_eq!(get("k0599").trim(), "v".repeat(200));

    let r = |n: &str| s(&tmp.path().join(n));
    assert_usage_error(
        &["restore", "--from", &s(&inc), "--to-end", &r("r1")],
        "is an incremental backup",
    );
    assert_usage_error(
        &[
            "restore",
            "--from",
            &s(&inc),
            "--from",
            &s(&full),
            "--to-end",
            &r("r2"),
        ],
        "must start with a full backup",
    );
    assert_usage_error(
        &["backup", &s(&dir), &r("b3"), "--incremental", &r("nope")],
        "--incremental",
    );
    assert_usage_error(
        &["backup", &s(&dir), &r("b4"), "--incremental", &s(&dir)],
        "is not a backup",
    );
    let (code, _, err) = run(&["scan", &s(&inc), "t"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is an incremental backup"), "{err}");
}

/// A build without the `object-store` feature (CI's): a URL is one line naming the
/// feature, exit code 2 — for `archive pull` and for a restore's `--archive`.
#[cfg(not(feature = "object-store"))]
#[test]
fn an_object_store_url_without_the_feature_is_one_line_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pulled");
    let out = assert_usage_error(
        &[
            "archive",
            "pull",
            "file:///nowhere/wal",
            dir.to_str().unwrap(),
        ],
        "object-store",
    );
    assert!(!out.status.success());
    assert!(!dir.exists(), "nothing is made");
    // A restore reaches the archive only after its backup is found: a real backup.
    let (db_dir, archive, backup) = (
        tmp.path().join("db"),
        tmp.path().join("archive"),
        tmp.path().join("backup"),
    );
    let db = open_archived(&db_dir, &archive);
    put(&db, "k", "v");
    db.backup_to(&backup).unwrap();
    db.close().unwrap();
    let dest = tmp.path().join("restored");
    assert_usage_error(
        &[
            "restore",
            "--from",
            backup.to_str().unwrap(),
            "--archive",
            "file:///nowhere/wal",
            "--to-end",
            dest.to_str().unwrap(),
        ],
        "object-store",
    );
}
