//! Tests of the simulated disk through the public seam: what survives a crash, when, and
//! how faults, locks and stale handles behave.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;

use super::{FaultKind, FaultOp, FaultPlan, SimStorage, TraceEvent};
use crate::{parent_dir, raw_os_error, FileHandle, OpenOptions, Storage};

/// Enough seeds that every random fate shows up, few enough to stay fast.
const SEEDS: u64 = 200;

pub(super) fn p(path: &str) -> PathBuf {
    PathBuf::from(path)
}

/// Creates `path` with `contents`, syncs its data and its directory: fully durable.
pub(super) fn durable_file(sim: &SimStorage, path: &Path, contents: &[u8]) -> Box<dyn FileHandle> {
    let file = sim.open(path, OpenOptions::CREATE_NEW).unwrap();
    file.write_at(contents, 0).unwrap();
    file.sync_data().unwrap();
    sim.sync_dir(&parent_dir(path)).unwrap();
    file
}

/// The whole contents of `path` as reads see them, or None if it does not exist.
pub(super) fn read_all(sim: &SimStorage, path: &Path) -> Option<Vec<u8>> {
    let file = match sim.open(path, OpenOptions::EXISTING) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => panic!("open {path:?}: {e}"),
    };
    let mut buf = vec![0u8; file.len().unwrap() as usize];
    file.read_exact_at(&mut buf, 0).unwrap();
    Some(buf)
}

fn assert_eio(result: io::Result<impl Sized>) -> io::Error {
    let err = result.err().expect("expected EIO");
    assert_eq!(err.kind(), io::Error::from_raw_os_error(5).kind(), "{err}");
    err
}

#[test]
fn unsynced_sector_is_kept_dropped_or_garbled_across_seeds() {
    let (mut kept, mut dropped, mut garbled) = (0, 0, 0);
    for seed in 0..SEEDS {
        let sim = SimStorage::new(seed);
        let file = durable_file(&sim, &p("f"), &[0xaa; 1024]);
        file.write_at(&[0xbb; 512], 0).unwrap();
        // A later write, so that the one under test is not the last (which may be torn).
        file.write_at(&[0xcc; 512], 512).unwrap();
        assert_eq!(
            read_all(&sim, &p("f")).unwrap()[..512],
            [0xbb; 512],
            "reads see it"
        );
        assert_eq!(sim.read_durable(&p("f")).unwrap(), [0xaa; 1024]);
        sim.crash();
        let after = read_all(&sim, &p("f")).expect("the entry was durable");
        assert_eq!(after.len(), 1024);
        let sector = &after[..512];
        if sector == [0xbb; 512] {
            kept += 1;
        } else if sector == [0xaa; 512] {
            dropped += 1;
        } else {
            garbled += 1;
        }
    }
    assert!(
        kept > 0 && dropped > 0 && garbled > 0,
        "{kept}/{dropped}/{garbled}"
    );
    // Roughly 50/35/15 of 200.
    assert!(
        kept > dropped && dropped > garbled,
        "{kept}/{dropped}/{garbled}"
    );
}

#[test]
fn synced_data_always_survives_and_later_writes_never_disturb_it() {
    for seed in 0..SEEDS {
        let sim = SimStorage::new(seed);
        let synced: Vec<u8> = (0..3000u32).map(|i| (i * 7 + seed as u32) as u8).collect();
        let file = durable_file(&sim, &p("log"), &synced[..1000]);
        file.write_at(&synced[1000..], 1000).unwrap();
        file.sync_data().unwrap();
        assert_eq!(sim.read_durable(&p("log")).unwrap(), synced);
        // Unsynced appends past the synced end, of which any part may be lost.
        file.write_at(&[0x55; 1500], 3000).unwrap();
        file.write_at(&[0x66; 10], 4500).unwrap();
        sim.crash();
        let after = read_all(&sim, &p("log")).unwrap();
        assert!(after.len() >= synced.len(), "seed {seed}");
        assert_eq!(after[..synced.len()], synced[..], "seed {seed}");
    }
}

#[test]
fn crash_with_nothing_pending_changes_nothing() {
    let sim = SimStorage::new(3);
    sim.create_dir_all(&p("db/wal")).unwrap();
    durable_file(&sim, &p("db/wal/1"), b"first");
    durable_file(&sim, &p("db/wal/2"), &[9; 5000]);
    sim.crash();
    assert_eq!(sim.list(&p("db/wal")).unwrap(), ["1", "2"]);
    assert_eq!(read_all(&sim, &p("db/wal/1")).unwrap(), b"first");
    assert_eq!(read_all(&sim, &p("db/wal/2")).unwrap(), [9; 5000]);
    assert_eq!(
        sim.list(&p("db")).unwrap(),
        ["wal"],
        "directories are durable"
    );
}

#[test]
fn created_and_synced_file_needs_sync_dir_to_survive() {
    let (mut vanished, mut survived) = (0, 0);
    for seed in 0..SEEDS {
        let sim = SimStorage::new(seed);
        let file = sim.open(&p("seg"), OpenOptions::CREATE_NEW).unwrap();
        file.write_at(b"payload", 0).unwrap();
        file.sync_data().unwrap();
        assert_eq!(sim.durable_len(&p("seg")), None, "entry not durable yet");
        sim.crash();
        match read_all(&sim, &p("seg")) {
            None => vanished += 1,
            Some(data) => {
                assert_eq!(data, b"payload", "data was synced");
                survived += 1;
            }
        }
    }
    assert!(vanished > 0 && survived > 0, "{vanished}/{survived}");

    for seed in 0..SEEDS / 4 {
        let sim = SimStorage::new(seed);
        durable_file(&sim, &p("seg"), b"payload");
        assert_eq!(sim.durable_len(&p("seg")), Some(7));
        sim.crash();
        assert_eq!(read_all(&sim, &p("seg")).unwrap(), b"payload");
    }
}

