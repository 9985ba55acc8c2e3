//! Serializable scans: a range scanned twice in one transaction returns the same keys,
//! even if another transaction tries to insert into the range in between (a phantom).
//! The inserter waits for the scanner's gap lock and commits after it.

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn an_insert_into_a_scanned_range_waits_for_the_scanner() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(10);
    let db = Database::open_on(Arc::new(SimStorage::new(2)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for k in [b"a", b"c", b"e"] {
        tx.put(&t, k, b"v").unwrap();
    }
    tx.commit().unwrap();

    let keys = |tx: &mut sluice::Transaction| {
        tx.scan(&t, &b"a"[..]..&b"d"[..])
            .map(|e| e.map(|(k, _)| k))
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    };
    let mut scanner = db.begin();
    let first = keys(&mut scanner);
    assert_eq!(first, vec![b"a".to_vec(), b"c".to_vec()]);

    // Another transaction inserts b (inside the scanned range) and commits.
    let (db2, t2) = (db.clone(), t.clone());
    let inserter = std::thread::spawn(move || {
        let mut tx = db2.begin();
        tx.put(&t2, b"b", b"phantom").unwrap();
        tx.commit().unwrap();
    });
    // Give the insert every chance to land before the second scan.
    std::thread::sleep(Duration::from_millis(100));
    let second = keys(&mut scanner);
    assert_eq!(second, first, "a phantom appeared in a repeated scan");
    scanner.commit().unwrap();

    // The inserter was only delayed: its insert lands after the scanner.
    inserter.join().unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.get(&t, b"b").unwrap().as_deref(), Some(&b"phantom"[..]));
    tx.commit().unwrap();
}
