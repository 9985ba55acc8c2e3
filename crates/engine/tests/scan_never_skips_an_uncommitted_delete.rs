//! A scan must not skip a key whose delete is not committed: if the deleter rolls back,
//! the key was never gone, and a scan that left it out read uncommitted data (a dirty
//! read). Key-range locking makes the scan wait for the deleter instead.

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;
use std::time::Duration;

fn committed_keys(db: &Database, t: &sluice::Table) -> Vec<Vec<u8>> {
    let mut tx = db.begin();
    let keys = tx
        .scan_all(t)
        .map(|e| e.map(|(k, _)| k))
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    tx.commit().unwrap();
    keys
}

#[test]
fn a_scan_waits_for_an_uncommitted_delete_and_sees_its_rollback() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(10);
    let db = Database::open_on(Arc::new(SimStorage::new(1)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for k in [b"a", b"b", b"c"] {
        tx.put(&t, k, b"v").unwrap();
    }
    tx.commit().unwrap();

    // The deleter removes b from the leaf but does not commit.
    let mut deleter = db.begin();
    assert!(deleter.delete(&t, b"b").unwrap().is_some());

    let (db2, t2) = (db.clone(), t.clone());
    let scanner = std::thread::spawn(move || committed_keys(&db2, &t2));
    // Give the scan every chance to run past b while the delete is uncommitted.
    std::thread::sleep(Duration::from_millis(100));
    deleter.rollback().unwrap();

    // b was never deleted by a committed transaction, so every scan sees it.
    let seen = scanner.join().unwrap();
    assert_eq!(
        seen,
        vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()],
        "the scan skipped a key whose delete was rolled back (dirty read)"
    );
}
