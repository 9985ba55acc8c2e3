//! `Transaction::retain` deletes what its predicate rejects inside a range, across many
//! batches and leaf pages, leaves everything else, and rolls back like any change.

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

#[test]
fn retain_deletes_the_rejected_entries_of_the_range_only() {
    let db = Database::open_on(Arc::new(SimStorage::new(5)), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..2000u32 {
        tx.put(&t, key(i), i.to_le_bytes()).unwrap();
    }
    tx.commit().unwrap();

    let odd = |v: &[u8]| u32::from_le_bytes(v.try_into().unwrap()) % 2 == 1;
    // Rolled back: nothing changes.
    let mut tx = db.begin();
    let n = tx.retain(&t, key(100)..key(1900), |_, v| !odd(v)).unwrap();
    assert_eq!(n, 900);
    tx.rollback().unwrap();
    let mut tx = db.begin();
    assert_eq!(
        tx.scan_all(&t).count(),
        2000,
        "the rollback restored every entry"
    );
    tx.commit().unwrap();

    // Committed: odd values in [100, 1900) are gone, everything else stays.
    let mut tx = db.begin();
    let n = tx.retain(&t, key(100)..key(1900), |_, v| !odd(v)).unwrap();
    assert_eq!(n, 900);
    tx.commit().unwrap();
    let mut tx = db.begin();
    let left: Vec<u32> = tx
        .scan_all(&t)
        .map(|e| u32::from_le_bytes(e.unwrap().1.try_into().unwrap()))
        .collect();
    tx.commit().unwrap();
    let want: Vec<u32> = (0..2000)
        .filter(|&i| !((100..1900).contains(&i) && i % 2 == 1))
        .collect();
    assert_eq!(left, want);

    // A predicate that keeps everything deletes nothing; one that keeps nothing empties
    // the table.
    let mut tx = db.begin();
    assert_eq!(tx.retain(&t, .., |_, _| true).unwrap(), 0);
    assert_eq!(tx.retain(&t, .., |_, _| false).unwrap(), want.len() as u64);
    let rest: Vec<_> = tx
        .scan_all(&t)
        .map(|e| String::from_utf8(e.unwrap().0).unwrap())
        .collect();
    assert_eq!(rest, Vec::<String>::new());
    tx.commit().unwrap();
}
