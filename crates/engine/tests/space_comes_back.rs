//! Space comes back (issue 24): deleting every key and compacting returns the data file to
//! within a few pages of an empty database's; freed pages are reused before the file
//! grows; a crash at any operation of a compaction loses nothing committed and leaves a
//! database that opens and verifies; a read-only database refuses to compact.

use sluice::experiment::{PageCleaner, Policy};
use sluice::{Database, Error, Options, Strategy};
use sluice_storage::SimStorage;
use sluice_testkit::fence::FencedStorage;

const KEYS: u32 = 4000;

fn key(i: u32) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&i.to_be_bytes());
    k
}

fn fill(db: &Database, table: &str, keys: std::ops::Range<u32>) {
    let t = db.table_or_create(table).unwrap();
    for chunk in keys.collect::<Vec<_>>().chunks(500) {
        let mut tx = db.begin();
        for &i in chunk {
            tx.put(&t, key(i), [7u8; 40]).unwrap();
        }
        tx.commit().unwrap();
    }
}

fn delete(db: &Database, table: &str, keys: std::ops::Range<u32>) {
    let t = db.table(table).unwrap();
    for chunk in keys.collect::<Vec<_>>().chunks(500) {
        let mut tx = db.begin();
        for &i in chunk {
            tx.delete(&t, key(i)).unwrap();
        }
        tx.commit().unwrap();
    }
}

fn strategies() -> [Strategy; 3] {
    [
        Strategy::CheckpointSweep,
        Strategy::Page(PageCleaner {
            policy: Policy::Mixed,
            heap: 0,
        }),
        Strategy::Log,
    ]
}

fn options(strategy: Strategy, page_size: usize) -> Options {
    let mut o = Options::small();
    o.page_size = page_size;
    o.pool_pages = 16;
    o.propagation = strategy;
    o
}

/// The data file of a fresh database holding one empty table, in bytes, once its pages
/// are written: measured under the checkpoint sweep, whose checkpoint writes every page.
/// (Under page cleaners or log propagation the file stays empty until a cleaner or the
/// archive gets to it, so a baseline taken at once was 0 or not, by timing.)
fn empty_size(page_size: usize) -> u64 {
    let sim = SimStorage::new(1);
    let o = options(Strategy::CheckpointSweep, page_size);
    let db = Database::open_on(std::sync::Arc::new(sim), "/db", o).unwrap();
    db.create_table("t").unwrap();
    db.checkpoint().unwrap();
    let r = db.compact().unwrap();
    db.close().unwrap();
    assert!(r.size_after > 0, "an empty database's file holds its pages");
    r.size_after
}

#[test]
fn deleting_every_key_then_compacting_shrinks_the_file_to_an_empty_databases() {
    for strategy in strategies() {
        for page_size in [1024, 4096] {
            let o = options(strategy, page_size);
            let empty = empty_size(page_size);
            let sim = SimStorage::new(2);
            let db = Database::open_on(std::sync::Arc::new(sim), "/db", o).unwrap();
            fill(&db, "t", 0..KEYS);
            delete(&db, "t", 0..KEYS);
            let r = db.compact().unwrap();
            let what = format!("{strategy}, {page_size}-byte pages: {r:?}");
            assert!(r.size_before > 40 * page_size as u64, "{what}");
            assert!(
                r.size_after <= empty + 4 * page_size as u64,
                "{what}: empty database {empty}"
            );
            assert_eq!(r.bytes_returned, r.size_before - r.size_after, "{what}");
            let v = db.verify().unwrap();
            assert_eq!(v.entries, 0, "{what}");
            assert_eq!(v.pages * page_size as u64, r.size_after, "{what}");
            // The table still works.
            fill(&db, "t", 0..10);
            assert_eq!(db.verify().unwrap().entries, 10, "{what}");
            db.close().unwrap();
        }
    }
}

#[test]
fn freed_pages_are_reused_before_the_file_grows() {
    let o = options(Strategy::CheckpointSweep, 1024);
    let sim = SimStorage::new(3);
    let db = Database::open_on(std::sync::Arc::new(sim), "/db", o).unwrap();
    fill(&db, "a", 0..KEYS);
    fill(&db, "b", 0..KEYS); // after a's pages, so a's are in the middle of the file
    delete(&db, "a", 0..KEYS);
    let r = db.compact().unwrap();
    assert!(r.pages_freed > 50, "{r:?}");
    assert_eq!(r.pages_returned, 0, "b holds the file's end: {r:?}");
    let before = db.verify().unwrap();
    assert_eq!(before.free_pages, r.pages_free);
    // Half as many keys again: the free list covers them, the file does not grow.
    fill(&db, "a", 0..KEYS / 2);
    let after = db.verify().unwrap();
    assert_eq!(after.pages, before.pages, "the file grew: {after:?}");
    assert!(after.free_pages < before.free_pages, "{after:?}");
    // Once the list is used up, the file grows again.
    fill(&db, "c", 0..3 * KEYS);
    let grown = db.verify().unwrap();
    assert!(grown.pages > after.pages, "{grown:?}");
    assert_eq!(grown.entries, u64::from(KEYS / 2 + KEYS + 3 * KEYS));
    db.close().unwrap();
}

#[test]
fn a_read_only_database_refuses_to_compact() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    fill(&db, "t", 0..10);
    db.close().unwrap();
    let db = Database::open_read_only(dir.path()).unwrap();
    assert!(matches!(db.compact(), Err(Error::ReadOnly)));
    db.close().unwrap();
}

