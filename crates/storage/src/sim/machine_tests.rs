//! Tests of what real machines do beyond a plain power loss: a process killed while the
//! page cache survives, Linux's fsync-failure semantics, read faults, faults scoped to one
//! path, directories that need their parent's fsync, and errors that name their path.

use std::io;

use super::tests::{durable_file, p, read_all};
use super::{FaultKind, FaultOp, FaultPlan, SimStorage, TraceEvent};
use crate::{raw_os_error, FileHandle, OpenOptions, Storage};

/// Enough seeds that every random fate shows up, few enough to stay fast.
const SEEDS: u64 = 100;

fn read_through(file: &dyn FileHandle) -> Vec<u8> {
    let mut buf = vec![0u8; file.len().unwrap() as usize];
    file.read_exact_at(&mut buf, 0).unwrap();
    buf
}

// ---- Linux fsync-failure semantics ----

#[test]
fn a_failed_fsync_leaves_data_readable_that_a_power_loss_removes() {
    for seed in 0..SEEDS {
        let sim = SimStorage::new(seed);
        let file = durable_file(&sim, &p("f"), &[b'o'; 1024]);
        file.write_at(&[b'n'; 1024], 0).unwrap();
        sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio));
        let err = file.sync_data().unwrap_err();
        assert_eq!(raw_os_error(&err), Some(5));
        assert!(!SimStorage::is_crash_error(&err));
        // The retry succeeds, as on Linux, and proves nothing.
        file.sync_data().unwrap();
        assert_eq!(
            read_through(&*file),
            [b'n'; 1024],
            "the cache still serves it"
        );
        assert_eq!(sim.read_durable(&p("f")).unwrap(), [b'o'; 1024]);
        sim.crash();
        // Never kept, dropped or garbled: the write left write-back for good.
        assert_eq!(
            read_all(&sim, &p("f")).unwrap(),
            [b'o'; 1024],
            "seed {seed}"
        );
    }
}

#[test]
fn drop_cache_after_a_failed_fsync_shows_the_device() {
    let sim = SimStorage::new(1);
    let file = durable_file(&sim, &p("f"), b"device");
    file.write_at(b"ORPHAN", 0).unwrap();
    sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Enospc));
    let err = file.sync_data().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    // A write after the failure is queued for write-back: dropping the cache keeps it.
    file.write_at(b"+queued", 6).unwrap();
    assert_eq!(read_through(&*file), b"ORPHAN+queued");
    file.drop_cache().unwrap();
    assert_eq!(read_through(&*file), b"device+queued");
    file.sync_data().unwrap();
    file.drop_cache().unwrap();
    assert_eq!(
        read_through(&*file),
        b"device+queued",
        "reads are the device now"
    );
    assert_eq!(sim.read_durable(&p("f")).unwrap(), b"device+queued");
}

#[test]
fn memory_pressure_evicts_orphaned_pages_of_every_file() {
    let sim = SimStorage::new(2);
    let a = durable_file(&sim, &p("a"), b"aaaa");
    let b = durable_file(&sim, &p("b"), b"bbbb");
    a.write_at(b"AA", 0).unwrap();
    b.write_at(b"BB", 0).unwrap();
    sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio).persistent());
    assert!(a.sync_data().is_err() && b.sync_data().is_err());
    sim.clear_faults();
    b.write_at(b"X", 3).unwrap(); // dirty again: stays cached through the eviction
    assert_eq!(read_all(&sim, &p("a")).unwrap(), b"AAaa");
    assert_eq!(read_all(&sim, &p("b")).unwrap(), b"BBbX");
    sim.evict_page_cache();
    assert_eq!(read_all(&sim, &p("a")).unwrap(), b"aaaa");
    assert_eq!(read_all(&sim, &p("b")).unwrap(), b"bbbX");
}

#[test]
fn a_failed_sync_dir_changes_nothing() {
    let sim = SimStorage::new(3);
    sim.create_dir_all(&p("d")).unwrap();
    durable_file(&sim, &p("d/old"), b"x");
    let file = sim.open(&p("d/new"), OpenOptions::CREATE_NEW).unwrap();
    file.sync_data().unwrap();
    sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio));
    assert_eq!(raw_os_error(&sim.sync_dir(&p("d")).unwrap_err()), Some(5));
    assert_eq!(
        sim.durable_len(&p("d/new")),
        None,
        "the create is still pending"
    );
    sim.sync_dir(&p("d")).unwrap();
    assert_eq!(
        sim.durable_len(&p("d/new")),
        Some(0),
        "and a later sync makes it durable"
    );
}

