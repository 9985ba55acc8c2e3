//! Postmortem: the archive directory was compared with the log directories by spelling, so
//! `D/log` archived into `D/log/../log` (or a symlink to it): each segment was "copied" onto
//! itself, counted archived, then freed by truncation — acknowledged records were lost.
//! Fix: directories are compared by what they are (the storage seam's `dir_identity`).

use crate::common;

use common::*;
use sluice_storage::{OsStorage, Storage};
use sluice_wal::{Log, WalError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Opens `log_dir` archived into `archive` and expects a refusal that names the clash.
fn assert_refused(storage: &Arc<dyn Storage>, log_dir: &Path, archive: &Path) {
    match Log::open_archived(
        storage.clone(),
        &[log_dir.to_path_buf()],
        archive,
        small_options(),
    ) {
        Ok(log) => {
            log.close().unwrap();
            panic!(
                "archive {} was accepted for log directory {}, although they are one directory",
                archive.display(),
                log_dir.display()
            );
        }
        Err(e @ WalError::InvalidArgument(_)) => {
            let m = e.to_string();
            assert!(
                m.contains("same directory") && m.contains(&archive.display().to_string()),
                "{m}"
            );
        }
        Err(e) => panic!("wrong error for archive {}: {e}", archive.display()),
    }
}

/// Appends, archives and truncates through a log with a really distinct archive: the
/// check refuses aliases only.
fn works_with(storage: &Arc<dyn Storage>, log_dir: &Path, archive: &Path) {
    let log = Log::open_archived(
        storage.clone(),
        &[log_dir.to_path_buf()],
        archive,
        small_options(),
    )
    .unwrap();
    for seq in 0..40 {
        let a = log.append(&payload(1, seq, 600)).unwrap();
        log.wait_durable(a.end).unwrap();
    }
    log.close().unwrap();
}

#[test]
fn on_the_real_disk_by_dot_dot_and_by_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
    let d = tmp.path();
    let log_dir = d.join("log");
    // A log that exists already, and one that the open creates: both are refused.
    for fresh in [false, true] {
        if !fresh {
            works_with(&storage, &log_dir, &d.join("archive"));
        }
        let log_dir = if fresh {
            d.join("fresh")
        } else {
            log_dir.clone()
        };
        let name = log_dir.file_name().unwrap().to_owned();
        assert_refused(&storage, &log_dir, &log_dir.join("..").join(&name));
        if !fresh {
            let link = d.join("link-to-log");
            std::os::unix::fs::symlink(&log_dir, &link).unwrap();
            assert_refused(&storage, &log_dir, &link);
            // And the other way round: the log through the link, the archive by name.
            assert_refused(&storage, &link, &log_dir);
        }
    }
}

#[test]
fn on_the_simulated_disk_by_dot_dot() {
    let (_sim, storage) = sim(71);
    let log_dir = PathBuf::from(DIR);
    works_with(&storage, &log_dir, Path::new("/db/archive"));
    assert_refused(&storage, &log_dir, Path::new("/db/log/../log"));
    assert_refused(&storage, &log_dir, Path::new("/db/archive/../log"));
    // A directory of a log of several directories, too.
    let dirs = [PathBuf::from("/d0/log"), PathBuf::from("/d1/log")];
    match Log::open_archived(storage.clone(), &dirs, "/d1/x/../log", small_options()) {
        Err(e @ WalError::InvalidArgument(_)) => {
            assert!(e.to_string().contains("same directory"), "{e}")
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("an archive that is the second log directory was accepted"),
    }
}
