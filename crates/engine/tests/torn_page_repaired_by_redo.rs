//! A page torn on disk is repaired by redo from the full page image logged at its first
//! change after the last checkpoint; a page damaged with no image to repair it is
//! reported as corruption, never read as if valid.

use sluice::{Database, Error, Options};
use sluice_storage::{OpenOptions, SimStorage, Storage};
use sluice_testkit::fence::FencedStorage;
use std::path::Path;

fn options() -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0; // only the checkpoints this test asks for
    o
}

/// Overwrites the middle of page `id` on disk with garbage, as a torn write would leave
/// it — if the page is a leaf (`only_leaves`) or any page. Returns whether it tore it.
fn tear(sim: &SimStorage, id: u64, page_size: u64, only_leaves: bool) -> bool {
    let f = sim
        .open(Path::new("/db/data"), OpenOptions::EXISTING)
        .unwrap();
    let mut kind = [0u8; 1];
    f.read_exact_at(&mut kind, id * page_size + 4).unwrap();
    if only_leaves && kind[0] != 2 {
        return false;
    }
    f.write_at(&[0xA5; 300], id * page_size + 400).unwrap();
    f.sync_data().unwrap();
    true
}

/// Keys in the table: enough for several leaves, which sequential inserts fill.
const KEYS: u32 = 400;

/// The value of key `i` written by `fill(tag)`: the same length whatever the tag, so that
/// later fills change every leaf without splitting any (the leaves are full).
fn value(tag: &str, i: u32) -> Vec<u8> {
    format!("{tag:<5}{i}").into_bytes()
}

fn fill(db: &Database, tag: &str) {
    let t = db.table_or_create("t").unwrap();
    let mut tx = db.begin();
    for i in 0..KEYS {
        tx.put(&t, format!("key{i:04}").as_bytes(), value(tag, i))
            .unwrap();
    }
    tx.commit().unwrap();
}

fn check(db: &Database, tag: &str) {
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..KEYS {
        let v = tx.get(&t, format!("key{i:04}").as_bytes()).unwrap();
        assert_eq!(v, Some(value(tag, i)));
    }
    tx.commit().unwrap();
}

#[test]
fn torn_page_changed_after_the_checkpoint_is_restored_from_its_image() {
    let sim = SimStorage::new(3);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    fill(&db, "old");
    db.checkpoint().unwrap();
    fill(&db, "new"); // every leaf changes after the checkpoint: each logs a full image
    let pages = db.verify().map(|r| r.pages).unwrap();
    // verify() checkpointed; change the pages again so their images follow that one.
    fill(&db, "newer");
    sim.crash();
    drop(db);
    // Only pages written after the checkpoint can be torn by the crash: the leaves, which
    // every key's update changed (internal nodes did not change after the checkpoint).
    let torn = (2..pages).filter(|&id| tear(&sim, id, 1024, true)).count();
    assert!(torn >= 5, "only {torn} leaves");
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    let r = db.recovery_report().clone();
    assert_eq!(r.restored_pages as usize, torn, "{r:?}");
    assert!(r.restored_pages >= 1, "no torn page was restored: {r:?}");
    check(&db, "newer");
    db.verify().unwrap();
}

#[test]
fn damaged_page_without_an_image_is_reported_not_trusted() {
    let sim = SimStorage::new(4);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    fill(&db, "v");
    let pages = db.verify().unwrap().pages;
    db.close().unwrap();
    for id in 2..pages {
        tear(&sim, id, 1024, false);
    }
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options()).unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    let r: Result<Vec<_>, _> = tx.scan_all(&t).collect();
    assert!(
        matches!(r, Err(Error::Corruption(_))),
        "damage went unnoticed: {r:?}"
    );
}
