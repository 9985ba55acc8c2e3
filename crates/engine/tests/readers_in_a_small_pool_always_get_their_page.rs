//! Page-table hits take the table shared, misses exclusively (buffer_pool/pool.rs). With
//! far more pages than frames, readers (more threads than cores) and a writer keep
//! evicting each other's pages; every read must still see its own key's value, and the
//! pool must have evicted and re-read pages for the test to mean anything.

use sluice::{Database, Options};
use sluice_storage::OsStorage;
use std::sync::Arc;

const KEYS: u32 = 4000;

fn key(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

/// The value of `k` in generation `g`: names its key, so a read served from the wrong
/// page (or a frame that changed hands under it) cannot pass.
fn value(k: u32, g: u32) -> Vec<u8> {
    format!("value of {k:06} generation {g:04} {}", "x".repeat(60)).into_bytes()
}

#[test]
fn readers_and_a_writer_in_a_small_pool_read_their_own_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::small();
    o.pool_pages = 16;
    let db = Database::open_on(Arc::new(OsStorage::new()), dir.path(), o).unwrap();
    let t = db.create_table("t").unwrap();
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(500) {
        let mut tx = db.begin();
        for &k in chunk {
            tx.put(&t, key(k), value(k, 0)).unwrap();
        }
        tx.commit().unwrap();
    }
    let before = db.stats().pool;
    let readers: Vec<_> = (0..4u64)
        .map(|th| {
            let (db, t) = (db.clone(), t.clone());
            std::thread::spawn(move || {
                let mut x = th * 7919 + 1;
                for _ in 0..4000 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let k = (x >> 33) as u32 % KEYS;
                    let mut tx = db.begin();
                    let v = tx.get(&t, key(k)).unwrap().expect("every key exists");
                    tx.commit().unwrap();
                    let text = String::from_utf8(v).unwrap();
                    assert!(
                        text.starts_with(&format!("value of {k:06} generation ")),
                        "key {k} read {text:?}"
                    );
                }
            })
        })
        .collect();
    let writer = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            for g in 1..=3u32 {
                for chunk in (0..KEYS).step_by(7).collect::<Vec<_>>().chunks(50) {
                    let mut tx = db.begin();
                    for &k in chunk {
                        tx.put(&t, key(k), value(k, g)).unwrap();
                    }
                    tx.commit().unwrap();
                }
            }
        })
    };
    for h in readers {
        h.join().unwrap();
    }
    writer.join().unwrap();
    let after = db.stats().pool;
    assert!(
        after.evictions > before.evictions + 100 && after.reads > before.reads + 100,
        "the pool must have turned over: {before:?} -> {after:?}"
    );
    let mut tx = db.begin();
    for k in 0..KEYS {
        let g = if k % 7 == 0 { 3 } else { 0 };
        assert_eq!(tx.get(&t, key(k)).unwrap(), Some(value(k, g)), "key {k}");
    }
    tx.commit().unwrap();
}
