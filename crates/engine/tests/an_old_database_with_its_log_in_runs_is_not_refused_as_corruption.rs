//! Postmortem (outside review of issue 23). The sorted runs live in `D/archive`, and
//! `D/runs` is a name like any other: a user may keep the log there
//! (`Database::open_with_log(.., "D/runs", ..)`; any subdirectory but the database
//! directory itself is accepted). Such a database, once it has used log-based
//! propagation, holds both `archive/` (its runs) and `runs/` (its log). A change (since
//! reverted: the runs' directory keeps the name `archive`, `propagation/runs/mod.rs`)
//! moved `archive/` to `runs/` on open and refused such a database as corruption ("holds
//! both `runs` and `archive`"), with any strategy, and its advice ("remove the other")
//! would have had the user delete either the log or the runs.
//!
//! The layout is built by hand: a database made with its log in `D/wal`, closed, then
//! `wal/` renamed to `runs/`, durably, and opened with its log there.

use sluice::{Database, Options, Strategy};
use sluice_storage::{SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn options() -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = std::time::Duration::ZERO;
    o.propagation = Strategy::Log;
    o.keep_runs = true;
    o
}

fn key(i: usize) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

#[test]
fn an_old_database_whose_log_directory_is_named_runs_opens() {
    let sim = SimStorage::new(11);
    let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
    let db = Database::open_with_log(
        storage.clone(),
        "/db",
        storage.clone(),
        "/db/wal",
        options(),
    )
    .unwrap();
    let t = db.create_table("t").unwrap();
    for i in 0..120 {
        let mut tx = db.begin();
        tx.put(&t, key(i), [i as u8; 40]).unwrap();
        tx.commit().unwrap();
        if i == 60 {
            db.checkpoint().unwrap();
        }
    }
    db.close().unwrap();
    assert!(!sim.list(Path::new("/db/archive")).unwrap().is_empty());
    // The runs in archive/, the log in runs/.
    sim.rename(Path::new("/db/wal"), Path::new("/db/runs"))
        .unwrap();
    sim.sync_dir(Path::new("/db")).unwrap();
    let db = Database::open_with_log(
        storage.clone(),
        "/db",
        storage.clone(),
        "/db/runs",
        options(),
    )
    .unwrap_or_else(|e| panic!("the upgraded database does not open: {e}"));
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..120 {
        assert_eq!(
            tx.get(&t, key(i)).unwrap().as_deref(),
            Some(&[i as u8; 40][..])
        );
    }
    tx.commit().unwrap();
    db.close().unwrap();
}
