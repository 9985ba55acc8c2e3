//! A database whose log is partitioned over several log managers (`Partitioned`):
//! routing, atomic commit across logs, recovery of a commit decided by the coordinator,
//! and refusing missing or foreign partitions.

use sluice::testing::{partition_dir, PARTITION_MARKER};
use sluice::{CommitProtocol, Database, Error, Options, Partitioned};
use sluice_storage::{SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

const DIR: &str = "/db";

fn small() -> Options {
    let mut o = Options::small();
    o.pool_pages = 32;
    o
}

fn open(sim: &SimStorage, k: usize) -> sluice::Result<Partitioned> {
    open_with(sim, k, small())
}

/// Tables `a`, `b` and `c` go to partitions 0, 1 and the last.
fn open_with(sim: &SimStorage, k: usize, options: Options) -> sluice::Result<Partitioned> {
    Partitioned::builder(DIR)
        .log_managers(k)
        .options(options)
        .storage(Arc::new(sim.pinned()))
        .assign("a", 0)
        .assign("b", 1)
        .assign("c", k - 1)
        .open()
}

#[test]
fn each_table_lives_in_its_partition_and_a_commit_spans_them() {
    let sim = SimStorage::new(1);
    let db = open(&sim, 3).unwrap();
    let (a, b, c) = (
        db.create_table("a").unwrap(),
        db.create_table("b").unwrap(),
        db.create_table("c").unwrap(),
    );
    assert_eq!((a.partition(), b.partition(), c.partition()), (0, 1, 2));
    let before: Vec<u64> = (0..3)
        .map(|i| db.partition(i).log().durable_lsn().0)
        .collect();
    let mut tx = db.begin();
    tx.put(&a, b"k", b"va").unwrap();
    tx.put(&b, b"k", b"vb").unwrap();
    tx.put(&c, b"k", b"vc").unwrap();
    tx.commit().unwrap();
    // Every log received records; the coordinator's holds the commit.
    for (i, b) in before.iter().enumerate() {
        assert!(
            db.partition(i).log().durable_lsn().0 > *b,
            "log {i} got nothing"
        );
    }
    let mut tx = db.begin();
    assert_eq!(tx.get(&a, b"k").unwrap().as_deref(), Some(&b"va"[..]));
    assert_eq!(tx.get(&b, b"k").unwrap().as_deref(), Some(&b"vb"[..]));
    assert_eq!(tx.get(&c, b"k").unwrap().as_deref(), Some(&b"vc"[..]));
    tx.commit().unwrap();
    db.close().unwrap();

    let db = open(&sim, 3).unwrap();
    assert_eq!(
        db.tables(),
        vec![("a".into(), 0), ("b".into(), 1), ("c".into(), 2)]
    );
    let c = db.table("c").unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.get(&c, b"k").unwrap().as_deref(), Some(&b"vc"[..]));
    tx.commit().unwrap();
    assert!(db.verify().is_ok());
    db.close().unwrap();
}

#[test]
fn a_rollback_undoes_every_partition() {
    let sim = SimStorage::new(2);
    let db = open(&sim, 2).unwrap();
    let a = db.create_table("a").unwrap();
    let b = db.create_table("b").unwrap();
    let mut tx = db.begin();
    tx.put(&a, b"k", b"1").unwrap();
    tx.put(&b, b"k", b"1").unwrap();
    tx.rollback().unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.get(&a, b"k").unwrap(), None);
    assert_eq!(tx.get(&b, b"k").unwrap(), None);
    tx.commit().unwrap();
    db.close().unwrap();
}

/// The participants' own commit records are not waited for: a power loss right after
/// the commit returns can take them, and recovery must find the coordinator's record
/// and commit the parts it names.
#[test]
fn a_commit_the_coordinator_decided_survives_the_loss_of_the_participants_records() {
    let mut committed_by_coordinator = 0;
    for seed in 0..20 {
        let sim = SimStorage::new(100 + seed);
        let db = open(&sim, 3).unwrap();
        let a = db.create_table("a").unwrap();
        let b = db.create_table("b").unwrap();
        let c = db.create_table("c").unwrap();
        let mut tx = db.begin();
        tx.put(&b, b"k", b"vb").unwrap();
        tx.put(&c, b"k", b"vc").unwrap();
        tx.commit().unwrap();
        // Power loss now: whatever the participants' logs had not synced is gone.
        sim.crash();
        drop((a, b, c));
        drop(db);
        let db = open(&sim, 3).unwrap();
        committed_by_coordinator += db
            .recovery_reports()
            .iter()
            .map(|r| r.in_doubt_committed)
            .sum::<usize>();
        let (b, c) = (db.table("b").unwrap(), db.table("c").unwrap());
        let mut tx = db.begin();
        assert_eq!(
            tx.get(&b, b"k").unwrap().as_deref(),
            Some(&b"vb"[..]),
            "seed {seed}"
        );
        assert_eq!(
            tx.get(&c, b"k").unwrap().as_deref(),
            Some(&b"vc"[..]),
            "seed {seed}"
        );
        tx.commit().unwrap();
        db.close().unwrap();
    }
    assert!(
        committed_by_coordinator > 0,
        "no seed lost a participant's own commit record: the case was not tested"
    );
}

