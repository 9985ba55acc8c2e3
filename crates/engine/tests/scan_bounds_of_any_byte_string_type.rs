//! Scan ranges take their bounds as any byte-string type — `&str`, `&[u8]`, byte
//! literals, `Vec<u8>`, `String` — with no type annotation at the call, and every kind of
//! range (half-open, inclusive, from, to, full, a pair of bounds); each returns exactly
//! the keys in the range. (Before `KeyRange`, `b"k"..`, `..b"k"` and `&v..&w` needed a
//! turbofish: std's `RangeBounds<K>` fits two `K`s.)

use sluice::{Database, Options, Table, Transaction};
use sluice_storage::SimStorage;
use std::sync::Arc;

fn keys(scan: sluice::Scan<'_>) -> Vec<String> {
    scan.map(|e| String::from_utf8(e.unwrap().0).unwrap())
        .collect()
}

fn setup() -> (Database, Table) {
    let db = Database::open_on(Arc::new(SimStorage::new(5)), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for k in ["a", "b", "bb", "c", "d"] {
        tx.put(&t, k.as_bytes(), b"v").unwrap();
    }
    tx.commit().unwrap();
    (db, t)
}

fn check(tx: &mut Transaction, t: &Table) {
    assert_eq!(keys(tx.scan(t, "b".."d")), ["b", "bb", "c"]);
    assert_eq!(keys(tx.scan(t, "b"..="d")), ["b", "bb", "c", "d"]);
    assert_eq!(keys(tx.scan(t, b"bb"..)), ["bb", "c", "d"]);
    assert_eq!(keys(tx.scan(t, ..b"b")), ["a"]);
    assert_eq!(keys(tx.scan(t, &b"a"[..]..&b"bb"[..])), ["a", "b"]);
    assert_eq!(keys(tx.scan(t, b"c".to_vec()..)), ["c", "d"]);
    assert_eq!(
        keys(tx.scan(t, String::from("a")..=String::from("b"))),
        ["a", "b"]
    );
    let (lo, hi): (Vec<u8>, Vec<u8>) = (b"b".to_vec(), b"c".to_vec());
    assert_eq!(keys(tx.scan(t, &lo..&hi)), ["b", "bb"]);
    assert_eq!(keys(tx.scan_all(t)), ["a", "b", "bb", "c", "d"]);
    assert_eq!(keys(tx.scan_prefix(t, "b")), ["b", "bb"]);
    let owned: Vec<u8> = "b".into();
    assert_eq!(keys(tx.scan_prefix(t, owned)), ["b", "bb"]);
    assert_eq!(keys(tx.scan(t, ..)), ["a", "b", "bb", "c", "d"]);
    assert_eq!(keys(tx.scan(t, ..="b")), ["a", "b"]);
    use std::ops::Bound::{Excluded, Included};
    assert_eq!(
        keys(tx.scan(t, (Excluded("a"), Included("bb")))),
        ["b", "bb"]
    );
    assert_eq!(tx.retain(t, "c"..="c", |_, _| false).unwrap(), 1);
    assert_eq!(keys(tx.scan(t, "c"..)), ["d"]);
}

#[test]
fn scan_bounds_of_any_byte_string_type() {
    let (db, t) = setup();
    let mut tx = db.begin();
    check(&mut tx, &t);
    tx.commit().unwrap();
}
