//! Postmortem (outside review of issue 23). `Database::open_with_log` accepts any log
//! directory that is not the database directory itself, a subdirectory of it included
//! (the default is `D/log`). A log directory named `D/archive` works with every strategy
//! but log-based propagation (whose runs live there). A change (since reverted: the runs'
//! directory keeps the name `archive`, `propagation/runs/mod.rs`) renamed `D/archive` to
//! `D/runs` on every read-write open, whatever the strategy, after the log was open: it
//! moved the live log away from under the open `Log`, and the very first open (the
//! creation, checkpoint-sweep, the default strategy) failed with
//! `Poisoned("log: /db/archive/0000000000000000.wal.tmp: no such file or directory")`.

use sluice::{Database, Options};
use sluice_storage::{SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn options() -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = std::time::Duration::ZERO;
    o
}

fn key(i: usize) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

#[test]
fn a_log_directory_named_archive_keeps_its_log_and_every_commit() {
    let sim = SimStorage::new(7);
    let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
    let open = || {
        Database::open_with_log(
            storage.clone(),
            "/db",
            storage.clone(),
            "/db/archive",
            options(),
        )
    };
    let db = open().unwrap();
    let t = db.create_table("t").unwrap();
    for i in 0..50 {
        let mut tx = db.begin();
        tx.put(&t, key(i), [i as u8; 40]).unwrap();
        tx.commit().unwrap();
    }
    db.close().unwrap();
    assert!(
        sim.exists(Path::new("/db/archive")).unwrap(),
        "the log directory the database was given is still there: {:?}",
        sim.list(Path::new("/db")).unwrap()
    );
    let db = open().unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..50 {
        assert_eq!(
            tx.get(&t, key(i)).unwrap().as_deref(),
            Some(&[i as u8; 40][..])
        );
    }
    tx.commit().unwrap();
    db.close().unwrap();
}
