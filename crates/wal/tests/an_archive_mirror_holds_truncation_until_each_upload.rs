//! The archive's mirror (issue 26, "truncation waits for the archive"): with
//! `Log::open_mirrored` each archived segment is also uploaded — the copy, then the whole
//! `MANIFEST` — and counts as archived only after both. A mirror that fails holds
//! truncation (every unuploaded segment stays in the log) and, once its retries are
//! spent, stops the archiver with the error in `Log::archive_error`; one that fails a
//! few times and recovers catches up; a reopen with a working mirror uploads what the
//! failed one never got, local copies of freed segments included.

use crate::common::{read_all, sim, small_options};
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::{
    parse_archive_manifest, segment, ArchiveMirror, Log, Lsn, MirrorRetry, MANIFEST_NAME,
};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ARCHIVE: &str = "/archive";

fn dirs() -> Vec<PathBuf> {
    vec![PathBuf::from("/db/log")]
}

/// A mirror in memory whose next `fail` puts fail.
#[derive(Debug, Default)]
struct TestMirror {
    objects: Mutex<BTreeMap<String, Vec<u8>>>,
    fail: AtomicU32,
    puts: AtomicU32,
}

impl TestMirror {
    fn failing(n: u32) -> Arc<TestMirror> {
        let m = TestMirror::default();
        m.fail.store(n, Ordering::SeqCst);
        Arc::new(m)
    }
    fn object(&self, name: &str) -> Option<Vec<u8>> {
        self.objects.lock().unwrap().get(name).cloned()
    }
}

impl ArchiveMirror for TestMirror {
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.puts.fetch_add(1, Ordering::SeqCst);
        let failing = self
            .fail
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Err(io::Error::other("the mirror is down"));
        }
        self.objects
            .lock()
            .unwrap()
            .insert(name.to_string(), bytes.to_vec());
        Ok(())
    }
    fn get(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        Ok(self.object(name))
    }
    fn retry(&self) -> MirrorRetry {
        MirrorRetry {
            tries: 4,
            first_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(4),
        }
    }
}

