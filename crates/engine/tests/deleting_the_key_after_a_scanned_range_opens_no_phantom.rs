//! A scan locks the gap up to the first key after its range. Deleting that key merges
//! the gap into the next one, so the delete must wait for the scanner: otherwise an
//! insert into the scanned range would lock the gap of the key after the deleted one,
//! which the scanner does not hold, and appear as a phantom. (This is why the scan locks
//! that key's record too, not only its gap.)

use sluice::{Database, Options, Table, Transaction};
use sluice_storage::SimStorage;
use std::sync::Arc;
use std::time::Duration;

fn keys(tx: &mut Transaction, t: &Table) -> Vec<Vec<u8>> {
    tx.scan(t, &b"a"[..]..&b"d5"[..])
        .map(|e| e.map(|(k, _)| k))
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn deleting_the_key_after_a_scanned_range_waits_for_the_scanner() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(10);
    let db = Database::open_on(Arc::new(SimStorage::new(5)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for k in [b"a", b"c", b"e"] {
        tx.put(&t, k, b"v").unwrap();
    }
    tx.commit().unwrap();

    let mut scanner = db.begin();
    let first = keys(&mut scanner, &t);
    assert_eq!(first, vec![b"a".to_vec(), b"c".to_vec()]);

    // Delete e (the key after the range), then insert d (inside it), each committed.
    let (db2, t2) = (db.clone(), t.clone());
    let writer = std::thread::spawn(move || {
        let mut tx = db2.begin();
        tx.delete(&t2, b"e").unwrap();
        tx.commit().unwrap();
        let mut tx = db2.begin();
        tx.put(&t2, b"d", b"phantom").unwrap();
        tx.commit().unwrap();
    });
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(keys(&mut scanner, &t), first, "a phantom appeared");
    scanner.commit().unwrap();
    writer.join().unwrap();
    let mut tx = db.begin();
    assert_eq!(
        keys(&mut tx, &t),
        vec![b"a".to_vec(), b"c".to_vec(), b"d".to_vec()]
    );
    tx.commit().unwrap();
}
