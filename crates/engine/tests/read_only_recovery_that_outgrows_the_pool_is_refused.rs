//! A read-only open never writes a page back, so the pages restart recovery changes must
//! all fit in the buffer pool. When they do not, the open fails at once with a one-line
//! error that says so and asks for a larger pool or a read-write open — never a hang, a
//! panic or a page written — and succeeds with a pool large enough.

mod read_only;

use read_only::*;
use sluice::{Database, Error};
use sluice_storage::{SimStorage, Storage};
use sluice_testkit::fence::FencedStorage;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn read_only_recovery_that_outgrows_the_pool_is_refused() {
    let sim = SimStorage::new(7);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), DIR, options()).unwrap();
    db.table_or_create("t").unwrap();
    db.checkpoint().unwrap();
    commit_keys(&db, "t", 3000, "after the checkpoint "); // far more than 16 pages
    sim.crash();
    drop(db);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let before = sim.stats();

    let open = |pool_pages| {
        Database::builder(DIR)
            .options(options())
            .pool_pages(pool_pages)
            .storage(storage.clone())
            .read_only(true)
            .open()
    };
    let started = Instant::now();
    let err = open(16).expect_err("16 pages cannot hold what recovery changed");
    assert!(started.elapsed() < Duration::from_secs(2), "no waiting");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    let message = err.to_string();
    assert!(!message.contains('\n'), "{message}");
    for needed in ["read-only", "pool_pages", "read-write"] {
        assert!(message.contains(needed), "{message}");
    }
    assert_only_syncs(&sim, before, "nothing written");

    let db = open(1024).unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.scan_all(&t).count(), 3000);
    tx.commit().unwrap();
    drop(db);
    assert_only_syncs(&sim, before, "nothing written");
}
