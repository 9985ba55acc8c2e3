//! Outside review of issue 23 (rev4). Before issue 23 the sorted runs lived in
//! `D/archive`, and `D/runs` was a free name: a user could keep the log there
//! (`Database::open_with_log(.., "D/runs", ..)`, any subdirectory but the database
//! directory itself is accepted). Such a database, once it had used log-based
//! propagation, holds both `archive/` (its runs) and `runs/` (its log). The first open
//! after the upgrade refuses it as corruption ("holds both `runs` and `archive`",
//! `propagation/runs/legacy.rs::adopt`), with any strategy: a healthy database is locked
//! out, and the advice in the message ("remove the other") would have the user delete
//! either the log or the runs. `legacy.rs` argues both names "do not come from a crash",
//! only from outside hands; an ordinary, accepted option makes them.
//!
//! The pre-issue-23 layout is built by hand: a database made now with its log in `D/wal`,
//! closed, then `runs/` renamed to `archive/` and `wal/` to `runs/`, durably.

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
        tx.put(&t, &key(i), &[i as u8; 40]).unwrap();
        tx.commit().unwrap();
        if i == 60 {
            db.checkpoint().unwrap();
        }
    }
    db.close().unwrap();
    assert!(!sim.list(Path::new("/db/runs")).unwrap().is_empty());
    // The layout before issue 23: runs in archive/, the log in runs/ (a free name then).
    sim.rename(Path::new("/db/runs"), Path::new("/db/archive"))
        .unwrap();
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
            tx.get(&t, &key(i)).unwrap().as_deref(),
            Some(&[i as u8; 40][..])
        );
    }
    tx.commit().unwrap();
    db.close().unwrap();
}
