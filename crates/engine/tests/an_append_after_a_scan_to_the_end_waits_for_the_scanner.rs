//! A scan that reaches the end of a table locks the gap after the last key (the end,
//! taken in every stripe), so an append by another transaction waits for the scanner:
//! the scan repeated in the same transaction sees no phantom at the end.

use sluice::{Database, Options, Table, Transaction};
use sluice_storage::SimStorage;
use std::sync::Arc;
use std::time::Duration;

fn keys(tx: &mut Transaction, t: &Table) -> Vec<Vec<u8>> {
    tx.scan(t, &b"b"[..]..)
        .map(|e| e.map(|(k, _)| k))
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn appends_wait_for_a_scanner_of_the_end() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(10);
    let db = Database::open_on(Arc::new(SimStorage::new(8)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for k in [b"a", b"c"] {
        tx.put(&t, k, b"v").unwrap();
    }
    tx.commit().unwrap();

    let mut scanner = db.begin();
    let first = keys(&mut scanner, &t);
    assert_eq!(first, vec![b"c".to_vec()]);
    // Several appenders (their transactions pick different stripes of the end).
    let appenders: Vec<_> = (0..4u8)
        .map(|i| {
            let (db, t) = (db.clone(), t.clone());
            std::thread::spawn(move || {
                let mut tx = db.begin();
                tx.put(&t, [b'x', i], b"appended").unwrap();
                tx.commit().unwrap();
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        keys(&mut scanner, &t),
        first,
        "an append appeared in a repeated scan"
    );
    scanner.commit().unwrap();
    for a in appenders {
        a.join().unwrap();
    }
    let mut tx = db.begin();
    assert_eq!(keys(&mut tx, &t).len(), 5);
    tx.commit().unwrap();
}
