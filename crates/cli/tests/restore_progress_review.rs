//! Outside review of the restore's per-step progress (`progress::steps_once_started`): a
//! restore refused for its target is bad input — one line on stderr, exit code 2
//! (`docs/backup.md`) — even when the refusal comes only after the log was read (a target
//! time is checked against the commits the log holds, in the `check log` step, which now
//! reports progress).

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

/// A target time before the backup's end, and one after the last commit, are refused
/// after the `check log` step read the log: the refusal must still be the only line on
/// stderr (no "restore: check log: started" / "restore: check log done in …" around it:
/// the step did not get done, it failed), exit code 2, nothing left in the destination.
#[test]
fn a_target_time_refused_after_reading_the_log_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    put(&db, "k", "v");
    db.close().unwrap();
    let base = tmp.path().join("base");
    assert_eq!(run(&["backup", &s(&dir), &s(&base)]).0, Some(0));
    // Control: the backup restores to the end, with progress lines.
    let (code, _, err) = run(&[
        "restore",
        "--from",
        &s(&base),
        "--to-end",
        &s(&tmp.path().join("ok")),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("restore: check log: started"), "{err}");

    for (time, dest) in [
        ("2000-01-01T00:00:00Z", "early"),
        ("2999-01-01T00:00:00Z", "late"),
    ] {
        let r = tmp.path().join(dest);
        assert_usage_error(
            &["restore", "--from", &s(&base), "--to-time", time, &s(&r)],
            "restore of",
        );
        let left = std::fs::read_dir(&r).map_or(0, |d| d.count());
        assert_eq!(left, 0, "{time}: the refused restore left files in {r:?}");
    }
}