/// A crash (power loss or process kill) at every counted disk operation of a
/// compaction: the reopened database verifies and holds every committed key.
#[test]
fn a_crash_at_any_operation_of_a_compaction_loses_nothing() {
    let mut ops = None;
    let mut at = 1;
    while ops.is_none_or(|n| at <= n) {
        for (kill, strategy) in [(false, Strategy::CheckpointSweep), (true, Strategy::Log)] {
            let o = options(strategy, 1024);
            let sim = SimStorage::new(at);
            let db =
                Database::open_on(FencedStorage::for_incarnation(&sim), "/db", o.clone()).unwrap();
            fill(&db, "kept", 0..300);
            fill(&db, "gone", 0..1500);
            delete(&db, "gone", 0..1500);
            fill(&db, "gone", 2000..2800);
            delete(&db, "gone", 2000..2800);
            let start = sim.stats().ops;
            let incarnation = sim.incarnation();
            if kill {
                sim.kill_at_op(at);
            } else {
                sim.crash_at_op(at);
            }
            let r = db.compact();
            sim.disarm_crash();
            if sim.incarnation() == incarnation {
                r.unwrap();
                if !kill {
                    ops.get_or_insert(sim.stats().ops - start);
                }
                sim.crash();
            }
            drop(db);
            let what = format!("crash at operation {at} of the compaction (kill: {kill})");
            let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", o)
                .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let v = db
                .verify()
                .unwrap_or_else(|e| panic!("{what}: verify: {e}"));
            assert_eq!(v.entries, 300, "{what}");
            let t = db.table("kept").unwrap();
            let mut tx = db.begin();
            for i in 0..300 {
                assert!(tx.get(&t, key(i)).unwrap().is_some(), "{what}: key {i}");
            }
            tx.commit().unwrap();
            // A compaction after the crash finishes the job.
            let r = db
                .compact()
                .unwrap_or_else(|e| panic!("{what}: compact again: {e}"));
            db.verify()
                .unwrap_or_else(|e| panic!("{what}: verify after: {e}"));
            assert!(r.size_after <= 48 * 1024, "{what}: {r:?}");
            db.close().unwrap();
        }
        at += 1;
    }
    eprintln!("swept {at} operations");
    assert!(at > 10, "the compaction did {at} operations");
}

/// A partitioned database: each partition has its own data file and free list, and
/// `compact` gives back the space of each.
#[test]
fn each_partition_of_a_partitioned_database_compacts_its_own_file() {
    let sim = SimStorage::new(4);
    let db = sluice::Partitioned::builder("/db")
        .log_managers(2)
        .options(options(Strategy::CheckpointSweep, 1024))
        .storage(std::sync::Arc::new(sim.pinned()))
        .assign("a", 0)
        .assign("b", 1)
        .open()
        .unwrap();
    let (a, b) = (db.create_table("a").unwrap(), db.create_table("b").unwrap());
    for del in [false, true] {
        let mut tx = db.begin();
        for i in 0..KEYS {
            for t in [&a, &b] {
                if del {
                    tx.delete(t, key(i)).unwrap();
                } else {
                    tx.put(t, key(i), [3u8; 40]).unwrap();
                }
            }
        }
        tx.commit().unwrap();
    }
    let reports = db.compact().unwrap();
    assert_eq!(reports.len(), 2);
    for r in &reports {
        assert!(r.pages_returned > 50, "{reports:?}");
        assert!(r.size_after <= 8 * 1024, "{reports:?}");
    }
    for v in db.verify().unwrap() {
        assert_eq!(v.entries, 0);
    }
    db.close().unwrap();
}

/// The figure, on the real file system with default options (about a minute
/// optimised; `cargo test -p sluice --test space_comes_back -- --ignored --nocapture`):
/// 1,000,000 keys of 16 bytes with 40-byte values, all deleted, then `compact`: the data
/// file ends within 1 MiB of a freshly created database's.
#[test]
#[ignore = "a measurement: a million keys on the real disk"]
fn a_million_keys_deleted_and_compacted_leave_an_empty_databases_file() {
    let empty_dir = tempfile::tempdir().unwrap();
    let db = Database::open(empty_dir.path()).unwrap();
    db.create_table("t").unwrap();
    db.close().unwrap();
    let empty = std::fs::metadata(empty_dir.path().join("data"))
        .unwrap()
        .len();
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    const N: u32 = 1_000_000;
    let t = db.create_table("t").unwrap();
    for chunk in (0..N).collect::<Vec<_>>().chunks(10_000) {
        let mut tx = db.begin();
        for &i in chunk {
            tx.put(&t, key(i.wrapping_mul(2_654_435_761)), [9u8; 40])
                .unwrap();
        }
        tx.commit().unwrap();
    }
    let full = db.verify().unwrap();
    for chunk in (0..N).collect::<Vec<_>>().chunks(10_000) {
        let mut tx = db.begin();
        for &i in chunk {
            tx.delete(&t, key(i.wrapping_mul(2_654_435_761))).unwrap();
        }
        tx.commit().unwrap();
    }
    let r = db.compact().unwrap();
    drop(t);
    db.close().unwrap();
    let after = std::fs::metadata(dir.path().join("data")).unwrap().len();
    println!(
        "empty database: {empty} bytes; full: {} entries; compact: {r:?}; data file after close: {after} bytes",
        full.entries
    );
    assert_eq!(full.entries, u64::from(N));
    assert!(after <= empty + (1 << 20), "{after} bytes, empty {empty}");
}
