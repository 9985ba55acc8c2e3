//! Outside review of issue 28 (branch `nozero`: new segment space is allocated with
//! `FileHandle::allocate` instead of zero-filled). Each test states a guarantee of
//! README.md / RELIABILITY.md and attacks it through the new call:
//!
//! * `allocate` failing with ENOSPC when the preparer creates a segment, or extends the
//!   current one: the failure reaches the waiting commits (no hang, nothing acknowledged
//!   that is not on the device), a reopen (clean, or after a power loss) keeps every
//!   acknowledged record, leaves no `.tmp` behind and takes appends again;
//! * a disk that is full from the start: opening and appending report the error, and a
//!   read-only open of a full disk still reads everything;
//! * a file system without `fallocate` (`Unsupported`): the log writes zeros instead, and
//!   counts them;
//! * the real file system (`OsStorage` on this machine's ext4): segment files are never
//!   sparse (the claim the whole design rests on: an allocated file, not a hole), and the
//!   log reads back after a reopen with either `Preallocate`.

use crate::common;

use common::*;
use sluice_storage::{FileHandle, OsStorage, SimStorage, Storage, StorageLayer};
use sluice_wal::{segment, Log, LogOptions, Lsn, Preallocate, WalError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// Which `allocate` calls fail.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fail {
    /// Those on a `.wal.tmp` file (creating a segment) whose start is at least this LSN.
    CreateFrom(u64),
    /// Those on a final-named `.wal` file (extending the current segment).
    Extend,
    /// Every one.
    All,
}

/// A simulated disk whose `allocate` answers ENOSPC (`StorageFull`) while armed, for the
/// files `fail` names; every other call passes to the simulator.
#[derive(Clone)]
struct FullDisk {
    sim: SimStorage,
    armed: Arc<AtomicBool>,
    fail: Fail,
    /// `allocate` calls refused so far.
    refused: Arc<AtomicU64>,
}

struct FullFile {
    inner: Box<dyn FileHandle>,
    path: PathBuf,
    disk: FullDisk,
}

impl StorageLayer for FullDisk {
    fn below(&self) -> &dyn Storage {
        &self.sim
    }
    fn wrap(&self, file: Box<dyn FileHandle>) -> Box<dyn FileHandle> {
        let path = file.path().unwrap().to_path_buf();
        Box::new(FullFile {
            inner: file,
            path,
            disk: self.clone(),
        })
    }
}

impl FullFile {
    fn refuses(&self) -> bool {
        if !self.disk.armed.load(Ordering::SeqCst) {
            return false;
        }
        let name = self.path.file_name().unwrap().to_str().unwrap();
        match self.disk.fail {
            Fail::All => true,
            Fail::Extend => segment::parse_segment_name(name).is_some(),
            Fail::CreateFrom(from) => name
                .strip_suffix(".tmp")
                .and_then(segment::parse_segment_name)
                .is_some_and(|start| start.0 >= from),
        }
    }
}

impl FileHandle for FullFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        if self.refuses() {
            self.disk.refused.fetch_add(1, Ordering::SeqCst);
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        self.inner.allocate(len)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn drop_cache(&self) -> io::Result<()> {
        self.inner.drop_cache()
    }
    fn path(&self) -> Option<&Path> {
        self.inner.path()
    }
    fn failpoint(&self, name: &'static str) -> io::Result<()> {
        self.inner.failpoint(name)
    }
}

fn full_disk(seed: u64, fail: Fail) -> (FullDisk, Arc<dyn Storage>) {
    let disk = FullDisk {
        sim: SimStorage::new(seed),
        armed: Arc::new(AtomicBool::new(true)),
        fail,
        refused: Arc::default(),
    };
    let storage: Arc<dyn Storage> = Arc::new(disk.clone());
    (disk, storage)
}

/// Runs `f` on a thread and fails the test if it has not returned in 20 s: a commit that
/// waits forever on a preparer that failed is a hang, not an error.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what}: no answer in 20 s (hung)"))
}