#[test]
fn rename_is_atomic_and_durable_only_after_sync_dir() {
    let setup = |seed| {
        let sim = SimStorage::new(seed);
        durable_file(&sim, &p("CURRENT"), b"old");
        durable_file(&sim, &p("CURRENT.tmp"), b"new");
        sim.rename(&p("CURRENT.tmp"), &p("CURRENT")).unwrap();
        assert_eq!(read_all(&sim, &p("CURRENT")).unwrap(), b"new");
        assert_eq!(sim.list(&p(".")).unwrap(), ["CURRENT"]);
        sim
    };
    let (mut old, mut new) = (0, 0);
    for seed in 0..SEEDS {
        let sim = setup(seed);
        sim.crash();
        let current = read_all(&sim, &p("CURRENT")).unwrap();
        let tmp = read_all(&sim, &p("CURRENT.tmp"));
        // Either the rename happened or it did not; never a mix.
        if current == b"old" {
            assert_eq!(tmp.as_deref(), Some(&b"new"[..]), "seed {seed}");
            old += 1;
        } else {
            assert_eq!(current, b"new", "seed {seed}");
            assert_eq!(tmp, None, "seed {seed}");
            new += 1;
        }
    }
    assert!(old > 0 && new > 0, "{old}/{new}");
    for seed in 0..SEEDS / 4 {
        let sim = setup(seed);
        sim.sync_dir(&p(".")).unwrap();
        sim.crash();
        assert_eq!(read_all(&sim, &p("CURRENT")).unwrap(), b"new");
        assert_eq!(sim.list(&p(".")).unwrap(), ["CURRENT"]);
    }
}

#[test]
fn removed_file_comes_back_unless_its_directory_is_synced() {
    let mut came_back = 0;
    for seed in 0..SEEDS / 2 {
        let sim = SimStorage::new(seed);
        durable_file(&sim, &p("old.seg"), b"x");
        sim.remove(&p("old.seg")).unwrap();
        assert!(!sim.exists(&p("old.seg")).unwrap());
        sim.crash();
        came_back += usize::from(sim.exists(&p("old.seg")).unwrap());

        sim.remove(&p("old.seg")).ok();
        sim.sync_dir(&p(".")).unwrap();
        sim.crash();
        assert!(!sim.exists(&p("old.seg")).unwrap(), "seed {seed}");
    }
    assert!(
        came_back > 0 && came_back < SEEDS as usize / 2,
        "{came_back}"
    );
}

#[test]
fn cross_directory_rename_is_durable_with_the_target_directory() {
    let sim = SimStorage::new(11);
    sim.create_dir_all(&p("a")).unwrap();
    sim.create_dir_all(&p("b")).unwrap();
    let file = sim.open(&p("a/x"), OpenOptions::CREATE_NEW).unwrap();
    file.write_at(b"moved", 0).unwrap();
    file.sync_data().unwrap();
    sim.rename(&p("a/x"), &p("b/x")).unwrap();
    // Syncing b must carry the create in a along: the rename depends on it.
    sim.sync_dir(&p("b")).unwrap();
    assert_eq!(sim.durable_len(&p("b/x")), Some(5));
    assert_eq!(sim.durable_len(&p("a/x")), None);
    sim.sync_dir(&p("a")).unwrap(); // nothing left to apply; must not resurrect a/x
    sim.crash();
    assert_eq!(sim.list(&p("a")).unwrap(), Vec::<String>::new());
    assert_eq!(read_all(&sim, &p("b/x")).unwrap(), b"moved");
}

/// Classifies each 512-byte sector of `data` as old (0xaa), new (0xbb) or garbled.
fn untouched_suffix_sectors(data: &[u8]) -> usize {
    data.chunks(512)
        .rev()
        .take_while(|sector| sector.iter().all(|&b| b == 0xaa))
        .count()
}

#[test]
fn only_the_last_unsynced_write_is_torn() {
    const SECTORS: usize = 16;
    // Without tearing, 12 trailing sectors all dropped has odds of 0.35^12 (about 3e-6).
    const LONG_SUFFIX: usize = 12;
    let (mut torn_last, mut torn_earlier) = (0, 0);
    for seed in 0..SEEDS {
        let sim = SimStorage::new(seed);
        let file = durable_file(&sim, &p("f"), &[0xaa; SECTORS * 512]);
        file.write_at(&[0xbb; SECTORS * 512], 0).unwrap();
        sim.crash();
        let after = read_all(&sim, &p("f")).unwrap();
        torn_last += usize::from(untouched_suffix_sectors(&after) >= LONG_SUFFIX);

        // The same big write, followed by a small one elsewhere: now it is not the last.
        let sim = SimStorage::new(seed);
        let file = durable_file(&sim, &p("f"), &[0xaa; (SECTORS + 1) * 512]);
        file.write_at(&[0xbb; SECTORS * 512], 0).unwrap();
        file.write_at(&[0xcc; 512], SECTORS as u64 * 512).unwrap();
        sim.crash();
        let after = read_all(&sim, &p("f")).unwrap();
        let big = &after[..SECTORS * 512];
        torn_earlier += usize::from(untouched_suffix_sectors(big) >= LONG_SUFFIX);
    }
    // About 1 in 4 writes tear and 5 of 16 cut points leave 12+ sectors: ~15 of 200.
    assert!(torn_last >= 5, "{torn_last}");
    assert_eq!(torn_earlier, 0);
}

