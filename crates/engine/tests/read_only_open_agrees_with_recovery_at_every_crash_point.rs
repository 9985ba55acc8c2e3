//! At every crash point of a workload — power losses and process kills at each of a
//! sweep of operations, so the crash lands while transactions are running, committing,
//! rolling back and checkpointing — a read-only open shows exactly the contents the
//! read-write recovery that follows produces, and changes no byte of the disk: its only
//! counted operations are syncs. (Both opens make what they read durable first: after a
//! kill, the page cache's unsynced writes. That a power loss between the two cannot make
//! them disagree is `a_read_only_open_after_a_kill_shows_only_what_survives_a_power_loss.rs`.)

use crate::read_only;

use read_only::*;
use sluice::{Database, Options, Result};
use sluice_storage::{SimStorage, Storage};
use sluice_testkit::fence::FencedStorage;
use std::sync::Arc;

fn workload_options() -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 16 << 10; // background checkpoints during the run
    o
}

/// Transactions over two tables: committed puts and deletes, rollbacks, one left open,
/// a checkpoint in the middle. Stops at the first error (the crash). The same for every
/// `seed`'s disk; `seed` varies the keys.
fn workload(sim: &SimStorage, seed: u64) -> Result<()> {
    let db = Database::open_on(FencedStorage::for_incarnation(sim), DIR, workload_options())?;
    let a = db.table_or_create("a")?;
    let b = db.table_or_create("b")?;
    let mut open = db.begin();
    for round in 0..24u64 {
        let mut tx = db.begin();
        for i in 0..40u64 {
            let k = (seed * 7 + round * 13 + i * 31) % 400;
            let v = format!("r{round}i{i}").into_bytes();
            if (k + round).is_multiple_of(5) {
                tx.delete(&a, k.to_be_bytes())?;
            } else {
                tx.put(&a, k.to_be_bytes(), &v)?;
                tx.put(&b, (k * 3).to_be_bytes(), &v)?;
            }
        }
        if round % 4 == 3 {
            tx.rollback()?;
        } else {
            tx.commit()?;
        }
        if round == 5 {
            open.put(&b, b"never committed", b"x")?;
            db.checkpoint()?;
        }
    }
    open.put(&a, b"never committed", b"x")?;
    drop(open);
    db.close()
}

#[test]
fn read_only_open_agrees_with_recovery_at_every_crash_point() {
    // Every operation of the workload is a crash point (a run is a few hundred), up to
    // where 20 runs in a row finish before reaching the point: the background threads
    // (flush daemon, segment preparer, checkpointer) vary the operation count from run
    // to run (160 to 700 seen), so a count taken from one short run would leave most
    // runs' later operations unswept.
    let mut compared = 0;
    let mut hit = 0;
    let mut refused = 0;
    let mut with_losers = 0;
    let mut finished_in_a_row = 0;
    let mut ops = 0;
    while finished_in_a_row < 20 {
        ops += 1;
        let point = ops;
        for kill in [false, true] {
            let sim = SimStorage::new(point);
            if kill {
                sim.kill_at_op(point);
            } else {
                sim.crash_at_op(point);
            }
            if workload(&sim, 0).is_ok() {
                // Finished before the crash point.
                finished_in_a_row += 1;
                continue;
            }
            finished_in_a_row = 0;
            hit += 1;
            sim.disarm_crash();
            let storage: Arc<dyn Storage> = Arc::new(sim.clone());
            let before = sim.stats();
            let ro = Database::builder(DIR)
                .options(workload_options())
                .pool_pages(4096)
                .storage(storage.clone())
                .read_only(true)
                .open();
            assert_only_syncs(&sim, before, &format!("point {point} kill {kill}"));
            let ro = match ro {
                Ok(db) => db,
                Err(e) => {
                    // Only a database not yet created can be refused.
                    let m = e.to_string();
                    assert!(
                        m.contains("interrupted")
                            || m.contains("not a sluice database")
                            || m.contains("does not exist"),
                        "point {point} kill {kill}: {m}"
                    );
                    refused += 1;
                    continue;
                }
            };
            let seen = contents(&ro);
            with_losers += usize::from(ro.recovery_report().losers > 0);
            ro.verify().unwrap();
            drop(ro);
            assert_only_syncs(&sim, before, &format!("point {point} kill {kill}"));
            let rw = Database::open_on(storage, DIR, workload_options()).unwrap();
            assert_eq!(
                contents(&rw),
                seen,
                "point {point} kill {kill}: read-only and read-write recovery differ"
            );
            compared += 1;
        }
    }
    eprintln!(
        "{ops} crash points, {hit} crashes hit the workload, {compared} states compared, {refused} refused (not yet created), {with_losers} with losers"
    );
    // Every crash that hit the workload was compared, unless the database did not exist
    // yet; and there were enough of them (the workload is a few hundred operations, the
    // count varies from run to run with the background threads).
    assert_eq!(compared + refused, hit);
    assert!(compared > 300, "only {compared} crash states compared");
    assert!(
        with_losers > 20,
        "only {with_losers} crash states had losers"
    );
}
