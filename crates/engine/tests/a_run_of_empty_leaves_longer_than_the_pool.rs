//! Nothing merges empty leaves, so deleting most of a table leaves a run of empty leaves
//! that can be longer than the buffer pool. Scans and inserts latch-couple the leaves
//! between a key and the next one; coupling the whole run pinned every leaf of it at once
//! and failed with "buffer pool exhausted" (found by `retain` emptying a table). Both now
//! finish, and the key-range locks still hold across the run.

use sluice::{Database, Error, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;
use std::time::Duration;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

const KEYS: u32 = 3000;

fn hollow_table() -> (Database, sluice::Table) {
    let mut o = Options::small();
    o.pool_pages = 16;
    o.lock_timeout = Duration::from_millis(200);
    let db = Database::open_on(Arc::new(SimStorage::new(11)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(500) {
        let mut tx = db.begin();
        for &i in chunk {
            tx.put(&t, key(i), [1u8; 40]).unwrap();
        }
        tx.commit().unwrap();
    }
    // Keep the first and the last key: everything between is a run of empty leaves,
    // far more of them than the pool's 16 frames.
    for chunk in (1..KEYS - 1).collect::<Vec<_>>().chunks(500) {
        let mut tx = db.begin();
        for &i in chunk {
            tx.delete(&t, key(i)).unwrap();
        }
        tx.commit().unwrap();
    }
    (db, t)
}

#[test]
fn a_scan_crosses_the_run() {
    let (db, t) = hollow_table();
    let mut tx = db.begin();
    let keys: Vec<Vec<u8>> = tx.scan_all(&t).map(|e| e.unwrap().0).collect();
    assert_eq!(keys, vec![key(0), key(KEYS - 1)]);
    let n = tx.scan(&t, key(1)..key(KEYS - 1)).count();
    assert_eq!(n, 0);
    tx.commit().unwrap();
}

#[test]
fn an_insert_whose_next_key_is_beyond_the_run_commits() {
    let (db, t) = hollow_table();
    let mut tx = db.begin();
    tx.put(&t, key(1), b"back").unwrap();
    tx.commit().unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.scan_all(&t).count(), 3);
    tx.commit().unwrap();
}

#[test]
fn a_scan_across_the_run_still_blocks_an_insert_into_it() {
    let (db, t) = hollow_table();
    let mut scanner = db.begin();
    assert_eq!(scanner.scan(&t, key(1)..key(KEYS - 1)).count(), 0);
    // The scanned range is locked to the scanner's end: an insert into the middle of
    // the run must wait for it (here: time out), or the scanner would see a phantom.
    let mut writer = db.begin();
    match writer.put(&t, key(KEYS / 2), b"phantom") {
        Err(Error::LockTimeout { .. }) => {}
        other => panic!("an insert into a scanned gap must wait: {other:?}"),
    }
    writer.rollback().unwrap();
    assert_eq!(scanner.scan(&t, key(1)..key(KEYS - 1)).count(), 0);
    scanner.commit().unwrap();
}
