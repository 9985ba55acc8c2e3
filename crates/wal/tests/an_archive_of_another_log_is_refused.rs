//! Postmortem: an archive directory was trusted by its file names alone, so an old archive
//! reused after its log was wiped and recreated (LSNs restart at 0) made the new log's
//! segments count as archived already, and truncation freed records that no copy held.
//! Fix: the archive carries a marker naming the log it archives, and anything else is refused.

use crate::common;

use common::*;
use sluice_storage::Storage;
use sluice_wal::{segment, Log, Lsn, WalError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const ARCHIVE: &str = "/archive";

/// Appends `n` records durably.
fn append(log: &Log, n: u32) {
    for seq in 0..n {
        let a = log.append(&payload(1, seq, 600)).unwrap();
        log.wait_durable(a.end).unwrap();
    }
}

/// Appends `n` records durably and waits until every finished segment is archived.
fn fill(log: &Log, n: u32) {
    append(log, n);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let s = log.segment_bytes();
    while log.archived_lsn().unwrap() < segment::segment_start(log.durable_lsn(), s) {
        assert!(std::time::Instant::now() < deadline, "archiver stuck");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(log.archived_lsn().unwrap() > Lsn(0), "nothing was archived");
}

/// Removes every file of `dir`: the log is wiped (its directory stays).
fn wipe(storage: &dyn Storage, dir: &Path) {
    for name in storage.list(dir).unwrap() {
        storage.remove(&dir.join(name)).unwrap();
    }
    storage.sync_dir(dir).unwrap();
}

fn refusal(storage: &Arc<dyn Storage>, dirs: &[PathBuf]) -> String {
    match Log::open_archived(storage.clone(), dirs, ARCHIVE, small_options()) {
        Ok(log) => {
            let archived = log.archived_lsn();
            log.close().unwrap();
            panic!(
                "{dirs:?} accepted {ARCHIVE}, which archives another log: the new log counts \
                 as archived up to {archived:?} though it never copied a segment"
            );
        }
        Err(e @ WalError::InvalidArgument(_)) => e.to_string(),
        Err(e) => panic!("wrong error: {e}"),
    }
}

#[test]
fn an_archive_of_another_log_is_refused() {
    for d in [1usize, 2] {
        let (_sim, storage) = sim(73 + d as u64);
        let dirs: Vec<PathBuf> = (0..d).map(|i| format!("/dev{i}/log").into()).collect();
        let log = Log::open_archived(storage.clone(), &dirs, ARCHIVE, small_options()).unwrap();
        fill(&log, 80);
        log.close().unwrap();
        // Its own archive is accepted again, and resumes where it stopped.
        let log = Log::open_archived(storage.clone(), &dirs, ARCHIVE, small_options()).unwrap();
        assert!(log.archived_lsn().unwrap() > Lsn(0));
        log.close().unwrap();

        // The log is wiped and created afresh (without archiving, at first): its segments
        // bear the names of the old log's copies, and the archive is another log's now.
        for dir in &dirs {
            wipe(&*storage, dir);
        }
        let log = Log::open_dirs(storage.clone(), &dirs, small_options()).unwrap();
        append(&log, 80);
        log.close().unwrap();
        let m = refusal(&storage, &dirs);
        assert!(
            m.contains(ARCHIVE) && m.contains("another log"),
            "{d} directories: {m}"
        );
        // Nothing of the archive was touched.
        assert!(storage
            .list(Path::new(ARCHIVE))
            .unwrap()
            .iter()
            .any(|n| segment::parse_segment_name(n) == Some(Lsn(0))));

        // An archive directory that holds segments but names no log (copied there by
        // hand, or from before archives were marked) is refused too.
        let bare = PathBuf::from(format!("/bare{d}"));
        storage.create_dir_all(&bare).unwrap();
        for name in storage.list(Path::new(ARCHIVE)).unwrap() {
            if segment::parse_segment_name(&name).is_some() {
                let from = storage
                    .open(
                        &Path::new(ARCHIVE).join(&name),
                        sluice_storage::OpenOptions::READ_ONLY,
                    )
                    .unwrap();
                let mut b = vec![0u8; from.len().unwrap() as usize];
                from.read_exact_at(&mut b, 0).unwrap();
                let to = storage
                    .open(&bare.join(&name), sluice_storage::OpenOptions::CREATE_NEW)
                    .unwrap();
                to.write_at(&b, 0).unwrap();
                to.sync_data().unwrap();
            }
        }
        storage.sync_dir(&bare).unwrap();
        let fresh: Vec<PathBuf> = (0..d).map(|i| format!("/fresh{d}/{i}").into()).collect();
        match Log::open_archived(storage.clone(), &fresh, &bare, small_options()) {
            Ok(_) => panic!("an unmarked archive holding segments was trusted"),
            Err(e) => {
                let m = e.to_string();
                assert!(m.contains(&bare.display().to_string()), "{m}");
            }
        }
        // An empty directory becomes the new log's archive.
        let log =
            Log::open_archived(storage.clone(), &fresh, "/new-archive", small_options()).unwrap();
        fill(&log, 40);
        log.close().unwrap();
    }
}