/// A crash after the participants' logs are durable and before the coordinator's record:
/// the parts are in the participants' logs, without an outcome anywhere; recovery rolls
/// them back in every log.
#[test]
fn a_crash_between_the_partition_flush_and_the_commit_record_rolls_back_everywhere() {
    let sim = SimStorage::new(3);
    let db = open(&sim, 3).unwrap();
    let a = db.create_table("a").unwrap();
    let b = db.create_table("b").unwrap();
    let c = db.create_table("c").unwrap();
    let mut tx = db.begin();
    tx.put(&a, b"k", b"va").unwrap();
    tx.put(&b, b"k", b"vb").unwrap();
    tx.put(&c, b"k", b"vc").unwrap();
    // Step 1 of the commit, by hand: every log durable past the parts.
    for i in 0..3 {
        db.partition(i).log().sync().unwrap();
    }
    sim.crash();
    std::mem::forget(tx);
    drop((a, b, c));
    drop(db);
    let db = open(&sim, 3).unwrap();
    let reports = db.recovery_reports();
    assert_eq!(
        reports.iter().map(|r| r.in_doubt_committed).sum::<usize>(),
        0
    );
    assert_eq!(
        reports.iter().map(|r| r.losers).collect::<Vec<_>>(),
        vec![1, 1, 1],
        "each log rolls back its part"
    );
    let mut tx = db.begin();
    for t in ["a", "b", "c"] {
        let t = db.table(t).unwrap();
        assert_eq!(tx.get(&t, b"k").unwrap(), None);
    }
    tx.commit().unwrap();
    db.close().unwrap();
}

#[test]
fn commits_work_under_every_protocol() {
    for protocol in CommitProtocol::ALL {
        let sim = SimStorage::new(4);
        let mut o = small();
        o.commit = protocol;
        let db = open_with(&sim, 2, o).unwrap();
        let a = db.create_table("a").unwrap();
        let b = db.create_table("b").unwrap();
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let (db, a, b) = (&db, &a, &b);
                s.spawn(move || {
                    for i in 0..50u32 {
                        let mut tx = db.begin();
                        let n = |tx: &mut sluice::PartitionedTransaction,
                                 t: &sluice::PartitionedTable| {
                            tx.get_for_update(t, b"n")
                                .unwrap()
                                .map_or(0, |v| u32::from_le_bytes(v.try_into().unwrap()))
                        };
                        let x = n(&mut tx, a);
                        let y = n(&mut tx, b);
                        tx.put(a, b"n", (x + 1).to_le_bytes()).unwrap();
                        tx.put(b, b"n", (y + 1).to_le_bytes()).unwrap();
                        tx.put(b, format!("{t}.{i}").as_bytes(), b"").unwrap();
                        match tx.commit() {
                            Ok(()) => {}
                            Err(e) if e.is_retryable() => {}
                            Err(e) => panic!("{protocol}: {e}"),
                        }
                    }
                });
            }
        });
        let mut tx = db.begin();
        let x = tx.get(&a, b"n").unwrap().unwrap();
        let y = tx.get(&b, b"n").unwrap().unwrap();
        assert_eq!(x, y, "{protocol}: the two partitions disagree");
        tx.commit().unwrap();
        db.close().unwrap();
    }
}

#[test]
fn a_partition_opened_alone_is_refused() {
    let sim = SimStorage::new(5);
    open(&sim, 2).unwrap().close().unwrap();
    let r = Database::builder(partition_dir(Path::new(DIR), 1))
        .storage(Arc::new(sim.pinned()))
        .open();
    let Err(Error::InvalidArgument(m)) = r else {
        panic!("opened a partition alone: {r:?}")
    };
    assert!(m.contains("is a partition of"), "{m}");
}

