//! A `put` after a `get_for_update` of the same key starts from the leaf the read found
//! (`btree/remembered.rs`) only while that leaf is still the key's leaf: after another
//! transaction split it, or a compaction freed it, the put descends again; after an
//! eviction it reads the leaf back by its id. Each test would fail if the put used a
//! stale leaf: the key would land in a leaf the tree no longer routes it to (a duplicate
//! that `verify` finds, or a page on the free list that no read reaches).

use super::space::{fill, open};
use crate::btree::Btree;
use crate::{Database, Table};
use sluice_storage::SimStorage;
use std::sync::atomic::Ordering;

/// Changes of `t` that started from a remembered leaf, and those that used its slot too.
fn remembered(t: &Table) -> [u64; 2] {
    let r = &t.latch.remembered;
    [r[0].load(Ordering::Relaxed), r[1].load(Ordering::Relaxed)]
}

fn key(i: u32) -> String {
    format!("key{i:06}")
}

/// The leaf page `key` is in now, found by a descent.
fn leaf_of(db: &Database, t: &Table, key: &str) -> crate::ids::PageId {
    let tree = Btree::new(&db.inner.store, t.root, &t.latch);
    let _shared = t.latch.read();
    let id = tree.leaf_for(t.root, key.as_bytes()).unwrap().id();
    id
}

/// Every key of `t`, and the tree's structure, as a reader and `verify` see them.
fn check(db: &Database, t: &Table, want: &[(String, Vec<u8>)]) {
    db.verify().unwrap();
    let mut tx = db.begin();
    let got: Vec<(String, Vec<u8>)> = tx
        .scan(t, ..)
        .map(|e| e.map(|(k, v)| (String::from_utf8(k).unwrap(), v)))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the table differs from what was written");
    for (k, v) in want {
        assert_eq!(tx.get(t, k).unwrap().as_deref(), Some(&v[..]), "{k}");
    }
    assert_eq!(tx.len(t).unwrap(), want.len() as u64);
    tx.commit().unwrap();
}

fn rows(n: u32) -> Vec<(String, Vec<u8>)> {
    (0..n).map(|i| (key(i), vec![5u8; 60])).collect()
}

fn set(rows: &mut Vec<(String, Vec<u8>)>, k: &str, v: &[u8]) {
    match rows.binary_search_by(|(r, _)| r.as_str().cmp(k)) {
        Ok(i) => rows[i].1 = v.to_vec(),
        Err(i) => rows.insert(i, (k.to_string(), v.to_vec())),
    }
}

#[test]
fn an_unchanged_leaf_is_used_with_its_slot_and_survives_a_crash() {
    let sim = SimStorage::new(281);
    let db = open(&sim);
    let t = fill(&db, "t", 200);
    let mut want = rows(200);
    let before = remembered(&t);
    let mut tx = db.begin();
    let v = tx.get_for_update(&t, key(77)).unwrap().unwrap();
    assert_eq!(v, [5u8; 60]);
    tx.put(&t, key(77), [6u8; 60]).unwrap();
    // A put of another key than the one read descends.
    tx.put(&t, key(78), [7u8; 60]).unwrap();
    tx.commit().unwrap();
    let after = remembered(&t);
    assert_eq!([after[0] - before[0], after[1] - before[1]], [1, 1]);
    set(&mut want, &key(77), &[6; 60]);
    set(&mut want, &key(78), &[7; 60]);
    check(&db, &t, &want);
    // Redo puts the change where the put logged it.
    db.inner.store.log.sync().unwrap();
    sim.crash();
    drop((t, db));
    let db = open(&sim);
    let t = db.table("t").unwrap();
    check(&db, &t, &want);
}

#[test]
fn a_split_by_another_transaction_in_between_sends_the_put_down_from_the_root() {
    let sim = SimStorage::new(282);
    let db = open(&sim);
    let t = fill(&db, "t", 200);
    let mut want = rows(200);
    // Present (an update) and absent (an insert) alike.
    for (k, present) in [(key(125), true), (format!("{}-new", key(145)), false)] {
        let leaf = leaf_of(&db, &t, &k);
        let first = {
            let p = db.inner.store.pool.fetch(leaf).unwrap();
            let g = p.read();
            String::from_utf8(crate::page::Node::new(&g).key(0).to_vec()).unwrap()
        };
        assert!(first < k, "{k} is its leaf's first key");
        let before = remembered(&t);
        let mut tx = db.begin();
        assert_eq!(tx.get_for_update(&t, &k).unwrap().is_some(), present);
        // Another transaction inserts keys just above the leaf's first key, below the
        // key, until the leaf has split and the key has moved to a new leaf (none of
        // them is the key or next to it, whose locks the first transaction holds).
        let mut other = db.begin();
        let mut n = 0;
        while leaf_of(&db, &t, &k) == leaf {
            let near = format!("{first}+{n:03}");
            other.put(&t, &near, [8u8; 60]).unwrap();
            set(&mut want, &near, &[8; 60]);
            n += 1;
            assert!(n < 100, "the key never left its leaf");
        }
        other.commit().unwrap();
        tx.put(&t, &k, [9u8; 60]).unwrap();
        tx.commit().unwrap();
        set(&mut want, &k, &[9; 60]);
        check(&db, &t, &want);
        assert_eq!(remembered(&t), before, "a split leaf was used");
    }
    db.inner.store.log.sync().unwrap();
    sim.crash();
    drop((t, db));
    let db = open(&sim);
    let t = db.table("t").unwrap();
    check(&db, &t, &want);
}