// ---- process kill ----

#[test]
fn a_killed_process_leaves_unsynced_writes_readable_and_a_later_power_loss_may_drop_them() {
    let (mut kept, mut lost) = (0, 0);
    for seed in 0..SEEDS {
        let sim = SimStorage::new(seed);
        let file = durable_file(&sim, &p("f"), &[b'o'; 512]);
        file.write_at(&[b'n'; 512], 0).unwrap();
        let unsynced = sim.open(&p("g"), OpenOptions::CREATE_NEW).unwrap();
        unsynced.write_at(b"entry never synced", 0).unwrap();
        sim.kill_process();

        let err = file.write_at(b"zombie", 0).unwrap_err();
        assert!(SimStorage::is_crash_error(&err), "{err}");
        assert!(err.to_string().contains("killed (kill #1)"), "{err}");
        assert!(err.to_string().starts_with("f: "), "{err}");
        // The next incarnation sees the page cache, not the device.
        assert_eq!(read_all(&sim, &p("f")).unwrap(), [b'n'; 512]);
        assert_eq!(read_all(&sim, &p("g")).unwrap(), b"entry never synced");
        assert_eq!(
            sim.read_durable(&p("f")).unwrap(),
            [b'o'; 512],
            "nothing synced"
        );
        assert_eq!(sim.durable_len(&p("g")), None);
        assert_eq!((sim.killed_count(), sim.crashed_count()), (1, 0));

        sim.crash();
        assert_eq!(sim.incarnation(), 2);
        match read_all(&sim, &p("f")).unwrap().as_slice() {
            s if s == [b'n'; 512] => kept += 1,
            s if s == [b'o'; 512] => lost += 1,
            _ => {} // garbled or torn: also a power loss's right
        }
    }
    assert!(kept > 0 && lost > 0, "{kept}/{lost}");
}

#[test]
fn kill_at_op_fires_at_exactly_the_nth_op_and_keeps_the_cache() {
    let sim = SimStorage::new(5);
    let file = durable_file(&sim, &p("f"), &[0; 16]);
    let before = sim.stats().ops;
    sim.kill_at_op(3);
    file.read_exact_at(&mut [0; 4], 0).unwrap(); // reads do not count
    file.write_at(b"one", 0).unwrap(); // 1
    file.write_at(b"two", 4).unwrap(); // 2
    let err = file.sync_data().unwrap_err(); // 3: the kill, not applied
    assert!(SimStorage::is_crash_error(&err), "{err}");
    assert!(err.to_string().contains("was the crash point"), "{err}");
    assert_eq!((sim.killed_count(), sim.crashed_count()), (1, 0));
    assert_eq!(sim.stats().ops, before + 3);
    assert_eq!(sim.stats().process_kills, 1);
    let after = read_all(&sim, &p("f")).unwrap();
    assert_eq!(&after[..7], b"one\0two", "unsynced writes are still cached");
    assert_eq!(
        sim.read_durable(&p("f")).unwrap(),
        [0; 16],
        "the sync never ran"
    );
    // It fires once.
    let fresh = sim.open(&p("f"), OpenOptions::EXISTING).unwrap();
    for _ in 0..5 {
        fresh.sync_data().unwrap();
    }
    assert_eq!(sim.read_durable(&p("f")).unwrap()[..7], *b"one\0two");
    assert_eq!(sim.killed_count(), 1);
}

#[test]
fn a_kill_releases_locks_and_stales_pinned_views_and_handles() {
    let sim = SimStorage::new(6);
    sim.create_dir_all(&p("db")).unwrap();
    let old = sim.pinned();
    let guard = old.lock(&p("db/LOCK")).unwrap();
    let file = old.open(&p("db/f"), OpenOptions::CREATE_NEW).unwrap();
    sim.kill_process();
    let err = old.open(&p("db/g"), OpenOptions::CREATE).err().unwrap();
    assert!(SimStorage::is_crash_error(&err), "{err}");
    assert!(err.to_string().contains("killed"), "{err}");
    assert!(SimStorage::is_crash_error(&file.len().unwrap_err()));
    let new = sim.pinned();
    let after = new
        .lock(&p("db/LOCK"))
        .expect("a dead process holds no lock");
    drop(guard); // the dead incarnation's guard must not release the new holder's lock
    assert!(new.lock(&p("db/LOCK")).is_err());
    assert_eq!(
        new.list(&p("db")).unwrap(),
        ["LOCK", "f"],
        "unsynced entries live on"
    );
    drop((after, file));
}

