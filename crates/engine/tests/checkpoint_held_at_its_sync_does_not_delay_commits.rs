//! A checkpoint whose data-file sync is held (a slow or stuck device) does not hold up
//! commits: they never wait for a checkpoint, whoever triggered it.

use sluice::{Database, Options};
use sluice_storage::{GatedStorage, SimStorage, Storage};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn commits_finish_while_a_checkpoint_is_held_at_its_data_file_sync() {
    // The data file (and CONTROL) behind a gate; the log on its own disk, never held.
    let data: Arc<dyn Storage> = Arc::new(SimStorage::new(31));
    let gate = GatedStorage::new(data);
    let log: Arc<dyn Storage> = Arc::new(SimStorage::new(32));
    let mut o = Options::small();
    o.checkpoint_log_bytes = 16 << 10;
    let db = Database::open_with_log(Arc::new(gate.clone()), "/db", log, "/log", o).unwrap();
    let t = db.create_table("t").unwrap();
    gate.close();

    let (tx_done, rx_done) = mpsc::channel();
    let (db2, t2) = (db.clone(), t.clone());
    let writer = std::thread::spawn(move || {
        // Far more log than one checkpoint's worth: some commit crosses the threshold
        // while the checkpoint it triggered is held at the gate.
        for i in 0..400 {
            let mut tx = db2.begin();
            tx.put(&t2, format!("key{i:05}").as_bytes(), [7u8; 200])
                .unwrap();
            tx.commit().unwrap();
        }
        tx_done.send(()).unwrap();
    });
    // A checkpoint is now held at the gate...
    gate.wait_held(1);
    // ...and the commits still all complete (a liveness bound, not a timing assertion).
    let finished = rx_done.recv_timeout(Duration::from_secs(60)).is_ok();
    gate.open();
    writer.join().unwrap();
    assert!(finished, "commits waited for a checkpoint held at its sync");
    let mut tx = db.begin();
    assert!(tx.get(&t, b"key00399").unwrap().is_some());
    tx.commit().unwrap();
    db.close().unwrap();
}
