//! Postmortem: a database's log directory was never compared with its directory, so one
//! spelt differently (`D/../D`, a symlink to `D`) was taken for a directory of its own:
//! CONTROL was written, then the log's LOCK was the database's own and the open failed as
//! "locked" (on the simulator, which kept `..` unresolved, the two were even used apart).
//! Fix: the two are compared by identity (`Storage::dir_identity`) before anything is created.

use sluice::{Database, Error, Options};
use sluice_storage::{OsStorage, SimStorage, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn open(
    storage: Arc<dyn Storage>,
    dir: &Path,
    log_dir: &Path,
    read_only: bool,
) -> sluice::Result<Database> {
    Database::builder(dir)
        .options(Options::small())
        .storage(storage)
        .log_dir(log_dir)
        .read_only(read_only)
        .open()
}

fn assert_refused(storage: &Arc<dyn Storage>, dir: &Path, log_dir: &Path, read_only: bool) {
    match open(storage.clone(), dir, log_dir, read_only) {
        Ok(db) => {
            drop(db);
            panic!(
                "log directory {} accepted for database {} (read-only {read_only}), though they are one directory",
                log_dir.display(),
                dir.display()
            );
        }
        Err(e @ Error::InvalidArgument(_)) => {
            let m = e.to_string();
            assert!(
                m.contains("same directory") && m.contains(&log_dir.display().to_string()),
                "{m}"
            );
            assert!(!m.contains('\n'), "{m}");
        }
        Err(e) => panic!(
            "wrong error for log directory {} (read-only {read_only}): {e}",
            log_dir.display()
        ),
    }
}

#[test]
fn on_the_real_disk_by_dot_dot_and_by_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
    // A new database: refused before anything is created.
    let new = tmp.path().join("new");
    assert_refused(&storage, &new, &new.join("..").join("new"), false);
    assert!(!new.exists(), "nothing created");

    // An existing database, its log where it belongs.
    let db = tmp.path().join("db");
    open(storage.clone(), &db, &db.join("log"), false)
        .unwrap()
        .close()
        .unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&db, &link).unwrap();
    for read_only in [false, true] {
        assert_refused(&storage, &db, &db.join("..").join("db"), read_only);
        assert_refused(&storage, &db, &link, read_only);
        assert_refused(&storage, &link, &db.join("log/.."), read_only);
    }
    // Distinct directories still open, under any spelling.
    open(storage.clone(), &link, &db.join("log/../log"), true)
        .unwrap()
        .close()
        .unwrap();
}

#[test]
fn on_the_simulated_disk_by_dot_dot() {
    let sim = SimStorage::new(5);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let db = PathBuf::from("/db");
    assert_refused(&storage, &db, Path::new("/db/log/.."), false);
    assert!(!sim.exists(&db).unwrap(), "nothing created");
    open(storage.clone(), &db, Path::new("/logs/db"), false)
        .unwrap()
        .close()
        .unwrap();
    for read_only in [false, true] {
        assert_refused(&storage, &db, Path::new("/logs/../db"), read_only);
    }
}
