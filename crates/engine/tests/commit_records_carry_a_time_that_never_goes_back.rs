//! Every commit record carries the time it committed (issue 26: a time can be a restore
//! target), shown by the log dump (`sluice log dump`): known, between the clock before
//! and after, and never going back along the log — across a reopen too. One client
//! commits, so the stamps follow the log order exactly (with concurrent committers two
//! records may be microseconds out of order, `CommitTime`'s docs).

use sluice::inspect::dump_log;
use sluice::{CommitTime, Database};

#[test]
fn commit_times_are_known_and_never_go_back_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let before = CommitTime::now();
    for round in 0..3 {
        let db = Database::open(&path).unwrap();
        let t = db.table_or_create("t").unwrap();
        for i in 0..20 {
            let mut tx = db.begin();
            tx.put(&t, format!("{round}/{i}").as_bytes(), b"v").unwrap();
            tx.commit().unwrap();
        }
        drop(t);
        db.close().unwrap();
    }
    let after = CommitTime::now();
    let dump = dump_log(&path, None, None).unwrap();
    let commits: Vec<_> = dump.entries.iter().filter(|e| e.kind == "commit").collect();
    assert!(commits.len() >= 60, "{} commits", commits.len());
    let times: Vec<CommitTime> = commits.iter().map(|e| e.commit_time.unwrap()).collect();
    assert!(
        times.iter().all(|t| before <= *t && *t <= after),
        "{before} .. {after}: {times:?}"
    );
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "stamps went back along the log: {times:?}"
    );
    for e in &commits {
        let t = e.commit_time.unwrap();
        assert!(e.summary.ends_with(&format!(" at {t}")), "{}", e.summary);
        assert_eq!(t.to_string().parse::<CommitTime>(), Ok(t));
    }
    // Only commit records have a time; a checkpoint's record shows the clock.
    assert!(dump
        .entries
        .iter()
        .filter(|e| e.commit_time.is_some())
        .all(|e| e.kind == "commit"));
    assert!(dump
        .entries
        .iter()
        .any(|e| e.kind == "end-checkpoint" && e.summary.contains(" clock 20")));
}
