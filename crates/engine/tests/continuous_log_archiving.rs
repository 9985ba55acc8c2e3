//! Continuous log archiving through the engine (`Options::log_archive`, issue 26): the
//! archive follows the log, lists every copy in its `MANIFEST`, reads as the database's
//! log, and checkpoints free only archived segments — with the archiver failed too,
//! which the metrics then report. A read-only open never archives; a partitioned
//! database archives each partition in `part-<i>`; an archive that is the database's or
//! its runs' directory is refused.

use sluice::{Database, Error, Options, Partitioned};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage, Storage};
use sluice_wal::{segment, verify_archive, Log, Lsn};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SEGMENT: u64 = 16 << 10;

fn options() -> Options {
    let mut o = Options::small();
    o.log.segment_bytes = SEGMENT;
    // Only the checkpoints the tests take.
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = Duration::ZERO;
    o
}

fn open(sim: &SimStorage, archive: &str) -> Database {
    Database::builder("/db")
        .options(options())
        .storage(Arc::new(sim.pinned()))
        .log_archive(archive)
        .open()
        .unwrap()
}

/// Commits `n` transactions of a few rows each.
fn work(db: &Database, from: usize, n: usize) {
    let t = db.table_or_create("t").unwrap();
    for i in from..from + n {
        let mut tx = db.begin();
        for j in 0..4 {
            tx.put(&t, format!("k{i:06}/{j}").as_bytes(), [i as u8; 60])
                .unwrap();
        }
        tx.commit().unwrap();
    }
}

/// Waits (bounded) until every finished segment is archived.
fn wait_archived(db: &Database) -> Lsn {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let a = db.metrics().archive.expect("archiving is on");
        assert_eq!(a.error, None);
        let finished = segment::segment_start(db.log().durable_lsn(), SEGMENT);
        if a.archived_lsn >= finished.0 {
            return Lsn(a.archived_lsn);
        }
        assert!(Instant::now() < deadline, "archiver stuck at {a:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The records of a log from `from` on.
fn records(log: &Log, from: Lsn) -> Vec<(Lsn, Vec<u8>)> {
    log.read_from(from)
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (r.lsn, r.payload)
        })
        .collect()
}

#[test]
fn the_archive_follows_the_log_and_checkpoints_free_only_archived_segments() {
    let sim = SimStorage::new(2620);
    let db = open(&sim, "/archive");
    work(&db, 0, 300);
    let archived = wait_archived(&db);
    assert!(archived.0 >= 3 * SEGMENT, "{archived}");
    let m = db.metrics().archive.unwrap();
    assert_eq!(m.dir, "/archive");
    assert!(
        m.segments_archived >= 3 && m.bytes_archived > 3 * SEGMENT,
        "{m:?}"
    );
    assert!(m.unarchived_bytes < 2 * SEGMENT, "{m:?}");

    // The archive reads as the log: every record it holds is the log's, at the same LSN.
    let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
    let from_archive = |storage: &Arc<dyn Storage>| {
        let archive = Log::open_read_only(storage.clone(), "/archive", options().log).unwrap();
        records(&archive, Lsn(0))
    };
    let archived_records = from_archive(&storage);
    let from_log = records(db.log(), Lsn(0));
    assert!(archived_records.len() > 100);
    assert_eq!(
        archived_records,
        from_log[..archived_records.len()].to_vec()
    );

    // A checkpoint frees archived segments only; the archive still holds their records.
    db.checkpoint().unwrap();
    let start = db.log().start_lsn();
    assert!(start > Lsn(0), "the checkpoint freed archived segments");
    assert!(start <= archived, "{start} > {archived}");
    let kept = records(db.log(), start);
    let tail: Vec<_> = from_log.iter().filter(|(l, _)| *l >= start).collect();
    assert_eq!(
        kept.iter().take(tail.len()).collect::<Vec<_>>(),
        tail,
        "the log kept its tail"
    );
    // Closed, the archiver is between copies: every copy is listed and whole.
    db.close().unwrap();
    let r = verify_archive(&*storage, Path::new("/archive")).unwrap();
    assert!(r.is_intact() && r.unlisted.is_empty(), "{r}");
    let (first, end) = r.reachable.unwrap();
    assert_eq!(first, Lsn(0));
    assert!(end >= archived, "{r}");
    let now = from_archive(&storage);
    assert_eq!(now[..archived_records.len()], archived_records[..]);
}