#[test]
fn an_unlinked_file_dies_with_the_killed_process_that_held_it() {
    let sim = SimStorage::new(7);
    let file = durable_file(&sim, &p("f"), b"open and unlinked");
    sim.remove(&p("f")).unwrap();
    sim.sync_dir(&p(".")).unwrap();
    assert_eq!(read_through(&*file), b"open and unlinked");
    sim.kill_process();
    sim.crash();
    assert!(sim.list(&p(".")).unwrap().is_empty());
}

// ---- read faults and path-scoped faults ----

#[test]
fn read_faults_fail_reads_without_counting_as_operations() {
    let sim = SimStorage::new(8);
    let file = durable_file(&sim, &p("f"), b"data");
    let ops = sim.stats().ops;
    sim.crash_at_op(1);
    sim.inject(FaultPlan::new(FaultOp::Read, 2, FaultKind::Eio));
    let mut buf = [0; 4];
    file.read_exact_at(&mut buf, 0).unwrap();
    let err = file.read_exact_at(&mut buf, 0).unwrap_err();
    assert_eq!(raw_os_error(&err), Some(5));
    assert!(err.to_string().starts_with("f: "), "{err}");
    file.read_exact_at(&mut buf, 0).unwrap(); // transient: spent
    assert_eq!(sim.stats().ops, ops, "reads are not counted");
    assert_eq!(sim.crashed_count(), 0, "and never fire an armed crash");
    sim.disarm_crash();
    // Any does not match reads: the plans of existing sweeps keep their meaning.
    sim.inject(FaultPlan::new(FaultOp::Any, 1, FaultKind::Eio).persistent());
    file.read_exact_at(&mut buf, 0).unwrap();
    assert!(file.write_at(b"x", 0).is_err());
}

#[test]
fn path_scoped_faults_see_only_their_path() {
    let sim = SimStorage::new(9);
    sim.create_dir_all(&p("/d")).unwrap();
    sim.create_dir_all(&p("/e")).unwrap();
    let a = durable_file(&sim, &p("/d/a"), b"");
    let b = durable_file(&sim, &p("/d/b"), b"");
    sim.inject(
        FaultPlan::new(FaultOp::Write, 2, FaultKind::Eio)
            .persistent()
            .on("/d/./a"),
    );
    for _ in 0..3 {
        b.write_at(b"b", 0).unwrap(); // neither fails nor counts
    }
    a.write_at(b"1", 0).unwrap();
    for _ in 0..2 {
        let err = a.write_at(b"2", 1).unwrap_err();
        assert!(err.to_string().starts_with("/d/a: "), "{err}");
    }
    b.write_at(b"b", 1).unwrap();
    sim.clear_faults();

    // On a directory: its sync and the entries in it, not the files' own operations.
    sim.inject(
        FaultPlan::new(FaultOp::Any, 1, FaultKind::Eio)
            .persistent()
            .on("/d"),
    );
    a.write_at(b"ok", 0).unwrap();
    a.sync_data().unwrap();
    assert!(sim.sync_dir(&p("/d")).is_err());
    assert!(sim.open(&p("/d/c"), OpenOptions::CREATE_NEW).is_err());
    assert!(sim.remove(&p("/d/b")).is_err());
    let err = sim.rename(&p("/d/b"), &p("/e/b")).unwrap_err();
    assert!(err.to_string().starts_with("/d/b -> /e/b: "), "{err}");
    sim.sync_dir(&p("/e")).unwrap();
    sim.open(&p("/e/c"), OpenOptions::CREATE_NEW).unwrap();
}

// ---- directories need their parent's fsync ----