fn fill(log: &Log, segments: u64) {
    let s = log.segment_bytes();
    let mut i = 0u32;
    while log.durable_lsn().0 < segments * s + s / 4 {
        let a = log.append(&crate::common::payload(9, i, 300)).unwrap();
        log.wait_durable(a.end).unwrap();
        i += 1;
    }
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn local(storage: &dyn Storage, name: &str) -> Vec<u8> {
    let f = storage
        .open(&Path::new(ARCHIVE).join(name), OpenOptions::READ_ONLY)
        .unwrap();
    let mut b = vec![0u8; f.len().unwrap() as usize];
    f.read_exact_at(&mut b, 0).unwrap();
    b
}

/// The mirror holds every segment the local manifest lists, byte for byte, and the
/// manifest itself.
fn assert_mirror_matches(storage: &dyn Storage, m: &TestMirror, at_least: usize) {
    let manifest = local(storage, MANIFEST_NAME);
    assert_eq!(m.object(MANIFEST_NAME).as_deref(), Some(&manifest[..]));
    let entries = parse_archive_manifest(&manifest).unwrap();
    assert!(entries.len() >= at_least, "{entries:?}");
    for e in &entries {
        let got = m
            .object(&e.name)
            .unwrap_or_else(|| panic!("{} not uploaded", e.name));
        assert_eq!(got, local(storage, &e.name), "{}", e.name);
        assert_eq!(crc32c::crc32c(&got), e.crc32c);
    }
    assert_eq!(
        m.object(sluice_wal::dirs::ARCHIVE_MARKER_NAME),
        Some(local(storage, sluice_wal::dirs::ARCHIVE_MARKER_NAME))
    );
}

#[test]
fn each_archived_segment_is_uploaded_before_it_counts_archived() {
    let (_sim, storage) = sim(2611);
    let m = Arc::new(TestMirror::default());
    let log = Log::open_mirrored(
        storage.clone(),
        &dirs(),
        ARCHIVE,
        m.clone(),
        small_options(),
    )
    .unwrap();
    let s = log.segment_bytes();
    fill(&log, 4);
    wait_until("archiving", || log.archived_lsn().unwrap() >= Lsn(4 * s));
    assert!(log.archive_error().is_none());
    assert_mirror_matches(&*storage, &m, 4);
    let freed = log.truncate_below(log.durable_lsn()).unwrap();
    assert!(freed >= 4, "{freed}");
    assert!(log.archive_mirror().is_some());
    log.close().unwrap();
}

#[test]
fn a_failing_mirror_holds_truncation_and_a_reopen_catches_it_up() {
    let (_sim, storage) = sim(2612);
    let down = TestMirror::failing(u32::MAX);
    let log = Log::open_mirrored(
        storage.clone(),
        &dirs(),
        ARCHIVE,
        down.clone(),
        small_options(),
    )
    .unwrap();
    let s = log.segment_bytes();
    fill(&log, 3);
    wait_until("the archiver to give up", || log.archive_error().is_some());
    let e = log.archive_error().unwrap().to_string();
    assert!(
        e.contains("the mirror is down") && e.contains("4 times"),
        "{e}"
    );
    // The marker's upload failed 4 times: nothing counts archived, nothing is freed.
    assert_eq!(down.puts.load(Ordering::SeqCst), 4);
    assert_eq!(log.archived_lsn(), Some(Lsn(0)));
    assert_eq!(log.truncate_below(log.durable_lsn()).unwrap(), 0);
    let records = read_all(&log);
    log.close().unwrap();

    // A mirror that uploads, but only after the local archive has run ahead of it.
    let log = Log::open_archived(storage.clone(), &dirs(), ARCHIVE, small_options()).unwrap();
    assert_eq!(
        read_all(&log)[..records.len()],
        records[..],
        "nothing was lost"
    );
    fill(&log, 5);
    wait_until("local archiving", || {
        log.archived_lsn().unwrap() >= Lsn(5 * s)
    });
    assert!(log.truncate_below(Lsn(2 * s)).unwrap() >= 2);
    log.close().unwrap();

    let up = Arc::new(TestMirror::default());
    let log = Log::open_mirrored(
        storage.clone(),
        &dirs(),
        ARCHIVE,
        up.clone(),
        small_options(),
    )
    .unwrap();
    wait_until("the catch-up", || log.archived_lsn().unwrap() >= Lsn(5 * s));
    // Segments 0 and 1 left the log before the mirror existed: uploaded from the archive.
    assert_mirror_matches(&*storage, &up, 5);
    assert!(up.object(&segment::segment_name(Lsn(0))).is_some());
    let report = sluice_wal::verify_archive(&*storage, Path::new(ARCHIVE)).unwrap();
    assert!(report.is_intact(), "{report}");
    log.close().unwrap();
}

#[test]
fn a_mirror_that_fails_then_recovers_catches_up_without_an_error() {
    let (_sim, storage) = sim(2613);
    // Three failures: the fourth and last try of the first put succeeds.
    let m = TestMirror::failing(3);
    let log = Log::open_mirrored(
        storage.clone(),
        &dirs(),
        ARCHIVE,
        m.clone(),
        small_options(),
    )
    .unwrap();
    let s = log.segment_bytes();
    fill(&log, 4);
    wait_until("archiving", || log.archived_lsn().unwrap() >= Lsn(4 * s));
    assert!(log.archive_error().is_none(), "{:?}", log.archive_error());
    assert_mirror_matches(&*storage, &m, 4);
    // Fail again in the middle of the run: the archiver waits, then goes on.
    m.fail.store(2, Ordering::SeqCst);
    fill(&log, 7);
    wait_until("archiving", || log.archived_lsn().unwrap() >= Lsn(7 * s));
    assert!(log.archive_error().is_none());
    assert_mirror_matches(&*storage, &m, 7);
    log.close().unwrap();
}
