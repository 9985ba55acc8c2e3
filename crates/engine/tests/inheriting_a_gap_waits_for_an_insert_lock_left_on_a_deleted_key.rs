//! Postmortem: an insert into one's own scanned range left the gap below the new key
//! unlocked (phantom). The fix carries the scanner's gap S over to the new key; this pins
//! the one case where that can wait: a gap I left on the key's name while it was absent.
//!
//! T8 inserts `i` below `k` (gap I on `k`), T9 deletes `k` and commits: T8's gap I stays
//! on the name `k`. T1 scans `(j, n]`, sees `[n]`, and inserts `k`: its gap S must go on
//! `k`, which conflicts with T8's gap I, so the insert waits for T8 (it holds nothing
//! meanwhile: no deadlock) and then goes through. Another insert into `(j, k)` then
//! waits for T1, and T1's repeated scan sees no phantom.

use sluice::{Database, Options, Table, Transaction};
use sluice_storage::SimStorage;
use std::ops::Bound::{Excluded, Included};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn keys(tx: &mut Transaction, t: &Table) -> Vec<String> {
    tx.scan(t, (Excluded("j"), Included("n")))
        .map(|e| e.map(|(k, _)| String::from_utf8(k).unwrap()))
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn an_insert_inheriting_a_scanned_gap_waits_for_a_gap_i_left_on_its_name() {
    let mut o = Options::small();
    o.lock_timeout = Duration::from_secs(10);
    let db = Database::open_on(Arc::new(SimStorage::new(11)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for k in ["a", "k", "n"] {
        tx.put(&t, k.as_bytes(), b"v").unwrap();
    }
    tx.commit().unwrap();

    let mut t8 = db.begin();
    t8.put(&t, b"i", b"v").unwrap();
    let mut t9 = db.begin();
    t9.delete(&t, b"k").unwrap();
    t9.commit().unwrap();

    let (inserted_tx, inserted) = mpsc::channel();
    let (rescan_tx, rescan) = mpsc::channel::<()>();
    let (db1, t1) = (db.clone(), t.clone());
    let scanner = std::thread::spawn(move || {
        let mut tx = db1.begin();
        assert_eq!(keys(&mut tx, &t1), ["n"]);
        // Waits for T8, whose gap I is on the name k.
        tx.put(&t1, b"k", b"v").unwrap();
        inserted_tx.send(()).unwrap();
        rescan.recv().unwrap();
        let again = keys(&mut tx, &t1);
        tx.commit().unwrap();
        again
    });
    // Give the insert every chance to meet T8's lock before T8 ends.
    std::thread::sleep(Duration::from_millis(100));
    t8.commit().unwrap();
    inserted.recv().unwrap();

    // An insert into the gap below T1's new key, inside T1's scanned range.
    let (db2, t2) = (db.clone(), t.clone());
    let inserter = std::thread::spawn(move || {
        let mut tx = db2.begin();
        tx.put(&t2, b"j5", b"phantom").unwrap();
        tx.commit().unwrap();
    });
    std::thread::sleep(Duration::from_millis(100));
    rescan_tx.send(()).unwrap();
    assert_eq!(
        scanner.join().unwrap(),
        ["k", "n"],
        "a phantom appeared below the scanner's own insert"
    );
    inserter.join().unwrap();
    let mut tx = db.begin();
    assert_eq!(keys(&mut tx, &t), ["j5", "k", "n"]);
    tx.commit().unwrap();
}
