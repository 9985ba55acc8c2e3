//! (A unit test: it sets the log's commit clock ahead of the wall clock, and reads commit
//! times through the crate-private `log_record::commit_of`.)
//!
//! Commit records carry their time (issue 26), and a log's stamps never go back: not when
//! the wall clock is behind the last stamp, and not across a restart — after a kill
//! (analysis meets the commit records) or after a clean close (whose checkpoint is the
//! last thing in the log, so analysis meets no commit: the checkpoint's record of the
//! clock starts it).

use crate::log_record::{commit_of, effective_times, CommitTime};
use crate::partitioned::Partitioned;
use crate::{Database, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;

/// The time of each commit record in the log, in LSN order.
fn commit_times(db: &Database) -> Vec<CommitTime> {
    let log = db.log();
    log.read_from(log.start_lsn())
        .unwrap()
        .filter_map(|r| commit_of(&r.unwrap().payload).map(|(_, at)| at))
        .collect()
}

fn commit_one(db: &Database, key: &str) {
    let t = db.table_or_create("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, key.as_bytes(), b"v").unwrap();
    tx.commit().unwrap();
}

#[test]
fn a_restart_with_the_wall_clock_behind_the_log_stamps_no_earlier_time() {
    for (seed, clean) in [(261, true), (262, false)] {
        let sim = SimStorage::new(seed);
        let db = Database::open_on(Arc::new(sim.pinned()), "/db", Options::small()).unwrap();
        commit_one(&db, "a");
        // The log holds a stamp an hour ahead of the wall clock (as if the clock was
        // stepped back an hour since).
        let ahead = CommitTime(CommitTime::now().0 + 3_600_000_000);
        db.inner.store.commit_clock.observe(ahead);
        commit_one(&db, "b");
        assert_eq!(commit_times(&db).last(), Some(&ahead), "clean {clean}");
        if clean {
            db.close().unwrap();
        } else {
            sim.kill_process();
            drop(db);
        }
        let db = Database::open_on(Arc::new(sim.pinned()), "/db", Options::small()).unwrap();
        commit_one(&db, "c");
        let times = commit_times(&db);
        assert!(times.len() >= 3, "clean {clean}: {times:?}");
        assert!(times.iter().all(|t| t.is_known()), "{times:?}");
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "clean {clean}: stamps went back: {times:?}"
        );
        assert!(*times.last().unwrap() >= ahead, "clean {clean}: {times:?}");
        db.close().unwrap();
    }
}

#[test]
fn a_coordinated_commit_carries_the_time_of_the_coordinators_clock() {
    let sim = SimStorage::new(263);
    let before = CommitTime::now();
    let db = Partitioned::builder("/db")
        .log_managers(2)
        .options(Options::small())
        .storage(Arc::new(sim.pinned()))
        .assign("a", 0)
        .assign("b", 1)
        .open()
        .unwrap();
    let (a, b) = (
        db.table_or_create("a").unwrap(),
        db.table_or_create("b").unwrap(),
    );
    let mut tx = db.begin();
    tx.put(&a, b"k", b"both").unwrap();
    tx.put(&b, b"k", b"both").unwrap();
    tx.commit().unwrap();
    let after = CommitTime::now();
    let p0 = db.partition(0);
    let log = p0.log();
    let coordinated: Vec<CommitTime> = log
        .read_from(log.start_lsn())
        .unwrap()
        .map(|r| r.unwrap().payload)
        .filter(|p| {
            matches!(
                crate::log_record::Record::decode(p),
                Ok(crate::log_record::Record::Coordinated { .. })
            )
        })
        .map(|p| commit_of(&p).unwrap().1)
        .collect();
    assert_eq!(coordinated.len(), 1, "{coordinated:?}");
    assert!(before <= coordinated[0] && coordinated[0] <= after);
    assert_eq!(
        effective_times(commit_times(p0)).last(),
        Some(coordinated[0])
    );
    drop((a, b));
    db.close().unwrap();
}