#[test]
fn a_failed_archive_keeps_every_unarchived_segment_and_says_so() {
    let sim = SimStorage::new(2621);
    let db = open(&sim, "/archive");
    // Every creation of a copy in the archive fails from now on.
    sim.inject(
        FaultPlan::new(FaultOp::Any, 1, FaultKind::Eio)
            .persistent()
            .on("/archive"),
    );
    work(&db, 0, 400);
    let deadline = Instant::now() + Duration::from_secs(20);
    while db.metrics().archive.unwrap().error.is_none() {
        assert!(Instant::now() < deadline, "the archive never failed");
        std::thread::sleep(Duration::from_millis(2));
    }
    db.checkpoint().unwrap();
    work(&db, 400, 50);
    db.checkpoint().unwrap();
    let m = db.metrics().archive.unwrap();
    assert_eq!(m.archived_lsn, 0, "{m:?}");
    assert!(m.unarchived_bytes > 3 * SEGMENT, "{m:?}");
    assert!(m.error.as_deref().unwrap().contains("/archive"), "{m:?}");
    assert_eq!(db.log().start_lsn(), Lsn(0), "nothing unarchived was freed");
    assert!(db.health().is_ok(), "the database goes on");
    db.close().unwrap();

    // Reopened with the archive healthy, the archiver catches up from the first
    // unarchived segment, and checkpoints free again.
    sim.clear_faults();
    let db = open(&sim, "/archive");
    let archived = wait_archived(&db);
    db.checkpoint().unwrap();
    assert!(db.log().start_lsn() > Lsn(0));
    assert!(db.log().start_lsn() <= archived);
    db.close().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
    let r = verify_archive(&*storage, Path::new("/archive")).unwrap();
    assert!(r.is_intact() && r.unlisted.is_empty(), "{r}");
    assert_eq!(r.reachable.unwrap().0, Lsn(0), "{r}");
    assert!(r.reachable.unwrap().1 >= archived, "{r}");
}

#[test]
fn a_read_only_open_never_archives() {
    let sim = SimStorage::new(2622);
    let db = open(&sim, "/archive");
    work(&db, 0, 20);
    db.close().unwrap();
    let ro = Database::builder("/db")
        .options(options())
        .storage(Arc::new(sim.pinned()))
        .log_archive("/elsewhere")
        .read_only(true)
        .open()
        .unwrap();
    assert_eq!(ro.metrics().archive, None);
    assert!(!sim.exists(Path::new("/elsewhere")).unwrap());
    ro.close().unwrap();
}

#[test]
fn an_archive_that_is_the_databases_or_its_runs_directory_is_refused() {
    for archive in ["/db", "/db/./archive", "/db/log"] {
        let sim = SimStorage::new(2623);
        let e = Database::builder("/db")
            .options(options())
            .storage(Arc::new(sim.pinned()))
            .log_archive(archive)
            .open()
            .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::InvalidArgument(_)), "{archive}: {msg}");
        assert!(!msg.contains('\n'), "one line: {msg}");
        assert!(msg.contains(archive), "{msg}");
        assert!(!sim.exists(Path::new("/db")).unwrap(), "{archive}: created");
    }
}

#[test]
fn a_partitioned_database_archives_each_partition_in_its_own_directory() {
    let sim = SimStorage::new(2624);
    let open = |archive: &str| {
        Partitioned::builder("/db")
            .log_managers(2)
            .options(options())
            .storage(Arc::new(sim.pinned()))
            .log_archive(archive)
            .assign("a", 0)
            .assign("b", 1)
            .open()
    };
    let e = open("/db").err().unwrap();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("/db/part-0"), "{e}");
    let db = open("/archive").unwrap();
    let (a, b) = (
        db.table_or_create("a").unwrap(),
        db.table_or_create("b").unwrap(),
    );
    for i in 0..300u32 {
        let mut tx = db.begin();
        tx.put(&a, i.to_be_bytes(), [1u8; 80]).unwrap();
        tx.put(&b, i.to_be_bytes(), [2u8; 80]).unwrap();
        tx.commit().unwrap();
    }
    for i in 0..2 {
        assert_eq!(
            db.partition(i).metrics().archive.unwrap().dir,
            format!("/archive/part-{i}")
        );
        wait_archived(db.partition(i));
    }
    drop((a, b));
    db.close().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
    for i in 0..2 {
        let r = verify_archive(&*storage, Path::new(&format!("/archive/part-{i}"))).unwrap();
        assert!(r.is_intact() && !r.segments.is_empty(), "part {i}: {r}");
    }
}
