//! Review (i22-rev2): RELIABILITY §13 says a log's directories and its archive are
//! compared by identity, and `DirIdentity` claims that a path that does not exist yet has
//! the identity of what `create_dir_all` would make of it, because "a component that does
//! not exist yet cannot be a symlink". A *dangling* symlink is exactly such a component:
//! `stat` reports it missing, so `os_identity` gives it the identity of a directory-to-be
//! named `link` under its parent — but once the log's open creates the log directory, the
//! link resolves to it. So `archive = D/link -> D/log` (made before the log exists, as an
//! operator would point an archive at a log that a first open will create) is accepted,
//! and the log is archived into itself: the archiver takes every segment in the log
//! directory for an archived copy, truncation frees them, and the archive holds nothing of
//! what was truncated — the loss §13's postmortem describes (`D/log/../log`), reached by
//! the one spelling the check does not resolve.

use crate::common;

use common::*;
use sluice_storage::{OsStorage, Storage};
use sluice_wal::{Log, WalError};
use std::sync::Arc;

#[test]
fn an_archive_symlinked_to_a_log_directory_not_yet_created_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
    let d = tmp.path();
    let log_dir = d.join("log");
    let link = d.join("archive");
    // The archive is a symlink to where the log will be: dangling until the open makes it.
    std::os::unix::fs::symlink(&log_dir, &link).unwrap();
    assert!(!log_dir.exists());

    match Log::open_archived(
        storage.clone(),
        std::slice::from_ref(&log_dir),
        &link,
        small_options(),
    ) {
        Err(e @ WalError::InvalidArgument(_)) => {
            let m = e.to_string();
            assert!(m.contains("same directory"), "{m}");
        }
        Err(e) => panic!("refused, but not as one directory under two names: {e}"),
        Ok(log) => {
            // What the acceptance costs: append, archive, truncate as a checkpoint would.
            let n = 60u32;
            for seq in 0..n {
                let a = log.append(&payload(1, seq, 600)).unwrap();
                log.wait_durable(a.end).unwrap();
            }
            let end = log.durable_lsn();
            let freed = log.truncate_below(end).unwrap();
            let start = log.start_lsn();
            log.close().unwrap();
            // The archive (read as a log, as the archive module documents) and the log
            // together should still hold every record; the archive is the log itself.
            let archive = Log::open_read_only(storage.clone(), &link, small_options()).unwrap();
            let kept: Vec<u32> = read_all(&archive)
                .iter()
                .filter_map(|(_, p)| check_payload(p, 600).map(|(_, s)| s))
                .collect();
            archive.close().unwrap();
            panic!(
                "archive {} (a symlink to the log directory {}, dangling before the open) was \
                 accepted as a directory of its own: truncation freed {freed} segments (log \
                 start now {start:?}) and the archive holds {} of {n} acknowledged records \
                 (first kept: {:?})",
                link.display(),
                log_dir.display(),
                kept.len(),
                kept.first()
            );
        }
    }
}