#[test]
fn unsynced_set_len_is_kept_or_dropped() {
    let (mut kept, mut dropped) = (0, 0);
    for seed in 0..SEEDS / 2 {
        let sim = SimStorage::new(seed);
        let file = durable_file(&sim, &p("f"), &[1; 4096]);
        file.set_len(100).unwrap();
        assert_eq!(file.len().unwrap(), 100);
        sim.crash();
        match read_all(&sim, &p("f")).unwrap().len() {
            100 => kept += 1,
            4096 => dropped += 1,
            other => panic!("seed {seed}: length {other}"),
        }
    }
    assert!(kept > 0 && dropped > 0, "{kept}/{dropped}");
}

#[test]
fn allocate_grows_with_zeros_never_shrinks_and_is_kept_or_dropped_unsynced() {
    let (mut kept, mut dropped) = (0, 0);
    for seed in 0..SEEDS / 2 {
        let sim = SimStorage::new(seed);
        let file = durable_file(&sim, &p("f"), &[1; 100]);
        let ops = sim.stats().ops;
        file.allocate(50).unwrap();
        assert_eq!(file.len().unwrap(), 100, "allocate never shrinks");
        file.allocate(4096).unwrap();
        assert_eq!(sim.stats().ops, ops + 2, "each call is a counted operation");
        assert_eq!(sim.stats().writes, 1, "allocating writes nothing");
        let mut buf = vec![9u8; 4096];
        file.read_exact_at(&mut buf, 0).unwrap();
        assert!(buf[..100].iter().all(|&b| b == 1) && buf[100..].iter().all(|&b| b == 0));
        sim.crash();
        match read_all(&sim, &p("f")).unwrap() {
            b if b.len() == 4096 && b[100..].iter().all(|&x| x == 0) => kept += 1,
            b if b == [1; 100] => dropped += 1,
            b => panic!("seed {seed}: {} bytes", b.len()),
        }
    }
    assert!(kept > 0 && dropped > 0, "{kept}/{dropped}");
    // Synced, it survives; through a read-only handle it is refused.
    let sim = SimStorage::new(1);
    let file = durable_file(&sim, &p("f"), &[1; 100]);
    sim.set_trace(true);
    file.allocate(8192).unwrap();
    file.allocate(8192).unwrap();
    file.sync_data().unwrap();
    assert_eq!(
        sim.take_trace(),
        [
            TraceEvent::Allocate {
                path: p("f"),
                len: 8192
            },
            TraceEvent::SyncData(p("f"))
        ],
        "a call that does not grow the file is not traced"
    );
    sim.crash();
    assert_eq!(read_all(&sim, &p("f")).unwrap().len(), 8192);
    let ro = sim.open(&p("f"), OpenOptions::READ_ONLY).unwrap();
    assert_eq!(
        ro.allocate(1 << 20).unwrap_err().kind(),
        io::ErrorKind::PermissionDenied
    );
}

#[test]
fn crash_at_op_fires_at_exactly_the_nth_op() {
    let sim = SimStorage::new(5);
    let file = durable_file(&sim, &p("f"), &[0; 16]);
    file.sync_data().unwrap();
    let before = sim.stats().ops;
    sim.crash_at_op(3);
    file.read_exact_at(&mut [0; 4], 0).unwrap(); // reads do not count
    file.write_at(b"one", 0).unwrap(); // 1
    file.sync_data().unwrap(); // 2
    assert_eq!(sim.crashed_count(), 0);
    let err = assert_eio(file.write_at(b"MARK", 8)); // 3: crashes, not applied
    assert!(SimStorage::is_crash_error(&err));
    assert!(err.to_string().contains("crashed"), "{err}");
    assert_eq!(sim.crashed_count(), 1);
    assert_eq!(sim.stats().ops, before + 3);
    let after = read_all(&sim, &p("f")).unwrap();
    assert_eq!(&after[..3], b"one", "synced before the crash");
    assert_eq!(&after[8..12], [0; 4], "the crashing write never happened");
    // It fires once: the disk is usable and unarmed afterwards.
    let fresh = sim.open(&p("f"), OpenOptions::EXISTING).unwrap();
    for _ in 0..10 {
        fresh.write_at(b"x", 0).unwrap();
    }
    assert_eq!(sim.crashed_count(), 1);
}

#[test]
fn crash_at_op_counts_directory_operations_and_can_be_disarmed() {
    let sim = SimStorage::new(6);
    sim.crash_at_op(2);
    sim.open(&p("a"), OpenOptions::CREATE_NEW).unwrap(); // 1: create
    let err = assert_eio(sim.rename(&p("a"), &p("b"))); // 2
    assert!(SimStorage::is_crash_error(&err));
    assert!(!sim.exists(&p("b")).unwrap());
    sim.crash_at_op(1);
    sim.disarm_crash();
    sim.open(&p("c"), OpenOptions::CREATE_NEW).unwrap();
    assert_eq!(sim.crashed_count(), 1);
}

