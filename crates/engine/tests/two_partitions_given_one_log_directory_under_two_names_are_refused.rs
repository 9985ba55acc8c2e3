//! Postmortem: a partitioned database's per-partition log directories were never compared,
//! so one directory given to two partitions under two spellings (`L` and `L/../L`, a
//! symlink) opened the first partition and failed on the second as "locked" (on the
//! simulator, which kept `..` unresolved, both were used). Fix: every partition's log
//! directory and data directory are compared by identity before any partition is opened.

use sluice::{Error, Options, Partitioned};
use sluice_storage::{OsStorage, SimStorage, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn assert_refused(storage: &Arc<dyn Storage>, dir: &Path, logs: [&Path; 2]) {
    let opened = Partitioned::builder(dir)
        .log_managers(2)
        .options(Options::small())
        .storage(storage.clone())
        .log_dir(0, logs[0])
        .log_dir(1, logs[1])
        .open();
    match opened {
        Ok(p) => {
            p.close().unwrap();
            panic!("log directories {logs:?} were accepted as two directories");
        }
        Err(e @ Error::InvalidArgument(_)) => {
            let m = e.to_string();
            assert!(m.contains("same directory"), "{m}");
            assert!(m.contains(&logs[1].display().to_string()), "{m}");
        }
        Err(e) => panic!("wrong error for {logs:?}: {e}"),
    }
    assert!(
        !storage.exists(&dir.join("part-0")).unwrap(),
        "a partition was created before the refusal"
    );
}

#[test]
fn on_the_real_disk_by_dot_dot_and_by_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
    let d = tmp.path();
    let log = d.join("log");
    assert_refused(&storage, &d.join("a"), [&log, &log.join("../log")]);
    std::fs::create_dir(&log).unwrap();
    std::os::unix::fs::symlink(&log, d.join("link")).unwrap();
    assert_refused(&storage, &d.join("b"), [&log, &d.join("link")]);
    // A log directory that is another partition's directory.
    assert_refused(
        &storage,
        &d.join("c"),
        [&d.join("l0"), &d.join("c/part-0/../part-0")],
    );
}

#[test]
fn on_the_simulated_disk_by_dot_dot() {
    let sim = SimStorage::new(6);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let log = PathBuf::from("/logs/l");
    assert_refused(&storage, Path::new("/p"), [&log, Path::new("/logs/x/../l")]);
}
