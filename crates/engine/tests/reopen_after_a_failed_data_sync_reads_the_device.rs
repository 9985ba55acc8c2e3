//! Defect 2 (issue 8), data-file side: on Linux a failed fsync marks the dirty pages
//! clean, so a reopen in the same boot can read page images the device never received. If
//! recovery trusts them, redo skips the records that built them, the next checkpoint moves
//! the redo point past those records, and a power loss then takes committed updates away.
//! Rule: at open the engine syncs the data file and drops its cache before recovery reads
//! a page, so recovery sees exactly what the device holds.

use sluice::{Database, Options};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage};
use std::sync::Arc;

fn options() -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0; // checkpoints only when the test says
    o
}

fn state(db: &Database) -> Vec<(Vec<u8>, Vec<u8>)> {
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    let rows = tx.scan_all(&t).collect::<Result<Vec<_>, _>>().unwrap();
    tx.commit().unwrap();
    rows
}

#[test]
fn a_reopen_after_a_failed_data_file_sync_keeps_every_acknowledged_update() {
    for seed in 0..20 {
        let sim = SimStorage::new(seed);
        let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
        let t = db.create_table("t").unwrap();
        let mut tx = db.begin();
        for i in 0..200u32 {
            tx.put(&t, format!("k{i:04}").as_bytes(), b"old").unwrap();
        }
        tx.commit().unwrap();
        db.checkpoint().unwrap();
        // Acknowledged updates; their pages are dirty in the pool.
        let mut tx = db.begin();
        for i in 0..200u32 {
            tx.put(&t, format!("k{i:04}").as_bytes(), b"new").unwrap();
        }
        tx.commit().unwrap();
        // The checkpoint writes the pages, and the data file's fsync fails: Linux drops the
        // pages from write-back but keeps them readable.
        sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio).on("/db/data"));
        assert!(
            db.checkpoint().is_err(),
            "seed {seed}: the failed sync is reported"
        );
        sim.clear_faults();
        sim.kill_process();
        drop(db);

        // Same boot: the page cache still holds the images the device never got.
        let db = Database::open_on(Arc::new(sim.pinned()), "/db", options())
            .unwrap_or_else(|e| panic!("seed {seed}: reopen after the kill failed: {e}"));
        let shown = state(&db);
        assert!(
            shown.iter().all(|(_, v)| v == b"new"),
            "seed {seed}: an acknowledged update is missing after the reopen"
        );
        drop(db);

        sim.crash(); // and then the power goes
        let db = Database::open_on(Arc::new(sim.pinned()), "/db", options())
            .unwrap_or_else(|e| panic!("seed {seed}: reopen after the power loss failed: {e}"));
        let after = state(&db);
        let changed = after.iter().zip(&shown).filter(|(a, b)| a != b).count();
        assert!(
            after.len() == shown.len() && changed == 0,
            "seed {seed}: a power loss took away what the reopened database showed: \
             {} rows then, {} now, {changed} differ",
            shown.len(),
            after.len()
        );
    }
}