#[test]
fn a_lost_directory_takes_everything_under_it() {
    let sim = SimStorage::new(10);
    // mkdir /a is op 1, the sync of / op 2: killed there, /a exists but is not durable.
    sim.kill_at_op(2);
    let err = sim.create_dir_all(&p("/a")).unwrap_err();
    assert!(SimStorage::is_crash_error(&err), "{err}");
    assert!(sim.exists(&p("/a")).unwrap(), "the page cache still has it");
    // The next incarnation makes a file fully durable in it — or thinks so.
    let file = sim.open(&p("/a/f"), OpenOptions::CREATE_NEW).unwrap();
    file.write_at(b"lost", 0).unwrap();
    file.sync_data().unwrap();
    sim.sync_dir(&p("/a")).unwrap();
    assert_eq!(
        sim.durable_len(&p("/a/f")),
        None,
        "its directory is not durable"
    );
    sim.crash();
    assert!(!sim.exists(&p("/a")).unwrap());
    assert!(!sim.exists(&p("/a/f")).unwrap());
    assert!(sim.list(&p("/")).unwrap().is_empty());
}

#[test]
fn create_dir_all_over_an_existing_but_unsynced_directory_makes_it_durable() {
    let sim = SimStorage::new(11);
    sim.kill_at_op(2);
    sim.create_dir_all(&p("/a")).unwrap_err();
    sim.set_trace(true);
    sim.create_dir_all(&p("/a/b")).unwrap();
    assert_eq!(
        sim.take_trace(),
        [
            TraceEvent::SyncDir(p("/")),
            TraceEvent::CreateDir(p("/a/b")),
            TraceEvent::SyncDir(p("/a")),
        ]
    );
    durable_file(&sim, &p("/a/b/f"), b"kept");
    assert_eq!(sim.durable_len(&p("/a/b/f")), Some(4));
    sim.crash();
    assert_eq!(read_all(&sim, &p("/a/b/f")).unwrap(), b"kept");
}

#[test]
fn a_crash_between_the_steps_of_create_dir_all_leaves_a_reachable_prefix() {
    // Steps: mkdir d, sync ., mkdir d/e, sync d, mkdir d/e/f, sync d/e.
    for n in 1..=6 {
        for seed in 0..20 {
            let sim = SimStorage::new(seed);
            sim.crash_at_op(n);
            let err = sim.create_dir_all(&p("d/e/f")).unwrap_err();
            assert!(SimStorage::is_crash_error(&err), "{err}");
            let names = ["d", "d/e", "d/e/f"];
            let present: Vec<bool> = names.iter().map(|d| sim.exists(&p(d)).unwrap()).collect();
            // Every directory that survived was made durable by the sync after it.
            let synced = (n as usize - 1) / 2;
            assert!(present.iter().take(synced).all(|&x| x), "n {n} seed {seed}");
            assert!(
                present.windows(2).all(|w| w[0] || !w[1]),
                "n {n} seed {seed}"
            );
            sim.create_dir_all(&p("d/e/f")).unwrap();
            assert_eq!(sim.list(&p("d/e")).unwrap(), ["f"]);
        }
    }
}

// ---- errors name their path ----

#[test]
fn every_error_names_its_path() {
    let sim = SimStorage::new(12);
    sim.create_dir_all(&p("/db")).unwrap();
    let starts_with = |err: io::Error, prefix: &str| {
        let text = err.to_string();
        assert!(
            text.starts_with(prefix),
            "{text:?} should start with {prefix:?}"
        );
        assert!(!text.contains('\n'), "{text}");
    };
    starts_with(
        sim.open(&p("/db/missing"), OpenOptions::EXISTING)
            .err()
            .unwrap(),
        "/db/missing: ",
    );
    starts_with(
        sim.open(&p("/nodir/f"), OpenOptions::CREATE).err().unwrap(),
        "/nodir/f: ",
    );
    starts_with(sim.list(&p("/nope")).unwrap_err(), "/nope: ");
    starts_with(sim.remove(&p("/db/zz")).unwrap_err(), "/db/zz: ");
    starts_with(sim.sync_dir(&p("/db/none")).unwrap_err(), "/db/none: ");
    let file = durable_file(&sim, &p("/db/f"), b"abc");
    let err = file.read_exact_at(&mut [0; 8], 0).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    starts_with(err, "/db/f: ");
    sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Enospc));
    let err = file.sync_data().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    assert_eq!(raw_os_error(&err), Some(28));
    starts_with(err, "/db/f: ");
    sim.crash();
    let err = file.len().unwrap_err();
    assert!(err.to_string().contains("power loss #1"), "{err}");
    starts_with(err, "/db/f: ");
}