#[test]
fn a_leaf_evicted_in_between_is_read_back_by_its_id() {
    let sim = SimStorage::new(283);
    let db = open(&sim);
    let t = fill(&db, "t", 200);
    let u = fill(&db, "u", 600);
    let mut want = rows(200);
    let k = key(33);
    let leaf = leaf_of(&db, &t, &k);
    let before = remembered(&t);
    let mut tx = db.begin();
    tx.get_for_update(&t, &k).unwrap().unwrap();
    assert!(db.inner.store.pool.evict(leaf).unwrap(), "not in the pool");
    // Other pages take the frames meanwhile (the pool has 32).
    let mut reader = db.begin();
    assert_eq!(reader.scan(&u, ..).count(), 600);
    reader.commit().unwrap();
    tx.put(&t, &k, [4u8; 60]).unwrap();
    tx.commit().unwrap();
    set(&mut want, &k, &[4; 60]);
    let after = remembered(&t);
    assert_eq!([after[0] - before[0], after[1] - before[1]], [1, 1]);
    check(&db, &t, &want);
    db.inner.store.log.sync().unwrap();
    sim.crash();
    drop((t, db));
    let db = open(&sim);
    let t = db.table("t").unwrap();
    check(&db, &t, &want);
}

/// The case a PageLSN check alone would miss: a compaction cuts an emptied tree back to
/// its root and frees its other leaves without writing them, so the freed leaf still has
/// the PageLSN the read saw.
#[test]
fn a_leaf_a_compaction_freed_in_between_is_not_used() {
    let sim = SimStorage::new(284);
    let db = open(&sim);
    let t = fill(&db, "t", 200);
    let mut tx = db.begin();
    for i in 0..200 {
        tx.delete(&t, key(i)).unwrap();
    }
    tx.commit().unwrap();
    let k = key(150);
    let leaf = leaf_of(&db, &t, &k);
    assert_ne!(leaf, t.root, "the key's leaf is the root");
    let mut tx = db.begin();
    assert_eq!(tx.get_for_update(&t, &k).unwrap(), None);
    let report = db.compact().unwrap();
    assert!(report.pages_freed > 0, "{report:?}");
    assert_eq!(leaf_of(&db, &t, &k), t.root, "not cut back");
    let before = remembered(&t);
    tx.put(&t, &k, [3u8; 60]).unwrap();
    tx.commit().unwrap();
    assert_eq!(remembered(&t), before, "a freed leaf was used");
    let want = vec![(k, vec![3u8; 60])];
    check(&db, &t, &want);
    db.inner.store.log.sync().unwrap();
    sim.crash();
    drop((t, db));
    let db = open(&sim);
    let t = db.table("t").unwrap();
    check(&db, &t, &want);
}

#[test]
fn a_rolled_back_put_on_a_remembered_leaf_restores_the_value() {
    let sim = SimStorage::new(285);
    let db = open(&sim);
    let t = fill(&db, "t", 200);
    let mut want = rows(200);
    let before = remembered(&t);
    let mut tx = db.begin();
    for i in [10, 11, 12] {
        tx.get_for_update(&t, key(i)).unwrap().unwrap();
        let mut v = vec![5u8; 60];
        v[20] = 1; // a patch
        if i == 11 {
            v.push(2); // a whole new value
        }
        tx.put(&t, key(i), &v).unwrap();
    }
    tx.get_for_update(&t, key(12)).unwrap().unwrap();
    tx.delete(&t, key(12)).unwrap();
    tx.get_for_update(&t, "key000010-x").unwrap();
    tx.put(&t, "key000010-x", [1u8; 10]).unwrap();
    tx.rollback().unwrap();
    let after = remembered(&t);
    assert_eq!(after[0] - before[0], 5);
    check(&db, &t, &want);
    // And committed, the same changes stay.
    let mut tx = db.begin();
    tx.get_for_update(&t, key(10)).unwrap().unwrap();
    tx.put(&t, key(10), [2u8; 60]).unwrap();
    tx.commit().unwrap();
    set(&mut want, &key(10), &[2; 60]);
    check(&db, &t, &want);
}
