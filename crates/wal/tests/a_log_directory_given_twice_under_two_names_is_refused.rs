//! Postmortem: log directories were told apart by spelling, so one directory given twice
//! (`D/log` and `D/log/../log`, or a symlink) opened as a log of two directories, took
//! acknowledged records, and was refused at the next identical open (both markers are
//! one file). Fix: directories are compared by identity before any marker is written.

use crate::common;

use common::*;
use sluice_storage::{OsStorage, Storage};
use sluice_wal::{Log, WalError};
use std::path::PathBuf;
use std::sync::Arc;

/// `dirs` must be refused, naming the clash, before anything is written.
fn assert_refused(storage: &Arc<dyn Storage>, dirs: &[PathBuf]) {
    for read_only in [false, true] {
        let opened = if read_only {
            Log::open_dirs_read_only(storage.clone(), dirs, small_options())
        } else {
            Log::open_dirs(storage.clone(), dirs, small_options())
        };
        match opened {
            Ok(log) => {
                let a = log.append(b"acknowledged").map(|a| log.wait_durable(a.end));
                log.close().unwrap();
                panic!(
                    "{dirs:?} (read-only {read_only}) opened as distinct directories \
                     (an append: {a:?})"
                );
            }
            Err(e @ WalError::InvalidArgument(_)) => {
                let m = e.to_string();
                assert!(m.contains("same directory"), "{dirs:?}: {m}");
            }
            // A read-only open of a layout never created is refused for that, too.
            Err(e) if read_only => panic!("wrong error for {dirs:?} (read-only): {e}"),
            Err(e) => panic!("wrong error for {dirs:?}: {e}"),
        }
    }
}

#[test]
fn on_the_real_disk_by_dot_dot_and_by_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
    let d = tmp.path();
    let log = d.join("log");
    std::fs::create_dir(&log).unwrap();
    assert_refused(&storage, &[log.clone(), log.join("..").join("log")]);
    let link = d.join("link");
    std::os::unix::fs::symlink(&log, &link).unwrap();
    assert_refused(&storage, &[log.clone(), d.join("other"), link.clone()]);
    assert_refused(&storage, &[link, log.clone()]);
    // Distinct directories still make a log of several directories.
    let two = [log.clone(), d.join("second")];
    let l = Log::open_dirs(storage.clone(), &two, small_options()).unwrap();
    l.close().unwrap();
    Log::open_dirs(storage, &two, small_options())
        .unwrap()
        .close()
        .unwrap();
}

#[test]
fn on_the_simulated_disk_by_dot_dot() {
    let (_sim, storage) = sim(72);
    let a = PathBuf::from("/dev0/log");
    storage.create_dir_all(&a).unwrap();
    assert_refused(&storage, &[a.clone(), PathBuf::from("/dev0/log/../log")]);
    assert_refused(
        &storage,
        &[
            PathBuf::from("/dev1/log"),
            a.clone(),
            PathBuf::from("/dev0/x/../log"),
        ],
    );
}