/// Records acknowledged durable, each with its LSN.
type Acked = Vec<(Lsn, Vec<u8>)>;

/// Appends until an append or its durability wait fails (or `max` records); returns the
/// acknowledged records, everything appended, and the error.
fn append_until_error(log: Arc<Log>, max: u32) -> (Acked, Vec<Vec<u8>>, Option<WalError>) {
    within("appending on a disk that fills", move || {
        let mut acked = Vec::new();
        let mut appended = Vec::new();
        for seq in 0..max {
            let p = payload(7, seq, 300);
            appended.push(p.clone());
            match log
                .append(&p)
                .and_then(|a| log.wait_durable(a.end).map(|_| a))
            {
                Ok(a) => acked.push((a.lsn, p)),
                Err(e) => return (acked, appended, Some(e)),
            }
        }
        (acked, appended, None)
    })
}

fn names(storage: &dyn Storage) -> Vec<String> {
    let mut n = storage.list(Path::new(DIR)).unwrap();
    n.sort();
    n
}

/// After the failure: drop the log, free space, reopen (`crash`: after a power loss);
/// every acknowledged record is there, nothing unwritten appears, no `.tmp` is left, and
/// the log takes appends and keeps them through another reopen.
fn reopen_keeps_everything(
    disk: &FullDisk,
    storage: &Arc<dyn Storage>,
    options: LogOptions,
    (acked, appended): (&Acked, &[Vec<u8>]),
    crash: bool,
) {
    disk.armed.store(false, Ordering::SeqCst);
    if crash {
        disk.sim.crash();
    }
    let log = Log::open(storage.clone(), DIR, options).unwrap_or_else(|e| {
        panic!("reopen after an ENOSPC from allocate (crash: {crash}) failed: {e}")
    });
    let got = read_all(&log);
    assert!(
        got.len() >= acked.len() && got[..acked.len()] == *acked,
        "crash {crash}: acknowledged records lost: {} acknowledged, {} recovered",
        acked.len(),
        got.len()
    );
    for (i, (_, p)) in got.iter().enumerate() {
        assert_eq!(
            Some(p),
            appended.get(i),
            "crash {crash}: record {i} was never appended there"
        );
    }
    assert!(
        !names(&**storage).iter().any(|n| n.ends_with(".tmp")),
        "a .tmp left after the reopen: {:?}",
        names(&**storage)
    );
    let a = log.append(b"after the disk was freed").unwrap();
    within("a commit after the reopen", {
        let log = Arc::new(log);
        move || {
            log.wait_durable(a.end).unwrap();
            log.close().unwrap();
        }
    });
    let log = Log::open(storage.clone(), DIR, options).unwrap();
    let again = read_all(&log);
    assert_eq!(again.len(), got.len() + 1);
    assert_eq!(again.last().unwrap().1, b"after the disk was freed");
}

fn enospc_case(fail: Fail, options: LogOptions, seed: u64, crash: bool) {
    let (disk, storage) = full_disk(seed, fail);
    let log = Arc::new(Log::open(storage.clone(), DIR, options).unwrap());
    let (acked, appended, err) = append_until_error(log.clone(), 2_000);
    let err = err.unwrap_or_else(|| {
        panic!(
            "{fail:?}: 2,000 records acknowledged on a disk whose allocate fails ({} refused)",
            disk.refused.load(Ordering::SeqCst)
        )
    });
    assert!(
        disk.refused.load(Ordering::SeqCst) > 0,
        "{fail:?}: the error was not the allocation's: {err}"
    );
    // The cause reaches the caller: a full device, not something vaguer.
    let kind = match &err {
        WalError::Io(e) | WalError::Poisoned(e) => Some(e.kind()),
        _ => None,
    };
    assert_eq!(
        kind,
        Some(io::ErrorKind::StorageFull),
        "{fail:?}: the commit's error does not say the device is full: {err:?}"
    );
    assert!(
        !acked.is_empty(),
        "{fail:?}: nothing was acknowledged before the failure"
    );
    // A later commit fails too (promptly), rather than hang or succeed on the poisoned log.
    let later = within("a commit after the failure", {
        let log = log.clone();
        move || {
            log.append(b"later")
                .and_then(|a| log.wait_durable(a.end).map(|_| ()))
        }
    });
    assert!(
        later.is_err(),
        "{fail:?}: a commit after the failure succeeded"
    );
    within("dropping the failed log", move || drop(log));
    reopen_keeps_everything(&disk, &storage, options, (&acked, &appended), crash);
}