#[test]
fn crash_at_a_random_op_of_a_threaded_workload_keeps_every_acknowledged_record() {
    const THREADS: usize = 4;
    const RECORDS: u64 = 200;
    const RECORD: u64 = 100; // not sector-aligned, so records share sectors
    for seed in 0..10u64 {
        let sim = SimStorage::new(seed);
        for t in 0..THREADS {
            durable_file(&sim, &p(&format!("log{t}")), b"");
        }
        // Each record is a write and a sync: 2 ops; crash somewhere in the middle.
        sim.crash_at_op(1 + (seed * 97) % (THREADS as u64 * RECORDS));
        let acked: Vec<u64> = thread::scope(|scope| {
            let workers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let sim = sim.clone();
                    scope.spawn(move || {
                        let path = p(&format!("log{t}"));
                        let file = sim.open(&path, OpenOptions::EXISTING).unwrap();
                        for n in 0..RECORDS {
                            let record = [n as u8 + 1; RECORD as usize];
                            let ok = file.write_at(&record, n * RECORD).is_ok()
                                && file.sync_data().is_ok();
                            if !ok {
                                return n;
                            }
                        }
                        RECORDS
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert_eq!(sim.crashed_count(), 1, "seed {seed}");
        assert!(acked.iter().any(|&n| n < RECORDS), "someone saw the crash");
        for (t, &count) in acked.iter().enumerate() {
            let data = read_all(&sim, &p(&format!("log{t}"))).unwrap();
            assert!(
                data.len() as u64 >= count * RECORD,
                "seed {seed} thread {t}"
            );
            for n in 0..count {
                let record = &data[(n * RECORD) as usize..((n + 1) * RECORD) as usize];
                assert!(
                    record.iter().all(|&b| b == n as u8 + 1),
                    "seed {seed} {t}/{n}"
                );
            }
        }
    }
}

#[test]
fn transient_fault_fails_one_op_and_has_no_effect() {
    let sim = SimStorage::new(7);
    let file = durable_file(&sim, &p("f"), b"");
    let writes_before = sim.stats().writes;
    sim.inject(FaultPlan::new(FaultOp::Write, 2, FaultKind::Eio));
    file.sync_data().unwrap(); // syncs do not match Write
    file.write_at(b"ab", 0).unwrap();
    let err = file.write_at(b"cd", 2).unwrap_err();
    assert_eq!(raw_os_error(&err), Some(5));
    assert!(!SimStorage::is_crash_error(&err));
    assert_eq!(file.len().unwrap(), 2, "the failed write had no effect");
    file.write_at(b"ef", 2).unwrap();
    file.set_len(4).unwrap();
    file.sync_data().unwrap();
    assert_eq!(sim.read_durable(&p("f")).unwrap(), b"abef");
    assert_eq!(
        sim.stats().writes,
        writes_before + 2,
        "failed writes do not count"
    );
}

#[test]
fn persistent_fault_fails_until_cleared_and_a_failed_sync_keeps_nothing() {
    let sim = SimStorage::new(8);
    let file = durable_file(&sim, &p("f"), b"durable");
    sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio).persistent());
    file.write_at(b"DURABLE", 0).unwrap();
    for _ in 0..3 {
        assert_eq!(raw_os_error(&file.sync_data().unwrap_err()), Some(5));
        assert_eq!(raw_os_error(&sim.sync_dir(&p(".")).unwrap_err()), Some(5));
    }
    assert_eq!(sim.read_durable(&p("f")).unwrap(), b"durable");
    sim.clear_faults();
    // Linux's semantics: the failed sync dropped the write from write-back, so the retry
    // succeeds and writes nothing (see the fsync-failure tests below).
    file.sync_data().unwrap();
    assert_eq!(sim.read_durable(&p("f")).unwrap(), b"durable");
    // A write made after the failure is written by the next sync as usual.
    file.write_at(b"DURABLE", 0).unwrap();
    file.sync_data().unwrap();
    assert_eq!(sim.read_durable(&p("f")).unwrap(), b"DURABLE");
}

#[test]
fn enospc_is_storage_full_and_any_matches_directory_operations() {
    let sim = SimStorage::new(9);
    sim.inject(FaultPlan::new(FaultOp::Any, 2, FaultKind::Enospc).persistent());
    let file = sim.open(&p("f"), OpenOptions::CREATE_NEW).unwrap(); // 1: create
    let err = file.write_at(b"x", 0).unwrap_err(); // 2
    assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    assert_eq!(raw_os_error(&err), Some(28));
    let err = sim.open(&p("g"), OpenOptions::CREATE_NEW).err().unwrap();
    assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    assert!(
        !sim.exists(&p("g")).unwrap(),
        "a failed create has no effect"
    );
    assert_eq!(
        sim.remove(&p("f")).unwrap_err().kind(),
        io::ErrorKind::StorageFull
    );
    assert!(sim.exists(&p("f")).unwrap());
    sim.clear_faults();
    file.write_at(b"x", 0).unwrap();
}

#[test]
fn handles_opened_before_a_crash_are_stale() {
    let sim = SimStorage::new(10);
    let file = durable_file(&sim, &p("f"), b"data");
    sim.crash();
    let err = assert_eio(file.read_at(&mut [0; 4], 0));
    assert!(err.to_string().contains("crashed"), "{err}");
    assert!(SimStorage::is_crash_error(&err));
    assert_eio(file.write_at(b"x", 0));
    assert_eio(file.sync_data());
    assert_eio(file.set_len(0));
    assert_eio(file.len());
    // The disk itself stays usable: the reboot.
    let fresh = sim.open(&p("f"), OpenOptions::EXISTING).unwrap();
    fresh.write_at(b"DA", 0).unwrap();
    assert_eq!(read_all(&sim, &p("f")).unwrap(), b"DAta");
    drop(file); // dropping a stale handle must not disturb the fresh one
    assert_eq!(fresh.len().unwrap(), 4);
}

#[test]
fn lock_conflicts_until_dropped_or_crashed() {
    let sim = SimStorage::new(12);
    sim.create_dir_all(&p("db")).unwrap();
    let guard = sim.lock(&p("db/LOCK")).unwrap();
    assert!(
        sim.exists(&p("db/LOCK")).unwrap(),
        "the lock file is created"
    );
    let err = sim.clone().lock(&p("db/LOCK")).err().unwrap();
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    assert!(
        err.to_string().contains("db/LOCK: locked by another"),
        "{err}"
    );
    let other = sim.lock(&p("db/OTHER")).unwrap();
    drop(guard);
    let again = sim.lock(&p("db/LOCK")).unwrap();

    sim.sync_dir(&p("db")).unwrap();
    sim.crash();
    let after_crash = sim.lock(&p("db/LOCK")).expect("a crash releases locks");
    drop(again); // the stale guard must not release the new holder's lock
    assert!(sim.lock(&p("db/LOCK")).is_err());
    drop((other, after_crash));
}

#[test]
fn shared_locks_coexist_exclude_an_exclusive_one_and_never_create() {
    let sim = SimStorage::new(13);
    sim.create_dir_all(&p("db")).unwrap();
    let err = sim
        .lock_shared(&p("db/LOCK"))
        .err()
        .expect("no file to lock");
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert!(!sim.exists(&p("db/LOCK")).unwrap(), "never created");
    let exclusive = sim.lock(&p("db/LOCK")).unwrap();
    let err = sim
        .lock_shared(&p("db/LOCK"))
        .err()
        .expect("held exclusively");
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    drop(exclusive);
    let a = sim.lock_shared(&p("db/LOCK")).unwrap();
    let b = sim
        .lock_shared(&p("db/LOCK"))
        .expect("shared locks coexist");
    let err = sim.lock(&p("db/LOCK")).err().expect("held shared");
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    drop(a);
    assert!(
        sim.lock(&p("db/LOCK")).is_err(),
        "one shared holder is left"
    );
    drop(b);
    let exclusive = sim
        .lock(&p("db/LOCK"))
        .expect("free once every holder is gone");
    drop(exclusive);

    let shared = sim.lock_shared(&p("db/LOCK")).unwrap();
    sim.sync_dir(&p("db")).unwrap();
    sim.crash();
    let after_crash = sim
        .lock(&p("db/LOCK"))
        .expect("a crash releases shared locks");
    drop(shared); // the stale guard must not release the new holder's lock
    assert!(sim.lock_shared(&p("db/LOCK")).is_err());
    drop(after_crash);
}

#[test]
fn read_only_handles_read_but_change_nothing() {
    let sim = SimStorage::new(14);
    sim.create_dir_all(&p("d")).unwrap();
    durable_file(&sim, &p("d/f"), b"data");
    let ops = sim.stats().ops;
    let f = sim.open(&p("d/f"), OpenOptions::READ_ONLY).unwrap();
    let mut buf = [0u8; 4];
    f.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"data");
    for err in [f.write_at(b"x", 0).unwrap_err(), f.set_len(1).unwrap_err()] {
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        assert!(err.to_string().contains("d/f"), "{err}");
    }
    assert_eq!(sim.stats().ops, ops, "nothing reached the disk");
    // A sync changes no byte: it is allowed (as Linux allows fdatasync on O_RDONLY), and
    // is the one counted operation a read-only handle can make.
    let writes = sim.stats().writes;
    f.sync_data().unwrap();
    f.drop_cache().unwrap();
    assert_eq!(sim.stats().ops, ops + 1);
    assert_eq!(sim.stats().writes, writes);
    assert_eq!(read_all(&sim, &p("d/f")).unwrap(), b"data");
    assert_eq!(sim.read_durable(&p("d/f")).unwrap(), b"data");
    let creating = OpenOptions {
        create: true,
        ..OpenOptions::READ_ONLY
    };
    let err = sim.open(&p("d/g"), creating).err().unwrap();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(!sim.exists(&p("d/g")).unwrap());
}

#[test]
fn same_seed_same_outcome_and_seeds_differ() {
    fn run(seed: u64) -> Vec<Option<Vec<u8>>> {
        let sim = SimStorage::new(seed);
        sim.create_dir_all(&p("d")).unwrap();
        let names: Vec<PathBuf> = (0..4).map(|i| p(&format!("d/{i}"))).collect();
        for (i, name) in names.iter().enumerate() {
            let file = sim.open(name, OpenOptions::CREATE_NEW).unwrap();
            file.write_at(&vec![i as u8; 3000], 0).unwrap();
            if i % 2 == 0 {
                file.sync_data().unwrap();
            }
            file.write_at(&[0xee; 700], 1000).unwrap();
        }
        sim.crash();
        sim.crash(); // a second crash draws from the same generator
        names.iter().map(|name| read_all(&sim, name)).collect()
    }
    for seed in 0..20 {
        assert_eq!(run(seed), run(seed), "seed {seed}");
    }
    let outcomes: Vec<_> = (0..20).map(run).collect();
    assert!(outcomes.windows(2).any(|pair| pair[0] != pair[1]));
}

#[test]
fn open_list_exists_and_errors_follow_posix() {
    let sim = SimStorage::new(13);
    let err = sim.open(&p("nodir/f"), OpenOptions::CREATE).err().unwrap();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert_eq!(
        sim.open(&p("f"), OpenOptions::EXISTING)
            .err()
            .unwrap()
            .kind(),
        io::ErrorKind::NotFound
    );
    sim.create_dir_all(&p("/db/wal")).unwrap();
    assert!(sim.exists(&p("/db")).unwrap() && sim.exists(&p("/db/wal")).unwrap());
    durable_file(&sim, &p("/db/wal/b"), b"12345");
    durable_file(&sim, &p("/db/./wal/a"), b"");
    assert_eq!(sim.list(&p("/db/wal")).unwrap(), ["a", "b"]);
    assert_eq!(sim.list(&p("/db")).unwrap(), ["wal"]);
    assert_eq!(
        sim.list(&p("/nope")).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    let err = sim
        .open(&p("/db/wal/b"), OpenOptions::CREATE_NEW)
        .err()
        .unwrap();
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    assert!(sim.create_dir_all(&p("/db/wal/b")).is_err());
    assert!(sim.open(&p("/db/wal"), OpenOptions::CREATE).is_err());
    let truncating = OpenOptions {
        truncate: true,
        ..OpenOptions::EXISTING
    };
    assert_eq!(
        sim.open(&p("/db/wal/b"), truncating)
            .unwrap()
            .len()
            .unwrap(),
        0
    );
    assert_eq!(
        sim.remove(&p("/db/wal/zz")).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    let err = sim.rename(&p("/db/wal/zz"), &p("/db/wal/a")).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    let err = sim.sync_dir(&p("/db/none")).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    let file = sim.open(&p("/db/wal/a"), OpenOptions::EXISTING).unwrap();
    let err = file
        .write_at(b"x", super::inode::MAX_FILE_BYTES)
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
}

#[test]
fn an_unlinked_open_file_keeps_working() {
    let sim = SimStorage::new(14);
    let file = durable_file(&sim, &p("f"), b"still here");
    sim.remove(&p("f")).unwrap();
    sim.sync_dir(&p(".")).unwrap();
    let mut buf = [0; 10];
    file.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"still here");
    file.write_at(b"S", 0).unwrap();
    assert!(sim.list(&p(".")).unwrap().is_empty());
    sim.crash();
    assert!(sim.list(&p(".")).unwrap().is_empty());
}

#[test]
fn stats_and_trace_record_successful_operations_in_order() {
    let sim = SimStorage::new(15);
    sim.set_trace(true);
    let file = sim.open(&p("a"), OpenOptions::CREATE_NEW).unwrap();
    file.write_at(b"hello", 3).unwrap();
    file.set_len(4).unwrap();
    file.sync_data().unwrap();
    sim.rename(&p("a"), &p("b")).unwrap();
    sim.sync_dir(&p(".")).unwrap();
    sim.remove(&p("b")).unwrap();
    assert!(sim.remove(&p("b")).is_err(), "failures are not traced");
    let trace = sim.take_trace();
    assert_eq!(
        trace,
        [
            TraceEvent::Create(p("a")),
            TraceEvent::Write {
                path: p("a"),
                offset: 3,
                len: 5
            },
            TraceEvent::SetLen {
                path: p("a"),
                len: 4
            },
            TraceEvent::SyncData(p("a")),
            TraceEvent::Rename {
                from: p("a"),
                to: p("b")
            },
            TraceEvent::SyncDir(p(".")),
            TraceEvent::Remove(p("b")),
        ]
    );
    assert!(sim.take_trace().is_empty(), "taking empties it");
    sim.set_trace(false);
    file.write_at(b"x", 0).unwrap();
    assert!(sim.take_trace().is_empty(), "off records nothing");

    let stats = sim.stats();
    assert_eq!((stats.writes, stats.bytes_written), (2, 6));
    assert_eq!((stats.syncs, stats.dir_syncs, stats.crashes), (1, 1, 0));
    assert_eq!(
        stats.ops, 8,
        "create write set_len sync rename sync_dir remove write"
    );
}

#[test]
fn clones_and_threads_share_one_disk() {
    let sim = SimStorage::new(16);
    let file: Arc<dyn FileHandle> = Arc::from(durable_file(&sim, &p("f"), &[0; 800]));
    thread::scope(|scope| {
        for t in 0..8u64 {
            let file = Arc::clone(&file);
            scope.spawn(move || file.write_at(&[t as u8 + 1; 100], t * 100).unwrap());
        }
    });
    let expected: Vec<u8> = (0..800).map(|i| (i / 100) as u8 + 1).collect();
    assert_eq!(read_all(&sim.clone(), &p("f")).unwrap(), expected);
    assert_eq!(sim.stats().writes, 9);
    assert_eq!(format!("{sim:?}"), "SimStorage { seed: 16, .. }");
}

#[test]
fn a_pinned_view_dies_with_the_next_crash() {
    use crate::{OpenOptions, Storage};
    use std::path::Path;
    let sim = SimStorage::new(77);
    sim.create_dir_all(Path::new("/d")).unwrap();
    let old = sim.pinned();
    let f = old.open(Path::new("/d/a"), OpenOptions::CREATE).unwrap();
    f.write_at(b"x", 0).unwrap();
    f.sync_data().unwrap();
    old.sync_dir(Path::new("/d")).unwrap();
    sim.crash();
    // Every operation through the dead incarnation's view fails, directory ones included.
    assert!(SimStorage::is_crash_error(
        &old.remove(Path::new("/d/a")).unwrap_err()
    ));
    assert!(old.open(Path::new("/d/b"), OpenOptions::CREATE).is_err());
    assert!(old.list(Path::new("/d")).is_err());
    // The rebooted disk is untouched by it and usable through a new view.
    let new = sim.pinned();
    assert_eq!(new.list(Path::new("/d")).unwrap(), vec!["a".to_string()]);
    new.open(Path::new("/d/b"), OpenOptions::CREATE).unwrap();
}

/// Named failure points: nothing happens at an unregistered one; a registered one counts
/// its reaches and acts at the chosen one, once; and one disk's points are its own.
#[test]
fn a_named_failure_point_acts_once_at_its_reach_and_only_on_its_disk() {
    use crate::failpoint::{FailAction, CHECKPOINT_BEGUN, PAGE_WRITTEN};
    let (sim, other) = (SimStorage::new(1), SimStorage::new(2));
    sim.create_dir_all(&p("/d")).unwrap();
    let file = durable_file(&sim, &p("/d/f"), b"old");
    // Unregistered: Ok, not counted, not an operation.
    let ops = sim.stats().ops;
    sim.failpoint(PAGE_WRITTEN, &p("/d")).unwrap();
    file.failpoint(PAGE_WRITTEN).unwrap();
    assert_eq!(sim.failpoint_hits(PAGE_WRITTEN), 0);
    assert_eq!(sim.stats().ops, ops);

    sim.set_failpoint(PAGE_WRITTEN, 3, FailAction::Error(FaultKind::Enospc));
    sim.set_failpoint(CHECKPOINT_BEGUN, 1, FailAction::Count);
    file.failpoint(PAGE_WRITTEN).unwrap();
    sim.failpoint(PAGE_WRITTEN, &p("/d")).unwrap();
    let e = file.failpoint(PAGE_WRITTEN).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    assert_eq!(raw_os_error(&e), Some(28));
    assert!(e.to_string().contains("/d/f"), "{e}");
    file.failpoint(PAGE_WRITTEN).unwrap(); // once
    assert_eq!(sim.failpoint_hits(PAGE_WRITTEN), 4);
    sim.failpoint(CHECKPOINT_BEGUN, &p("/d")).unwrap();
    assert_eq!(sim.failpoint_hits(CHECKPOINT_BEGUN), 1);
    // Another disk: its own (empty) registry.
    other.failpoint(PAGE_WRITTEN, &p("/d")).unwrap();
    assert_eq!(other.failpoint_hits(PAGE_WRITTEN), 0);

    // A kill there: the incarnation ends, the page cache lives.
    file.write_at(b"new", 0).unwrap();
    sim.set_failpoint(PAGE_WRITTEN, 1, FailAction::Kill);
    let e = file.failpoint(PAGE_WRITTEN).unwrap_err();
    assert!(SimStorage::is_crash_error(&e), "{e}");
    assert_eq!(sim.killed_count(), 1);
    assert_eio(file.write_at(b"x", 0));
    assert_eq!(read_all(&sim, &p("/d/f")).unwrap(), b"new");

    // A power loss there, through a pinned view: the unsynced write meets its fate and
    // the view is dead.
    let view = sim.pinned();
    sim.set_failpoint(CHECKPOINT_BEGUN, 1, FailAction::PowerLoss);
    let e = view.failpoint(CHECKPOINT_BEGUN, &p("/d")).unwrap_err();
    assert!(SimStorage::is_crash_error(&e), "{e}");
    assert_eq!(sim.crashed_count(), 1);
    assert_eio(view.list(&p("/d")));

    sim.clear_failpoints();
    sim.failpoint(CHECKPOINT_BEGUN, &p("/d")).unwrap();
    assert_eq!(sim.failpoint_hits(CHECKPOINT_BEGUN), 0);
}

/// The wrappers forward named points to the disk they wrap.
#[test]
fn wrappers_forward_named_failure_points() {
    use crate::failpoint::{FailAction, LOG_WRITTEN};
    use crate::{DeviceModel, DeviceProfile, GatedStorage, RoutedStorage};
    let sim = SimStorage::new(3);
    sim.create_dir_all(&p("/d")).unwrap();
    sim.set_failpoint(LOG_WRITTEN, 1_000, FailAction::Count);
    let wrapped: Vec<Arc<dyn Storage>> = vec![
        Arc::new(DeviceModel::new(sim.clone(), DeviceProfile::default())),
        Arc::new(GatedStorage::new(Arc::new(sim.clone()))),
        Arc::new(
            RoutedStorage::new(Arc::new(SimStorage::new(4))).mount("/d", Arc::new(sim.clone())),
        ),
    ];
    for (i, w) in wrapped.iter().enumerate() {
        w.failpoint(LOG_WRITTEN, &p("/d")).unwrap();
        let f = w
            .open(&p(&format!("/d/f{i}")), OpenOptions::CREATE)
            .unwrap();
        f.failpoint(LOG_WRITTEN).unwrap();
    }
    assert_eq!(sim.failpoint_hits(LOG_WRITTEN), 6);
}

/// `/db/archive` holding two durable files and one whose entry is not synced yet, renamed
/// to `/db/runs` (not synced).
fn renamed_directory(seed: u64) -> SimStorage {
    let sim = SimStorage::new(seed);
    sim.create_dir_all(&p("/db/archive")).unwrap();
    durable_file(&sim, &p("/db/archive/a"), b"first");
    durable_file(&sim, &p("/db/archive/b"), b"second");
    let c = sim
        .open(&p("/db/archive/c"), OpenOptions::CREATE_NEW)
        .unwrap();
    c.write_at(b"third", 0).unwrap();
    c.sync_data().unwrap();
    sim.rename(&p("/db/archive"), &p("/db/runs")).unwrap();
    assert_eq!(sim.list(&p("/db")).unwrap(), ["runs"]);
    assert_eq!(sim.list(&p("/db/runs")).unwrap(), ["a", "b", "c"]);
    assert!(!sim.exists(&p("/db/archive")).unwrap());
    sim
}

/// A directory's rename is one operation: a power loss leaves it under its old name or
/// its new one, with everything in it, never under both or neither; once the parent is
/// synced, under the new one with every entry made in it before the rename.
#[test]
fn a_directory_rename_moves_it_whole_and_atomically() {
    let (mut old, mut new) = (0, 0);
    for seed in 0..SEEDS {
        let sim = renamed_directory(seed);
        sim.crash();
        let names = sim.list(&p("/db")).unwrap();
        let dir = match names.as_slice() {
            [n] if n == "archive" => {
                old += 1;
                "/db/archive"
            }
            [n] if n == "runs" => {
                new += 1;
                "/db/runs"
            }
            other => panic!("seed {seed}: {other:?}"),
        };
        let files = sim.list(&p(dir)).unwrap();
        assert!(
            files.starts_with(&["a".to_string(), "b".to_string()]),
            "seed {seed}: {files:?}"
        );
        assert_eq!(read_all(&sim, &p(&format!("{dir}/a"))).unwrap(), b"first");
        assert_eq!(read_all(&sim, &p(&format!("{dir}/b"))).unwrap(), b"second");
    }
    assert!(old > 0 && new > 0, "{old}/{new}");
    for seed in 0..SEEDS / 4 {
        let sim = renamed_directory(seed);
        sim.sync_dir(&p("/db")).unwrap();
        sim.crash();
        assert_eq!(sim.list(&p("/db")).unwrap(), ["runs"], "seed {seed}");
        assert_eq!(
            sim.list(&p("/db/runs")).unwrap(),
            ["a", "b", "c"],
            "seed {seed}"
        );
        assert_eq!(read_all(&sim, &p("/db/runs/c")).unwrap(), b"third");
    }
}

/// A file made in a renamed directory and synced there is durable under the new name:
/// the directory sync takes the rename along (its entry could not exist without it).
#[test]
fn syncing_a_renamed_directory_makes_its_rename_durable() {
    for seed in 0..SEEDS / 4 {
        let sim = renamed_directory(seed);
        durable_file(&sim, &p("/db/runs/d"), b"fourth");
        sim.crash();
        assert_eq!(sim.list(&p("/db")).unwrap(), ["runs"], "seed {seed}");
        assert_eq!(read_all(&sim, &p("/db/runs/d")).unwrap(), b"fourth");
        assert_eq!(read_all(&sim, &p("/db/runs/a")).unwrap(), b"first");
    }
}

/// The old name is free after the rename: a directory made there again survives beside
/// the moved one once both are synced, and a power loss before keeps the order (never
/// the new directory under the old name with the moved one's files).
#[test]
fn a_directory_made_under_a_renamed_ones_old_name_is_a_new_one() {
    for seed in 0..SEEDS / 4 {
        let sim = renamed_directory(seed);
        sim.create_dir_all(&p("/db/archive")).unwrap();
        assert!(sim.list(&p("/db/archive")).unwrap().is_empty());
        sim.crash();
        assert_eq!(
            sim.list(&p("/db")).unwrap(),
            ["archive", "runs"],
            "seed {seed}"
        );
        assert!(
            sim.list(&p("/db/archive")).unwrap().is_empty(),
            "seed {seed}"
        );
        assert_eq!(read_all(&sim, &p("/db/runs/b")).unwrap(), b"second");
    }
}

/// A directory moves only to a free name outside itself.
#[test]
fn a_directory_rename_onto_a_taken_name_or_into_itself_is_refused() {
    let sim = SimStorage::new(1);
    sim.create_dir_all(&p("/db/a/sub")).unwrap();
    sim.create_dir_all(&p("/db/b")).unwrap();
    durable_file(&sim, &p("/db/f"), b"x");
    let kind = |from: &str, to: &str| sim.rename(&p(from), &p(to)).unwrap_err().kind();
    assert_eq!(kind("/db/a", "/db/b"), io::ErrorKind::AlreadyExists);
    assert_eq!(kind("/db/a", "/db/f"), io::ErrorKind::AlreadyExists);
    assert_eq!(kind("/db/a", "/db/a/sub/c"), io::ErrorKind::InvalidInput);
    assert_eq!(kind("/db/a", "/db/missing/c"), io::ErrorKind::NotFound);
    assert_eq!(kind("/db/f", "/db/b"), io::ErrorKind::IsADirectory);
    assert_eq!(sim.list(&p("/db")).unwrap(), ["a", "b", "f"]);
}