#[test]
fn a_missing_partition_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        Partitioned::builder(dir.path())
            .log_managers(3)
            .options(small())
            .open()
    };
    open().unwrap().close().unwrap();
    let gone = partition_dir(dir.path(), 2);
    std::fs::remove_dir_all(&gone).unwrap();
    let err = open().unwrap_err().to_string();
    assert!(
        err.contains("partition 2") && err.contains("missing"),
        "{err}"
    );
    assert!(err.contains(&gone.display().to_string()), "{err}");
    // Nothing was created in its place.
    assert!(!gone.exists());
}

#[test]
fn a_foreign_or_swapped_partition_log_is_named() {
    let sim = SimStorage::new(7);
    // Two databases, logs in directories of their own.
    for (dir, logs) in [("/one", "/logs-one"), ("/two", "/logs-two")] {
        let mut b = Partitioned::builder(dir)
            .log_managers(2)
            .options(small())
            .storage(Arc::new(sim.pinned()));
        for i in 0..2 {
            b = b.log_dir(i, format!("{logs}/{i}"));
        }
        b.open().unwrap().close().unwrap();
    }
    let open_with = |logs: [&str; 2]| {
        Partitioned::builder("/one")
            .options(small())
            .storage(Arc::new(sim.pinned()))
            .log_dir(0, logs[0])
            .log_dir(1, logs[1])
            .open()
    };
    let err = open_with(["/logs-one/0", "/logs-two/1"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/logs-two/1") && err.contains("foreign"),
        "{err}"
    );
    let err = open_with(["/logs-one/1", "/logs-one/0"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/logs-one/1") && err.contains("partition 1's log directory"),
        "{err}"
    );
    let err = open_with(["/logs-one/0", "/nowhere"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("/nowhere") && err.contains("missing"), "{err}");
    open_with(["/logs-one/0", "/logs-one/1"])
        .unwrap()
        .close()
        .unwrap();
    // A marker removed: the log is not known to be this database's.
    sim.remove(&Path::new("/logs-one/1").join(PARTITION_MARKER))
        .unwrap();
    let err = open_with(["/logs-one/0", "/logs-one/1"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/logs-one/1") && err.contains(PARTITION_MARKER),
        "{err}"
    );
}

#[test]
fn the_number_of_log_managers_is_kept() {
    let sim = SimStorage::new(8);
    open(&sim, 2).unwrap().close().unwrap();
    let err = Partitioned::builder(DIR)
        .log_managers(3)
        .storage(Arc::new(sim.pinned()))
        .open()
        .unwrap_err()
        .to_string();
    assert!(err.contains("has 2 log managers, not 3"), "{err}");
    let db = Partitioned::builder(DIR)
        .options(small())
        .storage(Arc::new(sim.pinned()))
        .open()
        .unwrap();
    assert_eq!(db.log_managers(), 2);
    db.close().unwrap();
}

/// The coordinator's log must not be truncated past a commit record while a
/// participant's own commit record for it is not durable: a crash would then find the
/// part in doubt with no record left to say it committed. Partition 1's log here flushes
/// only when asked (a long group-commit delay), so its commit record stays in memory
/// while partition 0 writes several segments and checkpoints.
#[test]
fn the_coordinators_log_keeps_a_commit_record_a_participant_still_needs() {
    let sim = SimStorage::new(9);
    let mut o = small();
    o.log.segment_bytes = 16 << 10;
    o.log.group_commit.max_delay = std::time::Duration::from_secs(600);
    o.log.group_commit.max_bytes = 1 << 30;
    o.checkpoint_log_bytes = 1 << 30;
    o.checkpoint_interval = std::time::Duration::from_secs(3600);
    let db = open_with(&sim, 2, o).unwrap();
    let a = db.create_table("a").unwrap();
    let b = db.create_table("b").unwrap();
    let mut tx = db.begin();
    tx.put(&b, b"decided", b"yes").unwrap();
    tx.commit().unwrap();
    let coordinator_start = db.partition(0).log().start_lsn();
    // Several segments of partition 0 only, and checkpoints there.
    for i in 0..120u32 {
        let mut tx = db.begin();
        tx.put(&a, i.to_le_bytes(), [7u8; 400]).unwrap();
        tx.commit().unwrap();
    }
    db.partition(0).checkpoint().unwrap();
    db.partition(0).checkpoint().unwrap();
    assert!(
        db.partition(0).log().start_lsn() > coordinator_start,
        "the coordinator's log was never truncated: the case is not tested"
    );
    sim.crash();
    drop((a, b));
    drop(db);
    let db = open(&sim, 2).unwrap();
    let b = db.table("b").unwrap();
    let mut tx = db.begin();
    assert_eq!(
        tx.get(&b, b"decided").unwrap().as_deref(),
        Some(&b"yes"[..])
    );
    tx.commit().unwrap();
    db.close().unwrap();
}