#[test]
fn an_enospc_from_allocate_creating_a_segment_is_reported_and_loses_nothing() {
    let options = small_options();
    for crash in [false, true] {
        // The third segment: two have been written, the preparer creates it ahead.
        enospc_case(
            Fail::CreateFrom(2 * options.segment_bytes),
            options,
            2_811,
            crash,
        );
    }
}

#[test]
fn an_enospc_from_allocate_extending_the_current_segment_is_reported_and_loses_nothing() {
    // 64 KiB segments start at 16 KiB of data and are extended as the daemon fills them.
    let options = LogOptions {
        segment_bytes: 64 << 10,
        ..small_options()
    };
    for crash in [false, true] {
        enospc_case(Fail::Extend, options, 2_812, crash);
    }
}

#[test]
fn a_disk_full_from_the_start_fails_the_first_commit_and_a_read_only_open_still_reads() {
    let options = small_options();
    // A log written while there was space.
    let (disk, storage) = full_disk(2_813, Fail::All);
    disk.armed.store(false, Ordering::SeqCst);
    let log = Log::open(storage.clone(), DIR, options).unwrap();
    let mut written = Vec::new();
    for seq in 0..50 {
        let p = payload(3, seq, 300);
        let a = log.append(&p).unwrap();
        log.wait_durable(a.end).unwrap();
        written.push((a.lsn, p));
    }
    log.close().unwrap();
    drop(log);
    // The disk fills up. Opening (recovery allocates nothing) works or says why; a commit
    // fails and says the device is full; nothing acknowledged is lost.
    disk.armed.store(true, Ordering::SeqCst);
    let ro = Log::open_read_only(storage.clone(), DIR, options).unwrap();
    assert_eq!(read_all(&ro), written, "a read-only open of a full disk");
    drop(ro);
    let mut appended: Vec<Vec<u8>> = written.iter().map(|(_, p)| p.clone()).collect();
    match Log::open(storage.clone(), DIR, options) {
        Err(e) => assert!(
            matches!(&e, WalError::Io(io) if io.kind() == io::ErrorKind::StorageFull),
            "opening a full disk failed, but not for a full device: {e:?}"
        ),
        Ok(log) => {
            assert_eq!(read_all(&log), written);
            let log = Arc::new(log);
            // Enough to need a new segment (and extensions) on a disk that has no space.
            let (acked, more, err) = append_until_error(log.clone(), 200);
            assert!(err.is_some(), "200 commits on a full disk all succeeded");
            written.extend(acked);
            appended.extend(more);
            within("dropping the failed log", move || drop(log));
        }
    }
    disk.sim.crash();
    reopen_keeps_everything(&disk, &storage, options, (&written, &appended), false);
}

/// A disk whose file system has no `fallocate` (`allocate` answers `Unsupported`).
#[derive(Clone)]
struct NoFallocate(SimStorage);
struct NoFallocateFile(Box<dyn FileHandle>);

impl StorageLayer for NoFallocate {
    fn below(&self) -> &dyn Storage {
        &self.0
    }
    fn wrap(&self, file: Box<dyn FileHandle>) -> Box<dyn FileHandle> {
        Box::new(NoFallocateFile(file))
    }
}

impl FileHandle for NoFallocateFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn allocate(&self, _: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no fallocate here",
        ))
    }
    fn len(&self) -> io::Result<u64> {
        self.0.len()
    }
    fn drop_cache(&self) -> io::Result<()> {
        self.0.drop_cache()
    }
    fn path(&self) -> Option<&Path> {
        self.0.path()
    }
}

