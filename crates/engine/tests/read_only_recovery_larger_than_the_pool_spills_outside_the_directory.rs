//! A read-only open never writes a page back to the data file, yet after a crash restart
//! recovery changes pages in memory — here far more than the pool holds. The pages it has
//! no room for go to a temporary file outside the database directory and are read back
//! from there (`buffer_pool::spill`): the open succeeds with the smallest pool, shows every
//! committed value, and changes nothing on the database's storage, simulated or real.
//! Before (issue 24, item 1) the open failed: "the buffer pool of 16 pages is too small
//! for this read-only database". The spill file is the storage's scratch file
//! (`Storage::scratch`), so on the simulator it is simulated too: a fault in it is the
//! open's I/O error.

use crate::read_only;

use read_only::*;
use sluice::Database;
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStats, SimStorage, Storage};
use sluice_testkit::dir_snapshot::dir_snapshot;
use sluice_testkit::fence::FencedStorage;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The committed rows of table "t" as a read-only open of a database shows them.
fn rows(db: &Database) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    let rows = tx.scan_all(&t).map(|e| e.unwrap()).collect();
    tx.commit().unwrap();
    rows
}

/// A simulated disk (from `seed`) holding a database that crashed with a redo of far more
/// than 16 pages past its last checkpoint, and a loser over some of it; the disk as a
/// storage, and its stats now.
fn crashed_with_a_large_redo(seed: u64) -> (SimStorage, Arc<dyn Storage>, SimStats) {
    let sim = SimStorage::new(seed);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), DIR, options()).unwrap();
    commit_keys(&db, "t", 300, "before the checkpoint ");
    db.checkpoint().unwrap();
    // Far more than 16 pages, all in the log past the checkpoint; and a loser over some.
    commit_keys(&db, "t", 3000, "after the checkpoint ");
    let t = db.table("t").unwrap();
    let mut loser = db.begin();
    for i in (0..3000).step_by(7) {
        loser.put(&t, key(i), b"loser").unwrap();
    }
    commit_keys(&db, "u", 10, "forces the loser's records durable ");
    sim.crash();
    drop(loser);
    drop(db);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let before = sim.stats();
    (sim, storage, before)
}

/// A read-only open of the database on `storage` with a pool of 16 pages.
fn open_read_only_16(storage: &Arc<dyn Storage>) -> sluice::Result<Database> {
    Database::builder(DIR)
        .options(options())
        .pool_pages(16)
        .storage(storage.clone())
        .read_only(true)
        .open()
}

#[test]
fn a_redo_far_larger_than_a_16_page_pool_opens_read_only_on_simulated_storage() {
    let (sim, storage, before) = crashed_with_a_large_redo(7);

    let db = open_read_only_16(&storage)
        .expect("a read-only open whose recovery outgrows the pool spills, not fails");
    let expected: BTreeMap<_, _> = (0..3000)
        .map(|i| (key(i), format!("after the checkpoint {i}").into_bytes()))
        .collect();
    assert_eq!(rows(&db), expected, "every committed value, no loser's");
    // Twice: pages read back from the spill file keep what recovery gave them.
    assert_eq!(rows(&db), expected);
    let report = db.verify().unwrap();
    assert_eq!(report.entries, 3010);
    drop(db);
    assert_only_syncs(&sim, before, "nothing written on the database's storage");
}

/// The spill goes through the storage seam: a write error injected into the simulated
/// scratch file fails the read-only open with an I/O error that names the scratch file,
/// and the database's files are untouched — a later read-only open shows every value.
#[test]
fn a_failed_spill_on_simulated_storage_fails_the_read_only_open_with_an_io_error() {
    let (sim, storage, before) = crashed_with_a_large_redo(8);
    sim.inject(
        FaultPlan::new(FaultOp::Write, 1, FaultKind::Eio)
            .persistent()
            .on(SimStorage::SCRATCH),
    );
    let e = open_read_only_16(&storage)
        .map(|db| rows(&db).len())
        .unwrap_err();
    assert!(e.is_io(), "{e}");
    assert!(e.to_string().contains("scratch file"), "{e}");
    sim.clear_faults();
    let db = open_read_only_16(&storage).unwrap();
    assert_eq!(rows(&db).len(), 3000);
    drop(db);
    assert_only_syncs(&sim, before, "nothing written on the database's storage");
}

#[test]
fn a_redo_far_larger_than_a_16_page_pool_opens_read_only_on_real_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Database::builder(&dir)
        .checkpoint_log_bytes(0)
        .checkpoint_interval(Duration::ZERO)
        .open()
        .unwrap();
    let t = db.table_or_create("t").unwrap();
    db.checkpoint().unwrap();
    let value = |i: u32| format!("{i:0>200}").into_bytes();
    for chunk in 0..10u32 {
        db.transaction(|tx| {
            for i in chunk * 500..(chunk + 1) * 500 {
                tx.put(&t, i.to_be_bytes(), value(i))?;
            }
            Ok::<_, sluice::Error>(())
        })
        .unwrap();
    }
    db.close_as_crashed().unwrap();
    let files = dir_snapshot(&dir);

    let db = Database::builder(&dir)
        .pool_pages(16)
        .read_only(true)
        .open()
        .expect("a read-only open whose recovery outgrows the pool spills, not fails");
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..5000u32 {
        assert_eq!(
            tx.get(&t, i.to_be_bytes()).unwrap(),
            Some(value(i)),
            "key {i}"
        );
    }
    assert_eq!(tx.scan_all(&t).count(), 5000);
    tx.commit().unwrap();
    drop(db);
    assert!(
        dir_snapshot(&dir) == files,
        "the read-only open changed, added or removed a file of the database directory"
    );
}
