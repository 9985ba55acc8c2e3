//! Review of the archive mirror (issue 26): attacks on "a segment counts as archived only
//! once its upload and the MANIFEST's are done", across failures that hit only one kind
//! of put, a flaky mirror over closes and reopens, a power loss between the local copy
//! and the upload, a close while the archiver retries, and two logs mirrored to one
//! prefix.

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

/// Which puts fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fail {
    Nothing,
    /// Puts of `MANIFEST` only.
    Manifest,
    /// Puts of segments only.
    Segments,
    /// Every other put (odd-numbered calls fail).
    EveryOther,
}

/// A mirror in memory, shareable between logs, whose failures are chosen by `Fail`.
#[derive(Debug)]
struct ReviewMirror {
    objects: Mutex<BTreeMap<String, Vec<u8>>>,
    fail: Mutex<Fail>,
    puts: AtomicU32,
    retry: MirrorRetry,
}

impl ReviewMirror {
    fn new(fail: Fail, tries: u32) -> Arc<ReviewMirror> {
        Arc::new(ReviewMirror {
            objects: Mutex::default(),
            fail: Mutex::new(fail),
            puts: AtomicU32::new(0),
            retry: MirrorRetry {
                tries,
                first_backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(2),
            },
        })
    }
    fn set(&self, f: Fail) {
        *self.fail.lock().unwrap() = f;
    }
    fn object(&self, name: &str) -> Option<Vec<u8>> {
        self.objects.lock().unwrap().get(name).cloned()
    }
}

impl ArchiveMirror for ReviewMirror {
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let n = self.puts.fetch_add(1, Ordering::SeqCst);
        let fail = match *self.fail.lock().unwrap() {
            Fail::Nothing => false,
            Fail::Manifest => name == MANIFEST_NAME,
            Fail::Segments => segment::parse_segment_name(name).is_some(),
            Fail::EveryOther => n.is_multiple_of(2),
        };
        if fail {
            return Err(io::Error::other("review mirror: put refused"));
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
        self.retry
    }
}

/// Appends until the durable LSN passes `segments` whole segments; stops early (false)
/// if an append fails.
fn fill(log: &Log, segments: u64) {
    fill_with(log, segments, 7)
}

