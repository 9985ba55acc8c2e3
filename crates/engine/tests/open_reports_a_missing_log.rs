//! A database whose control file names a checkpoint but whose log is gone — the log
//! directory deleted or emptied, or the segment holding the checkpoint removed — fails to
//! open with one `Corruption` line naming what is missing and the LSN recovery needs.
//! Never a panic (the failed open's teardown used to checkpoint into the fresh, empty log
//! and trip over "redo point moved backwards", losing the real error).

use sluice::{Database, Error, Options};
use sluice_storage::{OsStorage, SimStorage, Storage};
use sluice_testkit::fence::FencedStorage;
use std::path::Path;
use std::sync::Arc;

fn options() -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0; // only the checkpoints the tests ask for
    o
}

fn fill(db: &Database, n: usize) {
    let t = db.table_or_create("t").unwrap();
    for i in 0..n {
        let mut tx = db.begin();
        tx.put(&t, format!("key{i:05}").as_bytes(), [1u8; 200])
            .unwrap();
        tx.commit().unwrap();
    }
}

fn assert_corruption_naming(e: &Error, what: &str) {
    let msg = e.to_string();
    assert!(matches!(e, Error::Corruption(_)), "{msg}");
    assert!(msg.contains(what), "{msg} does not name {what}");
    assert!(
        msg.contains("LSN"),
        "{msg} does not say which LSN is needed"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");
}

#[test]
fn an_emptied_log_directory_is_reported() {
    let sim = SimStorage::new(61);
    let db = Database::open_on(Arc::new(sim.clone()), "/db", options()).unwrap();
    fill(&db, 50);
    db.close().unwrap();
    for name in sim.list(Path::new("/db/log")).unwrap() {
        sim.remove(&Path::new("/db/log").join(name)).unwrap();
    }
    sim.sync_dir(Path::new("/db/log")).unwrap();
    let e = Database::open_on(Arc::new(sim), "/db", options()).unwrap_err();
    assert_corruption_naming(&e, "/db/log");
}

#[test]
fn a_deleted_log_directory_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Database::open_on(Arc::new(OsStorage::new()), tmp.path(), options()).unwrap();
    fill(&db, 50);
    db.close().unwrap();
    std::fs::remove_dir_all(tmp.path().join("log")).unwrap();
    let e = Database::open_on(Arc::new(OsStorage::new()), tmp.path(), options()).unwrap_err();
    assert_corruption_naming(&e, &tmp.path().join("log").display().to_string());
}

#[test]
fn a_missing_segment_holding_the_checkpoint_is_named() {
    let sim = SimStorage::new(62);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    fill(&db, 10);
    db.checkpoint().unwrap();
    // More than a segment (64 KiB) of log after the checkpoint, all durable, then a
    // crash, so the control file still names the checkpoint in the first segment.
    fill(&db, 500);
    let first = db.log().segments()[0];
    assert!(db.log().segments().len() >= 2);
    sim.crash();
    drop(db);
    let name = sluice_wal::segment::segment_name(first);
    sim.remove(&Path::new("/db/log").join(&name)).unwrap();
    sim.sync_dir(Path::new("/db/log")).unwrap();
    let e = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap_err();
    assert_corruption_naming(&e, &format!("/db/log/{name}"));
}
