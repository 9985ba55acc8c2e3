//! Values of 1 MiB and 64 MiB, far above what a leaf holds, round-trip through every
//! operation: put, get, get_for_update, scan, scan_prefix, retain, overwrite with a
//! smaller, a larger and an inline value, delete, the rollback of each, and a close and
//! reopen. Every old value `put` and `delete` return is the whole value.

use sluice::{Database, Error, Table};

/// Bytes that differ at every position (a misplaced or missing chunk shows).
fn value(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn get(db: &Database, t: &Table, k: &[u8]) -> Option<Vec<u8>> {
    let mut tx = db.begin();
    let v = tx.get(t, k).unwrap();
    tx.commit().unwrap();
    v
}

/// Puts in a transaction of its own, committed or rolled back; returns the old value.
fn put(db: &Database, t: &Table, k: &[u8], v: &[u8], commit: bool) -> Option<Vec<u8>> {
    let mut tx = db.begin();
    let old = tx.put(t, k, v).unwrap();
    if commit {
        tx.commit().unwrap();
    } else {
        tx.rollback().unwrap();
    }
    old
}

fn delete(db: &Database, t: &Table, k: &[u8], commit: bool) -> Option<Vec<u8>> {
    let mut tx = db.begin();
    let old = tx.delete(t, k).unwrap();
    if commit {
        tx.commit().unwrap();
    } else {
        tx.rollback().unwrap();
    }
    old
}

fn same(a: Option<Vec<u8>>, b: &[u8], what: &str) {
    let a = a.unwrap_or_else(|| panic!("{what}: absent"));
    assert!(
        a.len() == b.len() && a == b,
        "{what}: {} bytes differ from the {} expected",
        a.len(),
        b.len()
    );
}

fn round_trip(size: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Database::open(&path).unwrap();
    let t = db.create_table("t").unwrap();
    let big = value(1, size);
    let smaller = value(2, size / 2 + 7);
    let larger = value(3, size + 4097);
    let k: &[u8] = b"k-large";

    let mut tx = db.begin();
    tx.put(&t, b"a", b"before").unwrap();
    assert_eq!(tx.put(&t, k, &big).unwrap(), None);
    tx.put(&t, b"z", b"after").unwrap();
    // Read back inside the writing transaction.
    same(tx.get(&t, k).unwrap(), &big, "get in the writer");
    tx.commit().unwrap();

    let mut tx = db.begin();
    same(tx.get(&t, k).unwrap(), &big, "get");
    same(tx.get_for_update(&t, k).unwrap(), &big, "get_for_update");
    let all: Vec<(Vec<u8>, Vec<u8>)> = tx.scan_all(&t).map(Result::unwrap).collect();
    assert_eq!(all.len(), 3);
    assert_eq!(
        (all[0].0.as_slice(), all[0].1.as_slice()),
        (&b"a"[..], &b"before"[..])
    );
    assert_eq!(all[1].0, k);
    assert!(all[1].1 == big, "scan returned a different large value");
    assert_eq!(all[2].1, b"after");
    let pre: Vec<_> = tx.scan_prefix(&t, "k-").map(Result::unwrap).collect();
    assert!(pre.len() == 1 && pre[0].1 == big, "scan_prefix");
    let mut seen = 0;
    let deleted = tx
        .retain(&t, .., |key, v| {
            if key == k {
                assert!(v == big.as_slice(), "retain saw a different large value");
                seen += 1;
            }
            true
        })
        .unwrap();
    assert_eq!((deleted, seen), (0, 1));
    tx.commit().unwrap();

    // Overwrite with a smaller value: rolled back, then committed.
    same(
        put(&db, &t, k, &smaller, false),
        &big,
        "old value of a rolled-back overwrite",
    );
    same(get(&db, &t, k), &big, "after the rollback of an overwrite");
    same(
        put(&db, &t, k, &smaller, true),
        &big,
        "old value of an overwrite",
    );
    same(
        get(&db, &t, k),
        &smaller,
        "after an overwrite with a smaller value",
    );
    // With a larger one.
    same(
        put(&db, &t, k, &larger, false),
        &smaller,
        "rolled back, larger",
    );
    same(
        get(&db, &t, k),
        &smaller,
        "after the rollback of a larger overwrite",
    );
    same(
        put(&db, &t, k, &larger, true),
        &smaller,
        "old value, larger",
    );
    same(
        get(&db, &t, k),
        &larger,
        "after an overwrite with a larger value",
    );
    // With an inline value, and back.
    same(
        put(&db, &t, k, b"inline", false),
        &larger,
        "rolled back, inline",
    );
    same(
        get(&db, &t, k),
        &larger,
        "after the rollback of an inline overwrite",
    );
    same(
        put(&db, &t, k, b"inline", true),
        &larger,
        "old value, inline",
    );
    same(get(&db, &t, k), b"inline", "inline");
    same(
        put(&db, &t, k, &big, false),
        b"inline",
        "rolled back, inline to large",
    );
    same(
        get(&db, &t, k),
        b"inline",
        "after the rollback of a large over an inline",
    );
    same(put(&db, &t, k, &big, true), b"inline", "inline to large");
    same(get(&db, &t, k), &big, "large again");
    // Delete.
    same(
        delete(&db, &t, k, false),
        &big,
        "old value of a rolled-back delete",
    );
    same(get(&db, &t, k), &big, "after the rollback of a delete");
    same(delete(&db, &t, k, true), &big, "old value of a delete");
    assert_eq!(get(&db, &t, k), None);
    // Several changes of one key in one transaction, rolled back together.
    let mut tx = db.begin();
    assert_eq!(tx.put(&t, k, &big).unwrap(), None);
    same(
        tx.put(&t, k, &larger).unwrap(),
        &big,
        "second put in one transaction",
    );
    same(
        tx.delete(&t, k).unwrap(),
        &larger,
        "delete in the same transaction",
    );
    assert_eq!(tx.put(&t, k, &smaller).unwrap(), None);
    tx.rollback().unwrap();
    assert_eq!(get(&db, &t, k), None);
    assert_eq!(put(&db, &t, k, &big, true), None);

    // Close and reopen: the value is there, and every tree verifies.
    drop(t);
    db.close().unwrap();
    let db = Database::open(&path).unwrap();
    let t = db.table("t").unwrap();
    same(get(&db, &t, k), &big, "after a reopen");
    assert_eq!(
        db.table_names().unwrap(),
        vec!["t".to_string()],
        "the hidden table is listed"
    );
    let r = db.verify().unwrap();
    assert_eq!((r.tables, r.entries), (1, 3));
    drop(t);
    db.close().unwrap();
}

#[test]
fn a_one_mib_value_round_trips() {
    round_trip(1 << 20);
}

#[test]
fn a_64_mib_value_round_trips() {
    round_trip(64 << 20);
}

#[test]
fn a_value_over_the_limit_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let t = db.create_table("t").unwrap();
    let l = db.limits();
    assert_eq!(l.max_value, 1 << 30);
    let mut tx = db.begin();
    let too_big = vec![0u8; l.max_value + 1];
    match tx.put(&t, b"k", &too_big) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("exceeds the limit"), "{m}"),
        r => panic!("a value over the limit gave {:?}", r.map(|_| ())),
    }
    drop(tx);
    // A key too long for a large value, with small pages.
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder(dir.path().join("db"))
        .page_size(1024)
        .open()
        .unwrap();
    let t = db.create_table("t").unwrap();
    let l = db.limits();
    let mut tx = db.begin();
    let long = vec![b'k'; l.max_large_key + 1];
    assert!(long.len() <= l.max_key);
    match tx.put(&t, &long, [1u8; 4096]) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("too long for a large value"), "{m}"),
        r => panic!("an overlong key for a large value gave {:?}", r.map(|_| ())),
    }
    drop(tx);
    let mut tx = db.begin();
    let fits = vec![b'k'; l.max_large_key];
    tx.put(&t, &fits, [1u8; 4096]).unwrap();
    assert_eq!(tx.get(&t, &fits).unwrap().unwrap(), vec![1u8; 4096]);
    tx.commit().unwrap();
}
