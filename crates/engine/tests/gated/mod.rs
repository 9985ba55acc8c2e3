//! A database over the crash simulator whose log the test can hold: `gate.close()` stops
//! the log's syncs (commits cannot become durable) until `gate.open()`.

#![allow(dead_code)] // each test file uses part of it

use sluice::{CommitProtocol, Database, Options};
use sluice_storage::{GatedStorage, SimStorage, Storage};
use std::sync::Arc;
use std::time::Duration;

/// Opens `/db` under `protocol` with its log behind a gate; no checkpoint is triggered
/// (none may need the held log), and lock requests wait up to 10 s.
pub fn open_gated(protocol: CommitProtocol, seed: u64) -> (Database, GatedStorage) {
    let sim: Arc<dyn Storage> = Arc::new(SimStorage::new(seed));
    let gate = GatedStorage::new(sim.clone());
    let mut o = Options::small();
    o.commit = protocol;
    o.lock_timeout = Duration::from_secs(10);
    o.checkpoint_log_bytes = 0;
    let db = Database::open_with_log(sim, "/db", Arc::new(gate.clone()), "/db/log", o).unwrap();
    (db, gate)
}

/// Opens the gate when dropped: a failed assertion must not leave the log held, or the
/// database's teardown would wait for it forever.
pub struct Opens(pub GatedStorage);

impl Drop for Opens {
    fn drop(&mut self) {
        self.0.open();
    }
}
