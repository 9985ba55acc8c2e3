//! An uncommitted delete of `b` locks the gap it lives in (up to `next(b)`) against other
//! changes, because its rollback re-inserts `b` without taking locks. When `next(b)` is
//! itself an uncommitted insert, rolling that insert back (also without locks) would
//! merge the gap into the next one, which nobody has locked, and a scan would then skip
//! `b` while its delete is uncommitted (a dirty read). So the delete of `b` must wait
//! until the insert above it is finished: a delete checks record S on its next key (an
//! instant-duration lock).

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use std::sync::{mpsc, Arc};
use std::time::Duration;

#[test]
fn a_delete_below_an_uncommitted_insert_waits_and_a_scan_never_skips_it() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(10);
    let db = Database::open_on(Arc::new(SimStorage::new(6)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for k in [b"a", b"b", b"e"] {
        tx.put(&t, k, b"v").unwrap();
    }
    tx.commit().unwrap();

    // T1 inserts c and will roll back.
    let mut inserter = db.begin();
    inserter.put(&t, b"c", b"v").unwrap();

    // T2 deletes b (whose next key is c), then rolls back when told to.
    let (deleted_tx, deleted) = mpsc::channel();
    let (go_tx, go) = mpsc::channel::<()>();
    let (db2, t2) = (db.clone(), t.clone());
    let deleter = std::thread::spawn(move || {
        let mut tx = db2.begin();
        assert!(tx.delete(&t2, b"b").unwrap().is_some());
        deleted_tx.send(()).unwrap();
        go.recv().unwrap();
        tx.rollback().unwrap();
    });
    std::thread::sleep(Duration::from_millis(100));
    inserter.rollback().unwrap();
    deleted.recv().unwrap();

    // b's delete is uncommitted: a scan must wait for it, then see b.
    let (db3, t3) = (db.clone(), t.clone());
    let scanner = std::thread::spawn(move || {
        let mut tx = db3.begin();
        let keys: Vec<Vec<u8>> = tx
            .scan_all(&t3)
            .map(|e| e.map(|(k, _)| k))
            .collect::<Result<_, _>>()
            .unwrap();
        tx.commit().unwrap();
        keys
    });
    std::thread::sleep(Duration::from_millis(100));
    go_tx.send(()).unwrap();
    deleter.join().unwrap();
    assert_eq!(
        scanner.join().unwrap(),
        vec![b"a".to_vec(), b"b".to_vec(), b"e".to_vec()],
        "the scan skipped a key whose delete was rolled back (dirty read)"
    );
}