/// `fill` with payloads of stream `tag` (two logs filled with different tags differ).
fn fill_with(log: &Log, segments: u64, tag: u32) {
    let s = log.segment_bytes();
    let mut i = 0u32;
    while log.durable_lsn().0 < segments * s + s / 4 {
        let a = log.append(&crate::common::payload(tag, i, 300)).unwrap();
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

/// Waits until the archiver has archived up to `to` or stopped with an error.
fn settle(log: &Log, to: Lsn) {
    wait_until("archiving or an archive error", || {
        log.archived_lsn().unwrap() >= to || log.archive_error().is_some()
    });
}

fn local(storage: &dyn Storage, archive: &str, name: &str) -> Vec<u8> {
    let f = storage
        .open(&Path::new(archive).join(name), OpenOptions::READ_ONLY)
        .unwrap();
    let mut b = vec![0u8; f.len().unwrap() as usize];
    f.read_exact_at(&mut b, 0).unwrap();
    b
}

/// The guarantee: every segment below `archived` is listed in the mirror's MANIFEST, and
/// the mirror's object for it has the listed length and CRC32C and equals the local copy.
fn assert_archived_is_mirrored(
    storage: &dyn Storage,
    archive: &str,
    m: &ReviewMirror,
    archived: Lsn,
    s: u64,
    what: &str,
) {
    if archived.0 == 0 {
        return;
    }
    let remote = m.object(MANIFEST_NAME).unwrap_or_else(|| {
        panic!("{what}: archived is {archived:?} but the mirror has no MANIFEST")
    });
    let entries = parse_archive_manifest(&remote).unwrap();
    let mut start = 0;
    while start < archived.0 {
        let name = segment::segment_name(Lsn(start));
        let e = entries.iter().find(|e| e.first == Lsn(start)).unwrap_or_else(|| {
            panic!("{what}: {name} is below archived {archived:?} but the mirror's MANIFEST does not list it")
        });
        let obj = m.object(&name).unwrap_or_else(|| {
            panic!("{what}: {name} is below archived {archived:?} but not in the mirror")
        });
        assert_eq!(
            (obj.len() as u64, crc32c::crc32c(&obj)),
            (e.len, e.crc32c),
            "{what}: the mirror's {name} does not match its mirror MANIFEST entry"
        );
        if storage
            .exists(&Path::new(archive).join(&name))
            .unwrap_or(false)
        {
            assert!(
                obj == local(storage, archive, &name),
                "{what}: the mirror's {name} is not the local copy"
            );
        }
        start += s;
    }
}

/// A mirror that takes every segment but refuses every MANIFEST put after catch-up's:
/// nothing past the catch-up counts archived, truncation frees nothing the mirror's
/// MANIFEST does not list, and the error says so. Passes.
#[test]
fn a_mirror_refusing_only_manifest_puts_holds_truncation() {
    let (_sim, storage) = sim(9101);
    let m = ReviewMirror::new(Fail::Nothing, 3);
    let log = Log::open_mirrored(
        storage.clone(),
        &dirs(),
        ARCHIVE,
        m.clone(),
        small_options(),
    )
    .unwrap();
    let s = log.segment_bytes();
    fill(&log, 1);
    settle(&log, Lsn(s));
    assert!(log.archive_error().is_none(), "{:?}", log.archive_error());
    m.set(Fail::Manifest);
    fill(&log, 4);
    wait_until("the archiver to give up", || log.archive_error().is_some());
    let archived = log.archived_lsn().unwrap();
    assert!(
        archived <= Lsn(s),
        "archived moved to {archived:?} while every MANIFEST put failed"
    );
    log.truncate_below(log.durable_lsn()).unwrap();
    assert!(
        log.start_lsn() <= archived,
        "truncation freed below {:?}",
        log.start_lsn()
    );
    assert_archived_is_mirrored(&*storage, ARCHIVE, &m, archived, s, "manifest puts failing");
    log.close().unwrap();
}

/// The converse: every segment put fails, MANIFEST puts succeed. Passes.
#[test]
fn a_mirror_refusing_only_segment_puts_holds_truncation() {
    let (_sim, storage) = sim(9102);
    let m = ReviewMirror::new(Fail::Segments, 3);
    let log = Log::open_mirrored(
        storage.clone(),
        &dirs(),
        ARCHIVE,
        m.clone(),
        small_options(),
    )
    .unwrap();
    let s = log.segment_bytes();
    fill(&log, 3);
    wait_until("the archiver to give up", || log.archive_error().is_some());
    let archived = log.archived_lsn().unwrap();
    assert_eq!(archived, Lsn(0));
    assert_eq!(log.truncate_below(log.durable_lsn()).unwrap(), 0);
    // The mirror's MANIFEST (put at catch-up, when nothing was archived) lists nothing.
    let listed = m
        .object(MANIFEST_NAME)
        .map(|b| parse_archive_manifest(&b).unwrap().len());
    assert!(
        listed.unwrap_or(0) == 0,
        "the mirror lists {listed:?} segments it never got"
    );
    let _ = s;
    log.close().unwrap();
}

/// A flaky mirror (every other put fails, one try each) across five closes and reopens,
/// truncating as far as allowed each time; then a working mirror. At every step each
/// segment below `archived` is in the mirror and listed; at the end the mirror holds the
/// whole archive and the log lost nothing. Passes.
#[test]
fn a_flaky_mirror_across_reopens_never_lets_truncation_outrun_it() {
    let (_sim, storage) = sim(9103);
    let m = ReviewMirror::new(Fail::EveryOther, 1);
    let mut all = Vec::new();
    let mut s = 0;
    for round in 1..=5u64 {
        let log = Log::open_mirrored(
            storage.clone(),
            &dirs(),
            ARCHIVE,
            m.clone(),
            small_options(),
        )
        .unwrap();
        s = log.segment_bytes();
        fill(&log, round * 2);
        settle(&log, Lsn(round * 2 * s));
        let archived = log.archived_lsn().unwrap();
        assert_archived_is_mirrored(
            &*storage,
            ARCHIVE,
            &m,
            archived,
            s,
            &format!("round {round}"),
        );
        log.truncate_below(log.durable_lsn()).unwrap();
        assert!(log.start_lsn() <= archived);
        all = read_all(&log);
        log.close().unwrap();
    }
    m.set(Fail::Nothing);
    let log = Log::open_mirrored(
        storage.clone(),
        &dirs(),
        ARCHIVE,
        m.clone(),
        small_options(),
    )
    .unwrap();
    settle(&log, Lsn(10 * s));
    assert!(log.archive_error().is_none(), "{:?}", log.archive_error());
    let archived = log.archived_lsn().unwrap();
    assert!(archived >= Lsn(10 * s), "{archived:?}");
    assert_archived_is_mirrored(
        &*storage,
        ARCHIVE,
        &m,
        archived,
        s,
        "after the flaky rounds",
    );
    let now = read_all(&log);
    assert_eq!(
        now[now.len() - all.len().min(now.len())..],
        all[all.len() - all.len().min(now.len())..]
    );
    log.close().unwrap();
}

/// A power loss while the segment uploads fail (local copies and entries durable, no
/// upload): the reopen with a working mirror uploads every local copy before anything
/// counts archived. Passes.
#[test]
fn a_power_loss_between_the_local_copy_and_the_upload_is_caught_up() {
    let (sim, storage) = sim(9104);
    let m = ReviewMirror::new(Fail::Segments, 1_000_000);
    let log = Log::open_mirrored(
        storage.clone(),
        &dirs(),
        ARCHIVE,
        m.clone(),
        small_options(),
    )
    .unwrap();
    let s = log.segment_bytes();
    fill(&log, 3);
    // The first copy is durable locally; its upload keeps failing.
    wait_until("a local copy", || {
        storage
            .exists(&Path::new(ARCHIVE).join(segment::segment_name(Lsn(0))))
            .unwrap_or(false)
            && m.puts.load(Ordering::SeqCst) > 3
    });
    assert_eq!(log.archived_lsn(), Some(Lsn(0)));
    sim.crash();
    drop(log);
    m.set(Fail::Nothing);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let log = Log::open_mirrored(
        storage.clone(),
        &dirs(),
        ARCHIVE,
        m.clone(),
        small_options(),
    )
    .unwrap();
    settle(&log, Lsn(s));
    assert!(log.archive_error().is_none(), "{:?}", log.archive_error());
    fill(&log, 4);
    settle(&log, Lsn(4 * s));
    let archived = log.archived_lsn().unwrap();
    assert!(archived >= Lsn(4 * s), "{archived:?}");
    assert_archived_is_mirrored(&*storage, ARCHIVE, &m, archived, s, "after the power loss");
    log.close().unwrap();
}

/// A close while the archiver sleeps between retries (a patient policy: 1000 tries,
/// seconds apart) returns promptly and counts nothing archived. Passes.
#[test]
fn a_close_while_the_archiver_retries_is_prompt() {
    let (_sim, storage) = sim(9105);
    let m = Arc::new(ReviewMirror {
        objects: Mutex::default(),
        fail: Mutex::new(Fail::Segments),
        puts: AtomicU32::new(0),
        retry: MirrorRetry {
            tries: 1000,
            first_backoff: Duration::from_secs(3),
            max_backoff: Duration::from_secs(30),
        },
    });
    let log = Log::open_mirrored(
        storage.clone(),
        &dirs(),
        ARCHIVE,
        m.clone(),
        small_options(),
    )
    .unwrap();
    fill(&log, 2);
    wait_until("a failed segment put", || {
        m.puts.load(Ordering::SeqCst) >= 3
    });
    assert_eq!(log.archived_lsn(), Some(Lsn(0)));
    let t = Instant::now();
    log.close().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "close took {:?}",
        t.elapsed()
    );
}

/// Two logs mirrored to the same prefix. Neither is refused: the second log's catch-up
/// puts its own ARCHIVE_OF over the first's without reading it, its MANIFEST over the
/// first's, and its segments over the first's objects of the same names (both logs
/// start at LSN 0). When the first log reopens, its catch-up reads the second's MANIFEST,
/// takes its own copies of those names for uploaded (`catch_up` compares first LSNs
/// only, not CRCs), puts its MANIFEST, and counts archived — truncation may free —
/// segments whose mirror objects are the second log's bytes. Failed at review (the
/// mirror's segment 0 did not match its MANIFEST entry); fixed: a mirror whose
/// `ARCHIVE_OF` names another log is refused, and a copy counts as uploaded only where
/// the mirror lists it with the same length and CRC32C (`segments/archive.rs`).
#[test]
fn a_second_log_mirrored_to_the_same_prefix_is_refused_or_uploaded() {
    let m = ReviewMirror::new(Fail::Nothing, 3);
    let (_sim_a, a) = sim(9106);
    let log = Log::open_mirrored(a.clone(), &dirs(), ARCHIVE, m.clone(), small_options()).unwrap();
    let s = log.segment_bytes();
    fill(&log, 3);
    settle(&log, Lsn(3 * s));
    assert!(log.archive_error().is_none());
    log.close().unwrap();
    let marker_a = m.object(sluice_wal::dirs::ARCHIVE_MARKER_NAME).unwrap();

    let (_sim_b, b) = sim(9107);
    let b_dirs = vec![PathBuf::from("/other/log")];
    let opened = Log::open_mirrored(
        b.clone(),
        &b_dirs,
        "/other-archive",
        m.clone(),
        small_options(),
    );
    let log = match opened {
        Ok(l) => l,
        Err(e) => {
            eprintln!("refused at open: {e}");
            return;
        }
    };
    fill_with(&log, 2, 8);
    settle(&log, Lsn(2 * s));
    if log.archive_error().is_some() {
        // Refused by the archiver: fine, as long as nothing counts archived.
        eprintln!("refused by the archiver: {:?}", log.archive_error());
        assert_eq!(log.archived_lsn(), Some(Lsn(0)));
        log.close().unwrap();
        return;
    }
    let marker_b = local(&*b, "/other-archive", sluice_wal::dirs::ARCHIVE_MARKER_NAME);
    assert_ne!(
        marker_a, marker_b,
        "the two logs have the same id: the test proves nothing"
    );
    let archived = log.archived_lsn().unwrap();
    let freed = log.truncate_below(log.durable_lsn()).unwrap();
    assert_archived_is_mirrored(
        &*b,
        "/other-archive",
        &m,
        archived,
        s,
        &format!("second log sharing the prefix ({freed} segments freed)"),
    );
    log.close().unwrap();

    // The first log again: its catch-up reads the second's MANIFEST (segments of the same
    // names), takes its own copies for uploaded, and counts archived segments whose
    // mirror objects are the second log's.
    let log = Log::open_mirrored(a.clone(), &dirs(), ARCHIVE, m.clone(), small_options()).unwrap();
    settle(&log, Lsn(3 * s));
    if log.archive_error().is_some() {
        assert_eq!(log.archived_lsn(), Some(Lsn(0)));
        log.close().unwrap();
        return;
    }
    let archived = log.archived_lsn().unwrap();
    assert_archived_is_mirrored(
        &*a,
        ARCHIVE,
        &m,
        archived,
        s,
        "first log reopened after a second log used its prefix",
    );
    log.close().unwrap();
}
