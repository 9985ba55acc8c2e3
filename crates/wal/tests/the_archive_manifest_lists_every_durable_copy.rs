//! The archive's `MANIFEST` (issue 26): the archiver lists each segment it copies — file
//! name, LSN range, length, CRC32C — once the copy is durable, and `archived_lsn` moves
//! only after the entry is durable. `verify_archive` checks an archive against it and
//! names the first gap or damaged file with its LSN range.
//!
//! The crash test stops the machine (a power loss, or a process kill followed by one) at
//! every counted operation of an open that archives one finished segment: creating the
//! archive, its marker and manifest, the temporary copy, its writes and sync, the rename,
//! the directory sync, the manifest entry and its sync. After each: the manifest lists
//! only whole, durable copies (`verify_archive` finds no problem), a copy whose entry the
//! crash prevented shows as unlisted until the next open lists it, and after that open
//! the archive is complete and every record is still in the log.

use crate::common::{read_all, sim, small_options};
use sluice_storage::{OpenOptions, SimStorage, Storage};
use sluice_wal::{
    read_archive_manifest, segment, verify_archive, ArchiveProblem, Log, Lsn, MANIFEST_NAME,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ARCHIVE: &str = "/archive";

fn dirs() -> Vec<PathBuf> {
    vec![PathBuf::from("/db/log")]
}

/// Appends records until the log is durable past `segments` segments; returns their
/// payloads.
fn fill(log: &Log, segments: u64) -> Vec<Vec<u8>> {
    let s = log.segment_bytes();
    let mut written = Vec::new();
    let mut i = 0u32;
    while log.durable_lsn().0 < segments * s + s / 4 {
        let p = crate::common::payload(7, i, 300);
        let a = log.append(&p).unwrap();
        log.wait_durable(a.end).unwrap();
        written.push(p);
        i += 1;
    }
    written
}

/// Waits (bounded) until the archiver has archived up to `lsn`, or `stop` holds.
fn wait_archived(log: &Log, lsn: Lsn, stop: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while log.archived_lsn().unwrap() < lsn {
        if stop() || log.archive_error().is_some() {
            return false;
        }
        assert!(Instant::now() < deadline, "archiver stuck");
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

fn corrupt(storage: &dyn Storage, path: &Path, at: u64) {
    let f = storage.open(path, OpenOptions::EXISTING).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    b[0] ^= 0x40;
    f.write_at(&b, at).unwrap();
    f.sync_data().unwrap();
}

#[test]
fn the_manifest_lists_each_copy_and_verify_names_what_is_wrong() {
    let (_sim, storage) = sim(2601);
    let log = Log::open_archived(storage.clone(), &dirs(), ARCHIVE, small_options()).unwrap();
    let s = log.segment_bytes();
    fill(&log, 4);
    assert!(wait_archived(&log, Lsn(4 * s), || false));
    let listed = read_archive_manifest(&*storage, Path::new(ARCHIVE)).unwrap();
    assert!(listed.len() >= 4, "{listed:?}");
    for (k, e) in listed.iter().enumerate() {
        let k = k as u64;
        assert_eq!(e.name, segment::segment_name(Lsn(k * s)));
        assert_eq!((e.first, e.end), (Lsn(k * s), Lsn((k + 1) * s)));
        assert_eq!(e.len, segment::SEGMENT_HEADER_BYTES + s);
        let copy = storage
            .open(&Path::new(ARCHIVE).join(&e.name), OpenOptions::READ_ONLY)
            .unwrap();
        let mut bytes = vec![0u8; e.len as usize];
        copy.read_exact_at(&mut bytes, 0).unwrap();
        assert_eq!(crc32c::crc32c(&bytes), e.crc32c, "{}", e.name);
    }
    let n = listed.len() as u64;
    let report = verify_archive(&*storage, Path::new(ARCHIVE)).unwrap();
    assert!(report.is_intact(), "{report}");
    assert_eq!(report.reachable, Some((Lsn(0), Lsn(n * s))));
    assert!(report.unlisted.is_empty());
    log.close().unwrap();

    let a = Path::new(ARCHIVE);
    let name = |k: u64| segment::segment_name(Lsn(k * s));
    // A damaged copy: named with its range, and the archive is whole only below it.
    corrupt(&*storage, &a.join(name(2)), 5000);
    let r = verify_archive(&*storage, a).unwrap();
    assert_eq!(r.reachable, Some((Lsn(0), Lsn(2 * s))), "{r}");
    assert!(
        matches!(&r.problems[..], [ArchiveProblem::Checksum { name: n, first, end, .. }]
            if *n == name(2) && (*first, *end) == (Lsn(2 * s), Lsn(3 * s))),
        "{r}"
    );
    let line = r.problems[0].to_string();
    assert!(line.contains(&name(2)) && line.contains(&format!("{}..{}", 2 * s, 3 * s)));
    // A missing copy before it, and a short one after it.
    storage.remove(&a.join(name(1))).unwrap();
    let last = a.join(name(n - 1));
    storage
        .open(&last, OpenOptions::EXISTING)
        .unwrap()
        .set_len(100)
        .unwrap();
    let r = verify_archive(&*storage, a).unwrap();
    assert_eq!(r.reachable, Some((Lsn(0), Lsn(s))), "{r}");
    assert!(
        matches!(&r.problems[0], ArchiveProblem::Missing { name: n, .. } if *n == name(1)),
        "{r}"
    );
    assert!(
        matches!(
            r.problems.last().unwrap(),
            ArchiveProblem::Length { found: 100, .. }
        ),
        "{r}"
    );
    assert!(r.to_string().contains(&name(1)), "{r}");
    // A segment file the manifest does not list is reported, not trusted.
    let stranger = segment::segment_name(Lsn(100 * s));
    storage
        .open(&a.join(&stranger), OpenOptions::CREATE)
        .unwrap();
    let r = verify_archive(&*storage, a).unwrap();
    assert_eq!(r.unlisted, vec![stranger]);
    // No manifest: not an archive.
    assert!(verify_archive(&*storage, Path::new("/db/log")).is_err());
}

#[test]
fn a_gap_in_the_archive_is_named() {
    let (_sim, storage) = sim(2602);
    let log = Log::open_archived(storage.clone(), &dirs(), ARCHIVE, small_options()).unwrap();
    let s = log.segment_bytes();
    fill(&log, 2);
    assert!(wait_archived(&log, Lsn(2 * s), || false));
    log.close().unwrap();
    // Opened without its archive, the log is truncated past what was archived.
    let log = Log::open(storage.clone(), "/db/log", small_options()).unwrap();
    fill(&log, 6);
    log.truncate_below(Lsn(4 * s)).unwrap();
    log.close().unwrap();
    let log = Log::open_archived(storage.clone(), &dirs(), ARCHIVE, small_options()).unwrap();
    let end = segment::segment_start(log.durable_lsn(), s);
    assert!(wait_archived(&log, end, || false));
    log.close().unwrap();
    let r = verify_archive(&*storage, Path::new(ARCHIVE)).unwrap();
    assert_eq!(r.reachable, Some((Lsn(0), Lsn(2 * s))), "{r}");
    assert!(
        matches!(&r.problems[..], [ArchiveProblem::Gap { from, to, next }]
            if (*from, *to) == (Lsn(2 * s), Lsn(4 * s)) && *next == segment::segment_name(Lsn(4 * s))),
        "{r}"
    );
}

#[test]
fn an_unlisted_copy_that_is_not_whole_is_made_again() {
    let (_sim, storage) = sim(2603);
    let log = Log::open_archived(storage.clone(), &dirs(), ARCHIVE, small_options()).unwrap();
    let s = log.segment_bytes();
    fill(&log, 4);
    assert!(wait_archived(&log, Lsn(4 * s), || false));
    log.close().unwrap();
    // The manifest loses its entries from segment 2 on, and segment 2's copy is cut short
    // (as no crash of this archiver leaves it: a stranger's doing).
    let a = Path::new(ARCHIVE);
    let m = a.join(MANIFEST_NAME);
    let f = storage.open(&m, OpenOptions::EXISTING).unwrap();
    let mut bytes = vec![0u8; f.len().unwrap() as usize];
    f.read_exact_at(&mut bytes, 0).unwrap();
    let two_lines: usize = bytes
        .split_inclusive(|&b| b == b'\n')
        .take(2)
        .map(<[u8]>::len)
        .sum();
    f.set_len(two_lines as u64).unwrap();
    f.sync_data().unwrap();
    let copy2 = a.join(segment::segment_name(Lsn(2 * s)));
    storage
        .open(&copy2, OpenOptions::EXISTING)
        .unwrap()
        .set_len(100)
        .unwrap();
    let r = verify_archive(&*storage, a).unwrap();
    assert_eq!(r.reachable, Some((Lsn(0), Lsn(2 * s))), "{r}");
    assert!(
        r.unlisted.contains(&segment::segment_name(Lsn(2 * s))),
        "{r}"
    );
    // The next open lists the whole copies, copies segment 2 again (the log still holds
    // it), and lists each segment once.
    let log = Log::open_archived(storage.clone(), &dirs(), ARCHIVE, small_options()).unwrap();
    // At least the whole listed copies count; the archiver's thread may already have
    // made segment 2 again by now (this read raced it: 1 run in 5 failed with exactly
    // 2s asked for). A cut copy counted as archived is caught below: the archive would
    // not be intact.
    assert!(
        log.archived_lsn() >= Some(Lsn(2 * s)),
        "{:?}",
        log.archived_lsn()
    );
    assert!(wait_archived(&log, Lsn(4 * s), || false));
    log.close().unwrap();
    let r = verify_archive(&*storage, a).unwrap();
    assert!(r.is_intact() && r.unlisted.is_empty(), "{r}");
    assert!(r.reachable.unwrap().1 >= Lsn(4 * s), "{r}");
    let starts: Vec<Lsn> = r.segments.iter().map(|e| e.first).collect();
    let mut unique = starts.clone();
    unique.dedup();
    assert_eq!(starts, unique, "each segment listed once");
}

/// Crashes at the `n`-th counted operation of an open that archives one finished
/// segment (`kill`: a process kill, then a power loss). Returns false once `n` lies past
/// the archiving (nothing crashed).
fn crash_archiving_at(seed: u64, n: u64, kill: bool, totals: &mut Totals) -> bool {
    let sim = SimStorage::new(seed);
    let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
    // A log whose first segment is finished, never archived.
    let log = Log::open(storage.clone(), "/db/log", small_options()).unwrap();
    let s = log.segment_bytes();
    let written = fill(&log, 1);
    log.close().unwrap();

    let before = sim.incarnation();
    if kill {
        sim.kill_at_op(n);
    } else {
        sim.crash_at_op(n);
    }
    let halted = || sim.incarnation() > before;
    let opened = Log::open_archived(Arc::new(sim.pinned()), &dirs(), ARCHIVE, small_options());
    let finished = match &opened {
        Ok(log) => wait_archived(log, Lsn(s), halted),
        Err(_) => false,
    };
    if finished && !halted() {
        sim.disarm_crash();
        drop(opened);
        return false;
    }
    // The machine stopped: wait for the armed halt if the open failed on its own first.
    assert!(halted(), "seed {seed} n {n}: {:?}", opened.err());
    drop(opened);
    if kill {
        sim.crash();
    }
    totals.crashes += 1;

    // Right after the crash: whatever the manifest lists is whole and durable.
    let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
    let a = Path::new(ARCHIVE);
    let has_manifest = storage.exists(&a.join(MANIFEST_NAME)).unwrap_or(false);
    if has_manifest {
        let r = verify_archive(&*storage, a).unwrap();
        assert!(r.is_intact(), "seed {seed} n {n} kill {kill}: {r}");
        if !r.unlisted.is_empty() {
            assert_eq!(r.segments, vec![], "seed {seed} n {n}");
            totals.unlisted += 1;
        }
        totals.listed += r.segments.len() as u64;
    }

    // Reopened with its archive: the copy is (re)made and listed, nothing is lost.
    let log = Log::open_archived(storage.clone(), &dirs(), ARCHIVE, small_options())
        .unwrap_or_else(|e| panic!("seed {seed} n {n} kill {kill}: reopen: {e}"));
    assert!(wait_archived(&log, Lsn(s), || false));
    let records: Vec<Vec<u8>> = read_all(&log).into_iter().map(|(_, p)| p).collect();
    assert_eq!(records, written, "seed {seed} n {n} kill {kill}");
    log.close().unwrap();
    let r = verify_archive(&*storage, a).unwrap();
    assert!(
        r.is_intact() && r.unlisted.is_empty(),
        "seed {seed} n {n}: {r}"
    );
    assert_eq!(
        r.reachable,
        Some((Lsn(0), Lsn(s))),
        "seed {seed} n {n}: {r}"
    );
    let archive = Log::open_read_only(storage.clone(), ARCHIVE, small_options()).unwrap();
    let copied: Vec<Vec<u8>> = read_all(&archive).into_iter().map(|(_, p)| p).collect();
    assert!(
        !copied.is_empty() && written.starts_with(&copied),
        "seed {seed} n {n}: the archive's records are the log's"
    );
    true
}

#[derive(Default, Debug)]
struct Totals {
    crashes: u64,
    listed: u64,
    unlisted: u64,
}

#[test]
fn a_crash_at_every_step_of_archiving_a_segment_leaves_a_manifest_of_whole_copies() {
    let mut totals = Totals::default();
    for (seed, kill) in [(2610, false), (2611, true), (2612, false), (2613, true)] {
        let mut n = 1;
        while crash_archiving_at(seed, n, kill, &mut totals) {
            n += 1;
            assert!(n < 10_000, "the archiving never finished");
        }
        assert!(n > 10, "seed {seed}: only {n} operations");
    }
    println!("{totals:?}");
    // The sweep reached the window between a copy's rename and its manifest entry, and
    // crashes after the entry.
    assert!(totals.unlisted > 0, "{totals:?}");
    assert!(totals.listed > 0, "{totals:?}");
}
