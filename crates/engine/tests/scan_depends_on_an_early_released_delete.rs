//! Early lock release and scans: a scan that does not see a key because a transaction
//! deleted it, committed and released its locks before its commit record was durable,
//! depends on that commit like a point read does. It must not hand the scan's result out
//! before the delete is durable, and the scanner's acknowledgement waits for it too.

use sluice::{CommitProtocol, Database, Options};
use sluice_storage::{GatedStorage, SimStorage, Storage};
use std::sync::{mpsc, Arc};
use std::time::Duration;

#[test]
fn a_scan_past_an_early_released_delete_waits_for_its_durability() {
    let sim: Arc<dyn Storage> = Arc::new(SimStorage::new(3));
    let gate = GatedStorage::new(sim.clone());
    let mut o = Options::small();
    o.commit = CommitProtocol::Elr;
    o.lock_timeout = Duration::from_secs(10);
    o.checkpoint_log_bytes = 0; // no checkpoint may need the held log
    let db = Database::open_with_log(sim, "/db", Arc::new(gate.clone()), "/db/log", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for k in [b"a", b"b", b"c"] {
        tx.put(&t, k, b"v").unwrap();
    }
    tx.commit().unwrap();

    gate.close();
    // The deleter commits under ELR: its locks are released at once, its commit waits
    // for a sync the gate holds.
    let (db1, t1) = (db.clone(), t.clone());
    let (recorded, in_buffer) = mpsc::channel();
    let deleter = std::thread::spawn(move || {
        let mut tx = db1.begin();
        tx.delete(&t1, b"b").unwrap();
        tx.commit_observed(|_| recorded.send(()).unwrap()).unwrap();
    });
    // The commit record is in the buffer (a held sync alone could be the segment
    // preparer's, before the deleter ran).
    in_buffer.recv().unwrap();
    gate.wait_held(1);
    let delete_end = db.log().released_lsn();
    assert!(db.log().durable_lsn() < delete_end);

    let (db2, t2) = (db.clone(), t.clone());
    let scanner = std::thread::spawn(move || {
        let mut tx = db2.begin();
        let keys = tx
            .scan_all(&t2)
            .map(|e| e.map(|(k, _)| k))
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        // The scan result is in the caller's hands now: what it omits must be durable.
        let durable = db2.log().durable_lsn();
        let ack = tx.ack_lsn();
        tx.commit().unwrap();
        (keys, durable, ack)
    });
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !scanner.is_finished(),
        "the scan returned while the delete it depends on was not durable"
    );
    gate.open();
    let (keys, durable, ack) = scanner.join().unwrap();
    deleter.join().unwrap();
    assert_eq!(keys, vec![b"a".to_vec(), b"c".to_vec()]);
    assert!(
        durable >= delete_end,
        "scan delivered at durable {durable} before the delete at {delete_end} was durable"
    );
    assert!(
        ack.is_some_and(|a| a >= delete_end),
        "the scanner does not depend on the early-released delete: ack {ack:?} < {delete_end}"
    );
}
