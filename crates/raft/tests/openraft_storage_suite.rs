//! openraft's own storage conformance suite (`openraft::testing::log::Suite` of the pinned
//! version), run against [`LogStore`] and [`StateMachine`] on the real disk and on the
//! crash-simulating disk.

use std::sync::Arc;

use openraft::testing::log::{StoreBuilder, Suite};
use openraft::StorageError;
use sluice::Options;
use sluice_raft::{LogStore, StateMachine, TypeConfig};
use sluice_storage::{OsStorage, SimStorage, Storage};
use sluice_wal::LogOptions;

/// Small WAL segments, so that purges remove whole segments.
fn log_options() -> LogOptions {
    LogOptions {
        segment_bytes: 64 << 10,
        buffer_bytes: 256 << 10,
        ..LogOptions::default()
    }
}

fn io(e: std::io::Error) -> StorageError<TypeConfig> {
    use openraft::type_config::TypeConfigExt;
    StorageError::read(TypeConfig::err_from_error(&e))
}

struct OnDisk;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for OnDisk {
    async fn build(
        &self,
    ) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<TypeConfig>> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
        let log = LogStore::open(storage.clone(), dir.path().join("raft-log"), log_options())
            .map_err(io)?;
        let sm =
            StateMachine::open(storage, dir.path().join("sm"), Options::small()).map_err(io)?;
        Ok((dir, log, sm))
    }
}

struct Simulated;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, SimStorage> for Simulated {
    async fn build(
        &self,
    ) -> Result<(SimStorage, LogStore, StateMachine), StorageError<TypeConfig>> {
        let sim = SimStorage::new(25);
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let log = LogStore::open(storage.clone(), "/node/raft-log", log_options()).map_err(io)?;
        let sm = StateMachine::open(storage, "/node/sm", Options::small()).map_err(io)?;
        Ok((sim, log, sm))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

#[test]
fn openraft_storage_suite_passes_on_the_real_disk() {
    runtime()
        .block_on(Suite::test_all(OnDisk))
        .expect("the suite passes");
}

#[test]
fn openraft_storage_suite_passes_on_the_simulated_disk() {
    runtime()
        .block_on(Suite::test_all(Simulated))
        .expect("the suite passes");
}