#[test]
fn without_fallocate_the_log_writes_zeros_and_counts_them() {
    let sim = SimStorage::new(2_814);
    let storage: Arc<dyn Storage> = Arc::new(NoFallocate(sim.clone()));
    let options = small_options();
    let log = Log::open(storage.clone(), DIR, options).unwrap();
    let mut written = Vec::new();
    while log.durable_lsn().0 < 3 * options.segment_bytes {
        let p = payload(4, written.len() as u32, 300);
        let a = log.append(&p).unwrap();
        log.wait_durable(a.end).unwrap();
        written.push((a.lsn, p));
    }
    let stats = log.stats();
    assert_eq!(stats.bytes_allocated, 0, "{stats:?}");
    assert!(
        stats.bytes_zero_filled >= 3 * options.segment_bytes,
        "{stats:?}"
    );
    drop(log);
    sim.crash();
    let log = Log::open(storage, DIR, options).unwrap();
    assert!(read_all(&log).starts_with(&written));
}

/// The segment files in `dir` with their lengths and the bytes the file system has
/// allocated for them (`st_blocks`).
#[cfg(target_os = "linux")]
fn segment_files(dir: &Path) -> Vec<(String, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| segment::parse_segment_name(e.file_name().to_str().unwrap()).is_some())
        .map(|e| {
            let m = e.metadata().unwrap();
            (
                e.file_name().into_string().unwrap(),
                m.len(),
                m.blocks() * 512,
            )
        })
        .collect();
    out.sort();
    out
}

#[cfg(target_os = "linux")]
#[test]
fn on_the_real_file_system_segment_files_are_never_sparse_and_read_back() {
    for preallocate in Preallocate::ALL {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("log");
        let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
        let options = LogOptions {
            segment_bytes: 1 << 20,
            buffer_bytes: 256 << 10,
            preallocate,
            ..small_options()
        };
        let log = Log::open(storage.clone(), &dir, options).unwrap();
        let mut written = Vec::new();
        let mut checked_live = false;
        while log.durable_lsn().0 < (5 << 20) / 2 {
            let p = payload(5, written.len() as u32, 4_000);
            let a = log.append(&p).unwrap();
            log.wait_durable(a.end).unwrap();
            written.push((a.lsn, p));
            // While the log runs: every segment file's whole length is allocated, the
            // part the daemon has not written yet included.
            if !checked_live && log.durable_lsn().0 > (3 << 20) / 2 {
                checked_live = true;
                for (name, len, allocated) in segment_files(&dir) {
                    assert!(
                        allocated >= len,
                        "{preallocate}: {name} is sparse while the log runs: {len} bytes \
                         long, {allocated} allocated"
                    );
                }
            }
        }
        let stats = log.stats();
        match preallocate {
            Preallocate::Allocate => assert!(
                stats.bytes_allocated > 0 && stats.bytes_zero_filled == 0,
                "ext4 allocates: {stats:?}"
            ),
            Preallocate::Zeros => assert!(stats.bytes_zero_filled > 0, "{stats:?}"),
        }
        log.close().unwrap();
        drop(log);
        for (name, len, allocated) in segment_files(&dir) {
            assert!(
                allocated >= len,
                "{preallocate}: {name} is sparse: {len} bytes long, {allocated} allocated"
            );
        }
        let log = Log::open(storage.clone(), &dir, options).unwrap();
        assert_eq!(read_all(&log), written, "{preallocate}");
        // A clean reopen has nothing to cut on the real file system: the space past the
        // end reads as zeros.
        assert_eq!(log.recovery().cut_bytes, 0, "{:?}", log.recovery());
        drop(log);
        let ro = Log::open_read_only(storage, &dir, options).unwrap();
        assert_eq!(read_all(&ro), written, "{preallocate}: read-only");
    }
}
